// Internal: the fused forward step of step_forward.h written once over a
// vector type V (simd_avx2.h, simd_avx512.h), for step_forward_avx2.cpp and
// step_forward_avx512.cpp. Each includes this after defining
// LSTMOP_CELL_TARGET (the target attribute of its ISA) and V.
//
// A tile is R rows x one group of V::kLanes hidden units: 4R accumulators
// (one vector per row and gate), R <= kMaxRows<V> (6 with 32 AVX-512
// registers, 3 with AVX2's 16). The k loop loads the group's four gate
// vectors of row k (adjacent, step_forward.h) and broadcasts one A element
// per row; the epilogue runs the cell on each row's four accumulators.
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
template <class V, class Storage>
LSTMOP_CELL_TARGET inline void store_saved(Storage* dst, const typename V::Tail& m,
                                           int64_t count, typename V::reg v, bool stream) {
  if constexpr (std::is_same_v<Storage, float>) {
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

// R rows of one unit group: units [u, u + count), count <= kLanes.
template <class V, int R, class Storage>
LSTMOP_CELL_TARGET void tile(const ForwardStepWeights& w, const ForwardStepArgs& s,
                             const StepSaved<Storage>* saved, int64_t r0, int64_t u,
                             int64_t count, NextBlock pf) {
  constexpr int64_t W = V::kLanes;
  const int64_t H = w.hidden(), K0 = w.k_input(), K1 = w.k_hidden();
  const float* block = w.data() + (u / W) * (K0 + K1) * 4 * W;
  const typename V::Tail m = V::tail(count);
  typename V::reg acc[R][4];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      acc[r][q] = s.gx != nullptr ? load_lanes<V>(m, count, s.gx + (r0 + r) * 4 * H + q * H + u)
                                  : load_lanes<V>(m, count, s.bias + q * H + u);
    }
  }
  if (K0 > 0) chain<V, R>(acc, K0, s.x + r0 * s.ld_x, s.ld_x, block, pf);
  chain<V, R>(acc, K1, s.h_prev + r0 * s.ld_h, s.ld_h, block + K0 * 4 * W, pf);
  for (int r = 0; r < R; ++r) {
    typename V::reg a[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      a[q] = s.gx != nullptr ? V::add(acc[r][q], load_lanes<V>(m, count, s.bias + q * H + u))
                             : acc[r][q];
    }
    const int64_t row = r0 + r;
    float* c = s.c_state + row * H + u;
    const auto gi = cell_simd::sigmoid_v<V>(a[0]);
    const auto gf = cell_simd::sigmoid_v<V>(a[1]);
    const auto gj = cell_simd::tanh_v<V>(a[2]);
    const auto go = cell_simd::sigmoid_v<V>(a[3]);
    const auto cn = V::add(V::mul(gf, load_lanes<V>(m, count, c)), V::mul(gi, gj));
    const auto tc = cell_simd::tanh_v<V>(cn);
    const auto hn = as_stored<V, Storage>(V::mul(go, tc));
    store_as<V, float>(c, m, count, cn);
    store_as<V, float>(s.h_out + row * s.ld_out + u, m, count, hn);
    if (s.h_next != nullptr) store_as<V, float>(s.h_next + row * H + u, m, count, hn);
    if (saved != nullptr) {
      const int64_t e = row * H + u;
      const bool stream = s.stream_saved;
      store_saved<V, Storage>(saved->i + e, m, count, gi, stream);
      store_saved<V, Storage>(saved->j + e, m, count, gj, stream);
      store_saved<V, Storage>(saved->f + e, m, count, gf, stream);
      store_saved<V, Storage>(saved->o + e, m, count, go, stream);
      store_saved<V, Storage>(saved->c + e, m, count, cn, stream);
      store_saved<V, Storage>(saved->tanhc + e, m, count, tc, stream);
      if (saved->h != nullptr) store_saved<V, Storage>(saved->h + e, m, count, hn, stream);
    }
  }
}

template <class V, int R, class Storage>
LSTMOP_CELL_TARGET void tile_rows(int rows, const ForwardStepWeights& w, const ForwardStepArgs& s,
                                  const StepSaved<Storage>* saved, int64_t r0, int64_t u,
                                  int64_t count, NextBlock pf) {
  if constexpr (R >= 1) {
    if (rows == R) {
      tile<V, R, Storage>(w, s, saved, r0, u, count, pf);
    } else {
      tile_rows<V, R - 1, Storage>(rows, w, s, saved, r0, u, count, pf);
    }
  }
}

template <class V, class Storage>
LSTMOP_CELL_TARGET void step(const ForwardStepWeights& w, const ForwardStepArgs& s,
                             const StepSaved<Storage>* saved) {
  constexpr int64_t W = V::kLanes;
  constexpr int64_t kRows = kMaxRows<V>;
  if (s.rows <= 0) return;
  // Balanced row blocks of at most kRows rows: the first `longer` have one more.
  const int64_t blocks = (s.rows + kRows - 1) / kRows;
  const int64_t base = s.rows / blocks, longer = s.rows % blocks;
  const int64_t K = w.k_input() + w.k_hidden();
  const int64_t block_bytes = K * 4 * W * static_cast<int64_t>(sizeof(float));
  const int64_t total_bytes = (s.u_end - s.u_begin + W - 1) / W * block_bytes;
  const float* first = w.data() + (s.u_begin / W) * K * 4 * W;
  for (int64_t u = s.u_begin; u < s.u_end; u += W) {
    const int64_t count = s.u_end - u < W ? s.u_end - u : W;
    const float* next = u + W < s.u_end ? w.data() + ((u + W) / W) * K * 4 * W : first;
    int64_t r0 = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      const int rows = static_cast<int>(base + (b < longer ? 1 : 0));
      tile_rows<V, kRows, Storage>(rows, w, s, saved, r0, u, count,
                                   next_block_share(next, block_bytes, total_bytes, blocks, b, K));
      r0 += rows;
    }
  }
  // Streaming stores are weakly ordered: fenced before the step's results
  // are handed to another thread (split mode's barrier, the backward).
  if (s.stream_saved && saved != nullptr) _mm_sfence();
}

}  // namespace step_simd
}  // namespace detail
}  // namespace lstmop
