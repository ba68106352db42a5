// AVX-512 register tiles of the per-step product (recurrent_product_isa.h),
// run where kernel_choice() picks AVX-512 (every function here that uses its
// instructions carries LSTMOP_TARGET_AVX512).
//
// One panel of the packed layout (16 columns) is one zmm register. A tile is
// R rows x P panels, R * P <= 24 accumulators of the 32 zmm registers: 4..12
// rows x 2 panels, 1..3 rows x 4 panels, so that there are >= 4 independent
// fma chains (a single row is bound by the L2 bandwidth of streaming B: 8
// chains measured no faster than 4). Rows are cut into balanced blocks of at
// most 12 (64 = 4 x 11 + 2 x 10), each block's slice of A copied first where
// A's row stride would make its rows collide in L1 (a multiple of 2 KiB: the
// backward's dh products 13% faster on H = 512, Zen 4). A partial last panel
// (n % 16) is handled with masked loads and stores, which AVX-512 executes
// at full speed and never faults on masked-out lanes.
//
// Numerics: exactly those of the AVX2 tiles (recurrent_product_avx2.cpp): every C
// element is one fma chain c = fma(a[kk], b[kk], c), kk = 0..k-1 in order,
// starting from C's value, carried through C between depth blocks. So the
// bits do not depend on the ISA, the tile, the step's batch or a column split.
#include <immintrin.h>

#include <cstdint>

#include "kernels/isa_target.h"
#include "kernels/recurrent_product_isa.h"

namespace lstmop {
namespace detail {
namespace {

constexpr int64_t kPanel = kRecurrentPanel;  // one zmm
// Depth block: a 12-row slice of A (12 KiB) stays in L1 while the block's
// tiles run over all panels; the panels' slices (n x 256 floats) come from
// L2. 256 measured best of 128/256/512 on a Zen 4 core (AVX-512 double
// pumped: the same fma rate as AVX2, fewer loads and instructions a flop).
constexpr int64_t kKBlock = 256;
constexpr int kMaxRows = 12;

// R rows x P panels; the last panel has `last` valid columns (1..16).
template <int R, int P>
LSTMOP_TARGET_AVX512 void tile(int64_t k, const float* a, int64_t lda, const float* b,
                               int64_t panel_stride, float* c, int64_t ldc, __mmask16 last) {
  __m512 acc[R][P];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const __mmask16 m = p == P - 1 ? last : static_cast<__mmask16>(0xffff);
      acc[r][p] = _mm512_maskz_loadu_ps(m, c + r * ldc + p * kPanel);
    }
  }
  for (int64_t kk = 0; kk < k; ++kk) {
    __m512 bv[P];
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) bv[p] = _mm512_loadu_ps(b + p * panel_stride + kk * kPanel);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + kk]);
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fmadd_ps(av, bv[p], acc[r][p]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const __mmask16 m = p == P - 1 ? last : static_cast<__mmask16>(0xffff);
      _mm512_mask_storeu_ps(c + r * ldc + p * kPanel, m, acc[r][p]);
    }
  }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,
                        __mmask16);

// Panels per tile for a block of `rows` rows.
constexpr int panels_for(int rows) { return rows <= 3 ? 4 : 2; }

template <int R, int P>
TileFn tile_with_panels(int p) {
  if constexpr (P == 0) {
    return nullptr;
  } else {
    return p == P ? &tile<R, P> : tile_with_panels<R, P - 1>(p);
  }
}

// The tile of `rows` (1..kMaxRows) rows and `panels` (1..panels_for(rows)).
template <int R = 1>
TileFn tile_for(int rows, int panels) {
  if constexpr (R > kMaxRows) {
    return nullptr;
  } else {
    return rows == R ? tile_with_panels<R, panels_for(R)>(panels) : tile_for<R + 1>(rows, panels);
  }
}

}  // namespace

LSTMOP_TARGET_AVX512 void recurrent_product_avx512(int64_t m, int64_t k, int64_t n,
                                                   const float* a, int64_t lda,
                                                   const float* packed, float* c, int64_t ldc) {
  const int64_t panel_stride = kPanel * k;
  const int64_t panels = (n + kPanel - 1) / kPanel;
  const int64_t tail = n - (panels - 1) * kPanel;  // valid columns of the last panel, 1..16
  const __mmask16 tail_mask = static_cast<__mmask16>((1u << tail) - 1u);
  // Balanced row blocks of at most kMaxRows rows: the first `longer` blocks
  // have one row more.
  const int64_t blocks = (m + kMaxRows - 1) / kMaxRows;
  const int64_t base = m / blocks, longer = m % blocks;
  // A row stride of a multiple of 2 KiB (4H floats for H a multiple of
  // 128) puts the rows' lines of a k block in one or two L1 sets, more rows
  // than ways: each row block's slice is copied with a stride of kb + 16
  // floats first (reused by every tile of the block; same values).
  const bool copy_slice = m > 1 && (lda * static_cast<int64_t>(sizeof(float))) % 2048 == 0;
  alignas(64) float slice[kMaxRows * (kKBlock + 16)];
  for (int64_t k0 = 0; k0 < k; k0 += kKBlock) {
    const int64_t kb = k - k0 < kKBlock ? k - k0 : kKBlock;
    const float* pk = packed + k0 * kPanel;
    int64_t r0 = 0;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int rows = static_cast<int>(base + (blk < longer ? 1 : 0));
      const int per_tile = panels_for(rows);
      const float* ak = a + r0 * lda + k0;
      int64_t ld_slice = lda;
      if (copy_slice) {
        ld_slice = kb + 16;
        for (int r = 0; r < rows; ++r) {
          for (int64_t e = 0; e < kb; e += 16) {
            const int64_t n_e = kb - e < 16 ? kb - e : 16;
            const __mmask16 mk = static_cast<__mmask16>((1u << n_e) - 1u);
            _mm512_mask_storeu_ps(slice + r * ld_slice + e, mk,
                                  _mm512_maskz_loadu_ps(mk, ak + r * lda + e));
          }
        }
        ak = slice;
      }
      float* cr = c + r0 * ldc;
      for (int64_t p0 = 0; p0 < panels; p0 += per_tile) {
        const int run = static_cast<int>(panels - p0 < per_tile ? panels - p0 : per_tile);
        const __mmask16 last = p0 + run == panels ? tail_mask : static_cast<__mmask16>(0xffff);
        tile_for(rows, run)(kb, ak, ld_slice, pk + p0 * panel_stride, panel_stride,
                            cr + p0 * kPanel, ldc, last);
      }
      r0 += rows;
    }
  }
}

}  // namespace detail
}  // namespace lstmop
