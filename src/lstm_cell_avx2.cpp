// AVX2 + FMA cell passes (see lstm_cell_avx2.h). Every function that uses
// these instructions carries the target attribute; the library is built for
// the baseline ISA and calls in here only after cpu_has_avx2_fma().
#include "lstm_cell_avx2.h"

#include <immintrin.h>

#include <type_traits>

#include "element_access.h"

#define LSTMOP_TARGET_AVX2 __attribute__((target("avx2,fma")))

namespace lstmop {
namespace detail {
namespace {

constexpr int64_t kLanes = 8;

LSTMOP_TARGET_AVX2 inline __m256 exp_ps(__m256 x) {
  // max(lo, x) and min(hi, .) return their second operand when it is NaN.
  x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln 2 = 0.693359375 - 2.12194440e-4: n * 0.693359375 is exact for |n| < 2^15.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  // 2^n for n in [-126, 127]: the exponent field n + 127. A NaN n converts to
  // INT_MIN, but p is NaN then and so is the product.
  const __m256i bits = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

LSTMOP_TARGET_AVX2 inline __m256 sigmoid_ps(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
  const __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, e));
  // exp(-x) is capped at exp(88): give the exact limit 0 below -88 (false for NaN).
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-88.0f), _CMP_LT_OQ);
  return _mm256_andnot_ps(underflow, s);
}

LSTMOP_TARGET_AVX2 inline __m256 tanh_ps(__m256 x) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign_bit, x);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = exp_ps(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
  const __m256 large = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  // tanh x = x + x^3 (-1/3 + x^2 (2/15 + x^2 (-17/315 + ...))) for |x| < 0.3.
  const __m256 x2 = _mm256_mul_ps(ax, ax);
  __m256 q = _mm256_set1_ps(21844.0f / 6081075.0f);
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1382.0f / 155925.0f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(62.0f / 2835.0f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-17.0f / 315.0f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(2.0f / 15.0f));
  q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.0f / 3.0f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(q, x2), ax, ax);
  const __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.3f), _CMP_LT_OQ);
  const __m256 t = _mm256_blendv_ps(large, small, is_small);
  return _mm256_or_ps(t, _mm256_and_ps(sign_bit, x));
}

// Lanes k < remaining set (all when remaining >= 8).
LSTMOP_TARGET_AVX2 inline __m256i tail_mask(int64_t remaining) {
  const int n = remaining >= kLanes ? static_cast<int>(kLanes) : static_cast<int>(remaining);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Full vectors use plain loads and stores, only a row's last partial vector
// the masked ones (much slower on AMD's cores); the arithmetic is the same.
template <bool kFull>
LSTMOP_TARGET_AVX2 inline __m256 load(__m256i m, const float* p) {
  if constexpr (kFull) {
    (void)m;
    return _mm256_loadu_ps(p);
  } else {
    return _mm256_maskload_ps(p, m);
  }
}
template <bool kFull>
LSTMOP_TARGET_AVX2 inline void store(__m256i m, float* p, __m256 v) {
  if constexpr (kFull) {
    (void)m;
    _mm256_storeu_ps(p, v);
  } else {
    _mm256_maskstore_ps(p, m, v);
  }
}

// gates + bias of one gate block, 8 columns (masked).
template <bool kFull>
LSTMOP_TARGET_AVX2 inline __m256 preactivation(__m256i m, const float* a, const float* bias) {
  return _mm256_add_ps(load<kFull>(m, a), load<kFull>(m, bias));
}

// Saved-tensor stores: float directly, other storage types rounded element
// by element (StoreAs, round to nearest even).
// 8 floats rounded to bfloat16 bits (float_to_bfloat16 of tensor.h: nearest
// even, NaN quieted with sign and payload kept), in the low 128 bits.
LSTMOP_TARGET_AVX2 inline __m128i to_bfloat16(__m256 v) {
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
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

template <bool kFull, class S>
LSTMOP_TARGET_AVX2 inline void store_saved(S* dst, __m256i m, int64_t count, __m256 v) {
  if constexpr (std::is_same_v<S, float>) {
    (void)count;
    store<kFull>(m, dst, v);
  } else if constexpr (std::is_same_v<S, BFloat16> && kFull) {
    (void)m, (void)count;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), to_bfloat16(v));
  } else {
    alignas(32) float tmp[kLanes];
    _mm256_store_ps(tmp, v);
    for (int64_t e = 0; e < count; ++e) dst[e] = StoreAs<S>::from(tmp[e]);
  }
}

// Columns [k, k + count) of one row.
template <bool kFull, class S>
LSTMOP_TARGET_AVX2 inline void forward_block(int64_t H, int64_t k, int64_t count, const float* a,
                                             const float* bias, float* c, float* h, float* out,
                                             const StepSaved<S>* saved, int64_t e) {
  const __m256i m = tail_mask(count);
  const __m256 gi = sigmoid_ps(preactivation<kFull>(m, a + k, bias + k));
  const __m256 gf = sigmoid_ps(preactivation<kFull>(m, a + H + k, bias + H + k));
  const __m256 gj = tanh_ps(preactivation<kFull>(m, a + 2 * H + k, bias + 2 * H + k));
  const __m256 go = sigmoid_ps(preactivation<kFull>(m, a + 3 * H + k, bias + 3 * H + k));
  const __m256 cn =
      _mm256_add_ps(_mm256_mul_ps(gf, load<kFull>(m, c + k)), _mm256_mul_ps(gi, gj));
  const __m256 tc = tanh_ps(cn);
  const __m256 hn = _mm256_mul_ps(go, tc);
  store<kFull>(m, c + k, cn);
  store<kFull>(m, h + k, hn);
  store<kFull>(m, out + k, hn);
  if (saved != nullptr) {
    store_saved<kFull>(saved->i + e, m, count, gi);
    store_saved<kFull>(saved->j + e, m, count, gj);
    store_saved<kFull>(saved->f + e, m, count, gf);
    store_saved<kFull>(saved->o + e, m, count, go);
    store_saved<kFull>(saved->c + e, m, count, cn);
    store_saved<kFull>(saved->tanhc + e, m, count, tc);
    store_saved<kFull>(saved->h + e, m, count, hn);
  }
}

template <class S>
LSTMOP_TARGET_AVX2 void cell_forward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                     const float* gates, const float* bias, float* c_state,
                                     float* h_state, float* layer_out, int64_t ld_out,
                                     const StepSaved<S>* saved) {
  const int64_t G = 4 * H;
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = gates + r * G;
    float* c = c_state + r * H;
    float* h = h_state + r * H;
    float* out = layer_out + r * ld_out;
    int64_t k = u_begin;
    for (; k + kLanes <= u_end; k += kLanes) {
      forward_block<true, S>(H, k, kLanes, a, bias, c, h, out, saved, r * H + k);
    }
    if (k < u_end) forward_block<false, S>(H, k, u_end - k, a, bias, c, h, out, saved, r * H + k);
  }
}

template <bool kFull>
LSTMOP_TARGET_AVX2 inline void backward_block(int64_t H, int64_t k, int64_t count, int64_t e,
                                              const float* i, const float* j, const float* f,
                                              const float* o, const float* tanhc,
                                              const float* c_prev, const float* dy,
                                              const float* dh_state, float* dc_state,
                                              float* dg) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256i m = tail_mask(count);
  const __m256 gi = load<kFull>(m, i + e), gj = load<kFull>(m, j + e);
  const __m256 gf = load<kFull>(m, f + e), go = load<kFull>(m, o + e);
  const __m256 tc = load<kFull>(m, tanhc + e);
  const __m256 dh = _mm256_add_ps(load<kFull>(m, dh_state + e), load<kFull>(m, dy + k));
  const __m256 dc = _mm256_add_ps(
      load<kFull>(m, dc_state + e),
      _mm256_mul_ps(_mm256_mul_ps(dh, go), _mm256_sub_ps(one, _mm256_mul_ps(tc, tc))));
  const __m256 d_i =
      _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dc, gj), gi), _mm256_sub_ps(one, gi));
  const __m256 d_f =
      _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dc, load<kFull>(m, c_prev + e)), gf),
                    _mm256_sub_ps(one, gf));
  const __m256 d_g =
      _mm256_mul_ps(_mm256_mul_ps(dc, gi), _mm256_sub_ps(one, _mm256_mul_ps(gj, gj)));
  const __m256 d_o =
      _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(dh, tc), go), _mm256_sub_ps(one, go));
  store<kFull>(m, dg + k, d_i);
  store<kFull>(m, dg + H + k, d_f);
  store<kFull>(m, dg + 2 * H + k, d_g);
  store<kFull>(m, dg + 3 * H + k, d_o);
  store<kFull>(m, dc_state + e, _mm256_mul_ps(dc, gf));
}

LSTMOP_TARGET_AVX2 void cell_backward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                      const float* i, const float* j,
                                      const float* f, const float* o, const float* tanhc,
                                      const float* c_prev, const float* d_out, int64_t ld_out,
                                      const float* dh_state, float* dc_state, float* d_gates) {
  const int64_t G = 4 * H;
  for (int64_t r = 0; r < rows; ++r) {
    const float* dy = d_out + r * ld_out;
    float* dg = d_gates + r * G;
    int64_t k = u_begin;
    for (; k + kLanes <= u_end; k += kLanes) {
      backward_block<true>(H, k, kLanes, r * H + k, i, j, f, o, tanhc, c_prev, dy, dh_state,
                           dc_state, dg);
    }
    if (k < u_end) {
      backward_block<false>(H, k, u_end - k, r * H + k, i, j, f, o, tanhc, c_prev, dy, dh_state,
                            dc_state, dg);
    }
  }
}

template <__m256 (*F)(__m256)>
LSTMOP_TARGET_AVX2 void apply(int64_t n, const float* x, float* y) {
  for (int64_t k = 0; k < n; k += kLanes) {
    const __m256i m = tail_mask(n - k);
    store<false>(m, y + k, F(load<false>(m, x + k)));
  }
}

}  // namespace

bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

template <class S>
void lstm_cell_forward_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                            const float* gates, const float* bias, float* c_state,
                            float* h_state, float* layer_out, int64_t ld_out,
                            const StepSaved<S>* saved) {
  cell_forward<S>(rows, H, u_begin, u_end, gates, bias, c_state, h_state, layer_out, ld_out,
                  saved);
}

void lstm_cell_backward_avx2(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                             const float* i, const float* j,
                             const float* f, const float* o, const float* tanhc,
                             const float* c_prev, const float* d_out, int64_t ld_out,
                             const float* dh_state, float* dc_state, float* d_gates) {
  cell_backward(rows, H, u_begin, u_end, i, j, f, o, tanhc, c_prev, d_out, ld_out, dh_state,
                dc_state, d_gates);
}

void sigmoid_avx2(int64_t n, const float* x, float* y) { apply<sigmoid_ps>(n, x, y); }
void tanh_avx2(int64_t n, const float* x, float* y) { apply<tanh_ps>(n, x, y); }

template void lstm_cell_forward_avx2<float>(int64_t, int64_t, int64_t, int64_t, const float*, const float*, float*,
                                            float*, float*, int64_t, const StepSaved<float>*);
template void lstm_cell_forward_avx2<Half>(int64_t, int64_t, int64_t, int64_t, const float*, const float*, float*,
                                           float*, float*, int64_t, const StepSaved<Half>*);
template void lstm_cell_forward_avx2<BFloat16>(int64_t, int64_t, int64_t, int64_t, const float*, const float*,
                                               float*, float*, float*, int64_t,
                                               const StepSaved<BFloat16>*);

}  // namespace detail
}  // namespace lstmop
