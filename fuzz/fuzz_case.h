// Decoding of the fuzzer's input bytes into one forward (+ backward) call:
// sizes, flags, dtype, layouts of every tensor, variable-length batch_sizes,
// values, and at most one deliberate corruption (a wrong shape, dtype, count,
// flag, value...). The byte format is documented in fuzz/README.md; every
// byte string decodes to some case (missing bytes read as 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_tensor.h"

namespace lstmfuzz {

// Reads the input front to back; past the end every read gives 0.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // Uniform-ish in [lo, hi] (hi - lo < 256).
  int64_t range(int64_t lo, int64_t hi) { return lo + byte() % (hi - lo + 1); }
  bool bit() { return byte() & 1; }
  uint64_t u64() {
    uint64_t x = 0;
    for (int k = 0; k < 8; ++k) x = (x << 8) | byte();
    return x;
  }

 private:
  const uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// What a case deliberately gets wrong (kNone: a valid call).
enum class Corruption : int {
  kNone = 0,
  kParamsCount,        // one params entry missing or one extra
  kParamShape,         // one entry one larger in a dimension
  kParamDtype,         // one entry of another floating dtype
  kHxCount,            // hx of 1 or 3 tensors
  kHxShape,            // hx[k] one larger in a dimension
  kHxDtype,            // hx[k] of another dtype
  kNumLayers,          // num_layers 0, -1 or L + 1
  kDropout,            // dropout -0.5, 1.5, NaN, 0.5 (valid with eval or L == 1)
  kInputRank,          // one dimension more or fewer
  kInputDtype,         // int64 input
  kEmptyTimeOrBatch,   // T = 0 or B = 0
  kBatchSizesValues,   // batch_sizes values replaced by decoded ones (often invalid)
  kBatchSizesDtype,    // float batch_sizes
  kBatchSizesLength,   // one entry more or fewer
  kBackwardFlag,       // backward with bidirectional / has_biases / batch_first flipped
  kSavedShape,         // a saved tensor one step short
  kSavedFromEval,      // the saved tensors of a train=False forward
  kGradShape,          // a gradient one larger in a dimension
  kGradDtype,          // a gradient of another dtype
  kBackwardTrainFalse, // backward with train=False
  kUndefined,          // an undefined input, hx or params entry
  kOutputAliasesInput, // _out form: an output over an input's memory
  kCount
};
const char* corruption_name(Corruption c);

struct Case {
  // Problem
  DType dtype = DType::Float32;
  int64_t T = 1, B = 1, I = 1, H = 1, L = 1;
  // proj_size (LSTM with projections: every slot ends with w_hr (P, H), h is P
  // wide); 0 without. P = H (when H = 1) is a refused call.
  int64_t P = 0;
  bool bidirectional = false, has_biases = true, batch_first = false, train = true;
  bool with_hx = false, packed = false;
  std::vector<int64_t> lengths;  // packed: B non-increasing, lengths[0] == T
  bool special_values = false;   // NaN, +-inf, +-1e4 sprinkled into input and hx
  bool check_two_threads = false;
  Corruption corruption = Corruption::kNone;
  int corruption_detail = 0;  // which entry / variant

  // Call arguments (views into `owned`)
  TensorView input, batch_sizes;
  std::vector<TensorView> hx, params;
  int64_t num_layers = 1;
  double dropout = 0.0;
  bool grad_defined[3] = {true, true, true};
  std::vector<Strided> owned;

  // Layout codes for the backward's saved tensors and gradients.
  uint8_t saved_layout_code = 0, grad_layout_code = 0;
  uint64_t value_seed = 0;

  int64_t D() const { return bidirectional ? 2 : 1; }
  // The width of h: P with projections, else H.
  int64_t R() const { return P > 0 ? P : H; }
  std::string describe() const;
};

// Decodes one case (the forward's arguments; the backward's are built from the
// forward's results by make_backward_tensor).
Case decode_case(const uint8_t* data, std::size_t size);

// A layout decoded from a code byte for a tensor of `dims` dimensions;
// allow_zero: stride-0 dims are allowed (fresh data only).
Layout layout_from_code(uint8_t code, std::size_t dims, bool allow_zero);

// A fresh tensor of `sizes` with values from the case's generator (uniform in
// [-scale, scale], quantised to 1/64 of it), in the layout of `code`.
Strided make_random_tensor(DType dtype, const std::vector<int64_t>& sizes, uint8_t code,
                           uint64_t seed, double scale);

}  // namespace lstmfuzz
