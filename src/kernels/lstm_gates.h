// lstmop kernels: the fused element-wise LSTM step, for n hidden units of one
// row (one sequence of the batch), right after the recurrent product.
//
// Forward (contract formulas; a_* are the pre-activations w_ih x + w_hh h,
// b_* the summed bias b_ih + b_hh or nullptr):
//   i = sigmoid(a_i + b_i)  f = sigmoid(a_f + b_f)  j = tanh(a_g + b_g)  o = sigmoid(a_o + b_o)
//   c = fma(f, c_prev, i * j)   tanhc = tanh(c)   h = o * tanhc
// sigmoid(x) = 1 / (1 + exp(-x)); exp and tanh are SLEEF's 1-ulp functions
// (Sleef_*_u10) in every body. Without bias the pre-activation is used as is. Measured error
// vs double: tests/kernels/test_lstm_gates.cpp, docs/performance.md.
//
// Backward (gate gradients of one step; dh = dh_a + dh_b, the output and the
// recurrent gradient of h_t; dc_next the carried gradient of c_t or nullptr):
//   dc = dc_next + dh * o * (1 - tanhc^2)
//   da_o = dh * tanhc * o * (1 - o)      da_i = dc * j * i * (1 - i)
//   da_g = dc * i * (1 - j^2)            da_f = dc * c_prev * f * (1 - f)
//   dc_prev = dc * f
// evaluated as written (no fma), so every ISA gives the same bits.
//
// Pointers address n floats each (for gate-interleaved pre-activations, call
// once per group of units with that group's four gate pointers). Outputs may
// alias the state inputs they replace (c with c_prev, dc_prev with dc_next);
// nothing else may overlap. Results for a unit do not depend on n or on its
// position: partial vectors go through the same vector code, masked.
#pragma once

#include <cstdint>

#include "cpu_isa.h"

namespace lstmop {
namespace kernels {

struct GateForward {
  int64_t n = 0;
  const float *a_i = nullptr, *a_f = nullptr, *a_g = nullptr, *a_o = nullptr;
  const float *b_i = nullptr, *b_f = nullptr, *b_g = nullptr, *b_o = nullptr;  // or all nullptr
  const float* c_prev = nullptr;
  float* c = nullptr;
  float* h = nullptr;
  // Saved activations for the backward; all nullptr for inference.
  float *i = nullptr, *j = nullptr, *f = nullptr, *o = nullptr, *tanhc = nullptr;
};

struct GateBackward {
  int64_t n = 0;
  const float* dh_a = nullptr;
  const float* dh_b = nullptr;     // or nullptr
  const float* dc_next = nullptr;  // or nullptr (zero)
  const float *i = nullptr, *j = nullptr, *f = nullptr, *o = nullptr, *tanhc = nullptr;
  const float* c_prev = nullptr;
  float *da_i = nullptr, *da_f = nullptr, *da_g = nullptr, *da_o = nullptr;
  float* dc_prev = nullptr;
};

// isa must be supported (isa_supported), e.g. best_isa().
void lstm_gates_forward(Isa isa, const GateForward& args);
void lstm_gates_backward(Isa isa, const GateBackward& args);

}  // namespace kernels
}  // namespace lstmop
