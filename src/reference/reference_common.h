// Internal: pieces shared by the reference forward and backward (plain
// double-precision code, no attempt at speed).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/element_access.h"
#include "api/checks.h"

namespace lstmop {
namespace reference {
namespace detail {

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The contract's 16-bit model (CONTRACT.md, "The 16-bit dtypes"): products
// take their operands as 16-bit values, so h is rounded to the dtype as the
// call stores it (the value of `output` and of the saved h, and the operand
// of the next step's and the next layer's products); with projections also
// m = o * tanh(c), the operand of the w_hr product (product_operand); c is
// carried from step to step in float32. Every other quantity stays in double.
// float32 and float64 keep h, m and c in double.
class PrecisionModel {
 public:
  explicit PrecisionModel(DType dtype) : dtype_(dtype) {}
  double stored_hidden(double h) const {
    switch (dtype_) {
      case DType::Float16: return static_cast<double>(static_cast<float>(Half(static_cast<float>(h))));
      case DType::BFloat16:
        return static_cast<double>(static_cast<float>(BFloat16(static_cast<float>(h))));
      default: return h;
    }
  }
  // An operand of a product other than h (m = o * tanh(c) with projections).
  double product_operand(double v) const { return stored_hidden(v); }
  double carried_cell(double c) const {
    const bool sixteen_bit = dtype_ == DType::Float16 || dtype_ == DType::BFloat16;
    return sixteen_bit ? static_cast<double>(static_cast<float>(c)) : c;
  }

 private:
  DType dtype_;
};

// One slot's parameters widened to double, row-major.
struct SlotWeights {
  std::vector<double> w_ih;  // (4H, I_l)
  std::vector<double> w_hh;  // (4H, R)
  std::vector<double> bias;  // (4H): b_ih + b_hh, zeros without biases
  std::vector<double> w_hr;  // (P, H) with projections, else empty
};

inline std::vector<double> read_all(const TensorView& v) {
  // Row-major copy of a 1-D or 2-D view.
  const int64_t rows = v.dim() == 2 ? v.size(0) : 1;
  const int64_t cols = v.dim() == 2 ? v.size(1) : v.size(0);
  const int64_t rs = v.dim() == 2 ? v.stride(0) : 0;
  const int64_t cs = v.dim() == 2 ? v.stride(1) : v.stride(0);
  std::vector<double> out(static_cast<std::size_t>(rows * cols));
  lstmop::detail::gather_matrix<double>(v, 0, rows, rs, cols, cs, out.data(), cols);
  return out;
}

inline SlotWeights read_slot(const lstmop::detail::LstmProblem& d, const TensorList& params,
                             int64_t slot) {
  const int64_t base = slot * d.params_per_slot;
  SlotWeights w;
  w.w_ih = read_all(params[base]);
  w.w_hh = read_all(params[base + 1]);
  w.bias.assign(static_cast<std::size_t>(4 * d.H), 0.0);
  if (d.has_biases) {
    const std::vector<double> b_ih = read_all(params[base + 2]);
    const std::vector<double> b_hh = read_all(params[base + 3]);
    for (std::size_t g = 0; g < w.bias.size(); ++g) w.bias[g] = b_ih[g] + b_hh[g];
  }
  if (d.projections()) w.w_hr = read_all(params[d.w_hr_index(slot)]);
  return w;
}

// Element (a, b, k) of a 3-D view, in double.
inline double at3(const TensorView& v, int64_t a, int64_t b, int64_t k) {
  return lstmop::detail::load_double(v, a * v.stride(0) + b * v.stride(1) + k * v.stride(2));
}

// Element (s, t, b, k) of a 4-D view, in double.
inline double at4(const TensorView& v, int64_t s, int64_t t, int64_t b, int64_t k) {
  return lstmop::detail::load_double(
      v, s * v.stride(0) + t * v.stride(1) + b * v.stride(2) + k * v.stride(3));
}

}  // namespace detail
}  // namespace reference
}  // namespace lstmop
