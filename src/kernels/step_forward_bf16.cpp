// The fused forward step on AVX512-BF16 (step_forward_bf16.h). A tile is R
// rows (R <= 6) x one group of 16 hidden units: 4R zmm accumulators, one per
// row and gate; each k pair loads the group's four adjacent gate vectors (16
// units x 2 bfloat16 each) and broadcasts one 32-bit pair of bfloat16 per row, then
// vdpbf16ps adds both products to every accumulator. Groups are outside,
// balanced row blocks inside, as in step_forward_simd.h. The cell is
// cell_pass_simd.h's float32 arithmetic.
#include "kernels/step_forward_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/element_access.h"
#include "kernels/simd_avx512.h"
#include "kernels/step_forward.h"
#include "kernels/transpose16_avx512.h"

#define LSTMOP_CELL_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))

namespace lstmop {
namespace detail {
namespace {
// AVX-512's vector type under a name of this file: the cell templates
// instantiated here carry this file's target attribute (with AVX512-BF16), so
// they must not be the same (linker-merged) instantiations as the AVX-512
// files', which run on CPUs without it.
struct Bf16Vector : simd::Avx512 {};
}  // namespace
}  // namespace detail
}  // namespace lstmop

#include "kernels/cell_pass_simd.h"

namespace lstmop {
namespace detail {
namespace {

constexpr int64_t kWidth = 16;  // hidden units per group: one zmm of float32
constexpr int kMaxRows = 6;
// The packed layout (step_forward_bf16.h): per group, one row of the four
// gates' 16 units x 2 values for each k pair (adjacent: one stream).
constexpr int64_t kGate = 2 * kWidth;  // a gate's 16 pairs, in uint16
constexpr int64_t kPairRow = 4 * kGate;

int64_t pairs(int64_t k) { return (k + 1) / 2; }

using V = Bf16Vector;

// The pair (a[2p], a[2p + 1]) as one 32-bit value, the second 0 past `count`.
inline uint32_t pair_at(const uint16_t* a, int64_t p, int64_t count) {
  const int64_t k = 2 * p;
  const uint32_t lo = a[k];
  const uint32_t hi = k + 1 < count ? a[k + 1] : 0u;
  return lo | (hi << 16);
}

// acc[r][q] += products over the K values of a's rows (pairs; an odd K's last
// pair with a zero partner, read without touching the row's end).
template <int R>
LSTMOP_CELL_TARGET inline void chain(__m512 (&acc)[R][4], int64_t K, const uint16_t* a,
                                     int64_t lda, const uint16_t* block, NextBlock& pf) {
  const int64_t full = K / 2;
  for (int64_t p = 0; p < full; ++p) {
    pf.fetch();
    __m512bh b[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      b[q] = (__m512bh)_mm512_loadu_si512(block + p * kPairRow + q * kGate);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      uint32_t two;
      std::memcpy(&two, a + r * lda + 2 * p, sizeof two);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(two));
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], av, b[q]);
    }
  }
  if (K % 2 != 0) {
    __m512bh b[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      b[q] = (__m512bh)_mm512_loadu_si512(block + full * kPairRow + q * kGate);
    }
    for (int r = 0; r < R; ++r) {
      const __m512bh av =
          (__m512bh)_mm512_set1_epi32(static_cast<int>(pair_at(a + r * lda, full, K)));
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) acc[r][q] = _mm512_dpbf16_ps(acc[r][q], av, b[q]);
    }
  }
}

// The bfloat16 bits of 16 floats, rounded to nearest even (vcvtneps2bf16:
// float_to_bfloat16's bits for every float but subnormals, which it takes
// as zero; this step runs only in calls that flush subnormals, whose
// arithmetic never makes one, lstm_plan.h: bf16_products).
LSTMOP_CELL_TARGET inline __m256i bfloat16_bits(__m512 v) {
  return (__m256i)_mm512_cvtneps_pbh(v);
}
// 16 bfloat16 bits as floats, exactly.
LSTMOP_CELL_TARGET inline __m512 widened(__m256i bits) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

LSTMOP_CELL_TARGET inline void store_bits(uint16_t* dst, __mmask16 m, int64_t count, __m256i v) {
  if (count == kWidth) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v);
  } else {
    _mm256_mask_storeu_epi16(dst, m, v);
  }
}

LSTMOP_CELL_TARGET inline void store_float(float* dst, __mmask16 m, int64_t count, __m512 v) {
  if (count == kWidth) {
    _mm512_storeu_ps(dst, v);
  } else {
    _mm512_mask_storeu_ps(dst, m, v);
  }
}

// A saved tensor's lanes in Storage (bfloat16 rounded to nearest even).
template <class Storage>
LSTMOP_CELL_TARGET inline void store_saved(Storage* dst, __mmask16 m, int64_t count, __m512 v) {
  if constexpr (std::is_same_v<Storage, float>) {
    store_float(dst, m, count, v);
  } else {
    store_bits(reinterpret_cast<uint16_t*>(dst), m, count, bfloat16_bits(v));
  }
}

// The cell of C rows' accumulators acc[0..C) (rows row0.. of the step, units
// [u, u + count)): their 4C gate activations and C tanh(c) interleaved
// (cell_simd::activate), then c, h and the saved tensors.
template <int C, class Storage>
LSTMOP_CELL_TARGET inline LSTMOP_ALWAYS_INLINE void cell_rows(const __m512 (*acc)[4],
                                                              const Bf16StepArgs& s,
                                                              const StepSaved<Storage>* saved,
                                                              int64_t H, int64_t row0, int64_t u,
                                                              __mmask16 m, int64_t count) {
  __m512 a[4 * C], g[4 * C];
#pragma GCC unroll 8
  for (int e = 0; e < 4 * C; ++e) {
    const int q = e % 4;
    a[e] = s.gx != nullptr
               ? _mm512_add_ps(acc[e / 4][q], _mm512_maskz_loadu_ps(m, s.bias + q * H + u))
               : acc[e / 4][q];
  }
  cell_simd::activate<V, 4 * C, cell_simd::gate_tanh_bits(C)>(a, g);
  __m512 cn[C], tc[C];
#pragma GCC unroll 2
  for (int i = 0; i < C; ++i) {
    const __m512 c_prev = _mm512_maskz_loadu_ps(m, s.c_state + (row0 + i) * H + u);
    cn[i] = V::add(V::mul(g[4 * i + 1], c_prev), V::mul(g[4 * i], g[4 * i + 2]));
  }
  cell_simd::activate<V, C, (1u << C) - 1u>(cn, tc);
#pragma GCC unroll 2
  for (int i = 0; i < C; ++i) {
    const int64_t row = row0 + i;
    const __m512 hn = V::mul(g[4 * i + 3], tc[i]);
    const __m256i bits = bfloat16_bits(hn);  // the next products' operand
    // bfloat16 calls store the rounded h; float32 calls the float32 one.
    const __m512 stored = std::is_same_v<Storage, BFloat16> ? widened(bits) : hn;
    store_float(s.c_state + row * H + u, m, count, cn[i]);
    store_bits(s.h_out_bits + row * s.ld_out_bits + u, m, count, bits);
    if (s.h_next != nullptr) store_bits(s.h_next + row * H + u, m, count, bits);
    if (s.h_out != nullptr) store_float(s.h_out + row * s.ld_out + u, m, count, stored);
    if (saved != nullptr) {
      const int64_t e = row * H + u;
      store_saved<Storage>(saved->i + e, m, count, g[4 * i]);
      store_saved<Storage>(saved->j + e, m, count, g[4 * i + 2]);
      store_saved<Storage>(saved->f + e, m, count, g[4 * i + 1]);
      store_saved<Storage>(saved->o + e, m, count, g[4 * i + 3]);
      store_saved<Storage>(saved->c + e, m, count, cn[i]);
      store_saved<Storage>(saved->tanhc + e, m, count, tc[i]);
      store_saved<Storage>(saved->h + e, m, count, stored);
    }
  }
}

template <int R, class Storage>
LSTMOP_CELL_TARGET void tile(const Bf16StepWeights& w, const Bf16StepArgs& s,
                             const StepSaved<Storage>* saved, int64_t r0, int64_t u,
                             int64_t count, NextBlock pf) {
  const int64_t H = w.hidden(), K0 = w.k_input(), K1 = w.k_hidden();
  const uint16_t* block = w.data() + (u / kWidth) * (pairs(K0) + pairs(K1)) * kPairRow;
  const __mmask16 m =
      count >= kWidth ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << count) - 1u);
  __m512 acc[R][4];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      acc[r][q] = _mm512_maskz_loadu_ps(m, s.gx != nullptr ? s.gx + (r0 + r) * 4 * H + q * H + u
                                                           : s.bias + q * H + u);
    }
  }
  if (K0 > 0) chain<R>(acc, K0, s.x + r0 * s.ld_x, s.ld_x, block, pf);
  chain<R>(acc, K1, s.h_prev + r0 * s.ld_h, s.ld_h, block + pairs(K0) * kPairRow, pf);
  // The cell two rows at a time (their activations interleaved), an odd R's
  // last row alone.
#pragma GCC unroll 3
  for (int r = 0; r + 2 <= R; r += 2) {
    cell_rows<2, Storage>(acc + r, s, saved, H, r0 + r, u, m, count);
  }
  if constexpr (R % 2 != 0) {
    cell_rows<1, Storage>(acc + R - 1, s, saved, H, r0 + R - 1, u, m, count);
  }
}

template <int R, class Storage>
LSTMOP_CELL_TARGET void tile_rows(int rows, const Bf16StepWeights& w, const Bf16StepArgs& s,
                                  const StepSaved<Storage>* saved, int64_t r0, int64_t u,
                                  int64_t count, NextBlock pf) {
  if constexpr (R >= 1) {
    if (rows == R) {
      tile<R, Storage>(w, s, saved, r0, u, count, pf);
    } else {
      tile_rows<R - 1, Storage>(rows, w, s, saved, r0, u, count, pf);
    }
  }
}

// pack of Bf16StepWeights for one part of one gate (rows < 2^27 apart): per
// pair p the 16 units' columns k = 2p and 2p + 1 gathered, rounded to
// bfloat16 (vcvtneps2bf16: nearest even), and interleaved as 32-bit pairs.
LSTMOP_CELL_TARGET void pack_pairs(uint16_t* part, int64_t pairs_count, int64_t count,
                                   const float* w, int64_t ld, int64_t units) {
  const __mmask16 valid = static_cast<__mmask16>((1u << units) - 1u);
  const __m512i rows = _mm512_mullo_epi32(
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
      _mm512_set1_epi32(static_cast<int>(ld)));
  for (int64_t p = 0; p < pairs_count; ++p) {
    const int64_t k = 2 * p;
    const __m512 first = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, rows, w + k, 4);
    const __m512 second =
        k + 1 < count
            ? _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, rows, w + k + 1, 4)
            : _mm512_setzero_ps();
    const __m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(first));
    const __m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(second));
    _mm512_storeu_si512(part + p * kPairRow, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
  }
}

// pack_bits for rows 4-byte aligned with an even stride: per pair p the 16
// units' values k = 2p, 2p + 1 are one 32-bit element of each row, so 16
// pairs of the 16 rows are a 16 x 16 block of 32-bit elements: loaded as
// rows, transposed in registers (transpose16), stored as 16 pair rows. (A
// 32-bit gather per pair row ran at ~2 GB/s on Zen 4: 5% of S6 inference.)
// An odd count's last value alone, with a zero partner (no read past a row).
LSTMOP_CELL_TARGET void gather_pairs(uint16_t* part, int64_t pairs_count, int64_t count,
                                     const uint16_t* w, int64_t ld, int64_t units) {
  const int* pairs_of = reinterpret_cast<const int*>(w);
  const int64_t row_pairs = ld / 2;
  const int64_t full = count / 2;  // pairs inside the rows; an odd count's last one is not
  for (int64_t p0 = 0; p0 < full; p0 += kWidth) {
    const int64_t n = full - p0 < kWidth ? full - p0 : kWidth;
    const __mmask16 columns = static_cast<__mmask16>((1u << n) - 1u);
    __m512 r[16];
    for (int64_t lane = 0; lane < kWidth; ++lane) {
      if (lane >= units) {
        r[lane] = _mm512_setzero_ps();
        continue;
      }
      // Each row's line 64 pairs on, prefetched: the hardware's prefetchers
      // did not follow 16 rows read side by side (pack_panel_rows_avx512).
      const int* row = pairs_of + lane * row_pairs;
      _mm_prefetch(reinterpret_cast<const char*>(row + p0 + 64), _MM_HINT_T0);
      r[lane] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi32(columns, row + p0));
    }
    transpose16(r);
    for (int64_t j = 0; j < n; ++j) {
      _mm512_storeu_si512(part + (p0 + j) * kPairRow, _mm512_castps_si512(r[j]));
    }
  }
  for (int64_t p = full; p < pairs_count; ++p) {  // the last value with a zero partner
    uint16_t* dst = part + p * kPairRow;
    for (int64_t lane = 0; lane < kWidth; ++lane) {
      dst[2 * lane] = lane < units && 2 * p < count ? w[lane * ld + 2 * p] : uint16_t{0};
      dst[2 * lane + 1] = 0;
    }
  }
}

}  // namespace

void Bf16StepWeights::allocate(WorkspaceArena& arena, int64_t H, int64_t max_k_input,
                               int64_t k_hidden) {
  H_ = H;
  k_input_ = max_k_input;
  k_hidden_ = k_hidden;
  const int64_t groups = (H + kWidth - 1) / kWidth;
  arena.add(packed_, "the packed bfloat16 step weights (4H, input_size + hidden)",
            groups * 4 * (pairs(max_k_input) + pairs(k_hidden)) * 2 * kWidth);
}

namespace {

inline uint16_t bits_of(float v) { return float_to_bfloat16(v); }
inline uint16_t bits_of(uint16_t v) { return v; }

// Every panel part of Bf16StepWeights (per group and gate: w_ih's columns,
// then w_hh's) from float or bfloat16 rows. `fast(part, pairs, count, base,
// ld, units)` packs a part on the vector path and returns false where it
// cannot; the loop below writes pair p of unit `lane` at p * kPairRow + lane * 2
// from the gate's start.
template <class T, class Fast>
void pack_panels(uint16_t* out, int64_t H, int64_t k_input, int64_t k_hidden, const T* w_ih,
                 int64_t ld_ih, const T* w_hh, int64_t ld_hh, int64_t u_begin, int64_t u_end,
                 Fast fast) {
  const int64_t P0 = pairs(k_input), P1 = pairs(k_hidden);
  const int64_t g_end = (std::min(u_end, H) + kWidth - 1) / kWidth;
  auto pack_part = [&](uint16_t* part, int64_t pairs_count, int64_t count, const T* w,
                       int64_t ld, int64_t first_row, int64_t units) {
    if (fast(part, pairs_count, count, w + first_row * ld, ld, units)) return;
    for (int64_t p = 0; p < pairs_count; ++p) {
      uint16_t* dst = part + p * kPairRow;
      const int64_t k = 2 * p;
      for (int64_t lane = 0; lane < kWidth; ++lane) {
        const T* row = w + (first_row + lane) * ld;
        const bool valid = lane < units;
        dst[2 * lane] = valid && k < count ? bits_of(row[k]) : uint16_t{0};
        dst[2 * lane + 1] = valid && k + 1 < count ? bits_of(row[k + 1]) : uint16_t{0};
      }
    }
  };
  for (int64_t g = u_begin / kWidth; g < g_end; ++g) {
    const int64_t units = std::min<int64_t>(kWidth, H - g * kWidth);
    for (int64_t q = 0; q < 4; ++q) {
      uint16_t* gate = out + g * (P0 + P1) * kPairRow + q * kGate;
      const int64_t first_row = q * H + g * kWidth;
      pack_part(gate, P0, k_input, w_ih, ld_ih, first_row, units);
      pack_part(gate + P0 * kPairRow, P1, k_hidden, w_hh, ld_hh, first_row, units);
    }
  }
}

}  // namespace

void Bf16StepWeights::pack_units(const float* w_ih, int64_t ld_ih, const float* w_hh,
                                 int64_t ld_hh, int64_t u_begin, int64_t u_end) {
  pack_panels(packed_.data(), H_, k_input_, k_hidden_, w_ih, ld_ih, w_hh, ld_hh, u_begin, u_end,
              [](uint16_t* part, int64_t pairs_count, int64_t count, const float* base,
                 int64_t ld, int64_t units) {
                if (ld >= (int64_t{1} << 27)) return false;  // 32-bit gather offsets
                pack_pairs(part, pairs_count, count, base, ld, units);
                return true;
              });
}

void Bf16StepWeights::pack_bits_units(const uint16_t* w_ih, int64_t ld_ih,
                                      const uint16_t* w_hh, int64_t ld_hh, int64_t u_begin,
                                      int64_t u_end) {
  pack_panels(packed_.data(), H_, k_input_, k_hidden_, w_ih, ld_ih, w_hh, ld_hh, u_begin, u_end,
              [](uint16_t* part, int64_t pairs_count, int64_t count, const uint16_t* base,
                 int64_t ld, int64_t units) {
                // 32-bit pair gathers: 4-byte aligned rows with an even stride.
                if (ld % 2 != 0 || ld >= (int64_t{1} << 27) ||
                    reinterpret_cast<uintptr_t>(base) % 4 != 0) {
                  return false;
                }
                gather_pairs(part, pairs_count, count, base, ld, units);
                return true;
              });
}

template <class Storage>
void step_forward_bf16(const Bf16StepWeights& w, const Bf16StepArgs& s,
                       const StepSaved<Storage>* saved) {
  if (s.rows <= 0 || s.u_begin >= s.u_end) return;
  const int64_t blocks = (s.rows + kMaxRows - 1) / kMaxRows;
  const int64_t base = s.rows / blocks, longer = s.rows % blocks;
  const int64_t K0 = w.k_input(), K1 = w.k_hidden();
  const int64_t block_elements = (pairs(K0) + pairs(K1)) * kPairRow;
  const int64_t block_bytes = block_elements * static_cast<int64_t>(sizeof(uint16_t));
  const int64_t total_bytes = (s.u_end - s.u_begin + kWidth - 1) / kWidth * block_bytes;
  const uint16_t* first = w.data() + (s.u_begin / kWidth) * block_elements;
  for (int64_t u = s.u_begin; u < s.u_end; u += kWidth) {
    const int64_t count = s.u_end - u < kWidth ? s.u_end - u : kWidth;
    const uint16_t* next =
        u + kWidth < s.u_end ? w.data() + ((u + kWidth) / kWidth) * block_elements : first;
    int64_t r0 = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      const int rows = static_cast<int>(base + (b < longer ? 1 : 0));
      // The chains' full pairs are the k steps that fetch.
      tile_rows<kMaxRows, Storage>(
          rows, w, s, saved, r0, u, count,
          next_block_share(next, block_bytes, total_bytes, blocks, b, K0 / 2 + K1 / 2,
                           s.rows, s.alone));
      r0 += rows;
    }
  }
}

template void step_forward_bf16<float>(const Bf16StepWeights&, const Bf16StepArgs&,
                                       const StepSaved<float>*);
template void step_forward_bf16<BFloat16>(const Bf16StepWeights&, const Bf16StepArgs&,
                                          const StepSaved<BFloat16>*);

}  // namespace detail
}  // namespace lstmop
