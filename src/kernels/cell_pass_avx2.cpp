// AVX2 + FMA cell passes (cell_pass_isa.h): cell_pass_simd.h's bodies on
// 8-float vectors, forward and backward. Every function that uses these
// instructions carries LSTMOP_TARGET_AVX2; cell_pass.cpp calls in here only
// where kernel_choice() picked AVX2.
#include <immintrin.h>

#include "kernels/cell_pass_isa.h"
#include "kernels/isa_target.h"

#define LSTMOP_CELL_TARGET LSTMOP_TARGET_AVX2

namespace lstmop {
namespace detail {
namespace {

struct Avx2 {
  using reg = __m256;
  using mask = __m256;  // all-ones lanes where true
  using Tail = __m256i;
  static constexpr int64_t kLanes = 8;

  LSTMOP_CELL_TARGET static reg set1(float v) { return _mm256_set1_ps(v); }
  LSTMOP_CELL_TARGET static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  LSTMOP_CELL_TARGET static reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
  LSTMOP_CELL_TARGET static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  LSTMOP_CELL_TARGET static reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
  LSTMOP_CELL_TARGET static reg min(reg a, reg b) { return _mm256_min_ps(a, b); }
  LSTMOP_CELL_TARGET static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
  LSTMOP_CELL_TARGET static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  LSTMOP_CELL_TARGET static reg fnmadd(reg a, reg b, reg c) { return _mm256_fnmadd_ps(a, b, c); }
  LSTMOP_CELL_TARGET static reg round_nearest(reg x) {
    return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // 2^n: the exponent field n + 127 (a NaN n converts to INT_MIN).
  LSTMOP_CELL_TARGET static reg pow2i(reg n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  LSTMOP_CELL_TARGET static reg abs(reg x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
  LSTMOP_CELL_TARGET static reg with_sign_of(reg t, reg x) {
    return _mm256_or_ps(t, _mm256_and_ps(_mm256_set1_ps(-0.0f), x));
  }
  LSTMOP_CELL_TARGET static mask less(reg a, reg b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  LSTMOP_CELL_TARGET static reg zero_where(mask m, reg v) { return _mm256_andnot_ps(m, v); }
  LSTMOP_CELL_TARGET static reg select(mask m, reg a, reg b) { return _mm256_blendv_ps(a, b, m); }

  LSTMOP_CELL_TARGET static Tail tail(int64_t count) {
    const int n = count >= kLanes ? static_cast<int>(kLanes) : static_cast<int>(count);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  LSTMOP_CELL_TARGET static reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  LSTMOP_CELL_TARGET static void storeu(float* p, reg v) { _mm256_storeu_ps(p, v); }
  LSTMOP_CELL_TARGET static reg load_tail(Tail m, const float* p) { return _mm256_maskload_ps(p, m); }
  LSTMOP_CELL_TARGET static void store_tail(Tail m, float* p, reg v) { _mm256_maskstore_ps(p, m, v); }

  LSTMOP_CELL_TARGET static void store_bfloat16(uint16_t* p, reg v) {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i upper = _mm256_srli_epi32(x, 16);
    const __m256i rounding =
        _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(upper, _mm256_set1_epi32(1)));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, rounding), 16);
    const __m256i quiet_nan = _mm256_or_si256(upper, _mm256_set1_epi32(0x0040));
    const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m256i bits = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
    // 32-bit lanes (all <= 0xffff) to 16 bits: pack within 128-bit halves, then
    // gather the two useful quarters.
    const __m256i packed = _mm256_packus_epi32(bits, bits);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08)));
  }
};

}  // namespace
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
  cell_simd::cell_backward<Avx2>(rows, H, u_begin, u_end, i, j, f, o, tanhc, c_prev, d_out,
                                 ld_out, dh_state, dc_state, d_gates);
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
