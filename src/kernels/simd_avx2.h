// Internal: the AVX2 vector type of the kernels' SIMD bodies (8 floats, AVX2 + FMA + F16C),
// shared by every AVX2 kernel file (cell_pass_simd.h, step_forward_simd.h).
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
// Every member carries LSTMOP_TARGET_AVX2: only code running where
// kernel_choice() (cpu_features.h) picked AVX2 may call them.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/isa_target.h"

namespace lstmop {
namespace detail {
namespace simd {

struct Avx2 {
  using reg = __m256;
  using mask = __m256;  // all-ones lanes where true
  using Tail = __m256i;
  static constexpr int64_t kLanes = 8;

  LSTMOP_TARGET_AVX2 static reg set1(float v) { return _mm256_set1_ps(v); }
  LSTMOP_TARGET_AVX2 static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  LSTMOP_TARGET_AVX2 static reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
  LSTMOP_TARGET_AVX2 static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  LSTMOP_TARGET_AVX2 static reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
  LSTMOP_TARGET_AVX2 static reg min(reg a, reg b) { return _mm256_min_ps(a, b); }
  LSTMOP_TARGET_AVX2 static reg max(reg a, reg b) { return _mm256_max_ps(a, b); }
  LSTMOP_TARGET_AVX2 static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  LSTMOP_TARGET_AVX2 static reg fnmadd(reg a, reg b, reg c) { return _mm256_fnmadd_ps(a, b, c); }
  LSTMOP_TARGET_AVX2 static reg fnmsub(reg a, reg b, reg c) { return _mm256_fnmsub_ps(a, b, c); }
  // 2^n: the exponent field n + 127 (a NaN n converts to INT_MIN).
  LSTMOP_TARGET_AVX2 static reg pow2i(reg n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  // p * 2^n for integral n in [-127, 127].
  LSTMOP_TARGET_AVX2 static reg scale2(reg p, reg n) { return mul(p, pow2i(n)); }
  LSTMOP_TARGET_AVX2 static reg abs(reg x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
  LSTMOP_TARGET_AVX2 static reg with_sign_of(reg t, reg x) {
    return _mm256_or_ps(t, _mm256_and_ps(_mm256_set1_ps(-0.0f), x));
  }
  LSTMOP_TARGET_AVX2 static mask less(reg a, reg b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  LSTMOP_TARGET_AVX2 static reg zero_where(mask m, reg v) { return _mm256_andnot_ps(m, v); }
  LSTMOP_TARGET_AVX2 static reg div_zero_where(mask m, reg a, reg b) {
    return zero_where(m, div(a, b));
  }

  LSTMOP_TARGET_AVX2 static Tail tail(int64_t count) {
    const int n = count >= kLanes ? static_cast<int>(kLanes) : static_cast<int>(count);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  LSTMOP_TARGET_AVX2 static reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  LSTMOP_TARGET_AVX2 static void storeu(float* p, reg v) { _mm256_storeu_ps(p, v); }
  // A streaming store; p 32-byte aligned.
  LSTMOP_TARGET_AVX2 static void stream(float* p, reg v) { _mm256_stream_ps(p, v); }
  LSTMOP_TARGET_AVX2 static reg load_tail(Tail m, const float* p) { return _mm256_maskload_ps(p, m); }
  LSTMOP_TARGET_AVX2 static void store_tail(Tail m, float* p, reg v) { _mm256_maskstore_ps(p, m, v); }

  LSTMOP_TARGET_AVX2 static void store_bfloat16(uint16_t* p, reg v) {
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

  LSTMOP_TARGET_AVX2 static reg load_bfloat16(const uint16_t* p) {
    const __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
  }

  // float_to_bfloat16 of tensor.h per lane, kept as a float (low 16 bits 0).
  LSTMOP_TARGET_AVX2 static reg round_bfloat16(reg v) {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    const __m256i quiet_nan = _mm256_or_si256(x, _mm256_set1_epi32(0x00400000));
    const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m256i bits = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
    return _mm256_castsi256_ps(_mm256_and_si256(bits, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  // vcvtps2ph rounds to nearest even (the immediate), like float_to_half.
  LSTMOP_TARGET_AVX2 static reg round_half(reg v) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  LSTMOP_TARGET_AVX2 static void store_half(uint16_t* p, reg v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

}  // namespace simd
}  // namespace detail
}  // namespace lstmop
