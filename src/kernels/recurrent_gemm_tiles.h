// lstmop kernels, internal: the register-tile loops of the packed recurrent
// product, written once over a vector type V (recurrent_gemm_avx2.cpp,
// recurrent_gemm_avx512.cpp give V; only those files include this).
//
// V provides: kLanes; using reg; load(p, valid), store(p, x, valid) with
// valid in [0, kLanes] (partial = masked), loadu_full(p), broadcast(p),
// fma(a, b, c) = a*b + c fused.
//
// Loop order: column groups of kGroupPanels panels outside (their packed B,
// 16*k floats a panel, stays in L1/L2 while every row block uses it), row
// blocks of at most kMaxRows inside, then the group's panels in runs of
// as many panels as the accumulators allow. Each C element is one fma chain
// over kk = 0..k-1, in depth blocks of kDepthBlock.
#pragma once

#include <cstdint>

namespace lstmop {
namespace kernels {
namespace {

constexpr int64_t kPanel = 16;
constexpr int64_t kDepthBlock = 256;

// One tile: MR rows x NP panels; VP vectors per panel row.
template <class V, int MR, int NP>
void tile(int64_t k, const float* a, int64_t lda, const float* b, int64_t panel_stride, float* c,
          int64_t ldc, int64_t cols) {
  constexpr int VP = static_cast<int>(kPanel / V::kLanes);
  constexpr int NV = NP * VP;
  // Every loop over registers is unrolled completely, so that acc lives in
  // registers only (without the pragmas GCC 12 keeps a stack copy of acc and
  // stores all of it on every kk: a third of the fma rate).
  typename V::reg acc[MR][NV];
  int valid[NV];
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    const int64_t left = cols - static_cast<int64_t>(v) * V::kLanes;
    valid[v] = left <= 0 ? 0 : left >= V::kLanes ? V::kLanes : static_cast<int>(left);
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[r][v] = V::load(c + r * ldc + v * V::kLanes, valid[v]);
  for (int64_t kk = 0; kk < k; ++kk) {
    typename V::reg bv[NV];
#pragma GCC unroll 16
    for (int p = 0; p < NP; ++p)
#pragma GCC unroll 16
      for (int q = 0; q < VP; ++q)
        bv[p * VP + q] = V::loadu_full(b + p * panel_stride + kk * kPanel + q * V::kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const typename V::reg av = V::broadcast(a + r * lda + kk);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fma(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) V::store(c + r * ldc + v * V::kLanes, acc[r][v], valid[v]);
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,
                        int64_t);

// The tile for (mr, np); instantiated only where the accumulators fit.
template <class V, int MR, int NP>
TileFn tile_with_panels(int np) {
  constexpr int VP = static_cast<int>(kPanel / V::kLanes);
  if constexpr (NP > V::kGroupPanels || MR * NP * VP > V::kAccumulators) {
    return nullptr;
  } else {
    return np == NP ? &tile<V, MR, NP> : tile_with_panels<V, MR, NP + 1>(np);
  }
}

template <class V, int MR>
TileFn tile_for(int mr, int np) {
  if constexpr (MR > V::kMaxRows) {
    return nullptr;
  } else {
    return mr == MR ? tile_with_panels<V, MR, 1>(np) : tile_for<V, MR + 1>(mr, np);
  }
}

// Tiles: rows x panels with rows * panels * (16 / kLanes) <= V::kAccumulators.
template <class V>
void gemm_packed_tiles(int64_t m, int64_t k, const float* a, int64_t lda, const float* packed_b,
                       int64_t n_begin, int64_t n_end, float* c, int64_t ldc) {
  constexpr int VP = static_cast<int>(kPanel / V::kLanes);
  const int64_t panel_stride = kPanel * k;
  for (int64_t g0 = n_begin; g0 < n_end; g0 += V::kGroupPanels * kPanel) {
    const int64_t g1 = g0 + V::kGroupPanels * kPanel < n_end ? g0 + V::kGroupPanels * kPanel : n_end;
    // Depth blocks of kDepthBlock keep a panel's slice (16 KB) in L1 for all
    // row blocks. C is stored and reloaded between blocks, which is exact:
    // each element's fma chain continues in the same order.
    for (int64_t k0 = 0; k0 < k; k0 += kDepthBlock) {
    const int64_t kb = k - k0 < kDepthBlock ? k - k0 : kDepthBlock;
    for (int64_t r0 = 0; r0 < m; r0 += V::kMaxRows) {
      const int rows = static_cast<int>(m - r0 < V::kMaxRows ? m - r0 : V::kMaxRows);
      int np = V::kAccumulators / (rows * VP);
      if (np > V::kGroupPanels) np = V::kGroupPanels;
      if (np < 1) np = 1;
      for (int64_t j0 = g0; j0 < g1; j0 += np * kPanel) {
        const int64_t panels_left = (g1 - j0 + kPanel - 1) / kPanel;
        const int run = static_cast<int>(panels_left < np ? panels_left : np);
        const int64_t cols = (g1 - j0 < run * kPanel) ? g1 - j0 : run * kPanel;
        tile_for<V, 1>(rows, run)(kb, a + r0 * lda + k0, lda,
                                  packed_b + (j0 / kPanel) * panel_stride + k0 * kPanel,
                                  panel_stride, c + r0 * ldc + j0, ldc, cols);
      }
    }
    }
  }
}

}  // namespace
}  // namespace kernels
}  // namespace lstmop
