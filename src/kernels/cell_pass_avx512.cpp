// AVX-512 cell passes (cell_pass_isa.h): cell_pass_simd.h's bodies on
// 16-float vectors, with the same lane-wise operations as the AVX2 ones
// (cell_pass_avx2.cpp), hence the same bits for every element; masked tails
// are cheap here. Every function that uses these instructions carries
// LSTMOP_TARGET_AVX512; cell_pass.cpp calls in here only where
// kernel_choice() picked AVX-512.
#include <immintrin.h>

#include "kernels/cell_pass_isa.h"
#include "kernels/isa_target.h"
#include "kernels/simd_avx512.h"

// GCC 12 warns inside avx512fintrin.h that the _mm512_undefined_ps()
// pass-through operand of the unmasked min/max/roundscale "may be used
// uninitialized" (it is a self-initialised dummy, never read: the mask is all
// ones).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define LSTMOP_CELL_TARGET LSTMOP_TARGET_AVX512


namespace lstmop {
namespace detail {
using simd::Avx512;
}  // namespace detail
}  // namespace lstmop

#include "kernels/cell_pass_simd.h"

namespace lstmop {
namespace detail {

template <class Storage>
void cell_pass_forward_avx512(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                              const float* gates, const float* bias, float* c_state,
                              float* h_state, float* layer_out, int64_t ld_out,
                              const StepSaved<Storage>* saved) {
  cell_simd::cell_forward<Avx512, Storage>(rows, H, u_begin, u_end, gates, bias, c_state, h_state,
                                     layer_out, ld_out, saved);
}

void cell_pass_backward_avx512(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                               const float* i, const float* j, const float* f, const float* o,
                               const float* tanhc, const float* c_prev, const float* d_out,
                               int64_t ld_out, const float* dh_state, float* dc_state,
                               float* d_gates) {
  cell_simd::cell_backward<Avx512, float>(rows, H, u_begin, u_end, i, j, f, o, tanhc, c_prev,
                                          d_out, ld_out, dh_state, dc_state, d_gates);
}

void cell_pass_backward_bf16_avx512(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                    const uint16_t* i, const uint16_t* j, const uint16_t* f,
                                    const uint16_t* o, const uint16_t* tanhc,
                                    const uint16_t* c_prev, const float* d_out, int64_t ld_out,
                                    const float* dh_state, float* dc_state, float* d_gates) {
  cell_simd::cell_backward<Avx512, uint16_t>(rows, H, u_begin, u_end, i, j, f, o, tanhc,
                                             c_prev, d_out, ld_out, dh_state, dc_state,
                                             d_gates);
}

void sigmoid_avx512(int64_t n, const float* x, float* y) {
  cell_simd::apply<Avx512, cell_simd::sigmoid_v<Avx512>>(n, x, y);
}
void tanh_avx512(int64_t n, const float* x, float* y) {
  cell_simd::apply<Avx512, cell_simd::tanh_v<Avx512>>(n, x, y);
}
LSTMOP_CELL_TARGET void gate_activations_avx512(int64_t n, const float* x, float* y) {
  constexpr int kVectors = 8;  // two rows' gates, as the fused steps' epilogues
  constexpr int64_t kBlock = kVectors * Avx512::kLanes;
  for (int64_t b = 0; b + kBlock <= n; b += kBlock) {
    Avx512::reg v[kVectors], g[kVectors];
    for (int e = 0; e < kVectors; ++e) v[e] = Avx512::loadu(x + b + e * Avx512::kLanes);
    cell_simd::activate<Avx512, kVectors, cell_simd::gate_tanh_bits(2)>(v, g);
    for (int e = 0; e < kVectors; ++e) Avx512::storeu(y + b + e * Avx512::kLanes, g[e]);
  }
}

template void cell_pass_forward_avx512<float>(int64_t, int64_t, int64_t, int64_t, const float*,
                                              const float*, float*, float*, float*, int64_t,
                                              const StepSaved<float>*);
template void cell_pass_forward_avx512<Half>(int64_t, int64_t, int64_t, int64_t, const float*,
                                             const float*, float*, float*, float*, int64_t,
                                             const StepSaved<Half>*);
template void cell_pass_forward_avx512<BFloat16>(int64_t, int64_t, int64_t, int64_t, const float*,
                                                 const float*, float*, float*, float*, int64_t,
                                                 const StepSaved<BFloat16>*);

}  // namespace detail
}  // namespace lstmop
