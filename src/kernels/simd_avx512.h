// Internal: the AVX-512 vector type of the kernels' SIMD bodies (16 floats, AVX-512 F/BW),
// shared by every AVX-512 kernel file (cell_pass_simd.h, step_forward_simd.h).
//
// V provides (every operation lane-wise, the same IEEE operation in both ISAs,
// so both give the same bits for every element):
//   reg, mask (a lane predicate), kLanes;
//   set1, add, sub, mul, div, min, max (min(a, b) / max(a, b) return b when
//   either is NaN), fmadd(a, b, c) = a*b + c, fnmadd(a, b, c) = c - a*b and
//   fnmsub(a, b, c) = -(a*b) - c fused, pow2i(n) = 2^n for integral n in
//   [-127, 127] as a float built from the exponent bits, scale2(p, n) = p *
//   2^n for integral n (exact where the result is a normal float: mul(p,
//   pow2i(n)) in AVX2, vscalefps in AVX-512), abs, with_sign_of(t, x) = t
//   with x's sign bit or-ed in;
//   less(a, b) (ordered a < b, false for NaN), zero_where(m, v),
//   div_zero_where(m, a, b) = zero_where(m, div(a, b));
//   Tail tail(count): the lanes k < count (all when count >= kLanes);
//   loadu, storeu, load_tail(Tail, p), store_tail(Tail, p, v);
//   round_bfloat16(v), round_half(v): each lane rounded to the nearest
//   bfloat16 / float16 value (ties to even, NaN stays NaN, float16 overflow
//   to infinity), returned as floats;
//   store_bfloat16(uint16_t* p, v), store_half(uint16_t* p, v) for a full
//   vector of values (tensor.h's conversions lane by lane);
//   load_bfloat16(const uint16_t* p): a full vector of bfloat16 bits widened
//   to floats (exact; the backward cell pass's saved tensors).
//
// Every member carries LSTMOP_TARGET_AVX512: only code running where
// kernel_choice() (cpu_features.h) picked AVX-512 may call them.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/isa_target.h"

// GCC 12 warns inside avx512fintrin.h that the _mm512_undefined_ps()
// pass-through operand of the unmasked min/max/roundscale "may be used
// uninitialized" (a self-initialised dummy, never read: the mask is all ones).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace lstmop {
namespace detail {
namespace simd {

struct Avx512 {
  using reg = __m512;
  using mask = __mmask16;
  using Tail = __mmask16;
  static constexpr int64_t kLanes = 16;

  LSTMOP_TARGET_AVX512 static reg set1(float v) { return _mm512_set1_ps(v); }
  LSTMOP_TARGET_AVX512 static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  LSTMOP_TARGET_AVX512 static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  LSTMOP_TARGET_AVX512 static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  LSTMOP_TARGET_AVX512 static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  // vminps / vmaxps: the second operand when either is NaN, as in AVX2.
  LSTMOP_TARGET_AVX512 static reg min(reg a, reg b) { return _mm512_min_ps(a, b); }
  LSTMOP_TARGET_AVX512 static reg max(reg a, reg b) { return _mm512_max_ps(a, b); }
  LSTMOP_TARGET_AVX512 static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  LSTMOP_TARGET_AVX512 static reg fnmadd(reg a, reg b, reg c) { return _mm512_fnmadd_ps(a, b, c); }
  LSTMOP_TARGET_AVX512 static reg fnmsub(reg a, reg b, reg c) { return _mm512_fnmsub_ps(a, b, c); }
  LSTMOP_TARGET_AVX512 static reg pow2i(reg n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  // p * 2^n for integral n: vscalefps, exact where p * 2^n is a normal float
  // (then the same as mul(p, pow2i(n))).
  LSTMOP_TARGET_AVX512 static reg scale2(reg p, reg n) { return _mm512_scalef_ps(p, n); }
  LSTMOP_TARGET_AVX512 static reg abs(reg x) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
  }
  LSTMOP_TARGET_AVX512 static reg with_sign_of(reg t, reg x) {
    const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t), sign));
  }
  LSTMOP_TARGET_AVX512 static mask less(reg a, reg b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  LSTMOP_TARGET_AVX512 static reg zero_where(mask m, reg v) {
    return _mm512_maskz_mov_ps(static_cast<__mmask16>(~m), v);
  }
  LSTMOP_TARGET_AVX512 static reg div_zero_where(mask m, reg a, reg b) {
    return _mm512_maskz_div_ps(static_cast<__mmask16>(~m), a, b);
  }

  LSTMOP_TARGET_AVX512 static Tail tail(int64_t count) {
    return count >= kLanes ? static_cast<__mmask16>(0xffff)
                           : static_cast<__mmask16>((1u << count) - 1u);
  }
  LSTMOP_TARGET_AVX512 static reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  LSTMOP_TARGET_AVX512 static void storeu(float* p, reg v) { _mm512_storeu_ps(p, v); }
  // A streaming store; p 64-byte aligned.
  LSTMOP_TARGET_AVX512 static void stream(float* p, reg v) { _mm512_stream_ps(p, v); }
  LSTMOP_TARGET_AVX512 static reg load_tail(Tail m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  LSTMOP_TARGET_AVX512 static void store_tail(Tail m, float* p, reg v) { _mm512_mask_storeu_ps(p, m, v); }

  LSTMOP_TARGET_AVX512 static reg load_bfloat16(const uint16_t* p) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }

  // float_to_bfloat16 per lane, the AVX2 store's integer steps.
  LSTMOP_TARGET_AVX512 static void store_bfloat16(uint16_t* p, reg v) {
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

  // float_to_bfloat16 of tensor.h per lane, kept as a float (low 16 bits 0).
  LSTMOP_TARGET_AVX512 static reg round_bfloat16(reg v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    const __m512i quiet_nan = _mm512_or_si512(x, _mm512_set1_epi32(0x00400000));
    const __mmask16 is_nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i bits = _mm512_mask_blend_epi32(is_nan, rounded, quiet_nan);
    return _mm512_castsi512_ps(_mm512_and_si512(bits, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  // vcvtps2ph rounds to nearest even (the immediate), like float_to_half.
  LSTMOP_TARGET_AVX512 static reg round_half(reg v) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  LSTMOP_TARGET_AVX512 static void store_half(uint16_t* p, reg v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

}  // namespace simd
}  // namespace detail
}  // namespace lstmop
