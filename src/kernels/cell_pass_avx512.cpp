// AVX-512 forward cell pass (cell_pass_isa.h): cell_pass_simd.h's body on
// 16-float vectors, with the same lane-wise operations as the AVX2 ones
// (cell_pass_avx2.cpp), hence the same bits for every element; masked tails
// are cheap here. Every function that uses these instructions carries
// LSTMOP_TARGET_AVX512; cell_pass.cpp calls in here only where
// kernel_choice() picked AVX-512. (No backward body: an AVX-512 form of that
// memory-bound pass measured no faster than the AVX2 one.)
#include <immintrin.h>

#include "kernels/cell_pass_isa.h"
#include "kernels/isa_target.h"

// GCC 12 warns inside avx512fintrin.h that the _mm512_undefined_ps()
// pass-through operand of the unmasked min/max/roundscale "may be used
// uninitialized" (it is a self-initialised dummy, never read: the mask is all
// ones).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define LSTMOP_CELL_TARGET LSTMOP_TARGET_AVX512

namespace lstmop {
namespace detail {
namespace {

struct Avx512 {
  using reg = __m512;
  using mask = __mmask16;
  using Tail = __mmask16;
  static constexpr int64_t kLanes = 16;

  LSTMOP_CELL_TARGET static reg set1(float v) { return _mm512_set1_ps(v); }
  LSTMOP_CELL_TARGET static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  LSTMOP_CELL_TARGET static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  LSTMOP_CELL_TARGET static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  LSTMOP_CELL_TARGET static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  // vminps / vmaxps: the second operand when either is NaN, as in AVX2.
  LSTMOP_CELL_TARGET static reg min(reg a, reg b) { return _mm512_min_ps(a, b); }
  LSTMOP_CELL_TARGET static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
  LSTMOP_CELL_TARGET static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  LSTMOP_CELL_TARGET static reg fnmadd(reg a, reg b, reg c) { return _mm512_fnmadd_ps(a, b, c); }
  LSTMOP_CELL_TARGET static reg round_nearest(reg x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  LSTMOP_CELL_TARGET static reg pow2i(reg n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  LSTMOP_CELL_TARGET static reg abs(reg x) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
  }
  LSTMOP_CELL_TARGET static reg with_sign_of(reg t, reg x) {
    const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
  }
  LSTMOP_CELL_TARGET static mask less(reg a, reg b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  LSTMOP_CELL_TARGET static reg zero_where(mask m, reg v) {
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~m), v);
  }
  LSTMOP_CELL_TARGET static reg select(mask m, reg a, reg b) { return _mm512_mask_blend_ps(m, a, b); }

  LSTMOP_CELL_TARGET static Tail tail(int64_t count) {
    return count >= kLanes ? static_cast<__mmask16>(0xffff)
                           : static_cast<__mmask16>((1u << count) - 1u);
  }
  LSTMOP_CELL_TARGET static reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  LSTMOP_CELL_TARGET static void storeu(float* p, reg v) { _mm512_storeu_ps(p, v); }
  LSTMOP_CELL_TARGET static reg load_tail(Tail m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  LSTMOP_CELL_TARGET static void store_tail(Tail m, float* p, reg v) { _mm512_mask_storeu_ps(p, m, v); }

  // float_to_bfloat16 per lane, the AVX2 store's integer steps.
  LSTMOP_CELL_TARGET static void store_bfloat16(uint16_t* p, reg v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i upper = _mm512_srli_epi32(x, 16);
    const __m512i rounding =
        _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(upper, _mm512_set1_epi32(1)));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, rounding), 16);
    const __m512i quiet_nan = _mm512_or_si512(upper, _mm512_set1_epi32(0x0040));
    const __mmask16 is_nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i bits = _mm512_mask_blend_epi32(is_nan, rounded, quiet_nan);
    // 32-bit lanes, all <= 0xffff, truncated to 16 bits.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bits));
  }
};

}  // namespace
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

void sigmoid_avx512(int64_t n, const float* x, float* y) {
  cell_simd::apply<Avx512, cell_simd::sigmoid_v<Avx512>>(n, x, y);
}
void tanh_avx512(int64_t n, const float* x, float* y) {
  cell_simd::apply<Avx512, cell_simd::tanh_v<Avx512>>(n, x, y);
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
