// Internal: the per-call plan of the production drivers, filled once from the
// problem, the thread setting and the kernel table (like oneDNN's rnn_conf_t):
// how the work is spread over threads, which paths the products take, and the
// size of every scratch buffer. The drivers book and run what the plan says
// and never decide any of it again.
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"
#include "plan/lstm_problem.h"

namespace lstmop {
namespace detail {

enum class Threading {
  // Everything on the calling thread (one thread, or nothing to share out).
  Serial,
  // Bidirectional with >= 2 threads: the two directions of a layer at once,
  // each with its own scratch (unless bidirectional_threads.h picks split mode).
  DirectionsInParallel,
  // Split mode (float, >= 2 threads, worth_splitting; one direction, or a
  // bidirectional layer's directions one after the other where
  // bidirectional_threads.h says so): the hidden units in two parts, one
  // thread each, in lockstep (a barrier per step; src/README.md). With projections a step's h needs every unit's m
  // (h = m w_hr^T), and the backward's dm every column of dh: two barriers
  // per step, each part computing its columns of h (forward) and of dh
  // (backward) on proj_columns.
  SplitUnits,
};
const char* threading_name(Threading threading);

// Split mode pays a barrier per step: only for a layer with enough recurrent
// work, at least 2^19 multiply-adds in its largest step (S5's; S3's B = 1
// steps, 2^16, lost on two threads) and 2^22 in all, and hidden units to
// halve along 16-column panels. In double: products of huge (validated)
// sizes may not fit int64.
bool worth_splitting(const LstmProblem& p);

// Training's one-direction steps on lstmop's AMX tiles split between two
// threads (forward and backward) from kAmxSplitTrainingMinDhWork multiply-adds
// of dh a step, amx_dh_work(p) = B x 4H x H (plan_threads in lstm_plan.cpp);
// the forward driver's input product on the tiles at small batches keys on the
// same size (forward_driver.cpp: amx_input_on_tiles).
constexpr double kAmxSplitTrainingMinDhWork = 8388608.0;  // 2^23
double amx_dh_work(const LstmProblem& p);

// A call takes a second thread (directions in parallel, split mode, row
// halves, unit parts) only where one direction's work in its widest layer,
// direction_work(p) = valid rows x 4H x (layer input + R) multiply-adds, is
// at least this: below it waking the second thread and meeting it costs more
// than the halved work saves. Zen 5, 2 threads against 1, the plugin's ops:
// bidirectional forward T=50 B=4 I=H=32 (1.6M) 81 against 70 us, B=8 (3.3M)
// 101 against 121; backward B=8 (3.3M) 207 against 191 us, B=12 (4.9M) 254
// against 314; one step T=1 B=1 I=H=8 34 against 14 us.
// LSTMOP_MIN_PARALLEL_WORK (a number >= 0, read per call) replaces both
// thresholds: 0 gives every call the threads set_num_threads asked for.
constexpr double kMinParallelWorkForward = 2097152.0;   // 2^21
constexpr double kMinParallelWorkBackward = 4194304.0;  // 2^22
double direction_work(const LstmProblem& p);
double min_parallel_work(bool backward);

// Split mode's parts: part 0 gets the first split_units(H) hidden units (a
// multiple of 16, the recurrent product's panel width), part 1 the rest.
inline int64_t split_units(int64_t H) { return H / 32 * 16; }

// One of the two fixed halves of n rows the big products are issued in
// (the same calls whatever the thread count, hence the same bits).
struct RowHalf {
  int64_t first, count;
};
RowHalf row_half(int64_t n, int64_t part);

struct UnitRange {
  int64_t begin, end;
};

// What both drivers decide the same way.
struct ThreadPlan {
  Threading threading = Threading::Serial;
  // Threads for the directions of a layer (D when they run at once, else 1)
  // and for the two row halves of the big products (2 with >= 2 threads).
  int64_t direction_threads = 1;
  int64_t row_half_threads = 1;
  // Copies of the per-direction scratch: one per direction running at once.
  int64_t direction_workspaces = 1;
  // The fixed halves of the valid rows (row_half).
  RowHalf row_halves[2] = {{0, 0}, {0, 0}};
  // Hidden-unit parts: split mode's two halves, else one part of all H units.
  int parts = 1;
  UnitRange units[2] = {{0, 0}, {0, 0}};
  // Split mode with projections: each part's columns of h (P wide), the
  // first split_units(P) and the rest.
  UnitRange proj_columns[2] = {{0, 0}, {0, 0}};
  // Directions in parallel where split mode was possible: the forward
  // reports the directions' thread times (bidirectional_threads.h).
  bool measure_directions = false;
};

// The fused forward step's concatenated form (step_forward.h: the input's
// product inside each step's chains, no gates buffer) from this batch on: a
// step's product then keeps the FMA units busy while w_ih and w_hh stream
// from L2 (Zen 4: B = 8, H = 128 1.15x, B = 32, H = 256 1.10x the projection
// form); below, streaming w_ih every step costs more than the one large
// input product (B = 1: 0.85x). The same for the fused bfloat16 step
// (step_forward_bf16.h; Zen 5, 1 thread, T = 200, I = H = 128, projection
// against concatenated: B = 1 1.46x, B = 2 1.30x, B = 3 1.06x, B = 4 0.95x,
// B = 8 0.93x; I = H = 256, T = 50: B = 1 2.2x; two threads in split mode
// B = 2 1.00x, H = 512 B = 1 1.25x).
//
// This choice is the same whatever the thread count (the projection form
// sums in another order). With packed weights over 1 MiB the projection form
// measured faster on one thread up to B = 12-16 (float32 H = 256 B = 8 1.22x,
// bfloat16 H = 256 B = 4 1.39x) and slower in split mode on two (0.75x,
// 0.81x): the chained form below takes that speed with the concatenated
// form's bits.
constexpr int64_t kConcatenatedMinBatch = 4;
// Unpacked steps (ForwardPlan::unpacked_steps) of sequences longer than one
// step: at most kUnpackedMaxBatch rows, w_hh (4H x R floats) of
// kUnpackedMinBytes and more. Zen 5, runner, I = H, inference against the
// fused step (1 thread; 2 threads wall, split mode before): B = 1 H = 512 T
// = 10 1.46x (1.52x), T = 50 1.31x (1.33x); B = 1 H = 256 T = 100 1.44x
// (1.63x); B = 2 H = 512 T = 10 1.26x; B = 2 H = 256 T = 50 1.14x, T = 20
// (2 threads) 0.97x; B = 3 H = 512 T = 20 1.26x (1.26x); B = 3 H = 256 T =
// 200 1.05x; training B = 1 H = 512 T = 50 1.28x, B = 2 H = 256 T = 20 1.09x.
// Not taken: B = 4 (H = 256, 512: 0.98-1.05x), H = 192 (576 KiB, T = 200 B
// = 1 0.82x), H = 128 (0.85-0.89x).
constexpr int64_t kUnpackedMaxBatch = 3;
constexpr int64_t kUnpackedMinBytes = int64_t{1} << 20;
// Steps of at most this many rows take recurrent_rows_product (each w_hh row
// read once for all of them); larger ones (one step of a larger batch)
// dnnl_sgemm.
constexpr int64_t kUnpackedRowsMax = 4;
// float compute on float FMAs, where the concatenated form would run: from
// packed weights (4H x (K + R) floats, K the widest layer input: I, and D*R
// from two layers) of kChainedMinBytes, up to kChainedMaxBatch and where one
// thread runs each direction's steps (not split mode), the chained form
// (step_forward.h): the concatenated form's chains over the input for every
// step before the time loop, each step reading only w_hh's packed rows (the
// same bits, so the choice may follow the threads). L2 is 512 KiB (Zen 3) to
// 2 MiB (Sapphire Rapids) a core. Zen 5, 1 thread, I = H, T = 50, inference,
// against the concatenated form: H = 256 B = 4 1.50x, B = 8 1.25x, B = 12
// 1.01-1.08x, B = 16 1.02-1.07x, B = 24 0.95x; H = 512 B = 8 1.20x, B = 12
// 1.05x, B = 20 1.04x; H = 192 B = 8 1.56x; T = 5 B = 8 H = 256 1.22x.
constexpr int64_t kChainedMinBytes = int64_t{1} << 20;
constexpr int64_t kChainedMaxBatch = 16;

// Training calls whose float32 saved tensors (i, j, f, o, c, tanhc, h of
// every slot) reach this many bytes write them with streaming stores (the
// fused step: no read of the destination lines, nothing evicted from the
// caches the step's weights live in). Zen 4, 1 thread: S5 (5.6 MB) train
// 1.05x, S2 (11 MB) 1.04x, S1 (367 MB) 1.02x; S3 (0.7 MB, read back by the
// backward from L2) 0.99x, hence the threshold.
constexpr int64_t kStreamSavedMinBytes = int64_t{4} << 20;

struct ForwardPlan {
  ThreadPlan threads;
  // float compute: the fused step's form (concatenated, or projection form
  // after one input product per direction); the ISA of its body.
  bool step_concatenated = false;
  // The chained form (kChainedMinBytes; step_concatenated false, gates the
  // chains over the input).
  bool step_chained = false;
  kernels::Isa step_isa = kernels::Isa::Scalar;
  // float compute without bfloat16 products, one time step (T == 1), or
  // batches of at most kUnpackedMaxBatch rows without projections on a w_hh
  // of kUnpackedMinBytes and more: no fused step and no packing; gates = x
  // w_ih^T as one product, then per step + h w_hh^T on the weights as stored
  // (recurrent_rows.h for a few rows) and the cell pass. Packing w_hh (and
  // in the concatenated form w_ih) costs more than one step it serves (Zen
  // 5, runner, T=1 B=1 I=H=512 inference: the packing 46% of the call), and
  // w_hh beyond L2 streams from L3 every step either way. Never split mode
  // (plan_threads): a few rows' steps take two threads in parts of the units
  // instead (the same bits).
  bool unpacked_steps = false;
  // The fused step writes float32 saved tensors with streaming stores
  // (kStreamSavedMinBytes).
  bool stream_saved = false;
  // The products on bfloat16 dot-product units (step_forward_bf16.h, in the
  // form of kConcatenatedMinBatch): bfloat16 calls, and float32 calls with
  // fp32_precision "bf16", where kernel_choice().bf16_step and the call
  // flushes subnormals (the instruction does), and no projections (the
  // bfloat16 step has no projection: a bfloat16 call with projections
  // computes the same 16-bit model with float FMAs, a float32 one stays IEEE
  // float32). Otherwise float FMAs on the same values: the same products,
  // other sums.
  bool bf16_products = false;
  // bf16_products in the matmul form (kernel_choice().bf16_matmul_step, AMX,
  // from its bf16_matmul_min_batch):
  // gates (N, 4H) = x_l w_ih^T in one gemm_bf16, then per step the recurrent
  // product on oneDNN's matmul (bf16_matmul_step.h) and the cell pass
  // (cell_pass.h) after it; never split mode (one part of all units).
  bool bf16_matmul_step = false;
  // Element counts of the scratch buffers. R is the width of h (P with
  // projections, else H).
  int64_t input = 0;          // x0 (N, I)
  int64_t layer_output = 0;   // y (N, D*R), layer_outputs of them
  int64_t layer_outputs = 0;  // min(L, 2): layers alternate between them
  int64_t input_bits = 0;     // bf16_products: the input's bfloat16 bits (N, I)
  int64_t layer_output_bits = 0;  // ... and a layer's output's (N, D*H)
  int64_t state_bits = 0;     // ... and the steps' h operands, twice (B, H)
  // Per direction workspace:
  int64_t gates = 0;          // (N, 4H); 0 in the concatenated form
  // bf16_matmul_step: the bfloat16 bits of w_ih (4H, max(I, D*R)) and of
  // w_hh (4H, H); the fused bfloat16 step's projection form: w_ih's; else 0.
  int64_t w_ih_bits = 0, w_hh_bits = 0;
  int64_t w_ih = 0;           // (4H, max(I, D*R))
  int64_t w_hh = 0;           // (4H, R)
  int64_t bias = 0;           // (4H)
  int64_t state = 0;          // c (B, H)
  int64_t hidden_state = 0;   // h twice: the step's input and output (B, R)
  // Projections only (else 0): w_hr (P, H) as stored, and the cell's output
  // m = o * tanh(c) of one step (B, H), the operand of h = m w_hr^T.
  int64_t w_hr = 0;
  int64_t cell_output = 0;
};

// Rows of d_gates per weight-gradient product on the transposed path: bounds
// the transposed copies (4H x 1024 floats) while K stays large enough for
// full GEMM speed. Fixed, so the sums' order never depends on the thread count.
constexpr int64_t kWeightGradChunk = 1024;

// Row stride of a transposed chunk of `rows` columns: a multiple of 16 floats
// but never of 1024, so the transpose's 32 destination rows do not all fall
// into the same L1 set (a 4 KiB stride made the copy several times slower).
constexpr int64_t kTransposePad = 16;
constexpr int64_t transposed_stride(int64_t rows) { return (rows + 15) / 16 * 16 + kTransposePad; }

// The bfloat16 weight gradients in the AMX form: d_gates^T's halves
// transposed in memory (from the float d_gates, the same rounding as its bits)
// where the rounded d_gates (valid rows x 4H) has at most this many values:
// oneDNN 2.6's matmul then runs its AMX brgemm instead of the jit gemm of the
// strided view, and the operands stay in cache. Intel Xeon, 1 thread, the
// two halves of one gradient (copy excluded), plain / transposed: N = 1600
// rows, 4H = 1024 (S6) 0.96x, 4H = 512 (T=200 B=8) 0.90x, N = 800 4H = 1024
// 0.92x, N = 3200 4H = 512 0.94x; past it N = 1600 4H = 2048 1.07x, N = 3200
// 4H = 1024 1.13x, N = 3200 4H = 2048 1.09x. Training with the copy: T=50
// B=32 I=H=256 0.95x the time on one thread, 0.96x on two, T=200 B=8
// I=H=128 0.98x, but T=50 B=64 I=H=512 (past the limit) 1.035x.
constexpr int64_t kAmxWeightGradTransposedMaxValues = int64_t{1} << 21;

// On the TN path, whether a weight gradient dw (rows, cols) = d_gates^T x
// (rows = half of 4H, as weight_grads splits it) is better computed as its
// transpose dw^T (cols, rows) = x^T d_gates, then copied transposed into dw:
// dnnl_sgemm's TN product runs at about its full rate when the result has
// 1024 columns or more and 15-25% below it with fewer, so the form whose
// result is the wider one wins. Zen 5, 1 thread (`gemm_study --section bwd`,
// the "dW halves" rows, copy included): rows 512, cols 256 (S2) 154-164 ->
// 178-180 GFLOP/s; rows 1024, cols 512 (S1 layer 0) 153-155 -> 191-194;
// rows 256 (S5, S3) or cols 1024 (S1's layer 1 w_ih) even or worse (S3's
// K = 200: 0.91x), so kept as they were. Below kWeightGradTransposedMinK
// summed rows (K = N) the copy costs more than the product gains (`gemm_study
// --section bwd`, rows 1024, cols 512: K = 1 80 us TN against 190 us
// transposed + copy, K = 64 0.89x, K = 256 1.00x, K = 512 1.06x; rows 512,
// cols 256: K = 64 1.03x, K = 256 1.07x). The choice depends on the shape
// only: the same products whatever the threads.
constexpr int64_t kWeightGradTransposedMinK = 256;
constexpr bool weight_gradient_result_transposed(int64_t rows, int64_t cols, int64_t k) {
  return rows >= 512 && cols <= 512 && cols <= rows && k >= kWeightGradTransposedMinK;
}

struct BackwardPlan {
  ThreadPlan threads;
  // The products on bfloat16 dot-product units, where the forward's are
  // (ForwardPlan::bf16_products): d_gates rounded to bfloat16 (the contract
  // allows it, as the peers do) times the bfloat16 weights and layer inputs;
  // the weight gradients and d_in through gemm_bf16 (TN / NN on the operands
  // as stored), dh per step through Bf16RecurrentProduct, or in the matmul
  // form (ForwardPlan::bf16_matmul_step) on oneDNN's matmul
  // (bf16_matmul_step.h). db sums the float d_gates.
  bool bf16_products = false;
  bool bf16_matmul_step = false;
  // float compute without bfloat16 products, one time step (T == 1; as
  // ForwardPlan::single_step): dh0 = d_gates * w_hh as one product on w_hh
  // as stored, not packed (never split mode: plan_threads).
  bool single_step = false;
  // float where gemm_tn_at_full_rate(): weight gradients as one TN product
  // each and d_in as NN on w_ih as stored (no transposed copies); otherwise
  // the weight gradients per chunk of kWeightGradChunk rows on transposed
  // operands (NT), d_in as NT on w_ih held transposed.
  bool weight_gradients_tn = false;
  // Element counts of the scratch buffers.
  // R is the width of h (P with projections, else H); max_in = max(I, D*R).
  int64_t layer_rows = 0;      // a layer's input, output gradient, input gradient (N, max_in)
  // d_gates (N, 4H), one per direction workspace: directions one after the
  // other share one (each adds its share of d_in when it is done).
  int64_t d_gates = 0;
  int64_t w_ih = 0;            // every direction: (4H + pad, max_in)
  int64_t w_hh = 0;            // (4H, R)
  int64_t h_prev = 0;          // (N, R)
  int64_t state = 0;           // dh (B, R), dc, one step's saved tensors (B, H)
  int64_t dw_ih = 0;           // (4H, max_in)
  int64_t dw_hh = 0;           // (4H, R)
  int64_t db = 0;              // (4H)
  // Transposed path: a chunk of d_gates, x_l, h_prev transposed (4H,
  // max_in, R rows of transposed_stride(min(N, kWeightGradChunk))); else 0.
  int64_t d_gates_t = 0, x_t = 0, h_prev_t = 0;
  // TN path, the products weight_gradient_result_transposed() takes: each
  // half's dw^T (cols, row stride dw_t_ld), dw_t_part elements a half, two
  // halves (they may run at once on the two threads); else 0.
  int64_t dw_t = 0, dw_t_part = 0, dw_t_ld = 0;
  // Projections only (else 0): w_hr (P, H); dh_total (N, P), the gradient of
  // every row's h (kept for dw_hr); the cell outputs m = o * tanhc (N, H);
  // dw_hr (P, H) = dh_total^T m, one TN product after the time loop; one
  // step's dm = dh_total w_hr (B, H); a zero row (H) for the cell pass's
  // output-gradient operand (its gradient arrives through dm).
  int64_t w_hr = 0, dh_total = 0, cell_output = 0, dw_hr = 0, cell_output_gradient = 0;
  int64_t zero_row = 0;
  // bf16_products: bfloat16 bits of a layer's input (N, max_in), of each
  // direction's d_gates (N, 4H), h_prev (N, H) and w_ih (4H, max_in).
  int64_t layer_input_bits = 0, d_gates_bits = 0, h_prev_bits = 0, w_ih_bits = 0;
  // bf16_matmul_step: w_hh's bfloat16 bits (4H, H), the matmul's B.
  int64_t w_hh_bits = 0;
};

// Reads get_num_threads() and the kernel table once.
ForwardPlan plan_forward(const LstmProblem& p);
BackwardPlan plan_backward(const LstmProblem& p);

}  // namespace detail
}  // namespace lstmop
