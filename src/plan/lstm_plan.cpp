// The plan of lstm_plan.h: every decision of a call, in one place.
#include "plan/lstm_plan.h"

#include <algorithm>
#include <cstdlib>

#include "common/float_environment.h"
#include "common/precision.h"
#include "gemm/gemm.h"
#include "lstmop/lstm.h"
#include "plan/bidirectional_threads.h"

namespace lstmop {
namespace detail {
namespace {

bool bf16_products(const LstmProblem& p);
bool bf16_matmul_step(const LstmProblem& p);
bool amx_units(const LstmProblem& p);

// One time step on float compute without bfloat16 products
// (BackwardPlan::single_step; ForwardPlan::unpacked_steps' first case).
bool single_step(const LstmProblem& p) {
  return p.T == 1 && p.dtype != DType::Float64 && !bf16_products(p);
}

// ForwardPlan::unpacked_steps: one step, or a few rows (kUnpackedMaxBatch)
// without projections on a w_hh of kUnpackedMinBytes and more.
bool unpacked_steps(const LstmProblem& p) {
  if (p.dtype == DType::Float64 || bf16_products(p)) return false;
  const double w_hh_bytes = 16.0 * static_cast<double>(p.H) * static_cast<double>(p.R);
  return p.T == 1 || (p.B <= kUnpackedMaxBatch && !p.projections() &&
                      w_hh_bytes >= static_cast<double>(kUnpackedMinBytes));
}

ThreadPlan plan_threads(const LstmProblem& p, bool backward) {
  ThreadPlan t;
  const int threads = direction_work(p) >= min_parallel_work(backward) ? get_num_threads() : 1;
  const bool float_compute = p.dtype != DType::Float64;
  // (Unpacked steps are never split: their row halves' products, a few
  // rows' unit parts and a single step's weight gradients take the second
  // thread instead.)
  // The matmul form splits only one direction's steps on lstmop's AMX tiles:
  // inference's forward steps (each part its own unit blocks of every step, at
  // the plan's fixed boundary) and, in training, from 2^23 multiply-adds of dh
  // a step, the forward's and the backward's (each part its units' cell pass
  // and its columns of dh, as split mode's float steps, balanced). Intel Xeon,
  // 2 threads against 1, bfloat16: inference T=50 B=32 I=H=256 0.65x the
  // time, T=200 B=8 I=H=128 0.73x; training with the backward split T=50 B=32
  // I=H=512 (2^25) 0.80x, B=32 I=H=256 (2^23) 0.92x, but B=64 I=H=128 (2^22)
  // 0.99x, B=16 I=H=256 (2^22) 1.07x, B=8 I=H=128 (2^19) 1.16x; the forward
  // split too, against the backward's alone, 0.92x / 0.89x (I=H=256 / 512;
  // alone, without the backward's, it gained nothing: 1.01x, and B=8 I=H=128
  // 1.07x).
  const bool amx_split = (p.train ? amx_dh_work(p) >= kAmxSplitTrainingMinDhWork : !backward) &&
                         p.D == 1 &&
                         bf16_matmul_step(p) && amx_units(p);
  const bool can_split = threads >= 2 && float_compute && (!bf16_matmul_step(p) || amx_split) &&
                         !unpacked_steps(p) && worth_splitting(p);
  if (threads >= 2 && p.D == 2 && !(can_split && BidirectionalThreads::split())) {
    t.threading = Threading::DirectionsInParallel;
  } else if (can_split) {
    // One direction, or both one after the other where the cores' speeds
    // differ (bidirectional_threads.h).
    t.threading = Threading::SplitUnits;
  }
  const bool parallel = t.threading == Threading::DirectionsInParallel;
  t.measure_directions = parallel && can_split;
  t.direction_threads = parallel ? p.D : 1;
  t.direction_workspaces = parallel ? p.D : 1;
  t.row_half_threads = threads >= 2 ? 2 : 1;
  t.row_halves[0] = row_half(p.valid_rows(), 0);
  t.row_halves[1] = row_half(p.valid_rows(), 1);
  if (t.threading == Threading::SplitUnits) {
    t.parts = 2;
    t.units[0] = {0, split_units(p.H)};
    t.units[1] = {split_units(p.H), p.H};
    if (p.projections()) {
      t.proj_columns[0] = {0, split_units(p.P)};
      t.proj_columns[1] = {split_units(p.P), p.P};
    }
  } else {
    t.units[0] = {0, p.H};
  }
  return t;
}

// The products on bfloat16 dot-product units (ForwardPlan::bf16_products);
// not with projections (the bfloat16 step has none, lstm_plan.h).
bool bf16_products(const LstmProblem& p) {
  const bool bf16_operands =
      p.dtype == DType::BFloat16 ||
      (p.dtype == DType::Float32 && fp32_precision() == Fp32Precision::Bf16);
  return bf16_operands && kernels::kernel_choice().bf16_step && flushes_subnormals(p.dtype) &&
         !p.projections();
}

// ... in the matmul form (ForwardPlan::bf16_matmul_step): from
// bf16_matmul_min_batch rows, or from one where its steps (forward and the
// backward's dh) run on lstmop's AMX tiles: no primitive to execute a step.
// Intel Xeon, 1 thread, against the fused vdpbf16ps step: T=200 I=H=256 B=2
// inference 0.60x its time, training 0.76x; I=H=128 B=1 0.93x, 0.92x.
bool bf16_matmul_step(const LstmProblem& p) {
  const kernels::KernelChoice& choice = kernels::kernel_choice();
  return bf16_products(p) && choice.bf16_matmul_step &&
         (p.B >= choice.bf16_matmul_min_batch || amx_units(p));
}

// Whole 16-unit blocks where the CPU runs lstmop's AMX steps: with
// bf16_matmul_step, the form's steps on the tiles.
bool amx_units(const LstmProblem& p) {
  return kernels::kernel_choice().bf16_amx_step && p.H % 16 == 0;
}

}  // namespace

const char* threading_name(Threading threading) {
  switch (threading) {
    case Threading::DirectionsInParallel: return "directions in parallel";
    case Threading::SplitUnits: return "split units";
    case Threading::Serial: break;
  }
  return "serial";
}

double amx_dh_work(const LstmProblem& p) {
  return static_cast<double>(p.B) * 4.0 * static_cast<double>(p.H) * static_cast<double>(p.H);
}

double direction_work(const LstmProblem& p) {
  const double widest = static_cast<double>(p.L > 1 ? std::max(p.I, p.D * p.R) : p.I);
  return static_cast<double>(p.valid_rows()) * 4.0 * static_cast<double>(p.H) *
         (widest + static_cast<double>(p.R));
}

double min_parallel_work(bool backward) {
  if (const char* env = std::getenv("LSTMOP_MIN_PARALLEL_WORK")) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && *end == '\0' && v >= 0.0) return v;
  }
  return backward ? kMinParallelWorkBackward : kMinParallelWorkForward;
}

bool worth_splitting(const LstmProblem& p) {
  const double unit_work = 4.0 * static_cast<double>(p.H) * static_cast<double>(p.H);
  return p.H >= 32 && static_cast<double>(p.B) * unit_work >= 524288.0 &&
         static_cast<double>(p.valid_rows()) * unit_work >= 4194304.0;
}

RowHalf row_half(int64_t n, int64_t part) {
  const int64_t half = (n + 1) / 2, first = part * half;
  return RowHalf{first, (part == 0 ? std::min(n, half) : n - half)};
}

ForwardPlan plan_forward(const LstmProblem& p) {
  ForwardPlan plan;
  plan.threads = plan_threads(p, false);
  const int64_t N = p.valid_rows(), G = 4 * p.H, DR = p.D * p.R;
  const int64_t max_in = std::max(p.I, DR);
  const bool float_compute = p.dtype != DType::Float64;
  plan.bf16_products = bf16_products(p);
  plan.bf16_matmul_step = bf16_matmul_step(p);
  plan.unpacked_steps = unpacked_steps(p);
  plan.step_concatenated = p.B >= kConcatenatedMinBatch && !plan.unpacked_steps &&
                           (plan.bf16_products ? !plan.bf16_matmul_step : float_compute);
  if (plan.step_concatenated && !plan.bf16_products &&
      plan.threads.threading != Threading::SplitUnits && p.B <= kChainedMaxBatch) {
    // The widest layer input the steps read: layer 0's, then D*R.
    const int64_t widest = p.L > 1 ? max_in : p.I;
    const double packed_bytes = 16.0 * static_cast<double>(p.H) * static_cast<double>(widest + p.R);
    plan.step_chained = packed_bytes >= static_cast<double>(kChainedMinBytes);
    plan.step_concatenated = !plan.step_chained;
  }
  plan.step_isa = kernels::kernel_choice().step_forward;
  plan.stream_saved = p.train && p.dtype == DType::Float32 &&
                      7 * p.slots * p.T * p.B * p.H * 4 >= kStreamSavedMinBytes;
  plan.input = N * p.I;
  plan.layer_output = N * DR;
  plan.layer_outputs = std::min<int64_t>(p.L, 2);
  if (plan.bf16_products) {  // never with projections: R = H
    plan.input_bits = N * p.I;
    plan.layer_output_bits = N * DR;
    plan.state_bits = p.B * p.H;
  }
  if (plan.bf16_matmul_step) {
    plan.w_ih_bits = G * max_in;
    plan.w_hh_bits = G * p.H;
  } else if (plan.bf16_products && !plan.step_concatenated) {
    plan.w_ih_bits = G * max_in;  // the layer's input product's operand
  }
  plan.gates = plan.step_concatenated ? 0 : N * G;
  plan.w_ih = max_in * G;
  plan.w_hh = p.R * G;
  plan.bias = G;
  plan.state = p.B * p.H;
  plan.hidden_state = p.B * p.R;
  if (p.projections()) {
    plan.w_hr = p.P * p.H;
    plan.cell_output = p.B * p.H;
  }
  return plan;
}

BackwardPlan plan_backward(const LstmProblem& p) {
  BackwardPlan plan;
  plan.threads = plan_threads(p, true);
  const int64_t N = p.valid_rows(), G = 4 * p.H, DR = p.D * p.R;
  const int64_t max_in = std::max(p.I, DR);
  plan.bf16_products = bf16_products(p);
  plan.bf16_matmul_step = bf16_matmul_step(p);
  plan.single_step = single_step(p);
  // (The bfloat16 products are TN / NN through gemm_bf16, which reads any strides.)
  plan.weight_gradients_tn =
      plan.bf16_products || (p.dtype != DType::Float64 && gemm_tn_at_full_rate());
  plan.layer_rows = N * max_in;
  plan.d_gates = N * G;
  plan.w_ih = (G + kTransposePad) * max_in;
  plan.w_hh = G * p.R;
  plan.h_prev = N * p.R;
  plan.state = p.B * p.H;
  plan.dw_ih = G * max_in;
  plan.dw_hh = G * p.R;
  plan.db = G;
  if (plan.weight_gradients_tn && !plan.bf16_products) {
    const int64_t half = G / 2;
    int64_t cols = 0;  // the widest dw^T: w_ih of layer 0 and of the layers above, w_hh
    for (int64_t c : {p.I, p.L > 1 ? DR : int64_t{0}, p.R}) {
      if (c > 0 && weight_gradient_result_transposed(half, c, N)) cols = std::max(cols, c);
    }
    if (cols > 0) {
      plan.dw_t_ld = half + kTransposePad;
      plan.dw_t_part = cols * plan.dw_t_ld;
      plan.dw_t = 2 * plan.dw_t_part;
    }
  }
  if (!plan.weight_gradients_tn) {
    const int64_t chunk = transposed_stride(std::min(N, kWeightGradChunk));
    plan.d_gates_t = G * chunk;
    plan.x_t = max_in * chunk;
    plan.h_prev_t = p.R * chunk;
  }
  if (p.projections()) {
    plan.w_hr = p.P * p.H;
    plan.dh_total = N * p.P;
    plan.cell_output = N * p.H;
    plan.dw_hr = p.P * p.H;
    plan.cell_output_gradient = p.B * p.H;
    plan.zero_row = p.H;
  }
  if (plan.bf16_products) {
    plan.layer_input_bits = N * max_in;
    plan.d_gates_bits = N * G;
    plan.h_prev_bits = N * p.H;
    plan.w_ih_bits = G * max_in;
  }
  if (plan.bf16_matmul_step) plan.w_hh_bits = G * p.H;
  return plan;
}

}  // namespace detail
}  // namespace lstmop
