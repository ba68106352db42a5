// Internal: the fused forward step, one time step of one layer direction in a
// single pass over register tiles: the step's products and the cell's
// element-wise work while the gate pre-activations are still in registers.
// Nothing is written between the product and the cell (no gates buffer).
//
// For rows r < rows (the step's sequences) and the hidden units
// [u_begin, u_end), with gate blocks i, f, g, o of 4H (PyTorch order):
//
//   projection form (gx given: the input projection x w_ih^T of every step,
//   computed before the time loop as one large product):
//     acc = gx[r]  then  acc = fma(h_prev[r, k], w_hh[., k], acc), k = 0..K1-1
//     a = acc + bias
//   concatenated form (gx null: the input enters the same chains):
//     acc = bias   then  fma over x[r, k], k = 0..K0-1 (w_ih), then over
//     h_prev[r, k], k = 0..K1-1 (w_hh)
//     a = acc
//   chained form (gx given, gx_chained): the concatenated form in two
//   parts, its chains over the input computed for every step before the time
//   loop (step_input_chains: acc = bias, fma over x[r, k], stored in gx), the
//   step continuing them over h from w_hh's packed rows alone:
//     acc = gx[r]  then  fma over h_prev[r, k], k = 0..K1-1;  a = acc
//   the same operations in the same order as the concatenated form: its bits.
//   i, f, o = sigmoid(a_i, a_f, a_o); j = tanh(a_g)
//   c_state[r, u] = f * c_state[r, u] + i * j;  m = o * tanh(c_state[r, u])
//   h = m, rounded to Storage when that is float16 or bfloat16 (the 16-bit rule:
//   the next product multiplies h as the call stores it)
//   h_out[r * ld_out + u] = h;  h_next[r * H + u] = h (when given)
//   saved (when given): i, j, f, o, c, tanhc = tanh(c), h (unless saved->h is
//   null) of the step in Storage.
//
// With projections (LSTMP) the driver runs the recurrent chain over the
// P-wide h (k_hidden = P, ld_h = P) and takes h_out as m = o * tanh(c)
// (rows, H), rounded like h for 16-bit storage (the operand of the w_hr
// product); h_next and saved->h are null and h = m w_hr^T is its own product.
//
// Every pre-activation element is one fma chain in the order above, and the
// cell's arithmetic is cell_pass_simd.h's, whatever the ISA body (AVX-512 or
// AVX2: the same bits), the tile, the rows of the step or the unit range. The
// projection form gives exactly the bits of RecurrentProduct::accumulate
// followed by cell_pass_forward. The generic body computes the same chains
// with the generic cell arithmetic (std::exp / std::tanh; other bits).
//
// Which form a call uses is the plan's choice (lstm_plan.h): the projection
// form by the problem's sizes alone, the concatenated and chained forms (the
// same bits) also by the threads; results never depend on the thread count.
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>

#include "common/workspace.h"
#include "lstmop/tensor.h"
#include "kernels/cell_pass.h"
#include "kernels/cpu_features.h"

namespace lstmop {
namespace detail {

// w_ih (4H, K0) and w_hh (4H, K1) packed once per call for the body of `isa`:
// for every group of W hidden units (W = 16 for AVX-512, 8 for AVX2, 16 for
// the generic body) K0 + K1 rows (the w_ih columns, then the w_hh ones) of 4W
// floats: gate q's W lanes at [q W, (q + 1) W), so the four vectors a k step
// loads are adjacent (one stream for the prefetchers); lanes past H are zero.
// The chained form's split layout holds the same rows in two parts: every
// group's K0 input rows (input_part), then every group's K1 hidden rows
// (hidden_part), so that a step reads w_hh's rows alone, contiguous.
class ForwardStepWeights {
 public:
  // Declares the packed buffer in the call's arena (before it commits), for
  // w_ih of up to max_k_input columns (0 for the projection form).
  void allocate(WorkspaceArena& arena, kernels::Isa isa, int64_t H, int64_t max_k_input,
                int64_t k_hidden);
  // Packs w_ih (4H, k_input) with row stride ld_ih (unread when k_input == 0;
  // k_input <= max_k_input) and w_hh (4H, k_hidden) with row stride ld_hh.
  void pack(const float* w_ih, int64_t ld_ih, const float* w_hh, int64_t ld_hh, int64_t k_input) {
    set_k_input(k_input);
    pack_units(w_ih, ld_ih, w_hh, ld_hh, 0, H_);
  }
  // The same in two halves, for split mode's threads: set_k_input first (one
  // thread), then pack_units for each part's units [u_begin, u_end) (u_begin
  // a multiple of 16, so of every body's width): the groups a step over those
  // units reads, and no other (threads may pack disjoint ranges at once).
  // split: the chained form's layout (input_part, hidden_part).
  void set_k_input(int64_t k_input, bool split = false) {
    k_input_ = k_input;
    split_ = split;
  }
  void pack_units(const float* w_ih, int64_t ld_ih, const float* w_hh, int64_t ld_hh,
                  int64_t u_begin, int64_t u_end);

  kernels::Isa isa() const { return isa_; }
  int64_t hidden() const { return H_; }
  int64_t k_input() const { return k_input_; }
  int64_t k_hidden() const { return k_hidden_; }
  int64_t unit_width() const { return width_; }
  bool split() const { return split_; }
  // The interleaved layout (not split): group g's K0 + K1 rows at
  // data() + g (K0 + K1) 4W.
  const float* data() const { return packed_.data(); }
  // The split layout: group g's K0 input rows, and its K1 hidden rows.
  const float* input_part(int64_t g) const { return packed_.data() + input_offset(g); }
  const float* hidden_part(int64_t g) const { return packed_.data() + hidden_offset(g); }

 private:
  int64_t input_offset(int64_t g) const { return g * k_input_ * 4 * width_; }
  int64_t hidden_offset(int64_t g) const {
    const int64_t groups = (H_ + width_ - 1) / width_;
    return (groups * k_input_ + g * k_hidden_) * 4 * width_;
  }

  kernels::Isa isa_ = kernels::Isa::Scalar;
  int64_t H_ = 0, k_input_ = 0, k_hidden_ = 0, width_ = 16;
  bool split_ = false;
  Workspace<float> packed_;
};

// Software prefetch of the next unit group's packed weights into L2, for the
// fused steps (float and bfloat16). Groups are outside and row blocks inside,
// so each group's block is read once a step from beyond L2 when the packed
// weights are larger than L2: at the first row block's pace, latency bound.
// Instead each row block fetches its share of the next group's block (after
// the last group, the first: the next step's) spread over its k steps, but
// for steps of a few rows and split mode (next_block_share). A hint only: no
// value depends on it.
// 16 bytes, so that a tile takes it by value in two registers: a larger
// struct goes through memory, and its copy, a 16-byte load of two 8-byte
// stores just made, cannot be forwarded from the store buffer (perf on the
// Intel Xeon put 4% of T=50 B=32 I=H=256 inference's samples under the AVX2
// cap there; the time moved by 0.99x, within the noise).
struct NextBlock {
  const char* next = nullptr;  // the first line still to fetch
  int32_t lines = 0;           // lines of this row block's share still to fetch
  int32_t per_k = 0;           // lines per k step

  void fetch() {
    for (int32_t j = 0; j < per_k && lines > 0; ++j, --lines, next += 64) {
      _mm_prefetch(next, _MM_HINT_T1);
    }
  }
};

// Packed weights of at least this many bytes get the prefetch (L2 is
// 512 KiB (Zen 3) to 2 MiB (Sapphire Rapids) a core).
constexpr int64_t kPrefetchMinBytes = int64_t{1} << 20;

// Steps of fewer rows than this get no prefetch (next_block_share).
constexpr int64_t kPrefetchMinRows = 9;

// Row block b's share (of `blocks`) of the block at `next` (block_bytes),
// over k_steps k steps, for a step of `rows` rows; none where total_bytes
// (all groups) is below the threshold or there is one group, none for a step
// of fewer than kPrefetchMinRows rows, and none where `alone` is false (split
// mode: two threads' steps stream their halves of one direction's weights at
// once). A few rows' tiles consume their block fast (64 / R bytes of weights
// a FMA for R rows), a stream the hardware prefetchers follow; fetching the
// next block alongside only competed with it, and in split mode with the
// other thread's stream, each step's wait at the barrier the longer. Zen 5,
// runner, T=50 I=H=512 inference without it: 1 thread float32 B=4 1.15-1.23x,
// B=6 1.11-1.18x, B=8 0.96-1.07x, bfloat16 B=4 1.37-1.55x, B=8 1.23-1.28x; 2
// threads (split mode) float32 B=4 1.35-1.52x, B=8 1.24-1.27x, bfloat16 B=8
// 1.14-1.19x, T=20 B=16 1.04-1.20x, B=32 1.00-1.04x; 1 thread from 12 rows
// and bidirectional layers on 2 threads within 0.97-1.03x (kept there, as
// tuned on Zen 4).
inline NextBlock next_block_share(const void* next, int64_t block_bytes, int64_t total_bytes,
                                  int64_t blocks, int64_t b, int64_t k_steps, int64_t rows,
                                  bool alone) {
  NextBlock pf;
  if (total_bytes < kPrefetchMinBytes || total_bytes <= block_bytes || k_steps <= 0 ||
      rows < kPrefetchMinRows || !alone) {
    return pf;
  }
  const int64_t lines = block_bytes / 64, share = (lines + blocks - 1) / blocks;
  const char* base = static_cast<const char*>(next);
  const int64_t first = std::min(b * share, lines);
  pf.next = base + first * 64;
  pf.lines = static_cast<int32_t>(std::min((b + 1) * share, lines) - first);
  pf.per_k = static_cast<int32_t>((share + k_steps - 1) / k_steps);
  return pf;
}

struct ForwardStepArgs {
  int64_t rows = 0;
  int64_t u_begin = 0, u_end = 0;  // u_begin a multiple of 16
  const float* x = nullptr;        // (rows, K0) row stride ld_x; concatenated form only
  int64_t ld_x = 0;
  const float* h_prev = nullptr;   // (rows, K1) row stride ld_h
  int64_t ld_h = 0;
  // (rows, 4H) row stride 4H: the projection form's x w_ih^T, or with
  // gx_chained the chained form's chains over the input (bias included; the
  // weights packed in the split layout).
  const float* gx = nullptr;
  bool gx_chained = false;
  // The AVX2 body's k in chunks of this many (kernel_choice().step_k_chunk;
  // 0: whole) for a step of more than one row block: each chunk of a group's
  // packed rows stays in L1 for all the row blocks. The same bits either way.
  int64_t k_chunk = 0;
  const float* bias = nullptr;     // (4H)
  float* c_state = nullptr;        // (rows, H) row stride H, updated in place
  float* h_out = nullptr;          // (rows, .) row stride ld_out
  int64_t ld_out = 0;
  float* h_next = nullptr;         // (rows, H) row stride H, or null
  // float Storage: write the saved tensors' full, aligned vectors with
  // streaming (non-temporal) stores, fenced before the step returns; the
  // AVX-512 body only (whole cache lines; step_forward_simd.h: store_saved).
  bool stream_saved = false;
  // False in split mode's steps on two threads (next_block_share: no prefetch).
  bool alone = true;
};

// The chained form's input part, before a layer's time loop: for each of
// `steps` steps, rows step_rows[t] of x (row stride ld_x) after the rows of
// the steps before it (the layer's compact rows; step_rows never grows),
// gx (those rows, 4H) of units [u_begin, u_end) = the chains over the input
// the concatenated form's tiles would run in that step (its order: its
// bits). Unit groups outside, the rows inside. w packed in the split layout
// with the layer's k_input. k_chunk: the AVX2 body's input columns in chunks
// (ForwardStepArgs::k_chunk; the same bits).
void step_input_chains(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                       const int64_t* step_rows, int64_t steps, const float* bias, float* gx,
                       int64_t u_begin, int64_t u_end, int64_t k_chunk = 0);

// One step (see the top of this file) with the body w.isa(). Storage: float,
// Half or BFloat16; saved may be null.
template <class Storage>
void step_forward(const ForwardStepWeights& w, const ForwardStepArgs& args,
                  const StepSaved<Storage>* saved);

}  // namespace detail
}  // namespace lstmop
