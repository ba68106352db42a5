// AVX2 + FMA cell passes (cell_pass_isa.h): cell_pass_simd.h's bodies on
// 8-float vectors, forward and backward. Every function that uses these
// instructions carries LSTMOP_TARGET_AVX2; cell_pass.cpp calls in here only
// where kernel_choice() picked AVX2.
#include <immintrin.h>

#include "kernels/cell_pass_isa.h"
#include "kernels/isa_target.h"
#include "kernels/simd_avx2.h"

#define LSTMOP_CELL_TARGET LSTMOP_TARGET_AVX2


namespace lstmop {
namespace detail {
using simd::Avx2;
}  // namespace detail
}  // namespace lstmop

#include "kernels/cell_pass_simd.h"

namespace lstmop {
namespace detail {

template <class Storage>
void cell_pass_forward_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                            const float* gates, const float* bias, float* c_state,
                            float* h_state, float* layer_out, int64_t ld_out,
                            const StepSaved<Storage>* saved) {
  cell_simd::cell_forward<Avx2, Storage>(rows, H, u_begin, u_end, gates, bias, c_state, h_state,
                                         layer_out, ld_out, saved);
}

void cell_pass_backward_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                             const float* i, const float* j, const float* f, const float* o,
                             const float* tanhc, const float* c_prev, const float* d_out,
                             int64_t ld_out, const float* dh_state, float* dc_state,
                             float* d_gates) {
  cell_simd::cell_backward<Avx2, float>(rows, H, u_begin, u_end, i, j, f, o, tanhc, c_prev,
                                        d_out, ld_out, dh_state, dc_state, d_gates);
}

void cell_pass_backward_bf16_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                  const uint16_t* i, const uint16_t* j, const uint16_t* f,
                                  const uint16_t* o, const uint16_t* tanhc,
                                  const uint16_t* c_prev, const float* d_out, int64_t ld_out,
                                  const float* dh_state, float* dc_state, float* d_gates) {
  cell_simd::cell_backward<Avx2, uint16_t>(rows, H, u_begin, u_end, i, j, f, o, tanhc, c_prev,
                                           d_out, ld_out, dh_state, dc_state, d_gates);
}

void sigmoid_avx2(int64_t n, const float* x, float* y) {
  cell_simd::apply<Avx2, cell_simd::sigmoid_v<Avx2>>(n, x, y);
}
void tanh_avx2(int64_t n, const float* x, float* y) {
  cell_simd::apply<Avx2, cell_simd::tanh_v<Avx2>>(n, x, y);
}

template void cell_pass_forward_avx2<float>(int64_t, int64_t, int64_t, int64_t, const float*,
                                            const float*, float*, float*, float*, int64_t,
                                            const StepSaved<float>*);
template void cell_pass_forward_avx2<Half>(int64_t, int64_t, int64_t, int64_t, const float*,
                                           const float*, float*, float*, float*, int64_t,
                                           const StepSaved<Half>*);
template void cell_pass_forward_avx2<BFloat16>(int64_t, int64_t, int64_t, int64_t, const float*,
                                               const float*, float*, float*, float*, int64_t,
                                               const StepSaved<BFloat16>*);

}  // namespace detail
}  // namespace lstmop
