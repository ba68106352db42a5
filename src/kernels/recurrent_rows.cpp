// The recurrent product of a few rows on w_hh as stored (recurrent_rows.h):
// AVX-512 and AVX2 bodies (target attributes, isa_target.h) and a generic one.
#include "kernels/recurrent_rows.h"

#include <immintrin.h>

#include <cmath>

#include "kernels/cpu_features.h"
#include "kernels/isa_target.h"

// GCC 12 warns inside avx512fintrin.h that the _mm512_undefined_ps()
// pass-through operand of the unmasked shuffle "is used uninitialized" (a
// dummy, never read: the mask is all ones), as in simd_avx512.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace lstmop {
namespace detail {
namespace {

// Gate rows per block: 4 rows x 4 gate rows = 16 vector accumulators.
constexpr int kRowsAtOnce = 4;
constexpr int kColumnsAtOnce = 4;

// The four sums of a[0..3] (8 lanes each) as one 4-lane vector: lanes
// added in pairs, then pairs of pairs, then the two 128-bit halves.
LSTMOP_TARGET_AVX2 inline __m128 sum4_avx2(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

template <int R>
LSTMOP_TARGET_AVX512 void block_avx512(int64_t n, int64_t K, const float* h, int64_t ld_h,
                                       const float* w, int64_t ld_w, float* out,
                                       int64_t ld_out, int64_t columns) {
  __m512 acc[R][kColumnsAtOnce];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < kColumnsAtOnce; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const float* wr[kColumnsAtOnce];
#pragma GCC unroll 4
  for (int j = 0; j < kColumnsAtOnce; ++j) wr[j] = w + (n + (j < columns ? j : 0)) * ld_w;
  for (int64_t k = 0; k < K; k += 16) {
    const __mmask16 m = K - k >= 16 ? static_cast<__mmask16>(0xffff)
                                    : static_cast<__mmask16>((1u << (K - k)) - 1u);
    __m512 b[kColumnsAtOnce];
#pragma GCC unroll 4
    for (int j = 0; j < kColumnsAtOnce; ++j) b[j] = _mm512_maskz_loadu_ps(m, wr[j] + k);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_maskz_loadu_ps(m, h + r * ld_h + k);
#pragma GCC unroll 4
      for (int j = 0; j < kColumnsAtOnce; ++j) acc[r][j] = _mm512_fmadd_ps(a, b[j], acc[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    __m256 half[kColumnsAtOnce];
#pragma GCC unroll 4
    for (int j = 0; j < kColumnsAtOnce; ++j) {
      const __m512 upper = _mm512_shuffle_f32x4(acc[r][j], acc[r][j], 0xEE);
      half[j] = _mm256_add_ps(_mm512_castps512_ps256(acc[r][j]), _mm512_castps512_ps256(upper));
    }
    alignas(16) float s[4];
    _mm_store_ps(s, sum4_avx2(half[0], half[1], half[2], half[3]));
    for (int j = 0; j < columns; ++j) out[r * ld_out + n + j] += s[j];
  }
}

template <int R>
LSTMOP_TARGET_AVX2 void block_avx2(int64_t n, int64_t K, const float* h, int64_t ld_h,
                                   const float* w, int64_t ld_w, float* out, int64_t ld_out,
                                   int64_t columns) {
  __m256 acc[R][kColumnsAtOnce];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int j = 0; j < kColumnsAtOnce; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  const float* wr[kColumnsAtOnce];
#pragma GCC unroll 4
  for (int j = 0; j < kColumnsAtOnce; ++j) wr[j] = w + (n + (j < columns ? j : 0)) * ld_w;
  const int64_t full = K / 8 * 8;
  for (int64_t k = 0; k < K; k += 8) {
    __m256 b[kColumnsAtOnce];
    if (k < full) {
#pragma GCC unroll 4
      for (int j = 0; j < kColumnsAtOnce; ++j) b[j] = _mm256_loadu_ps(wr[j] + k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256 a = _mm256_loadu_ps(h + r * ld_h + k);
#pragma GCC unroll 4
        for (int j = 0; j < kColumnsAtOnce; ++j) acc[r][j] = _mm256_fmadd_ps(a, b[j], acc[r][j]);
      }
      continue;
    }
    // The last K - full columns, zero past K (no read past a row).
    alignas(32) float wt[kColumnsAtOnce][8] = {}, at[8] = {};
#pragma GCC unroll 4
    for (int j = 0; j < kColumnsAtOnce; ++j) {
      for (int64_t e = k; e < K; ++e) wt[j][e - k] = wr[j][e];
      b[j] = _mm256_load_ps(wt[j]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      for (int64_t e = k; e < K; ++e) at[e - k] = h[r * ld_h + e];
      const __m256 a = _mm256_load_ps(at);
#pragma GCC unroll 4
      for (int j = 0; j < kColumnsAtOnce; ++j) acc[r][j] = _mm256_fmadd_ps(a, b[j], acc[r][j]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    alignas(16) float s[4];
    _mm_store_ps(s, sum4_avx2(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
    for (int j = 0; j < columns; ++j) out[r * ld_out + n + j] += s[j];
  }
}

// The generic body: the AVX-512 body's operations in its order (its bits):
// 16 lane chains of fma over k = lane (mod 16), the lanes past K adding
// fma(0, 0, .), then lane i + lane i + 8, then ((0 + 1) + (2 + 3)) + ((4 +
// 5) + (6 + 7)).
void block_generic(int64_t rows, int64_t n, int64_t K, const float* h, int64_t ld_h,
                   const float* w, int64_t ld_w, float* out, int64_t ld_out, int64_t columns) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < columns; ++j) {
      const float* a = h + r * ld_h;
      const float* b = w + (n + j) * ld_w;
      float lane[16] = {};
      for (int64_t k0 = 0; k0 < K; k0 += 16) {
        for (int64_t e = 0; e < 16; ++e) {
          const bool in = k0 + e < K;
          lane[e] = std::fma(in ? a[k0 + e] : 0.0f, in ? b[k0 + e] : 0.0f, lane[e]);
        }
      }
      float half[8];
      for (int e = 0; e < 8; ++e) half[e] = lane[e] + lane[e + 8];
      const float sum = ((half[0] + half[1]) + (half[2] + half[3])) +
                        ((half[4] + half[5]) + (half[6] + half[7]));
      out[r * ld_out + n + j] += sum;
    }
  }
}

template <int R>
void block(kernels::Isa isa, int64_t n, int64_t K, const float* h, int64_t ld_h, const float* w,
           int64_t ld_w, float* out, int64_t ld_out, int64_t columns) {
  switch (isa) {
    case kernels::Isa::Avx512:
      block_avx512<R>(n, K, h, ld_h, w, ld_w, out, ld_out, columns);
      return;
    case kernels::Isa::Avx2:
      block_avx2<R>(n, K, h, ld_h, w, ld_w, out, ld_out, columns);
      return;
    case kernels::Isa::Scalar: break;
  }
  block_generic(R, n, K, h, ld_h, w, ld_w, out, ld_out, columns);
}

}  // namespace

void recurrent_rows_product(kernels::Isa isa, int64_t rows, int64_t n_begin, int64_t n_end,
                            int64_t K, const float* h, int64_t ld_h, const float* w,
                            int64_t ld_w, float* out, int64_t ld_out) {
  for (int64_t r0 = 0; r0 < rows; r0 += kRowsAtOnce) {
    const int64_t R = rows - r0 < kRowsAtOnce ? rows - r0 : kRowsAtOnce;
    const float* hr = h + r0 * ld_h;
    float* o = out + r0 * ld_out;
    for (int64_t n = n_begin; n < n_end; n += kColumnsAtOnce) {
      const int64_t columns = n_end - n < kColumnsAtOnce ? n_end - n : kColumnsAtOnce;
      switch (R) {
        case 1: block<1>(isa, n, K, hr, ld_h, w, ld_w, o, ld_out, columns); break;
        case 2: block<2>(isa, n, K, hr, ld_h, w, ld_w, o, ld_out, columns); break;
        case 3: block<3>(isa, n, K, hr, ld_h, w, ld_w, o, ld_out, columns); break;
        default: block<4>(isa, n, K, hr, ld_h, w, ld_w, o, ld_out, columns); break;
      }
    }
  }
}

}  // namespace detail
}  // namespace lstmop
