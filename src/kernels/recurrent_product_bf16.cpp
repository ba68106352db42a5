// The bfloat16 per-step product (recurrent_product_bf16.h): register tiles of
// R rows (<= 12) x P panels (P * R <= 24 zmm accumulators; 4 panels for up to
// 3 rows, 2 beyond), one 32-bit pair of A broadcast per row and k pair,
// vdpbf16ps per accumulator. Rows in balanced blocks, panels outside.
#include "kernels/recurrent_product_bf16.h"

#include <immintrin.h>

#include <cstring>

#include "kernels/transpose16_avx512.h"
#include "lstmop/tensor.h"

// GCC 12 warns inside avx512fintrin.h that the pass-through operand of the
// unmasked intrinsics (transpose16) "may be used uninitialized" (a dummy
// never read: the mask is all ones).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define LSTMOP_TARGET_BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))

namespace lstmop {
namespace detail {
namespace {

constexpr int64_t kPanel = 16;
constexpr int kMaxRows = 12;

int64_t pairs(int64_t k) { return (k + 1) / 2; }

constexpr int panels_for(int rows) { return rows <= 3 ? 4 : 2; }

// R rows x P panels of C; `last` the valid columns of the last panel.
template <int R, int P>
LSTMOP_TARGET_BF16 void tile(int64_t k, const uint16_t* a, int64_t lda, const uint16_t* b,
                             int64_t panel_stride, float* c, int64_t ldc, __mmask16 last) {
  __m512 acc[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  const int64_t full = k / 2;
  for (int64_t q = 0; q < full; ++q) {
    __m512bh bv[P];
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      bv[p] = (__m512bh)_mm512_loadu_si512(b + p * panel_stride + q * 2 * kPanel);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      uint32_t two;
      std::memcpy(&two, a + r * lda + 2 * q, sizeof two);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(two));
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_dpbf16_ps(acc[r][p], av, bv[p]);
    }
  }
  if (k % 2 != 0) {  // the last value of each row with a zero partner
    __m512bh bv[P];
    for (int p = 0; p < P; ++p) {
      bv[p] = (__m512bh)_mm512_loadu_si512(b + p * panel_stride + full * 2 * kPanel);
    }
    for (int r = 0; r < R; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[r * lda + k - 1]));
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_dpbf16_ps(acc[r][p], av, bv[p]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      const __mmask16 m = p == P - 1 ? last : static_cast<__mmask16>(0xffff);
      _mm512_mask_storeu_ps(c + r * ldc + p * kPanel, m, acc[r][p]);
    }
  }
}

using TileFn = void (*)(int64_t, const uint16_t*, int64_t, const uint16_t*, int64_t, float*,
                        int64_t, __mmask16);

template <int R, int P>
TileFn tile_with_panels(int p) {
  if constexpr (P == 0) {
    return nullptr;
  } else {
    return p == P ? &tile<R, P> : tile_with_panels<R, P - 1>(p);
  }
}

template <int R = 1>
TileFn tile_for(int rows, int panels) {
  if constexpr (R > kMaxRows) {
    return nullptr;
  } else {
    return rows == R ? tile_with_panels<R, panels_for(R)>(panels) : tile_for<R + 1>(rows, panels);
  }
}

LSTMOP_TARGET_BF16 void round_bits(const float* src, int64_t n, uint16_t* dst) {
  int64_t e = 0;
  for (; e + 16 <= n; e += 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + e),
                        (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + e)));
  }
  if (e < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - e)) - 1u);
    _mm256_mask_storeu_epi16(dst + e, m,
                             (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + e)));
  }
}

// Bf16RecurrentProduct::set_b's packing (see there).
LSTMOP_TARGET_BF16 void pack_pair_rows(const float* b, int64_t ldb, int64_t k, int64_t n,
                                       uint16_t* out) {
  const int64_t P = pairs(k), panel_stride = P * 2 * kPanel;
  const __m512i interleave = _mm512_set_epi16(
      31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
      23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int64_t q = 0; q < P; ++q) {
    const float* row0 = b + 2 * q * ldb;
    const float* row1 = row0 + ldb;
    const bool second = 2 * q + 1 < k;
    for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
      const int64_t cols = n - j0 < kPanel ? n - j0 : kPanel;
      const __mmask16 m = static_cast<__mmask16>((1u << cols) - 1u);
      const __m512 first = _mm512_maskz_loadu_ps(m, row0 + j0);
      const __m512 other = second ? _mm512_maskz_loadu_ps(m, row1 + j0) : _mm512_setzero_ps();
      // Words 0..15 the first row's, 16..31 the second's; then interleaved.
      const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(other, first);
      _mm512_storeu_si512(out + (j0 / kPanel) * panel_stride + q * 2 * kPanel,
                          _mm512_permutexvar_epi16(interleave, both));
    }
  }
}

}  // namespace

void Bf16RecurrentProduct::allocate(WorkspaceArena& arena, int64_t k, int64_t n) {
  k_ = k;
  n_ = n;
  arena.add(packed_, "the packed bfloat16 recurrent weight",
            (n + kPanel - 1) / kPanel * pairs(k) * 2 * kPanel);
}

// Pair q of every panel: rows 2q and 2q + 1 of B (16 columns a panel, zero
// past n; a zero second row where k is odd) rounded to bfloat16
// (vcvtneps2bf16: nearest even, as the forward's packed weights) and
// interleaved as 32-bit pairs. (An element-wise loop with float_to_bfloat16
// took 2.4% of S6 training on Zen 5.)
void Bf16RecurrentProduct::set_b(const float* b, int64_t ldb) {
  pack_pair_rows(b, ldb, k_, n_, packed_.data());
}

void Bf16RecurrentProduct::multiply(int64_t m, const uint16_t* a, int64_t lda, float* c,
                                    int64_t ldc, int64_t n0, int64_t n1) const {
  if (m <= 0 || n0 >= n1) return;
  const int64_t panel_stride = pairs(k_) * 2 * kPanel;
  const int64_t first = n0 / kPanel, end = (n1 + kPanel - 1) / kPanel;
  const int64_t tail = n1 - (end - 1) * kPanel;  // valid columns of the last panel
  const __mmask16 tail_mask = static_cast<__mmask16>((1u << tail) - 1u);
  const int64_t blocks = (m + kMaxRows - 1) / kMaxRows;
  const int64_t base = m / blocks, longer = m % blocks;
  int64_t r0 = 0;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int rows = static_cast<int>(base + (blk < longer ? 1 : 0));
    const int per_tile = panels_for(rows);
    for (int64_t p0 = first; p0 < end; p0 += per_tile) {
      const int run = static_cast<int>(end - p0 < per_tile ? end - p0 : per_tile);
      const __mmask16 last = p0 + run == end ? tail_mask : static_cast<__mmask16>(0xffff);
      tile_for(rows, run)(k_, a + r0 * lda, lda, packed_.data() + p0 * panel_stride,
                          panel_stride, c + r0 * ldc + p0 * kPanel, ldc, last);
    }
    r0 += rows;
  }
}

void round_to_bfloat16_bits(const float* src, int64_t n, uint16_t* dst) { round_bits(src, n, dst); }

namespace {
// 16 x 16 blocks: up to 16 rows of up to 16 floats loaded (masked past the
// block), transposed in registers, each column rounded (vcvtneps2bf16, as
// round_bits) and stored as up to 16 consecutive values.
LSTMOP_TARGET_BF16 void transpose_bits(int64_t rows, int64_t cols, const float* src, int64_t lds,
                                       uint16_t* dst, int64_t ldd) {
  for (int64_t r0 = 0; r0 < rows; r0 += 16) {
    const int64_t rn = rows - r0 < 16 ? rows - r0 : 16;
    const __mmask16 row_mask = static_cast<__mmask16>(rn == 16 ? 0xffffu : (1u << rn) - 1u);
    for (int64_t c0 = 0; c0 < cols; c0 += 16) {
      const int64_t cn = cols - c0 < 16 ? cols - c0 : 16;
      const __mmask16 col_mask = static_cast<__mmask16>(cn == 16 ? 0xffffu : (1u << cn) - 1u);
      __m512 v[16];
      for (int64_t i = 0; i < 16; ++i) {
        v[i] = i < rn ? _mm512_maskz_loadu_ps(col_mask, src + (r0 + i) * lds + c0)
                      : _mm512_setzero_ps();
      }
      transpose16(v);
      for (int64_t j = 0; j < cn; ++j) {
        _mm256_mask_storeu_epi16(dst + (c0 + j) * ldd + r0, row_mask,
                                 (__m256i)_mm512_cvtneps_pbh(v[j]));
      }
    }
  }
}
}  // namespace

void transpose_to_bfloat16_bits(int64_t rows, int64_t cols, const float* src, int64_t lds,
                                uint16_t* dst, int64_t ldd) {
  transpose_bits(rows, cols, src, lds, dst, ldd);
}

void round_rows_to_bfloat16_bits(const float* src, int64_t rows, int64_t ld, int64_t cols,
                                 uint16_t* dst) {
  for (int64_t r = 0; r < rows; ++r) round_bits(src + r * ld, cols, dst + r * cols);
}

}  // namespace detail
}  // namespace lstmop
