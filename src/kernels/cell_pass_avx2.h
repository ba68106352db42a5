// Internal: the forward and backward cell passes of lstm_cell.h for float
// compute in AVX2 + FMA (8 floats a vector), chosen at run time when the CPU
// has both (lstm_cell.cpp); the scalar loops serve every other CPU.
//
// Activations: exp(x) = 2^n * p(r), n = round(x / ln 2), r = x - n ln 2 in two
// parts, p Cephes' expf polynomial, x clamped to [-87, 88] so 2^n is a normal
// float (NaN kept); sigmoid(x) = 1 / (1 + exp(-x)), exactly 0 for x < -88;
// tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|), for |x| >= 0.3 and its
// Taylor polynomial to x^13 below. Saturation: sigmoid(+1e4, +inf) = 1,
// sigmoid(-1e4, -inf) = 0, tanh(+-1e4, +-inf) = +-1; NaN in gives NaN out.
// Max error against double, measured on every 64th float of [-20, 20] (34M
// points): sigmoid 8.9e-8 absolute, 2.34 ulp; tanh 8.9e-8 absolute, 2.05 ulp
// (ulp of the float nearest the exact value; every float of [-20, 1e-6]:
// 2.48 and 2.09 ulp). tests/cpp/test_cell_passes.cpp checks <= 1e-7 and
// <= 2.5 ulp on every 1024th float of that range, and the limits below.
//
// The last partial vector of a row goes through the same operations with
// masked loads and stores, so every element gets the same bits wherever it
// sits in the row (H need not be a multiple of 8).
#pragma once

#include <cstdint>

#include "kernels/cell_pass.h"

namespace lstmop {
namespace detail {

bool cpu_has_avx2_fma();

template <class S>
void lstm_cell_forward_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                            const float* gates, const float* bias, float* c_state,
                            float* h_state, float* layer_out, int64_t ld_out,
                            const StepSaved<S>* saved);

// The backward pass of lstm_cell.h: the same products in the same order as
// the scalar loop (no FMA), 8 columns at a time.
void lstm_cell_backward_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                             const float* i, const float* j,
                             const float* f, const float* o, const float* tanhc,
                             const float* c_prev, const float* d_out, int64_t ld_out,
                             const float* dh_state, float* dc_state, float* d_gates);

// Element-wise activations of n floats (for accuracy checks).
void sigmoid_avx2(int64_t n, const float* x, float* y);
void tanh_avx2(int64_t n, const float* x, float* y);

}  // namespace detail
}  // namespace lstmop
