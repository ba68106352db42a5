// Shared helpers of the C++ suite: random problems (input, hx, params,
// batch_sizes) of a configuration, strided copies of tensors, element access
// in any dtype, calls of the operators with all 10 / 3 results, tolerances and
// gtest comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lstmop/lstmop.h"

namespace lstmtest {

using lstmop::BackwardResult;
using lstmop::DType;
using lstmop::ForwardResult;
using lstmop::Tensor;
using lstmop::TensorList;
using lstmop::TensorView;

// ---------------------------------------------------------------------------
// Element access (offsets and indices in elements, any strides)
// ---------------------------------------------------------------------------

double load(const TensorView& v, int64_t offset);
void store(const TensorView& v, int64_t offset, double value);
// Element offset of a logical index.
int64_t offset_of(const TensorView& v, const std::vector<int64_t>& index);
// Calls fn(offset) for every element in logical row-major order.
void for_each_offset(const TensorView& v, const std::function<void(int64_t)>& fn);
// Values in logical row-major order, widened to double.
std::vector<double> to_doubles(const TensorView& v);
// Raw element bytes in logical row-major order (for bitwise comparisons).
std::vector<unsigned char> to_bytes(const TensorView& v);

Tensor from_doubles(DType dtype, const std::vector<int64_t>& sizes,
                    const std::vector<double>& values);
// Uniform in [lo, hi), rounded to dtype.
Tensor random_tensor(DType dtype, const std::vector<int64_t>& sizes, std::mt19937_64& rng,
                     double lo = -1.0, double hi = 1.0);
Tensor filled(DType dtype, const std::vector<int64_t>& sizes, double value);
// Contiguous copy in the same dtype (bitwise) or converted to another dtype.
Tensor contiguous_copy(const TensorView& v);
Tensor converted(const TensorView& v, DType dtype);

// ---------------------------------------------------------------------------
// Strided copies: the same logical values in another memory layout
// ---------------------------------------------------------------------------

// A view that owns its (raw, possibly larger than numel) storage.
struct StridedTensor {
  std::shared_ptr<std::vector<unsigned char>> storage;
  TensorView view;
  operator const TensorView&() const { return view; }  // NOLINT: used as an argument
};

enum class Layout {
  Contiguous,
  Transposed,  // dimensions stored in reverse order (column-major)
  Gapped,      // row-major with padding: every stride is larger than needed
  Negative,    // every dimension stored backwards: all strides negative
};
const char* layout_name(Layout layout);

// Bitwise copy of v's elements into a new storage with the given layout.
StridedTensor relayout(const TensorView& v, Layout layout);
// v has size 1 in dimension dim; the result repeats it `size` times with
// stride 0 there (like torch.expand).
StridedTensor expanded(const TensorView& v, int64_t dim, int64_t size);

// ---------------------------------------------------------------------------
// Problems
// ---------------------------------------------------------------------------

struct LstmConfig {
  int64_t T = 3, B = 2, I = 3, H = 2, L = 1;
  // proj_size: 0 without projections; else 1 <= P < H and every slot ends
  // with w_hr (P, H), h is P wide.
  int64_t P = 0;
  bool has_biases = true;
  bool bidirectional = false;
  bool batch_first = false;
  bool train = true;
  bool packed = false;   // variable-length mode: batch_sizes from `lengths`
  bool with_hx = true;   // false: hx is an empty list
  std::vector<int64_t> lengths;  // packed: B non-increasing lengths, lengths[0] == T
  DType dtype = DType::Float32;

  int64_t D() const { return bidirectional ? 2 : 1; }
  // The width of h: P with projections, else H.
  int64_t R() const { return P > 0 ? P : H; }
  int64_t S() const { return D() * L; }
  // Length of sequence b (T in fixed-length mode).
  int64_t length(int64_t b) const;
  std::string name() const;
};

// batch_sizes[t] = number of sequences with length > t.
std::vector<int64_t> batch_sizes_from_lengths(const std::vector<int64_t>& lengths, int64_t T);
// B random non-increasing lengths in [1, T] with lengths[0] == T.
std::vector<int64_t> random_lengths(int64_t T, int64_t B, std::mt19937_64& rng);

struct LstmProblem {
  LstmConfig cfg;
  Tensor input;               // (T, B, I), (B, T, I) or (T*B, I)
  std::vector<Tensor> hx;     // {} or {h0, c0}
  std::vector<Tensor> params; // slot by slot: w_ih, w_hh[, b_ih, b_hh][, w_hr]
  Tensor batch_sizes;         // int64 (T,) when packed, else undefined

  TensorList hx_list() const;
  TensorList param_list() const;
  TensorView batch_sizes_view() const;
};

// Random data: input and hx uniform in [-1, 1), parameters uniform in
// [-w, w) with w = weight_scale / sqrt(H) (PyTorch's nn.LSTM initialisation
// for weight_scale = 1). Invalid rows of a packed input hold random values
// in [-4, 4) too: they must not matter.
LstmProblem make_problem(const LstmConfig& cfg, uint64_t seed, double weight_scale = 1.0);
// The same problem with every floating tensor converted to dtype.
LstmProblem converted_problem(const LstmProblem& p, DType dtype);

// Gradients of outputs 0-2 (random in [-1, 1), also at invalid rows).
struct LstmGrads {
  Tensor grad_y, grad_hy, grad_cy;
};
LstmGrads make_grads(const LstmProblem& p, uint64_t seed);
LstmGrads converted_grads(const LstmGrads& g, DType dtype);

// ---------------------------------------------------------------------------
// Calls with all results
// ---------------------------------------------------------------------------

ForwardResult run_forward(const LstmProblem& p);
ForwardResult run_reference_forward(const LstmProblem& p);
// Backward from the saved tensors 3-9 of `saved` (a train=True forward).
// Undefined members of g are passed as undefined tensors.
BackwardResult run_backward(const LstmProblem& p, const LstmGrads& g, const ForwardResult& saved);
// The forward, and for a train=True problem the backward on its saved tensors.
struct AllResults {
  ForwardResult fwd;
  BackwardResult bwd;
};
AllResults run_all(const LstmProblem& p, const LstmGrads& g);
BackwardResult run_reference_backward(const LstmProblem& p, const LstmGrads& g,
                                      const ForwardResult& saved);

// The forward results converted to dtype (the reference's float64 saved
// tensors made fit for a backward call on float32 data).
ForwardResult converted_result(const ForwardResult& r, DType dtype);

// The 10 forward results and the backward results, named.
using NamedViews = std::vector<std::pair<std::string, TensorView>>;
NamedViews forward_outputs(const ForwardResult& r);
NamedViews backward_outputs(const BackwardResult& r);

// sum(grad_y * output) + sum(grad_hy * hy) + sum(grad_cy * cy) in double.
double loss(const ForwardResult& r, const LstmGrads& g);

// ---------------------------------------------------------------------------
// Tolerances and comparisons
// ---------------------------------------------------------------------------

// Machine epsilon (2^-23, 2^-52, 2^-10, 2^-7).
double epsilon(DType dtype);

// float16 / bfloat16: forward and backward of p (gradients from grad_seed)
// against the float64 reference run on exactly the same values. Every result
// has p's dtype; forward within L * eps, backward within 4 * eps of each
// tensor's scale (test_dtypes_shapes.cpp derives the bounds).
void expect_low_precision_near_reference(const LstmProblem& p, uint64_t grad_seed);

// float32 / float64: the forward and backward of make_problem(cfg, seed)
// (gradients from seed + 1) against the float64 reference: every forward
// result within accumulation_tolerance(forward_depth), every gradient within
// accumulation_tolerance(backward_depth), each of cfg's dtype. The reference
// backward is given the production forward's saved tensors, so the backward
// comparison measures the backward's own error (test_reference_sweep.cpp
// derives the tolerances).
void expect_near_reference(const LstmConfig& cfg, uint64_t seed);

// oneDNN benchdnn style: 4 * (1 + backward) * ceil(log2(depth)) * eps, where
// depth is the number of terms accumulated along the longest dependency chain.
double accumulation_tolerance(DType dtype, double depth, bool backward);

// Accumulation depth of a configuration. Forward: every gate sums
// K = max(I, D*R) + R + 2 products and sums (with projections H more: the
// w_hr product), chained over T steps and L layers: K * T * L. Backward: the
// weight gradients sum that over T * B rows: K * T * L * B.
double forward_depth(const LstmConfig& cfg);
double backward_depth(const LstmConfig& cfg);

// Every element: |actual - expected| <= tol * max(1, max_k |expected_k|).
// The scale is the tensor's largest magnitude, not the element's own: a
// gradient element is a sum whose terms can be as large as the largest
// element, so after cancellation an element-wise relative error means nothing.
::testing::AssertionResult close_to(const TensorView& actual, const TensorView& expected,
                                    double tol);
// Element-wise |actual - expected| <= atol + rtol * |expected|.
::testing::AssertionResult all_close(const TensorView& actual, const TensorView& expected,
                                     double atol, double rtol);
// Same shape and identical element bytes.
::testing::AssertionResult bitwise_equal(const TensorView& actual, const TensorView& expected);
// Every forward output of a and b bitwise equal (EXPECT, named), and with
// train every gradient too (the same count first: ASSERT).
void expect_bitwise_same(const AllResults& a, const AllResults& b, bool train);
// Same shape and equal values (so -0 == 0).
::testing::AssertionResult values_equal(const TensorView& actual, const TensorView& expected);
// Largest |x|; 0 for an empty tensor.
double max_abs(const TensorView& v);

// Copies of every byte of a set of views, to check that nobody wrote them.
class Snapshot {
 public:
  void add(const std::string& name, const TensorView& v);
  void add_problem(const LstmProblem& p);
  // Gtest failure for each view whose bytes changed.
  ::testing::AssertionResult unchanged() const;

 private:
  std::vector<std::pair<std::string, TensorView>> views_;
  std::vector<std::vector<unsigned char>> bytes_;
};

}  // namespace lstmtest
