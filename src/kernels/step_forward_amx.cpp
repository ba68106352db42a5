// The AMX step of step_forward_amx.h: tile configuration, the kernel and the
// packing. The tile registers of a single block: 0..3 its four gate tiles
// (C), 4 its h (A, rows x 32 k), 5..7 w_hh's tiles (B, 16 k pairs x 16 units)
// in rotation; of a pair of row blocks: 0, 1 and 2, 3 two gates' tiles of
// each block, 4 and 5 their h, 6 and 7 the two gates' w tiles (dh alike, with
// two column tiles for two gates).
#include "kernels/step_forward_amx.h"

#include <immintrin.h>

#include <atomic>

#include "kernels/cpu_features.h"
#include "kernels/isa_target.h"
#include "kernels/transpose16_avx512.h"

// GCC 12 warns inside avx512fintrin.h that the pass-through operand of the
// unmasked intrinsics (transpose16) "may be used uninitialized" (a dummy
// never read: the mask is all ones).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace lstmop {
namespace detail {
namespace {

#define LSTMOP_TARGET_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw")))

std::atomic<int64_t> g_runs{0};
std::atomic<int64_t> g_dh_runs{0};
std::atomic<int64_t> g_input_runs{0};

constexpr int64_t kTile = 512;  // elements (bfloat16) of a B tile: 16 x 64 bytes
constexpr int64_t kAmxUnitsOuterMinBytes = int64_t{1} << 20;
constexpr int64_t kSliceRows = 4;

// The palette-1 configuration: C and A tiles of `rows` rows, B tiles of 16
// (blocks of one row block), or for a pair of row blocks (rows_b > 0) tiles
// 0, 1 (C) and 4 (A) of rows, 2, 3 (C) and 5 (A) of rows_b, 6 and 7 (B) of 16.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// ldtilecfg through an asm with the configuration as a memory operand: GCC
// 12's _tile_loadconfig builtin does not tell the compiler it reads the
// struct, and a build that inlined this differently dropped the stores that
// fill it (the tiles then unconfigured: #UD at the first tile instruction).
LSTMOP_TARGET_AMX void load_config(int64_t rows, int64_t rows_b = 0) {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    if (rows_b == 0) {
      c.rows[t] = static_cast<uint8_t>(t < 5 ? rows : 16);
    } else {
      c.rows[t] = static_cast<uint8_t>(t == 2 || t == 3 || t == 5 ? rows_b : t < 6 ? rows : 16);
    }
  }
  __asm__ volatile("ldtilecfg %0" : : "m"(c));
}

LSTMOP_TARGET_AMX void release_tiles() { _tile_release(); }

// A kernel call's tile configuration: loaded when the block shape changes,
// released at the end where one was loaded.
class Tiles {
 public:
  LSTMOP_TARGET_AMX void configure(int64_t rows, int64_t rows_b) {
    const int64_t key = rows * 32 + rows_b;
    if (key != key_) {
      load_config(rows, rows_b);
      key_ = key;
    }
  }
  LSTMOP_TARGET_AMX void release() {
    if (key_ >= 0) release_tiles();
  }

 private:
  int64_t key_ = -1;
};

// Gate tiles 0..3 at the four rows of floats g0..g3 (row stride ldc bytes):
// loaded from there, or zero where the input's product goes on the tiles too.
LSTMOP_TARGET_AMX inline void start_gate_tiles(bool zero, int64_t ldc, const float* g0,
                                               const float* g1, const float* g2,
                                               const float* g3) {
  if (zero) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    return;
  }
  _tile_loadd(0, g0, ldc);
  _tile_loadd(1, g1, ldc);
  _tile_loadd(2, g2, ldc);
  _tile_loadd(3, g3, ldc);
}

LSTMOP_TARGET_AMX inline void store_gate_tiles(int64_t ldc, float* g0, float* g1, float* g2,
                                               float* g3) {
  _tile_stored(0, g0, ldc);
  _tile_stored(1, g1, ldc);
  _tile_stored(2, g2, ldc);
  _tile_stored(3, g3, ldc);
}

// tiles 0..3 += a (this configuration's rows, kb blocks of 32 k, row stride
// lda elements) times the four gates' packed tiles b.
template <class Between>
LSTMOP_TARGET_AMX inline void multiply_k(int64_t kb, const uint16_t* b, const uint16_t* a,
                                         int64_t lda_elements, Between& between) {
  const int64_t lda = lda_elements * static_cast<int64_t>(sizeof(uint16_t));
  for (int64_t q = 0; q < kb; ++q, b += 4 * kTile) {
    _tile_loadd(4, a + q * 32, lda);
    _tile_loadd(5, b, 64);
    _tile_dpbf16ps(0, 4, 5);
    _tile_loadd(6, b + kTile, 64);
    _tile_dpbf16ps(1, 4, 6);
    _tile_loadd(7, b + 2 * kTile, 64);
    _tile_dpbf16ps(2, 4, 7);
    _tile_loadd(5, b + 3 * kTile, 64);
    _tile_dpbf16ps(3, 4, 5);
    between();
  }
}

// One block's products: rows of this configuration, units u0..u0+15, into
// tiles 0..3 (store_block writes them back): from the gates c, or with an
// input operand from zero, the input's k blocks first, then h's.
template <class Between>
LSTMOP_TARGET_AMX inline void multiply_block(int64_t H, const AmxInput* x, int64_t u0,
                                             int64_t kb, const uint16_t* b, const uint16_t* a,
                                             int64_t ldh, const float* c, Between& between) {
  start_gate_tiles(x != nullptr, 4 * H * static_cast<int64_t>(sizeof(float)), c, c + H,
                   c + 2 * H, c + 3 * H);
  if (x != nullptr) {
    const int64_t kbx = amx_k_padded(x->K) / 32;
    multiply_k(kbx, x->packed + u0 / 16 * kbx * 4 * kTile, x->rows, x->ld, between);
  }
  multiply_k(kb, b, a, ldh, between);
}

LSTMOP_TARGET_AMX inline void store_block(int64_t H, float* c) {
  store_gate_tiles(4 * H * static_cast<int64_t>(sizeof(float)), c, c + H, c + 2 * H, c + 3 * H);
}

// The pair form (two row blocks, tiles 4 and 5, share each w tile): tiles
// 0, 1 (first rows) and 2, 3 (second rows) += a's rows times the packed tiles
// of two gates, b pointing at the first gate's tile of k block 0. One tile
// load per tdpbf16ps instead of the single block's 1.25 (on the Intel Xeon a
// tile load of 1 KiB takes ~4 ns from L1, ~12 from L2, a tdpbf16ps ~6).
template <class Between>
LSTMOP_TARGET_AMX inline void multiply_k_pair(int64_t kb, const uint16_t* b, const uint16_t* a0,
                                              const uint16_t* a1, int64_t lda_elements,
                                              Between& between) {
  const int64_t lda = lda_elements * static_cast<int64_t>(sizeof(uint16_t));
  for (int64_t q = 0; q < kb; ++q, b += 4 * kTile) {
    _tile_loadd(4, a0 + q * 32, lda);
    _tile_loadd(6, b, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, b + kTile, 64);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, a1 + q * 32, lda);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
    between();
  }
}

// Gates 2 * gp and 2 * gp + 1 of a pair of row blocks (gates c0 and c1 at
// unit u0), from the gates or with an input operand from zero.
template <class Between>
LSTMOP_TARGET_AMX inline void multiply_pair(int64_t H, const AmxInput* x, int64_t gp,
                                            int64_t u0, int64_t kb, const uint16_t* b,
                                            const uint16_t* a0, const uint16_t* a1, int64_t ldh,
                                            const float* c0, const float* c1, Between& between) {
  start_gate_tiles(x != nullptr, 4 * H * static_cast<int64_t>(sizeof(float)), c0 + 2 * gp * H,
                   c0 + (2 * gp + 1) * H, c1 + 2 * gp * H, c1 + (2 * gp + 1) * H);
  if (x != nullptr) {
    const int64_t kbx = amx_k_padded(x->K) / 32;
    multiply_k_pair(kbx, x->packed + (u0 / 16 * kbx * 4 + 2 * gp) * kTile, x->rows,
                    x->rows + 16 * x->ld, x->ld, between);
  }
  multiply_k_pair(kb, b + 2 * gp * kTile, a0, a1, ldh, between);
}

LSTMOP_TARGET_AMX inline void store_pair(int64_t H, int64_t gp, float* c0, float* c1) {
  store_gate_tiles(4 * H * static_cast<int64_t>(sizeof(float)), c0 + 2 * gp * H,
                   c0 + (2 * gp + 1) * H, c1 + 2 * gp * H, c1 + (2 * gp + 1) * H);
}

// dh's columns [n0, n0 + 16 * NT) of this configuration's rows: NT tiles of
// C from zero over the k blocks of 32.
template <int NT>
LSTMOP_TARGET_AMX inline void dh_columns(int64_t H, int64_t kb, const uint16_t* b,
                                         const uint16_t* a, float* c) {
  const int64_t lda = 4 * H * static_cast<int64_t>(sizeof(uint16_t));
  const int64_t ldc = H * static_cast<int64_t>(sizeof(float));
  const int64_t tile_stride = kb * kTile;  // the next 16 columns' tiles
  _tile_zero(0);
  if constexpr (NT > 1) _tile_zero(1);
  if constexpr (NT > 2) _tile_zero(2);
  if constexpr (NT > 3) _tile_zero(3);
  for (int64_t q = 0; q < kb; ++q, b += kTile) {
    _tile_loadd(4, a + q * 32, lda);
    _tile_loadd(5, b, 64);
    _tile_dpbf16ps(0, 4, 5);
    if constexpr (NT > 1) {
      _tile_loadd(6, b + tile_stride, 64);
      _tile_dpbf16ps(1, 4, 6);
    }
    if constexpr (NT > 2) {
      _tile_loadd(7, b + 2 * tile_stride, 64);
      _tile_dpbf16ps(2, 4, 7);
    }
    if constexpr (NT > 3) {
      _tile_loadd(5, b + 3 * tile_stride, 64);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  _tile_stored(0, c, ldc);
  if constexpr (NT > 1) _tile_stored(1, c + 16, ldc);
  if constexpr (NT > 2) _tile_stored(2, c + 32, ldc);
  if constexpr (NT > 3) _tile_stored(3, c + 48, ldc);
}

// dh's columns [n0, n0 + 16 * NT) (NT 1 or 2) of a pair of row blocks (the
// pair configuration: a0's rows into tiles 0 and 1, a1's into 2 and 3), from
// zero over the k blocks: each w tile loaded once for both row blocks.
template <int NT>
LSTMOP_TARGET_AMX inline void dh_columns_pair(int64_t H, int64_t kb, const uint16_t* b,
                                              const uint16_t* a0, const uint16_t* a1, float* c0,
                                              float* c1) {
  const int64_t lda = 4 * H * static_cast<int64_t>(sizeof(uint16_t));
  const int64_t ldc = H * static_cast<int64_t>(sizeof(float));
  const int64_t tile_stride = kb * kTile;
  _tile_zero(0);
  _tile_zero(2);
  if constexpr (NT > 1) {
    _tile_zero(1);
    _tile_zero(3);
  }
  for (int64_t q = 0; q < kb; ++q, b += kTile) {
    _tile_loadd(4, a0 + q * 32, lda);
    _tile_loadd(6, b, 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NT > 1) {
      _tile_loadd(7, b + tile_stride, 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    _tile_loadd(5, a1 + q * 32, lda);
    _tile_dpbf16ps(2, 5, 6);
    if constexpr (NT > 1) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c0, ldc);
  _tile_stored(2, c1, ldc);
  if constexpr (NT > 1) {
    _tile_stored(1, c0 + 16, ldc);
    _tile_stored(3, c1 + 16, ldc);
  }
}

}  // namespace

int64_t amx_k_padded(int64_t H) { return (H + 31) / 32 * 32; }

bool amx_step_supported(int64_t H) {
  return H > 0 && H % 16 == 0 && kernels::amx_bf16_usable();
}

int64_t amx_packed_size(int64_t H) { return amx_packed_size(H, H); }

int64_t amx_packed_size(int64_t H, int64_t K) {
  return H / 16 * (amx_k_padded(K) / 32) * 4 * kTile;
}

void amx_pack_w_hh(int64_t H, const uint16_t* w_hh, int64_t ld, uint16_t* packed) {
  amx_pack_gates(H, H, w_hh, ld, packed);
}

// A B tile is a 16 x 16 matrix of 32-bit elements (k pairs): tile p's
// element u is the pair p of unit u's row. Each tile is the 16 units' rows of
// 32 k values (masked past K: zeros), transposed in registers as 32-bit
// elements (transpose16). (Element by element this packing took 4% of
// T=50 B=32 I=H=256 bfloat16 inference.) Runs where the AMX step runs, on
// CPUs with AVX-512.
LSTMOP_TARGET_AVX512 void amx_pack_gates(int64_t H, int64_t K, const uint16_t* w_hh, int64_t ld,
                                         uint16_t* packed) {
  const int64_t kb = amx_k_padded(K) / 32;
  for (int64_t ub = 0; ub < H / 16; ++ub) {
    for (int64_t q = 0; q < kb; ++q) {
      const int64_t valid = K - q * 32 < 32 ? K - q * 32 : 32;
      const __mmask32 mask = valid >= 32 ? ~__mmask32{0} : (__mmask32{1} << valid) - 1u;
      for (int64_t g = 0; g < 4; ++g) {
        uint16_t* tile = packed + ((ub * kb + q) * 4 + g) * kTile;
        __m512 r[16];
        for (int64_t u = 0; u < 16; ++u) {
          const uint16_t* row = w_hh + (g * H + ub * 16 + u) * ld + q * 32;
          r[u] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, row));
        }
        transpose16(r);
        for (int64_t p = 0; p < 16; ++p) _mm512_storeu_ps(tile + p * 32, r[p]);
      }
    }
  }
}

LSTMOP_TARGET_AMX void amx_step_forward(int64_t rows, int64_t H, const uint16_t* packed,
                                        const uint16_t* h, int64_t ldh, float* gates,
                                        AmxBlockDone done, void* ctx) {
  amx_step_forward_input(rows, H, nullptr, packed, h, ldh, gates, done, ctx);
}

LSTMOP_TARGET_AMX void amx_step_forward_input(int64_t rows, int64_t H, const AmxInput* x,
                                              const uint16_t* packed, const uint16_t* h,
                                              int64_t ldh, float* gates, AmxBlockDone done,
                                              void* ctx, int64_t u_begin, int64_t u_end) {
  if (u_end < 0) u_end = H;
  g_runs.fetch_add(1, std::memory_order_relaxed);
  if (x != nullptr) g_input_runs.fetch_add(1, std::memory_order_relaxed);
  const int64_t kb = amx_k_padded(H) / 32, G = 4 * H;
  // Software-pipelined: a block's products are issued, with the previous
  // blocks' `done` (the core's vector units) while the tile unit computes
  // them, then they are stored. Rows go in pairs of row blocks
  // (multiply_k_pair), each pair in two passes of two gates; a last block
  // of at most 16 rows alone.
  Tiles config;
  struct Pending {
    int64_t r0, rows, u0;
  };
  Pending pending[2];
  int n_pending = 0;
  const auto flush = [&](int upto) {
    for (int i = 0; i < upto && i < n_pending; ++i) {
      if (pending[i].rows > 0) done(ctx, pending[i].r0, pending[i].rows, pending[i].u0);
      pending[i].rows = 0;
    }
  };
  // For pairs, the previous blocks' `done` in slices of kSliceRows rows,
  // spread evenly over the pair's k iterations (`between`, after each one's
  // tile instructions), so that the vector units work while the tile unit
  // does rather than after its instructions fill the core's reorder buffer
  // (T=50 B=32 I=H=256 inference 0.90x, T=50 B=64 I=H=512 0.97x; slices of
  // 2 rows 1.00x, of 8 rows 0.93x / 0.98x).
  int64_t every = 0, count = 0;
  int at = 0;
  const auto spread = [&](int64_t iterations) {
    int64_t slices = 0;
    for (int i = 0; i < n_pending; ++i) slices += (pending[i].rows + kSliceRows - 1) / kSliceRows;
    every = slices == 0 ? INT64_MAX : (iterations + slices - 1) / slices;
    count = 0;
    at = 0;
  };
  const auto between = [&]() {
    if (++count < every) return;
    count = 0;
    while (at < n_pending && pending[at].rows == 0) ++at;
    if (at == n_pending) return;
    Pending& e = pending[at];
    const int64_t n = e.rows < kSliceRows ? e.rows : kSliceRows;
    done(ctx, e.r0, n, e.u0);
    e.r0 += n;
    e.rows -= n;
  };
  const int64_t kbx = x != nullptr ? amx_k_padded(x->K) / 32 : 0;
  const auto block_at = [&](int64_t r0, int64_t u0) {
    const int64_t block_rows = rows - r0 < 16 ? rows - r0 : 16;
    const uint16_t* b = packed + u0 / 16 * kb * 4 * kTile;
    float* c = gates + r0 * G + u0;
    AmxInput xr;
    if (x != nullptr) xr = AmxInput{x->K, x->packed, x->rows + r0 * x->ld, x->ld};
    if (rows - r0 <= 16) {
      // Single blocks (batches of up to 16 rows, T=200 B=8 I=H=128 inference:
      // 1.09x slower in slices): the previous block's whole pass after the
      // products are issued.
      config.configure(block_rows, 0);
      const auto nothing = [] {};
      multiply_block(H, x != nullptr ? &xr : nullptr, u0, kb, b, h + r0 * ldh, ldh, c, nothing);
      flush(2);
      store_block(H, c);
      pending[0] = {r0, block_rows, u0};
      n_pending = 1;
      return;
    }
    const int64_t rows_b = rows - r0 - 16 < 16 ? rows - r0 - 16 : 16;
    config.configure(16, rows_b);
    float* c1 = c + 16 * G;
    spread(2 * (kbx + kb));
    for (int64_t gp = 0; gp < 2; ++gp) {
      multiply_pair(H, x != nullptr ? &xr : nullptr, gp, u0, kb, b, h + r0 * ldh,
                    h + (r0 + 16) * ldh, ldh, c, c1, between);
      if (gp == 1) flush(2);
      store_pair(H, gp, c, c1);
    }
    pending[0] = {r0, 16, u0};
    pending[1] = {r0 + 16, rows_b, u0};
    n_pending = 2;
  };
  // Row blocks outermost while w_hh's packed tiles stay in L2 (each row
  // block streams all of them); beyond, unit blocks outermost, each unit
  // block's tiles read once from L3 for every row block (I=H=512 B=64
  // inference 0.91x; at I=H=256, 512 KiB of tiles, 1.04-1.11x slower).
  if (amx_packed_size(H) * static_cast<int64_t>(sizeof(uint16_t)) > kAmxUnitsOuterMinBytes) {
    for (int64_t u0 = u_begin; u0 < u_end; u0 += 16) {
      for (int64_t r0 = 0; r0 < rows; r0 += 32) block_at(r0, u0);
    }
  } else {
    for (int64_t r0 = 0; r0 < rows; r0 += 32) {
      for (int64_t u0 = u_begin; u0 < u_end; u0 += 16) block_at(r0, u0);
    }
  }
  flush(2);
  config.release();
}

int64_t amx_dh_packed_size(int64_t H) { return H / 16 * (4 * H / 32) * kTile; }

// Tile row p: rows 2p and 2p + 1 of the k block, their 16 columns interleaved
// (vpermw), as the step's pair rows.
LSTMOP_TARGET_AVX512 void amx_pack_w_hh_for_dh(int64_t H, const uint16_t* w_hh, int64_t ld,
                                               uint16_t* packed) {
  const int64_t kb = 4 * H / 32;
  const __m512i interleave = _mm512_set_epi16(
      31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
      23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int64_t j = 0; j < H / 16; ++j) {
    for (int64_t q = 0; q < kb; ++q) {
      uint16_t* tile = packed + (j * kb + q) * kTile;
      for (int64_t p = 0; p < 16; ++p) {
        const uint16_t* row = w_hh + (q * 32 + 2 * p) * ld + j * 16;
        const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
        const __m256i second = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + ld));
        const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1);
        _mm512_storeu_si512(tile + p * 32, _mm512_permutexvar_epi16(interleave, both));
      }
    }
  }
}

LSTMOP_TARGET_AMX void amx_dh(int64_t rows, int64_t H, const uint16_t* packed,
                              const uint16_t* d_gates, float* dh, int64_t n_begin,
                              int64_t n_end) {
  g_dh_runs.fetch_add(1, std::memory_order_relaxed);
  if (n_end < 0) n_end = H;
  const int64_t kb = 4 * H / 32, G = 4 * H, tiles = (n_end - n_begin) / 16;
  // The part's columns: its first tile's packed w and dh columns.
  packed += n_begin / 16 * kb * kTile;
  dh += n_begin;
  Tiles config;
  for (int64_t r0 = 0; r0 < rows; r0 += 32) {
    const uint16_t* a = d_gates + r0 * G;
    float* c = dh + r0 * H;
    if (rows - r0 > 16) {
      // A pair of row blocks: two column tiles at a time (as the step's pairs).
      const int64_t rows_b = rows - r0 - 16 < 16 ? rows - r0 - 16 : 16;
      config.configure(16, rows_b);
      int64_t j = 0;
      for (; j + 2 <= tiles; j += 2) {
        dh_columns_pair<2>(H, kb, packed + j * kb * kTile, a, a + 16 * G, c + j * 16,
                           c + 16 * H + j * 16);
      }
      if (j < tiles) {
        dh_columns_pair<1>(H, kb, packed + j * kb * kTile, a, a + 16 * G, c + j * 16,
                           c + 16 * H + j * 16);
      }
      continue;
    }
    config.configure(rows - r0, 0);
    int64_t j = 0;
    for (; j + 4 <= tiles; j += 4) dh_columns<4>(H, kb, packed + j * kb * kTile, a, c + j * 16);
    const uint16_t* b = packed + j * kb * kTile;
    switch (tiles - j) {
      case 3: dh_columns<3>(H, kb, b, a, c + j * 16); break;
      case 2: dh_columns<2>(H, kb, b, a, c + j * 16); break;
      case 1: dh_columns<1>(H, kb, b, a, c + j * 16); break;
      default: break;
    }
  }
  config.release();
}

int64_t amx_step_runs() { return g_runs.load(); }
int64_t amx_dh_runs() { return g_dh_runs.load(); }
int64_t amx_input_runs() { return g_input_runs.load(); }

}  // namespace detail
}  // namespace lstmop
