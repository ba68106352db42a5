// AVX2 + FMA register tiles of the per-step product (recurrent_product_isa.h):
// blocks of up to 6 rows x one 16-column panel (12 ymm accumulators), a
// single row four panels at a time. recurrent_product_avx512.cpp has the same
// numerics with wider tiles.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/isa_target.h"
#include "kernels/recurrent_product_isa.h"

namespace lstmop {
namespace detail {
namespace {

constexpr int64_t kPanel = kRecurrentPanel;  // 16 columns = 2 ymm
static_assert(kPanel == 16, "the tiles below hold a panel in two ymm registers");

// Lanes k < valid (0..8) set.
LSTMOP_TARGET_AVX2 inline __m256i lanes(int64_t valid) {
  const int v = valid < 0 ? 0 : valid > 8 ? 8 : static_cast<int>(valid);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// R rows x one panel (cols <= 16 valid columns of C), with the numerics of
// recurrent_product_isa.h: c = fma(a[kk], b[kk], c) for kk = 0..k-1 from C's
// value. 2R <= 12 accumulators in registers (GCC keeps the unrolled arrays in
// ymm0-15; checked with objdump).
template <int R, bool kFull>
LSTMOP_TARGET_AVX2 inline void tile_rows_body(int64_t k, const float* a, int64_t lda,
                                              const float* panel, float* c, int64_t ldc,
                                              int64_t cols) {
  // Masked loads and stores only for a partial panel (they are slow on AMD).
  const __m256i m0 = lanes(cols), m1 = lanes(cols - 8);
  __m256 lo[R], hi[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if constexpr (kFull) {
      lo[r] = _mm256_loadu_ps(c + r * ldc);
      hi[r] = _mm256_loadu_ps(c + r * ldc + 8);
    } else {
      lo[r] = _mm256_maskload_ps(c + r * ldc, m0);
      hi[r] = _mm256_maskload_ps(c + r * ldc + 8, m1);
    }
  }
  for (int64_t kk = 0; kk < k; ++kk) {
    const __m256 b0 = _mm256_loadu_ps(panel + kk * kPanel);
    const __m256 b1 = _mm256_loadu_ps(panel + kk * kPanel + 8);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + kk);
      lo[r] = _mm256_fmadd_ps(av, b0, lo[r]);
      hi[r] = _mm256_fmadd_ps(av, b1, hi[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if constexpr (kFull) {
      _mm256_storeu_ps(c + r * ldc, lo[r]);
      _mm256_storeu_ps(c + r * ldc + 8, hi[r]);
    } else {
      _mm256_maskstore_ps(c + r * ldc, m0, lo[r]);
      _mm256_maskstore_ps(c + r * ldc + 8, m1, hi[r]);
    }
  }
}

template <int R>
LSTMOP_TARGET_AVX2 void tile_rows(int64_t k, const float* a, int64_t lda, const float* panel,
                                  float* c, int64_t ldc, int64_t cols) {
  if (cols == kPanel) {
    tile_rows_body<R, true>(k, a, lda, panel, c, ldc, cols);
  } else {
    tile_rows_body<R, false>(k, a, lda, panel, c, ldc, cols);
  }
}

// One row x four full panels (64 columns): 8 independent fma chains, enough
// to hide the fma latency when the batch is 1.
LSTMOP_TARGET_AVX2 void tile_row_4_panels(int64_t k, const float* a, const float* panels,
                                          int64_t panel_stride, float* c) {
  __m256 acc[8];
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) acc[v] = _mm256_loadu_ps(c + 8 * v);
  for (int64_t kk = 0; kk < k; ++kk) {
    const __m256 av = _mm256_broadcast_ss(a + kk);
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) {
      const __m256 b = _mm256_loadu_ps(panels + (v / 2) * panel_stride + kk * kPanel + (v % 2) * 8);
      acc[v] = _mm256_fmadd_ps(av, b, acc[v]);
    }
  }
#pragma GCC unroll 8
  for (int v = 0; v < 8; ++v) _mm256_storeu_ps(c + 8 * v, acc[v]);
}

// rows (1..9) rows x one panel: one tile of up to 6 rows, or two of 3-5 rows
// (a tile of 1-2 rows has too few independent fma chains to hide latency).
LSTMOP_TARGET_AVX2 void tile_rest(int64_t rows, int64_t k, const float* a, int64_t lda,
                                  const float* panel, float* c, int64_t ldc, int64_t cols) {
  switch (rows) {
    case 9:
      tile_rows<5>(k, a, lda, panel, c, ldc, cols);
      tile_rows<4>(k, a + 5 * lda, lda, panel, c + 5 * ldc, ldc, cols);
      break;
    case 8:
      tile_rows<4>(k, a, lda, panel, c, ldc, cols);
      tile_rows<4>(k, a + 4 * lda, lda, panel, c + 4 * ldc, ldc, cols);
      break;
    case 7:
      tile_rows<4>(k, a, lda, panel, c, ldc, cols);
      tile_rows<3>(k, a + 4 * lda, lda, panel, c + 4 * ldc, ldc, cols);
      break;
    case 6: tile_rows<6>(k, a, lda, panel, c, ldc, cols); break;
    case 5: tile_rows<5>(k, a, lda, panel, c, ldc, cols); break;
    case 4: tile_rows<4>(k, a, lda, panel, c, ldc, cols); break;
    case 3: tile_rows<3>(k, a, lda, panel, c, ldc, cols); break;
    case 2: tile_rows<2>(k, a, lda, panel, c, ldc, cols); break;
    case 1: tile_rows<1>(k, a, lda, panel, c, ldc, cols); break;
    default: break;
  }
}

// k in blocks of kKBlock (a 16-column panel slice of 16 KiB and the A rows'
// slices stay in L1; C carries each element's fma chain from one block to the
// next, so the bits are those of one chain over k in order); in a block,
// panels outside, blocks of 6 rows inside (the last 7-9 rows as two tiles);
// a single row runs four panels at a time.
constexpr int64_t kKBlock = 256;

}  // namespace

LSTMOP_TARGET_AVX2 void recurrent_product_avx2(int64_t m, int64_t k, int64_t n, const float* a,
                                               int64_t lda, const float* packed, float* c,
                                               int64_t ldc) {
  const int64_t panel_stride = kPanel * k;
  for (int64_t k0 = 0; k0 < k; k0 += kKBlock) {
    const int64_t kb = std::min(kKBlock, k - k0);
    const float* ak = a + k0;
    const float* pk = packed + k0 * kPanel;
    // C rows are usually not in cache (the step's slice of the input
    // projection) and each tile's fma chains start from them: fetch the
    // next tiles' C while this one computes.
    auto prefetch_c = [&](int64_t j) {
      if (j >= n) return;
      for (int64_t r = 0; r < m; ++r) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + j), _MM_HINT_T0);
    };
    int64_t j0 = 0;
    if (m == 1) {
      for (int64_t j = 0; j < 8 * kPanel; j += kPanel) prefetch_c(j);
      for (; j0 + 4 * kPanel <= n; j0 += 4 * kPanel) {
        for (int64_t j = 0; j < 4 * kPanel; j += kPanel) prefetch_c(j0 + 8 * kPanel + j);
        tile_row_4_panels(kb, ak, pk + j0 * k, panel_stride, c + j0);
      }
    } else {
      prefetch_c(0);
    }
    for (; j0 < n; j0 += kPanel) {
      prefetch_c(j0 + kPanel);
      const float* panel = pk + j0 * k;
      const int64_t cols = n - j0 < kPanel ? n - j0 : kPanel;
      int64_t r = 0;
      for (; m - r > 9; r += 6) {
        tile_rows<6>(kb, ak + r * lda, lda, panel, c + r * ldc + j0, ldc, cols);
      }
      tile_rest(m - r, kb, ak + r * lda, lda, panel, c + r * ldc + j0, ldc, cols);
    }
  }
}

}  // namespace detail
}  // namespace lstmop
