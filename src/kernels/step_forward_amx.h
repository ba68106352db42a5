// Internal: the bfloat16 products' per-step recurrent product on AMX tiles
// (Intel Sapphire Rapids and later), with the cell pass fused after each tile
// block: the matmul form's step (ForwardPlan::bf16_matmul_step) where
// kernel_choice().bf16_amx_step, instead of oneDNN's matmul per step.
//
//   gates[r, g*H + u] += sum_k h[r, k] w_hh[g*H + u, k]     (r < rows, u < H)
//
// h and w_hh bfloat16 bits, gates float. A block is at most 16 rows by 16
// hidden units (a tile of each gate, i f g o): its four tiles start as the
// step's gates (the input product, written before), take the k blocks of 32
// in order (tdpbf16ps: each product of two bfloat16 values exact in float32,
// added to the float32 tile), go back to the gates, and then `done` runs for
// the block (the driver's cell pass over those rows and units, while they are
// in L1). Rows go in pairs of blocks (32 rows: each w tile loaded once for
// both, in two passes of two gates' tiles), a last block of at most 16 rows
// alone. The sums depend on the sizes only: the bits are the same whichever
// thread or call runs them, pairs or single blocks. The tile unit reads subnormal operands as zero
// and flushes subnormal results: used only where the call flushes subnormals.
#pragma once

#include <cstdint>

namespace lstmop {
namespace detail {

// H's k extent padded to the tiles' 32: the row stride (in elements) of the
// h operand's rows, whose columns [H, amx_k_padded(H)) must be zero.
int64_t amx_k_padded(int64_t H);
// True where the form runs: AMX usable (kernels/cpu_features.h) and H a
// multiple of 16 (whole unit blocks).
bool amx_step_supported(int64_t H);
// Elements of the packed w_hh: per block of 16 units, per k block of 32, the
// four gates' tiles of 16 k pairs x 16 units x 2 (VNNI), zero past H in k.
int64_t amx_packed_size(int64_t H);
// w_hh's bits (4H, H), row stride ld, into that layout.
void amx_pack_w_hh(int64_t H, const uint16_t* w_hh, int64_t ld, uint16_t* packed);
// The same for any (4H, K) matrix (w_ih: K the layer's input size).
int64_t amx_packed_size(int64_t H, int64_t K);
void amx_pack_gates(int64_t H, int64_t K, const uint16_t* w, int64_t ld, uint16_t* packed);

// The step: gates (rows, 4H) row stride 4H; h (rows, amx_k_padded(H)) row
// stride ldh >= amx_k_padded(H); done(ctx, r0, block_rows, u0) once for every
// row of each block, after the block's sums: for rows [r0, r0 + block_rows)
// of one block of 16 (all of them, or a slice of a pair's block) and units
// [u0, u0 + 16).
using AmxBlockDone = void (*)(void* ctx, int64_t r0, int64_t block_rows, int64_t u0);
void amx_step_forward(int64_t rows, int64_t H, const uint16_t* packed, const uint16_t* h,
                      int64_t ldh, float* gates, AmxBlockDone done, void* ctx);

// The step with its input product on the tiles too: gates (rows, 4H) row
// stride 4H written (not read) as x w_ih^T + h w_hh^T, the tiles from zero
// over the input's k blocks, then h's. x: the step's rows (rows, K) row
// stride ld, K a multiple of 32 (no padding is read); packed: w_ih by
// amx_pack_gates(H, K, ...).
// Where the drivers take it: the input's size a multiple of 32, and either
// a batch of at least kAmxInputOnTilesMinRows (inference and training; both
// weights then streamed from L3 each step, each w tile loaded once for two row
// blocks) or, in inference, w_ih and w_hh packed within
// kAmxInputOnTilesMaxBytes (streamed from L2 each step). Intel Xeon (2 MiB
// L2), 1 thread, against the layer's input product on oneDNN's matmul, T=50:
// inference I=H=256 B=32 0.88x, I=H=128 B=8 0.91x, I=H=256 B=64 0.80x,
// I=H=512 B=64 (4 MiB) 0.75x (T=100), I=H=1024 B=64 0.78x, I=128 H=512 B=64
// 0.86x, but I=H=512 B=32 1.09x, B=16 1.38x, B=8 1.83x; training I=H=512
// B=64 0.94x, I=H=128 B=64 0.93x, I=H=256 B=32 1.03-1.08x, I=H=128 B=8 1.10x.
constexpr int64_t kAmxInputOnTilesMaxBytes = int64_t{1} << 20;
constexpr int64_t kAmxInputOnTilesMinRows = 64;
struct AmxInput {
  int64_t K = 0;
  const uint16_t* packed = nullptr;
  const uint16_t* rows = nullptr;
  int64_t ld = 0;
};
// u_begin, u_end: the units a call computes (multiples of 16; u_end < 0 for
// H): split mode's parts, each its own units of every step (the same sums
// as one call over all of them).
void amx_step_forward_input(int64_t rows, int64_t H, const AmxInput* x, const uint16_t* packed,
                            const uint16_t* h, int64_t ldh, float* gates, AmxBlockDone done,
                            void* ctx, int64_t u_begin = 0, int64_t u_end = -1);

// The backward's per-step dh on the same tiles:
//
//   dh[r, n] = sum_k d_gates[r, k] w_hh[k, n]     (r < rows, n < H, k < 4H)
//
// d_gates the step's gate gradients' bfloat16 bits (rows, 4H) row stride 4H,
// w_hh (4H, H) packed by amx_pack_w_hh_for_dh: per 16 columns of dh, per k
// block of 32, a tile of 16 k pairs x 16 columns x 2. dh (rows, H) row
// stride H, overwritten; the k blocks in order from zero.
int64_t amx_dh_packed_size(int64_t H);
void amx_pack_w_hh_for_dh(int64_t H, const uint16_t* w_hh, int64_t ld, uint16_t* packed);
// n_begin, n_end: the columns a call computes (multiples of 16; n_end < 0
// for H): split mode's parts.
void amx_dh(int64_t rows, int64_t H, const uint16_t* packed, const uint16_t* d_gates,
            float* dh, int64_t n_begin = 0, int64_t n_end = -1);

// The number of amx_step_forward(_input) and amx_dh calls in this process,
// and of those with the input on the tiles (tests: which path a call took).
int64_t amx_step_runs();
int64_t amx_input_runs();
int64_t amx_dh_runs();

}  // namespace detail
}  // namespace lstmop
