// float16 <-> float32 runs (half_convert.h).
#include "common/half_convert.h"

#include <immintrin.h>

#include "kernels/cpu_features.h"
#include "kernels/isa_target.h"
#include "lstmop/tensor.h"

// GCC 12 warns inside avx512fintrin.h that the _mm512_undefined_epi32()
// pass-through operand of unmasked operations "may be used uninitialized" (a
// self-initialised dummy, never read: the mask is all ones).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace lstmop {
namespace detail {
namespace {

// 16 halves (zero-extended to 32-bit lanes) -> their floats' bits.
LSTMOP_TARGET_AVX512 inline __m512i widen16(__m512i h) {
  const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(h, _mm512_set1_epi32(0x8000)), 16);
  const __m512i e = _mm512_and_si512(_mm512_srli_epi32(h, 10), _mm512_set1_epi32(0x1f));
  const __m512i m = _mm512_and_si512(h, _mm512_set1_epi32(0x3ff));
  const __m512i m13 = _mm512_slli_epi32(m, 13);
  // Normal: the exponent rebiased (15 -> 127), the significand moved up.
  __m512i x = _mm512_or_si512(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(112)), 23), m13);
  // Infinity and NaN: the all-ones exponent, the significand as it is.
  const __mmask16 special = _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(0x1f));
  x = _mm512_mask_mov_epi32(x, special, _mm512_or_si512(_mm512_set1_epi32(0x7f800000), m13));
  // Zero and subnormal: m * 2^-24, exact (m < 2^10, the product >= 2^-24 is normal).
  const __mmask16 small = _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512());
  const __m512 value = _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_set1_ps(0x1p-24f));
  x = _mm512_mask_mov_epi32(x, small, _mm512_castps_si512(value));
  return _mm512_or_si512(x, sign);
}

LSTMOP_TARGET_AVX512 void halves_to_floats_avx512(const uint16_t* src, float* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512i h =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k)));
    _mm512_storeu_si512(dst + k, widen16(h));
  }
  for (; k < n; ++k) dst[k] = half_to_float(src[k]);
}

// vcvtps2ph, nearest even; NaN lanes the scalar function's bits (the same
// quiet NaN with the upper payload bits).
LSTMOP_TARGET_AVX512 inline __m256i narrow16(__m512 v) {
  const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512i x = _mm512_castps_si512(v);
  const __m512i a = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7f800000));
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x8000));
  const __m512i nan_bits = _mm512_or_si512(
      _mm512_or_si512(sign, _mm512_set1_epi32(0x7e00)),
      _mm512_and_si512(_mm512_srli_epi32(a, 13), _mm512_set1_epi32(0x3ff)));
  const __m512i wide = _mm512_mask_mov_epi32(_mm512_cvtepu16_epi32(h), nan, nan_bits);
  return _mm512_cvtepi32_epi16(wide);
}

LSTMOP_TARGET_AVX512 void floats_to_halves_avx512(const float* src, uint16_t* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), narrow16(_mm512_loadu_ps(src + k)));
  }
  for (; k < n; ++k) dst[k] = float_to_half(src[k]);
}

// The same 8 at a time with AVX2 + F16C (compares and blends for the masks).
LSTMOP_TARGET_AVX2 inline __m256i widen8(__m256i h) {
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16);
  const __m256i e = _mm256_and_si256(_mm256_srli_epi32(h, 10), _mm256_set1_epi32(0x1f));
  const __m256i m = _mm256_and_si256(h, _mm256_set1_epi32(0x3ff));
  const __m256i m13 = _mm256_slli_epi32(m, 13);
  __m256i x = _mm256_or_si256(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(112)), 23), m13);
  const __m256i special = _mm256_cmpeq_epi32(e, _mm256_set1_epi32(0x1f));
  x = _mm256_blendv_epi8(x, _mm256_or_si256(_mm256_set1_epi32(0x7f800000), m13), special);
  const __m256i small = _mm256_cmpeq_epi32(e, _mm256_setzero_si256());
  const __m256 value = _mm256_mul_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(0x1p-24f));
  x = _mm256_blendv_epi8(x, _mm256_castps_si256(value), small);
  return _mm256_or_si256(x, sign);
}

LSTMOP_TARGET_AVX2 void halves_to_floats_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256i h =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), widen8(h));
  }
  for (; k < n; ++k) dst[k] = half_to_float(src[k]);
}

LSTMOP_TARGET_AVX2 inline __m128i narrow8(__m256 v) {
  const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i x = _mm256_castps_si256(v);
  const __m256i a = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f800000));
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x8000));
  const __m256i nan_bits = _mm256_or_si256(
      _mm256_or_si256(sign, _mm256_set1_epi32(0x7e00)),
      _mm256_and_si256(_mm256_srli_epi32(a, 13), _mm256_set1_epi32(0x3ff)));
  // 32-bit lanes to 16 (values and masks fit: packus keeps them), in order.
  const __m256i packed_bits = _mm256_permute4x64_epi64(_mm256_packus_epi32(nan_bits, nan_bits), 0x08);
  const __m256i packed_mask = _mm256_permute4x64_epi64(_mm256_packs_epi32(nan, nan), 0x08);
  return _mm_blendv_epi8(h, _mm256_castsi256_si128(packed_bits),
                         _mm256_castsi256_si128(packed_mask));
}

LSTMOP_TARGET_AVX2 void floats_to_halves_avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k), narrow8(_mm256_loadu_ps(src + k)));
  }
  for (; k < n; ++k) dst[k] = float_to_half(src[k]);
}

// bfloat16 runs: widening is the bits moved up 16 places; narrowing is
// float_to_bfloat16's integer rounding (nearest even on the dropped 16 bits,
// overflow to infinity, a subnormal rounded as its bits say whatever MXCSR
// holds) with NaN lanes quieted, sign and payload kept. (vcvtneps2bf16
// would flush subnormal inputs to zero: not float_to_bfloat16's bits.)
LSTMOP_TARGET_AVX512 void bfloat16s_to_floats_avx512(const uint16_t* src, float* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512i h =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k)));
    _mm512_storeu_si512(dst + k, _mm512_slli_epi32(h, 16));
  }
  for (; k < n; ++k) dst[k] = bfloat16_to_float(src[k]);
}

LSTMOP_TARGET_AVX512 void floats_to_bfloat16s_avx512(const float* src, uint16_t* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512i x = _mm512_loadu_si512(src + k);
    const __m512i upper = _mm512_srli_epi32(x, 16);
    const __m512i rounding =
        _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(upper, _mm512_set1_epi32(1)));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, rounding), 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i bits =
        _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(upper, _mm512_set1_epi32(0x0040)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), _mm512_cvtepi32_epi16(bits));
  }
  for (; k < n; ++k) dst[k] = float_to_bfloat16(src[k]);
}

LSTMOP_TARGET_AVX2 void bfloat16s_to_floats_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256i h =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k), _mm256_slli_epi32(h, 16));
  }
  for (; k < n; ++k) dst[k] = bfloat16_to_float(src[k]);
}

// 8 floats' bfloat16 bits in the low 16 bits of their 32-bit lanes.
LSTMOP_TARGET_AVX2 inline __m256i bfloat16_lanes8(__m256i x) {
  const __m256i upper = _mm256_srli_epi32(x, 16);
  const __m256i rounding =
      _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(upper, _mm256_set1_epi32(1)));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, rounding), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(upper, _mm256_set1_epi32(0x0040)), nan);
}

LSTMOP_TARGET_AVX2 void floats_to_bfloat16s_avx2(const float* src, uint16_t* dst, int64_t n) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m256i a =
        bfloat16_lanes8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k)));
    const __m256i b =
        bfloat16_lanes8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + k + 8)));
    // packus (every lane <= 0xffff) interleaves 128-bit halves: a0-3 b0-3 a4-7 b4-7.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k),
                        _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8));
  }
  for (; k < n; ++k) dst[k] = float_to_bfloat16(src[k]);
}

// The vector body kernel_choice() picks for runs of 16 values and more, else
// the scalar conversion value by value.
template <class In, class Out, class Scalar>
void convert_run_by_isa(const In* src, Out* dst, int64_t n,
                        void (*avx512)(const In*, Out*, int64_t),
                        void (*avx2)(const In*, Out*, int64_t), Scalar scalar) {
  switch (n >= 16 ? kernels::kernel_choice().cap : kernels::Isa::Scalar) {
    case kernels::Isa::Avx512: avx512(src, dst, n); return;
    case kernels::Isa::Avx2: avx2(src, dst, n); return;
    case kernels::Isa::Scalar: break;
  }
  for (int64_t k = 0; k < n; ++k) dst[k] = scalar(src[k]);
}

}  // namespace

void halves_to_floats(const uint16_t* src, float* dst, int64_t n) {
  convert_run_by_isa(src, dst, n, halves_to_floats_avx512, halves_to_floats_avx2, half_to_float);
}

void floats_to_halves(const float* src, uint16_t* dst, int64_t n) {
  convert_run_by_isa(src, dst, n, floats_to_halves_avx512, floats_to_halves_avx2, float_to_half);
}

void bfloat16s_to_floats(const uint16_t* src, float* dst, int64_t n) {
  convert_run_by_isa(src, dst, n, bfloat16s_to_floats_avx512, bfloat16s_to_floats_avx2,
                     bfloat16_to_float);
}

void floats_to_bfloat16s(const float* src, uint16_t* dst, int64_t n) {
  convert_run_by_isa(src, dst, n, floats_to_bfloat16s_avx512, floats_to_bfloat16s_avx2,
                     float_to_bfloat16);
}

}  // namespace detail
}  // namespace lstmop
