// Internal: the fused forward step of step_forward.h written once over a
// vector type V (simd_avx2.h, simd_avx512.h), for step_forward_avx2.cpp and
// step_forward_avx512.cpp. Each includes this after defining
// LSTMOP_CELL_TARGET (the target attribute of its ISA) and V.
//
// A tile is R rows x one group of V::kLanes hidden units: 4R accumulators
// (one vector per row and gate), R <= kMaxRows<V> (6 with 32 AVX-512
// registers, 3 with AVX2's 16). The k loop loads the group's four gate
// vectors of row k (adjacent, step_forward.h) and broadcasts one A element
// per row; the epilogue runs the cell on the rows' accumulators, two rows
// at a time (their activations interleaved, cell_pass_simd.h: activate).
// Groups are outside, balanced row blocks inside, so a group's weights
// (K x 4 x kLanes floats) are read from L2 once a step and reused by every
// row block; large weights are prefetched a group ahead (NextBlock,
// step_forward.h).
#pragma once

#include <cstdint>
#include <immintrin.h>
#include <type_traits>

#include "kernels/cell_pass_simd.h"
#include "kernels/step_forward.h"

namespace lstmop {
namespace detail {
namespace step_simd {

template <class V>
constexpr int kMaxRows = V::kLanes == 16 ? 6 : 3;

// h as the call stores it: rounded to Storage's precision for the 16-bit types.
template <class V, class Storage>
LSTMOP_CELL_TARGET inline typename V::reg as_stored(typename V::reg h) {
  if constexpr (std::is_same_v<Storage, BFloat16>) {
    return V::round_bfloat16(h);
  } else if constexpr (std::is_same_v<Storage, Half>) {
    return V::round_half(h);
  } else {
    return h;
  }
}

// Stores `count` lanes of v into dst in Storage (full vectors converted in
// registers; a partial one lane by lane, nearest even).
template <class V, class Storage>
LSTMOP_CELL_TARGET inline void store_as(Storage* dst, const typename V::Tail& m, int64_t count,
                                        typename V::reg v) {
  if constexpr (std::is_same_v<Storage, float>) {
    if (count == V::kLanes) {
      V::storeu(dst, v);
    } else {
      V::store_tail(m, dst, v);
    }
  } else if constexpr (std::is_same_v<Storage, BFloat16>) {
    if (count == V::kLanes) {
      V::store_bfloat16(reinterpret_cast<uint16_t*>(dst), v);
      return;
    }
    alignas(64) float tmp[V::kLanes];
    V::storeu(tmp, v);
    for (int64_t e = 0; e < count; ++e) dst[e] = StoreAs<Storage>::from(tmp[e]);
  } else {
    if (count == V::kLanes) {
      V::store_half(reinterpret_cast<uint16_t*>(dst), v);
      return;
    }
    alignas(64) float tmp[V::kLanes];
    V::storeu(tmp, v);
    for (int64_t e = 0; e < count; ++e) dst[e] = StoreAs<Storage>::from(tmp[e]);
  }
}

// A saved tensor's vector in Storage; float vectors streamed when asked for,
// full and aligned (the others stored as usual; streaming changes no value).
// Only a vector that fills a cache line (AVX-512's): AVX2's 32 bytes leave
// each line's other half to the next group's tile, long after the core's
// write-combining buffers have flushed this one as a partial line (Intel
// Xeon under the AVX2 cap, training against streaming them: T=200 B=8
// I=H=128 0.84x the time, T=50 B=32 I=H=256 0.92x).
template <class V, class Storage>
LSTMOP_CELL_TARGET inline void store_saved(Storage* dst, const typename V::Tail& m,
                                           int64_t count, typename V::reg v, bool stream) {
  if constexpr (std::is_same_v<Storage, float> && V::kLanes * sizeof(float) == 64) {
    constexpr uintptr_t kAlign = V::kLanes * sizeof(float);
    if (stream && count == V::kLanes && reinterpret_cast<uintptr_t>(dst) % kAlign == 0) {
      V::stream(dst, v);
      return;
    }
  }
  store_as<V, Storage>(dst, m, count, v);
}

template <class V>
LSTMOP_CELL_TARGET inline typename V::reg load_lanes(const typename V::Tail& m, int64_t count,
                                                     const float* p) {
  return count == V::kLanes ? V::loadu(p) : V::load_tail(m, p);
}

// acc[r][q] = fma(a[r, kk], block[kk][q], acc[r][q]) for kk < K.
template <class V, int R>
LSTMOP_CELL_TARGET inline void chain(typename V::reg (&acc)[R][4], int64_t K, const float* a,
                                     int64_t lda, const float* block, NextBlock& pf) {
  constexpr int64_t W = V::kLanes;
  // One AVX2 row has four dependent chains, one FMA a cycle at best (latency
  // 4): pairs of k on two accumulator sets (even k in acc, odd k in odd),
  // summed at the end; an odd K's last k goes to acc in the loop below.
  constexpr bool kPairs = R == 1 && W == 8;
  typename V::reg odd[4];
  int64_t kk = 0;
  if constexpr (kPairs) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) odd[q] = V::set1(0.0f);
    for (; kk + 1 < K; kk += 2) {
      pf.fetch();
      pf.fetch();
      const auto a0 = V::set1(a[kk]), a1 = V::set1(a[kk + 1]);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        acc[0][q] = V::fmadd(a0, V::loadu(block + (kk * 4 + q) * W), acc[0][q]);
        odd[q] = V::fmadd(a1, V::loadu(block + ((kk + 1) * 4 + q) * W), odd[q]);
      }
    }
  }
  for (; kk < K; ++kk) {
    pf.fetch();
    typename V::reg b[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) b[q] = V::loadu(block + (kk * 4 + q) * W);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const auto av = V::set1(a[r * lda + kk]);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[r][q] = V::fmadd(av, b[q], acc[r][q]);
    }
  }
  if constexpr (kPairs) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[0][q] = V::add(acc[0][q], odd[q]);
  }
}

// The cell of C rows' pre-activations a[i] = (i, f, g, o) (rows row0 + i of
// the step, units [u, u + count)): c, h and the saved tensors
// (step_forward.h). The rows' 4C gate activations and C tanh(c) run
// interleaved (cell_simd::activate: the same bits as one at a time).
template <class V, int C, class Storage>
LSTMOP_CELL_TARGET inline LSTMOP_ALWAYS_INLINE void cell_rows(
    const typename V::reg (*a)[4], const ForwardStepArgs& s, const StepSaved<Storage>* saved,
    int64_t H, int64_t row0, int64_t u, const typename V::Tail& m, int64_t count) {
  using reg = typename V::reg;
  reg x[4 * C], g[4 * C];
#pragma GCC unroll 8
  for (int e = 0; e < 4 * C; ++e) x[e] = a[e / 4][e % 4];
  cell_simd::activate<V, 4 * C, cell_simd::gate_tanh_bits(C)>(x, g);
  reg cn[C], tc[C];
#pragma GCC unroll 2
  for (int i = 0; i < C; ++i) {
    const auto c_prev = load_lanes<V>(m, count, s.c_state + (row0 + i) * H + u);
    cn[i] = V::add(V::mul(g[4 * i + 1], c_prev), V::mul(g[4 * i], g[4 * i + 2]));
  }
  cell_simd::activate<V, C, (1u << C) - 1u>(cn, tc);
#pragma GCC unroll 2
  for (int i = 0; i < C; ++i) {
    const int64_t row = row0 + i;
    const auto hn = as_stored<V, Storage>(V::mul(g[4 * i + 3], tc[i]));
    store_as<V, float>(s.c_state + row * H + u, m, count, cn[i]);
    store_as<V, float>(s.h_out + row * s.ld_out + u, m, count, hn);
    if (s.h_next != nullptr) store_as<V, float>(s.h_next + row * H + u, m, count, hn);
    if (saved != nullptr) {
      const int64_t e = row * H + u;
      const bool stream = s.stream_saved;
      store_saved<V, Storage>(saved->i + e, m, count, g[4 * i], stream);
      store_saved<V, Storage>(saved->j + e, m, count, g[4 * i + 2], stream);
      store_saved<V, Storage>(saved->f + e, m, count, g[4 * i + 1], stream);
      store_saved<V, Storage>(saved->o + e, m, count, g[4 * i + 3], stream);
      store_saved<V, Storage>(saved->c + e, m, count, cn[i], stream);
      store_saved<V, Storage>(saved->tanhc + e, m, count, tc[i], stream);
      if (saved->h != nullptr) store_saved<V, Storage>(saved->h + e, m, count, hn, stream);
    }
  }
}

// The cell of R rows, two at a time (an odd R's last row alone).
template <class V, int R, class Storage>
LSTMOP_CELL_TARGET inline LSTMOP_ALWAYS_INLINE void cell_tile(
    const typename V::reg (&a)[R][4], const ForwardStepArgs& s, const StepSaved<Storage>* saved,
    int64_t H, int64_t r0, int64_t u, const typename V::Tail& m, int64_t count) {
#pragma GCC unroll 6
  for (int r = 0; r + 2 <= R; r += 2) {
    cell_rows<V, 2, Storage>(a + r, s, saved, H, r0 + r, u, m, count);
  }
  if constexpr (R % 2 != 0) {
    cell_rows<V, 1, Storage>(a + R - 1, s, saved, H, r0 + R - 1, u, m, count);
  }
}

// R rows of one unit group: units [u, u + count), count <= kLanes, over the
// step's k in [k0, k1) of its K (the chained form's h columns; else the
// input's then h's): from the gates' start where k0 is 0, else from the
// partial sums at `part` (R x 4 vectors); the cell where k1 is K, else the
// partial sums stored back to `part`. A chain over its k in parts runs the
// same operations in the same order (the same bits) but for AVX2's one-row
// tile (even and odd k on two accumulators, summed at each chain's end),
// which runs whole: step_groups splits k for blocks of two rows or more.
// kChained: the chained form (its own instantiation; the other forms' code
// is the one below the else).
template <class V, int R, class Storage, bool kChained>
LSTMOP_CELL_TARGET void tile(const ForwardStepWeights& w, const ForwardStepArgs& s,
                             const StepSaved<Storage>* saved, int64_t r0, int64_t u,
                             int64_t count, NextBlock pf, int64_t k0 = 0, int64_t k1 = -1,
                             float* part = nullptr) {
  constexpr int64_t W = V::kLanes;
  const int64_t H = w.hidden(), K0 = kChained ? 0 : w.k_input(), K1 = w.k_hidden();
  if (k1 < 0) k1 = K0 + K1;
  const typename V::Tail m = V::tail(count);
  typename V::reg acc[R][4];
  if (k0 > 0) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[r][q] = V::loadu(part + (r * 4 + q) * W);
    }
  } else if constexpr (kChained) {
    const float* gx = s.gx + r0 * 4 * H + u;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[r][q] = load_lanes<V>(m, count, gx + r * 4 * H + q * H);
    }
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        acc[r][q] = s.gx != nullptr
                        ? load_lanes<V>(m, count, s.gx + (r0 + r) * 4 * H + q * H + u)
                        : load_lanes<V>(m, count, s.bias + q * H + u);
      }
    }
  }
  if constexpr (kChained) {
    chain<V, R>(acc, k1 - k0, s.h_prev + r0 * s.ld_h + k0, s.ld_h,
                w.hidden_part(u / W) + k0 * 4 * W, pf);
  } else {
    const float* block = w.data() + (u / W) * (K0 + K1) * 4 * W;
    if (k0 < K0) {
      chain<V, R>(acc, (k1 < K0 ? k1 : K0) - k0, s.x + r0 * s.ld_x + k0, s.ld_x,
                  block + k0 * 4 * W, pf);
    }
    if (k1 > K0) {
      const int64_t kh = k0 > K0 ? k0 : K0;
      chain<V, R>(acc, k1 - kh, s.h_prev + r0 * s.ld_h + (kh - K0), s.ld_h, block + kh * 4 * W,
                  pf);
    }
  }
  if (k1 < K0 + K1) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) V::storeu(part + (r * 4 + q) * W, acc[r][q]);
    }
    return;
  }
  if (!kChained && s.gx != nullptr) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        acc[r][q] = V::add(acc[r][q], load_lanes<V>(m, count, s.bias + q * H + u));
      }
    }
  }
  cell_tile<V, R, Storage>(acc, s, saved, H, r0, u, m, count);
}

template <class V, int R, class Storage, bool kChained>
LSTMOP_CELL_TARGET void tile_rows(int rows, const ForwardStepWeights& w, const ForwardStepArgs& s,
                                  const StepSaved<Storage>* saved, int64_t r0, int64_t u,
                                  int64_t count, NextBlock pf, int64_t k0 = 0,
                                  int64_t k1 = -1, float* part = nullptr) {
  if constexpr (R >= 1) {
    if (rows == R) {
      tile<V, R, Storage, kChained>(w, s, saved, r0, u, count, pf, k0, k1, part);
    } else {
      tile_rows<V, R - 1, Storage, kChained>(rows, w, s, saved, r0, u, count, pf, k0, k1, part);
    }
  }
}

// The chained form's tiles of kMinPairRows to kMaxPairRows rows (AVX-512):
// two gates at a time, i and f then g and o, 2R accumulators, so that each
// vector of w_hh's packed rows feeds R FMAs (the four-gate tile's R is at
// most kMaxRows: a batch of 8 ran as two tiles of 4 rows, 4 loads a k for
// 16 FMAs, more than this core's L2 delivers while w_hh streams from L3).
// Each element's chain is the four-gate tile's (the same bits).
constexpr int kMinPairRows = 7;
constexpr int kMaxPairRows = 12;

// acc[r][j] = fma(a[r, kk], block[kk][q0 + j], acc[r][j]) for kk < K.
template <class V, int R>
LSTMOP_CELL_TARGET inline void pair_chain(typename V::reg (&acc)[R][2], int64_t K, const float* a,
                                          int64_t lda, const float* block, NextBlock& pf) {
  constexpr int64_t W = V::kLanes;
  for (int64_t kk = 0; kk < K; ++kk) {
    pf.fetch();
    const auto b0 = V::loadu(block + kk * 4 * W), b1 = V::loadu(block + kk * 4 * W + W);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const auto av = V::set1(a[r * lda + kk]);
      acc[r][0] = V::fmadd(av, b0, acc[r][0]);
      acc[r][1] = V::fmadd(av, b1, acc[r][1]);
    }
  }
}

template <class V, int R, class Storage>
LSTMOP_CELL_TARGET void pair_tile(const ForwardStepWeights& w, const ForwardStepArgs& s,
                                  const StepSaved<Storage>* saved, int64_t r0, int64_t u,
                                  int64_t count, NextBlock pf) {
  constexpr int64_t W = V::kLanes;
  const int64_t H = w.hidden(), K1 = w.k_hidden();
  const typename V::Tail m = V::tail(count);
  const float* gx = s.gx + r0 * 4 * H + u;
  const float* h = s.h_prev + r0 * s.ld_h;
  const float* block = w.hidden_part(u / W);
  alignas(64) float first[R][2][W];  // a_i, a_f of the first pass
  typename V::reg acc[R][2];
  for (int pass = 0; pass < 2; ++pass) {
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      acc[r][0] = load_lanes<V>(m, count, gx + r * 4 * H + (2 * pass) * H);
      acc[r][1] = load_lanes<V>(m, count, gx + r * 4 * H + (2 * pass + 1) * H);
    }
    pair_chain<V, R>(acc, K1, h, s.ld_h, block + 2 * pass * W, pf);
    if (pass == 0) {
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        V::storeu(first[r][0], acc[r][0]);
        V::storeu(first[r][1], acc[r][1]);
      }
    }
  }
  typename V::reg a[R][4];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    a[r][0] = V::loadu(first[r][0]);
    a[r][1] = V::loadu(first[r][1]);
    a[r][2] = acc[r][0];
    a[r][3] = acc[r][1];
  }
  cell_tile<V, R, Storage>(a, s, saved, H, r0, u, m, count);
}

template <class V, int R, class Storage>
LSTMOP_CELL_TARGET void pair_tile_rows(int rows, const ForwardStepWeights& w,
                                       const ForwardStepArgs& s, const StepSaved<Storage>* saved,
                                       int64_t r0, int64_t u, int64_t count, NextBlock pf) {
  if constexpr (R >= kMinPairRows) {
    if (rows == R) {
      pair_tile<V, R, Storage>(w, s, saved, r0, u, count, pf);
    } else {
      pair_tile_rows<V, R - 1, Storage>(rows, w, s, saved, r0, u, count, pf);
    }
  }
}

// Rows in balanced blocks of at most max_rows: `blocks` of them, the first
// `longer` one row longer than `base` (a step's tiles; the chained form's
// input chains over all of a layer's rows).
struct RowBlocks {
  int64_t blocks, base, longer;
  int rows(int64_t b) const { return static_cast<int>(base + (b < longer ? 1 : 0)); }
};
inline RowBlocks row_blocks(int64_t rows, int64_t max_rows) {
  const int64_t blocks = (rows + max_rows - 1) / max_rows;
  return RowBlocks{blocks, rows / blocks, rows % blocks};
}

// The AVX2 body's k in chunks (ForwardStepArgs::k_chunk): the row blocks of
// up to kSuperRows rows (their partial sums on the stack) run one chunk after
// the other.
constexpr int64_t kSuperRows = 48;

template <class V, class Storage, bool kChained>
LSTMOP_CELL_TARGET void step_groups(const ForwardStepWeights& w, const ForwardStepArgs& s,
                                    const StepSaved<Storage>* saved) {
  constexpr int64_t W = V::kLanes;
  constexpr int64_t kRows = kMaxRows<V>;
  // The packed rows a step reads per group: the input's and h's
  // (interleaved), or the chained form's h rows alone.
  const int64_t K = kChained ? w.k_hidden() : w.k_input() + w.k_hidden();
  const auto block_of = [&](int64_t g) {
    if constexpr (kChained) {
      return w.hidden_part(g);
    } else {
      return w.data() + g * K * 4 * W;
    }
  };
  const int64_t block_bytes = K * 4 * W * static_cast<int64_t>(sizeof(float));
  const int64_t total_bytes = (s.u_end - s.u_begin + W - 1) / W * block_bytes;
  const float* first = block_of(s.u_begin / W);
  // The chained form on AVX-512: balanced blocks of up to kMaxPairRows rows,
  // pair tiles where every block has kMinPairRows or more (two passes over
  // a block's k), else the four-gate tiles (AVX-512 has no one-row pair
  // chains: any blocking gives the same bits).
  bool pairs = false;
  RowBlocks blocks = row_blocks(s.rows, kRows);
  if constexpr (kChained && W == 16) {
    const RowBlocks pb = row_blocks(s.rows, kMaxPairRows);
    pairs = pb.base >= kMinPairRows;
    if (pairs) blocks = pb;
  }
  // k per pass over a group's row blocks: the whole k, or on AVX2 chunks of
  // s.k_chunk. A group's block streamed from L2 by every row block ran
  // AVX2's three-row tile below the FMA rate (50-55 GB/s of L2 reads on the
  // Intel Xeon under the AVX2 cap); a chunk stays in L1 for the row blocks of
  // up to kSuperRows rows, whose partial sums wait in `parts`. Blocks of one
  // row keep the whole k (chain's pairs). The AVX-512 body keeps the whole k:
  // chunks of 32 KiB there measured 1.00x (T=50 B=32 I=H=256), 1.03x (T=50
  // B=64 I=H=512), 1.02x (T=100 B=16 I=H=256), 1.04x (T=50 B=8 I=H=256,
  // chained) the time, and 0.97x / 0.95x (inference / training) only on
  // T=200 B=8 I=H=128.
  int64_t kc = K > 0 ? K : 1;
  if constexpr (W == 8) {
    if (s.k_chunk > 0 && blocks.blocks > 1 && blocks.base >= 2 && K > s.k_chunk) kc = s.k_chunk;
  }
  const bool chunked = kc < K;
  const int64_t passes = (K + kc - 1) / kc;
  const int64_t per_super = chunked ? kSuperRows / kRows : blocks.blocks;
  alignas(64) float parts[W == 8 ? kSuperRows / kRows * kRows * 4 * W : 1];
  for (int64_t u = s.u_begin; u < s.u_end; u += W) {
    const int64_t count = s.u_end - u < W ? s.u_end - u : W;
    const float* next = u + W < s.u_end ? block_of((u + W) / W) : first;
    int64_t call = 0, r_super = 0;
    for (int64_t sb = 0; sb < blocks.blocks; sb += per_super) {
      const int64_t nb = blocks.blocks - sb < per_super ? blocks.blocks - sb : per_super;
      int64_t r0 = r_super;
      for (int64_t k0 = 0; k0 == 0 || k0 < K; k0 += kc) {
        const int64_t k1 = K - k0 < kc ? K : k0 + kc;
        r0 = r_super;
        for (int64_t b = sb; b < sb + nb; ++b) {
          const int rows = blocks.rows(b);
          const NextBlock pf =
              next_block_share(next, block_bytes, total_bytes, blocks.blocks * passes, call++,
                               pairs ? 2 * K : k1 - k0, s.rows, s.alone);
          if constexpr (kChained && W == 16) {
            if (pairs) {
              pair_tile_rows<V, kMaxPairRows, Storage>(rows, w, s, saved, r0, u, count, pf);
              r0 += rows;
              continue;
            }
          }
          tile_rows<V, kRows, Storage, kChained>(rows, w, s, saved, r0, u, count, pf, k0, k1,
                                                 chunked ? parts + (b - sb) * kRows * 4 * W
                                                         : nullptr);
          r0 += rows;
        }
      }
      r_super = r0;
    }
  }
}

template <class V, class Storage>
LSTMOP_CELL_TARGET void step(const ForwardStepWeights& w, const ForwardStepArgs& s,
                             const StepSaved<Storage>* saved) {
  if (s.rows <= 0) return;
  if (s.gx_chained) {
    step_groups<V, Storage, true>(w, s, saved);
  } else {
    step_groups<V, Storage, false>(w, s, saved);
  }
  // Streaming stores are weakly ordered: fenced before the step's results
  // are handed to another thread (split mode's barrier, the backward).
  if (s.stream_saved && saved != nullptr) _mm_sfence();
}

// The chained form's input part of one R-row block: gx rows [r0, r0 + R) of
// units [u, u + count) = bias, then the concatenated tile's chain over the
// input's columns (chain<V, R>: its order), stored unfinished; over the
// columns [k0, k1) of K0 (input_chains' chunks: from bias where k0 is 0,
// else from the partial sums gx holds; two rows or more, as tile's).
template <class V, int R>
LSTMOP_CELL_TARGET void input_tile(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                                   const float* bias, float* gx, int64_t r0, int64_t u,
                                   int64_t count, int64_t k0 = 0, int64_t k1 = -1) {
  constexpr int64_t W = V::kLanes;
  const int64_t H = w.hidden();
  if (k1 < 0) k1 = w.k_input();
  const typename V::Tail m = V::tail(count);
  typename V::reg acc[R][4];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      acc[r][q] = load_lanes<V>(m, count,
                                k0 == 0 ? bias + q * H + u : gx + (r0 + r) * 4 * H + q * H + u);
    }
  }
  NextBlock none;
  chain<V, R>(acc, k1 - k0, x + r0 * ld_x + k0, ld_x, w.input_part(u / W) + k0 * 4 * W, none);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      store_as<V, float>(gx + (r0 + r) * 4 * H + q * H + u, m, count, acc[r][q]);
    }
  }
}

template <class V, int R>
LSTMOP_CELL_TARGET void input_tile_rows(int rows, const ForwardStepWeights& w, const float* x,
                                        int64_t ld_x, const float* bias, float* gx, int64_t r0,
                                        int64_t u, int64_t count, int64_t k0, int64_t k1) {
  if constexpr (R >= 1) {
    if (rows == R) {
      input_tile<V, R>(w, x, ld_x, bias, gx, r0, u, count, k0, k1);
    } else {
      input_tile_rows<V, R - 1>(rows, w, x, ld_x, bias, gx, r0, u, count, k0, k1);
    }
  }
}

// step_input_chains (step_forward.h): groups outside, the rows inside (a
// group's packed input rows read from L2 by every row block). Every chain is
// the concatenated tile's whatever its tile's rows (chain<V, R>: one k
// order), but for AVX2's one-row tiles (even and odd k on two accumulators):
// the rows of the steps of one row (the last steps of a layer, whose batches
// never grow) run alone; the others in balanced blocks of up to kMaxRows<V>
// over all of them (never one row: those are two or more). AVX2 with k_chunk
// (ForwardStepArgs::k_chunk): the blocks of kSuperRows rows one chunk of the
// input's columns after the other, each chunk of the group's rows in L1 for
// all of them (the partial sums in gx; the same bits).
template <class V>
LSTMOP_CELL_TARGET void input_chains(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                                     const int64_t* step_rows, int64_t steps, const float* bias,
                                     float* gx, int64_t u_begin, int64_t u_end,
                                     int64_t k_chunk = 0) {
  constexpr int64_t W = V::kLanes;
  constexpr bool kPairRows = W == 8;  // chain<V, 1>'s pairs
  int64_t rows = 0, single = 0;
  for (int64_t t = 0; t < steps; ++t) rows += step_rows[t] > 0 ? step_rows[t] : 0;
  for (int64_t t = steps - 1; kPairRows && t >= 0 && step_rows[t] <= 1; --t) {
    single += step_rows[t] > 0 ? 1 : 0;
  }
  const int64_t plain = rows - single, K0 = w.k_input();
  const RowBlocks rb = plain > 0 ? row_blocks(plain, kMaxRows<V>) : RowBlocks{0, 0, 0};
  const int64_t kc = W == 8 && k_chunk > 0 && k_chunk < K0 ? k_chunk : (K0 > 0 ? K0 : 1);
  constexpr int64_t kSuper = kSuperRows / kMaxRows<V>;
  for (int64_t u = u_begin; u < u_end; u += W) {
    const int64_t count = u_end - u < W ? u_end - u : W;
    int64_t r_super = 0;
    for (int64_t sb = 0; sb < rb.blocks; sb += kSuper) {
      const int64_t nb = rb.blocks - sb < kSuper ? rb.blocks - sb : kSuper;
      for (int64_t k0 = 0; k0 == 0 || k0 < K0; k0 += kc) {
        const int64_t k1 = K0 - k0 < kc ? K0 : k0 + kc;
        int64_t r0 = r_super;
        for (int64_t b = sb; b < sb + nb; ++b) {
          const int n = rb.rows(b);
          input_tile_rows<V, kMaxRows<V>>(n, w, x, ld_x, bias, gx, r0, u, count, k0, k1);
          r0 += n;
        }
      }
      for (int64_t b = sb; b < sb + nb; ++b) r_super += rb.rows(b);
    }
    for (int64_t r = plain; r < rows; ++r) input_tile<V, 1>(w, x, ld_x, bias, gx, r, u, count);
  }
}

}  // namespace step_simd
}  // namespace detail
}  // namespace lstmop
