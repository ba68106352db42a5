// Internal: the bodies of the cell passes of cell_pass.h, one per ISA of
// cpu_features.h; cell_pass.cpp calls the one kernel_choice() picks. Each
// computes exactly the formulas of cell_pass.h.
//
// Generic (cell_pass_generic.cpp): scalar loops, any compute type, std::exp /
// std::tanh; the only body for double.
//
// AVX2 + FMA (cell_pass_avx2.cpp, 8 floats a vector) and AVX-512 (cell_pass_
// avx512.cpp, 16 floats): cell_pass_simd.h's operations, lane for lane the
// same, so both give the same bits for every element (NaN payloads aside: x86
// passes on the first operand's NaN, and the compiler may order the operands
// of a commutative operation differently in the two bodies). Their
// activations (cell_pass_simd.h): exp(x) = 2^n (1 + p(r)), n = round(x /
// ln 2), r = x - n ln 2 in two parts, p a degree-6 polynomial, x clamped
// to [-87, 88] so 2^n is a normal float (NaN kept); sigmoid(x) = 1 / (1 +
// exp(-x)), exactly 0 for x < -88; tanh(x) = sign(x) m / (1 + e), e =
// exp(-2|x|), m = 1 - e as 1 - 2^n - 2^n p in one rounding.
// Saturation: sigmoid(+1e4, +inf) = 1, sigmoid(-1e4, -inf) = 0,
// tanh(+-1e4, +-inf) = +-1; NaN in gives NaN out. Max error against double,
// measured on every 64th float of [-20, 20] (34M points): sigmoid 8.9e-8
// absolute, 2.34 ulp; tanh 8.9e-8 absolute, 2.22 ulp (ulp of the float
// nearest the exact value; every float of [-20, 1e-6]: 2.48 and 2.29 ulp).
// tests/kernels/test_cell_passes.cpp checks <= 1e-7 and <= 2.5 ulp on every
// 1024th float of that range, and the limits. The backward body evaluates the
// products in the generic loop's order without FMA: the generic loop's bits.
//
// The vector bodies process the last partial vector of a row with the same
// operations, masked, so every element gets the same bits wherever it sits in
// the row (H need not be a multiple of the vector width).
#pragma once

#include <cstdint>

#include "kernels/cell_pass.h"

namespace lstmop {
namespace detail {

template <class Acc, class Storage>
void cell_pass_forward_generic(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                               const Acc* gates, const Acc* bias, Acc* c_state, Acc* h_state,
                               Acc* layer_out, int64_t ld_out, const StepSaved<Storage>* saved);
// S: Acc, or uint16_t (Acc float) for bfloat16 saved tensors, read widened.
template <class Acc, class S>
void cell_pass_backward_generic(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                const S* i, const S* j, const S* f, const S* o,
                                const S* tanhc, const S* c_prev, const Acc* d_out,
                                int64_t ld_out, const Acc* dh_state, Acc* dc_state,
                                Acc* d_gates);
// y = tanh(x) for n values (std::tanh).
template <class Acc>
void tanh_generic(int64_t n, const Acc* x, Acc* y);

template <class Storage>
void cell_pass_forward_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                            const float* gates, const float* bias, float* c_state,
                            float* h_state, float* layer_out, int64_t ld_out,
                            const StepSaved<Storage>* saved);
void cell_pass_backward_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                             const float* i, const float* j, const float* f, const float* o,
                             const float* tanhc, const float* c_prev, const float* d_out,
                             int64_t ld_out, const float* dh_state, float* dc_state,
                             float* d_gates);
void cell_pass_backward_bf16_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                  const uint16_t* i, const uint16_t* j, const uint16_t* f,
                                  const uint16_t* o, const uint16_t* tanhc,
                                  const uint16_t* c_prev, const float* d_out, int64_t ld_out,
                                  const float* dh_state, float* dc_state, float* d_gates);
// Element-wise activations of n floats (the carried tanhc; accuracy tests).
void sigmoid_avx2(int64_t n, const float* x, float* y);
void tanh_avx2(int64_t n, const float* x, float* y);

template <class Storage>
void cell_pass_forward_avx512(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                              const float* gates, const float* bias, float* c_state,
                              float* h_state, float* layer_out, int64_t ld_out,
                              const StepSaved<Storage>* saved);
void cell_pass_backward_avx512(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                               const float* i, const float* j, const float* f, const float* o,
                               const float* tanhc, const float* c_prev, const float* d_out,
                               int64_t ld_out, const float* dh_state, float* dc_state,
                               float* d_gates);
void cell_pass_backward_bf16_avx512(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                    const uint16_t* i, const uint16_t* j, const uint16_t* f,
                                    const uint16_t* o, const uint16_t* tanhc,
                                    const uint16_t* c_prev, const float* d_out, int64_t ld_out,
                                    const float* dh_state, float* dc_state, float* d_gates);
void sigmoid_avx512(int64_t n, const float* x, float* y);
void tanh_avx512(int64_t n, const float* x, float* y);
// The fused steps' interleaved form (cell_simd::activate over two rows'
// gates): per block of 8 vectors (128 floats) of x, the third and seventh
// vector's tanh, the others' sigmoid; n a multiple of 128 (tests).
void gate_activations_avx512(int64_t n, const float* x, float* y);

}  // namespace detail
}  // namespace lstmop
