// Every fast path of the production drivers against the float64 reference,
// forward and backward, at sizes that take it (each test first asserts, from
// the call's plan, that the path is taken; src/plan/lstm_plan.h):
// - split mode (float, one direction, 2 threads, H >= 32, B*4H*H >= 2^19,
//   N*4H*H >= 2^22): the hidden units in two parts on two threads, H = 64
//   (16-column halves) and H = 72 (a partial panel), fixed and variable
//   length, two layers;
// - the directions of a layer on two threads;
// - the AVX-512 recurrent tile's balanced row blocks past 12 rows (B = 13..24:
//   13 = 7 + 6, 24 = 12 + 12), fixed and variable length (steps of 24, 19, 14
//   rows);
// - the backward's weight gradients over more than 1024 rows: one TN product
//   each where the kernel table says TN runs at full rate (AVX-512), else
//   chunks of 1024 transposed rows (LSTMOP_KERNEL_ISA=avx2: the isa_avx2
//   rerun of this suite);
// - the fused forward step (kernels/step_forward.h) in both forms: the
//   concatenated one (B >= kConcatenatedMinBatch) and the projection one,
//   with partial unit groups (H not a multiple of 16), variable length
//   (steps growing in the reverse direction), split mode's unit halves;
// - bfloat16's products on the bfloat16 dot-product units (AVX512-BF16) in
//   split mode and with directions on two threads;
// - unpacked steps of a few rows (no packing, w_hh as stored) in parts of
//   the units on two threads;
// - the fused step's chained form (packed weights of kChainedMinBytes, below
//   kChainedMaxBatch, one thread a direction): the concatenated form's bits,
//   one thread (chained) against two (split mode, concatenated);
// - the fused step's streaming stores of large float32 saved tensors.
// float32 within accumulation_tolerance (lstm_test_support.h: forward depth
// K*T*L, backward K*T*L*B), gradients included; bfloat16 within its L eps / 4
// eps (expect_low_precision_near_reference).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "api/checks.h"
#include "gemm/gemm.h"
#include "kernels/cpu_features.h"
#include "lstm_test_plans.h"
#include "lstm_test_support.h"
#include "plan/lstm_plan.h"

namespace lstmtest {
namespace {

using lstmop::detail::Threading;

// Sets lstmop's thread count for a scope.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(lstmop::get_num_threads()) { lstmop::set_num_threads(n); }
  ~ThreadCount() { lstmop::set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

 private:
  int saved_;
};

LstmConfig float_config(int64_t T, int64_t B, int64_t I, int64_t H, int64_t L,
                        bool bidirectional) {
  LstmConfig c;
  c.T = T;
  c.B = B;
  c.I = I;
  c.H = H;
  c.L = L;
  c.bidirectional = bidirectional;
  return c;
}

// Runs p (of c) on one thread, against the reference (float16 within its
// precision), and on two, each after check_plans(plans, threads), and expects
// the two threads' 10 forward results (the saved tensors the backward reads
// included) bitwise equal to one thread's.
void expect_two_threads_give_the_bits_of_one(
    const LstmConfig& c, const LstmProblem& p, uint64_t seed,
    const std::function<void(const Plans&, int)>& check_plans) {
  ForwardResult one, two;
  {
    ThreadCount count(1);
    check_plans(plans_of(c), 1);
    if (::testing::Test::HasFatalFailure()) return;
    one = run_forward(p);
    if (c.dtype == DType::Float16) {
      expect_low_precision_near_reference(p, seed + 1);
    } else {
      expect_near_reference(c, seed);
    }
  }
  {
    ThreadCount count(2);
    check_plans(plans_of(c), 2);
    if (::testing::Test::HasFatalFailure()) return;
    two = run_forward(p);
  }
  const NamedViews a = forward_outputs(one), b = forward_outputs(two);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
  }
}

// Split mode: N*4H*H >= 2^22 needs N >= 256 valid rows for H = 64.
TEST(FastPaths, SplitModeAgainstReference) {
  ThreadCount two(2);
  std::vector<LstmConfig> configs;
  configs.push_back(float_config(8, 32, 16, 64, 2, false));
  configs.push_back(float_config(8, 32, 16, 72, 1, false));  // halves of 32 + 40 units
  LstmConfig packed = float_config(12, 32, 16, 64, 2, false);
  packed.packed = true;
  for (int64_t b = 0; b < packed.B; ++b) packed.lengths.push_back(12 - b / 8);  // 336 rows
  configs.push_back(packed);
  LstmConfig inference = float_config(8, 32, 16, 64, 1, false);
  inference.train = false;
  inference.batch_first = true;
  configs.push_back(inference);
  uint64_t seed = 3000;
  for (const LstmConfig& cfg : configs) {
    SCOPED_TRACE(cfg.name());
    const Plans plans = plans_of(cfg);
    ASSERT_EQ(plans.forward.threads.threading, Threading::SplitUnits);
    ASSERT_EQ(plans.backward.threads.threading, Threading::SplitUnits);
    expect_near_reference(cfg, seed += 10);
  }
}

// The plan's floor on a call's work for a second thread (lstm_plan.h): with
// its default thresholds (the test processes set LSTMOP_MIN_PARALLEL_WORK to
// 0, lstm_test_support.cpp) a call of little work plans one thread on two,
// forward and backward apart; 0 and an unreadable value behave as documented.
TEST(FastPaths, SecondThreadOnlyForEnoughWork) {
  ThreadCount two(2);
  const char* saved = std::getenv("LSTMOP_MIN_PARALLEL_WORK");
  const std::string restore = saved != nullptr ? saved : "";
  unsetenv("LSTMOP_MIN_PARALLEL_WORK");
  // Bidirectional T=50 I=H=32: one direction's work 50 B 128 64 = B 409600.
  auto bidir = [](int64_t B) { return float_config(50, B, 32, 32, 1, true); };
  const auto work_of = [](const LstmConfig& cfg) {
    const LstmProblem q = make_problem(cfg, 1);
    return lstmop::detail::direction_work(lstmop::detail::check_forward_args(
        q.input, q.hx_list(), q.param_list(), cfg.has_biases, cfg.L, 0.0, cfg.train,
        cfg.bidirectional, cfg.batch_first, q.batch_sizes_view(), true));
  };
  EXPECT_EQ(work_of(bidir(4)), 4 * 409600.0);
  EXPECT_EQ(work_of(float_config(3, 2, 5, 7, 2, true)), 6 * 28.0 * (14 + 7));  // widest: D*R
  Plans p = plans_of(bidir(4));  // 1.6M: one thread both ways
  EXPECT_EQ(p.forward.threads.threading, Threading::Serial);
  EXPECT_EQ(p.forward.threads.row_half_threads, 1);
  EXPECT_EQ(p.backward.threads.threading, Threading::Serial);
  p = plans_of(bidir(8));  // 3.3M: the forward's directions in parallel, not the backward's
  EXPECT_EQ(p.forward.threads.threading, Threading::DirectionsInParallel);
  EXPECT_EQ(p.backward.threads.threading, Threading::Serial);
  EXPECT_EQ(p.backward.threads.row_half_threads, 1);
  p = plans_of(bidir(12));  // 4.9M: both
  EXPECT_EQ(p.forward.threads.threading, Threading::DirectionsInParallel);
  EXPECT_EQ(p.backward.threads.threading, Threading::DirectionsInParallel);
  EXPECT_EQ(p.backward.threads.row_half_threads, 2);
  // One step of a tiny layer: no row halves, no unit parts on two threads.
  p = plans_of(float_config(1, 1, 8, 8, 1, false));
  EXPECT_EQ(p.forward.threads.row_half_threads, 1);
  setenv("LSTMOP_MIN_PARALLEL_WORK", "0", 1);
  p = plans_of(bidir(4));
  EXPECT_EQ(p.forward.threads.threading, Threading::DirectionsInParallel);
  EXPECT_EQ(p.backward.threads.threading, Threading::DirectionsInParallel);
  setenv("LSTMOP_MIN_PARALLEL_WORK", "many", 1);  // not a number: the defaults
  EXPECT_EQ(plans_of(bidir(4)).forward.threads.threading, Threading::Serial);
  setenv("LSTMOP_MIN_PARALLEL_WORK", "2000000", 1);
  EXPECT_EQ(plans_of(bidir(4)).forward.threads.threading, Threading::Serial);
  EXPECT_EQ(plans_of(bidir(8)).backward.threads.threading, Threading::DirectionsInParallel);
  if (saved != nullptr) {
    setenv("LSTMOP_MIN_PARALLEL_WORK", restore.c_str(), 1);
  } else {
    unsetenv("LSTMOP_MIN_PARALLEL_WORK");
  }
}

TEST(FastPaths, DirectionsInParallelAgainstReference) {
  ThreadCount two(2);
  LstmConfig cfg = float_config(6, 17, 9, 40, 2, true);
  ASSERT_EQ(plans_of(cfg).forward.threads.threading, Threading::DirectionsInParallel);
  expect_near_reference(cfg, 3100);
  cfg.packed = true;
  cfg.lengths = {6, 6, 6, 5, 5, 5, 5, 4, 4, 3, 3, 3, 2, 2, 1, 1, 1};
  expect_near_reference(cfg, 3110);
}

// Steps of 13..24 rows: the AVX-512 tiles cut them into two balanced blocks
// (13 = 7 + 6, 17 = 9 + 8, 18 = 9 + 9, 24 = 12 + 12); AVX2 into 6-row blocks
// and a 7..9-row tail. Forward k = H, backward dh k = 4H.
TEST(FastPaths, StepsOf13To24RowsAgainstReference) {
  uint64_t seed = 3200;
  for (int64_t B : {13, 17, 18, 24}) {
    expect_near_reference(float_config(5, B, 9, 40, 1, true), seed += 10);
  }
  LstmConfig packed = float_config(6, 24, 9, 40, 2, false);
  packed.packed = true;
  for (int64_t b = 0; b < packed.B; ++b) packed.lengths.push_back(b < 14 ? 6 : b < 19 ? 4 : 2);
  expect_near_reference(packed, seed += 10);  // steps of 24, 24, 19, 19, 14, 14 rows
}

// N = 1100 (fixed length) and 1077 (variable length) rows: on the transposed
// path two chunks, the second partial.
TEST(FastPaths, WeightGradientsOverMoreThan1024RowsAgainstReference) {
  LstmConfig cfg = float_config(55, 20, 8, 16, 1, true);
  const Plans plans = plans_of(cfg);
  const bool tn = lstmop::kernels::kernel_choice().gemm_tn_at_full_rate;
  std::printf("[fast paths] weight gradients: %s (%s)\n",
              tn ? "one TN product each" : "transposed chunks of 1024 rows",
              lstmop::kernels::describe(lstmop::kernels::kernel_choice()).c_str());
  ASSERT_EQ(plans.backward.weight_gradients_tn, tn);
  expect_near_reference(cfg, 3300);
  cfg.packed = true;
  for (int64_t b = 0; b < cfg.B; ++b) cfg.lengths.push_back(55 - (b % 3));
  cfg.L = 2;
  expect_near_reference(cfg, 3310);
}

// The TN path's transposed form (lstm_plan.h, weight_gradient_result_transposed):
// H = 256 gives halves of 512 rows; w_ih of layer 0 (I = 40) and w_hh (R = 256)
// take it, layer 1's w_ih (D*R = 512 columns) too, with N = 260 summed rows
// (kWeightGradTransposedMinK = 256); one and two threads (the two halves at
// once), fixed and variable length. Against the reference
// (test_determinism.cpp holds the bits across thread counts). Below the
// minimum (N = 15) the plan keeps the TN form.
TEST(FastPaths, WeightGradientsComputedTransposedAgainstReference) {
  using lstmop::detail::kWeightGradTransposedMinK;
  using lstmop::detail::weight_gradient_result_transposed;
  LstmConfig cfg = float_config(52, 5, 40, 256, 2, true);
  const bool tn = lstmop::kernels::kernel_choice().gemm_tn_at_full_rate;
  const Plans plans = plans_of(cfg);
  ASSERT_EQ(kWeightGradTransposedMinK, 256);
  ASSERT_TRUE(weight_gradient_result_transposed(512, 40, 256));
  ASSERT_TRUE(weight_gradient_result_transposed(512, 512, 260));
  ASSERT_FALSE(weight_gradient_result_transposed(512, 512, 255));
  ASSERT_FALSE(weight_gradient_result_transposed(512, 1024, 260));
  ASSERT_FALSE(weight_gradient_result_transposed(256, 128, 260));
  EXPECT_EQ(plans_of(float_config(3, 5, 40, 256, 2, true)).backward.dw_t, 0);
  if (!tn) {
    std::printf("[fast paths] transposed weight gradients: not taken here (no TN path: %s); "
                "the reference check still runs\n",
                lstmop::kernels::describe(lstmop::kernels::kernel_choice()).c_str());
    EXPECT_EQ(plans.backward.dw_t, 0);
  } else {
    EXPECT_EQ(plans.backward.dw_t_ld, 512 + lstmop::detail::kTransposePad);
    EXPECT_EQ(plans.backward.dw_t, 2 * 512 * plans.backward.dw_t_ld);
  }
  uint64_t seed = 3400;
  for (int threads : {1, 2}) {
    ThreadCount count(threads);
    SCOPED_TRACE(threads);
    expect_near_reference(cfg, seed);
    LstmConfig packed = cfg;
    packed.packed = true;
    packed.lengths = {52, 52, 52, 51, 50};  // N = 257
    expect_near_reference(packed, seed + 10);
  }
}

// The fused step's two forms, each where the plan takes it, on one and two
// threads (split mode for the one-direction problems).
TEST(FastPaths, FusedStepFormsAgainstReference) {
  using lstmop::detail::kConcatenatedMinBatch;
  uint64_t seed = 3500;
  for (int threads : {1, 2}) {
    ThreadCount count(threads);
    for (int64_t B : {kConcatenatedMinBatch - 1, kConcatenatedMinBatch}) {
      // H = 40: two and a half 16-unit groups; I = 9.
      LstmConfig bidir = float_config(7, B, 9, 40, 2, true);
      SCOPED_TRACE(bidir.name());
      ASSERT_EQ(plans_of(bidir).forward.step_concatenated, B >= kConcatenatedMinBatch);
      expect_near_reference(bidir, seed += 10);
      bidir.packed = true;
      for (int64_t b = 0; b < B; ++b) bidir.lengths.push_back(7 - 2 * b);
      expect_near_reference(bidir, seed += 10);
      // One direction large enough for split mode on two threads: B*4H*H >= 2^19.
      LstmConfig split = float_config(64 / B + 2, B, 24, 216, 1, false);
      SCOPED_TRACE(split.name());
      const Plans plans = plans_of(split);
      ASSERT_EQ(plans.forward.step_concatenated, B >= kConcatenatedMinBatch);
      ASSERT_EQ(plans.forward.threads.threading,
                threads == 2 ? Threading::SplitUnits : Threading::Serial);
      expect_near_reference(split, seed += 10);
    }
  }
}

// The chained form gives the concatenated form's bits: one thread (chained)
// against two (split mode, concatenated), bitwise, and against the reference
// (forward and gradients); fixed and variable length (steps of 1 to B rows:
// every row-block size of the tiles, the AVX-512 pair tiles' 7 to 12 rows,
// AVX2's one-row pairs), two layers (layer 1 reads layer 0's output),
// projections, float16 (on float FMAs, the input converted before the
// layer); smaller weights and kChainedMaxBatch + 1 rows stay concatenated.
TEST(FastPaths, ChainedFormGivesTheConcatenatedBits) {
  using lstmop::detail::kChainedMaxBatch;
  using lstmop::detail::kConcatenatedMinBatch;
  uint64_t seed = 3550;
  for (int64_t B : {kConcatenatedMinBatch, kChainedMaxBatch, kChainedMaxBatch + 1}) {
    for (int variant = 0; variant < 4; ++variant) {
      // Packed weights of 4H x (2H) floats = 1.4 MiB; T large enough for
      // split mode on two threads.
      LstmConfig c = float_config(8, B, 24, 216, 2, false);
      if (variant == 1) {
        c.packed = true;
        for (int64_t b = 0; b < B; ++b) c.lengths.push_back(b == 0 ? 8 : 8 - b % 8);
        std::sort(c.lengths.begin(), c.lengths.end(), std::greater<int64_t>());
      }
      if (variant == 2) {
        c.H = 400;  // 4H x (I + P) floats with P = 300: 1.9 MiB
        c.P = 300;
        c.L = 1;
      }
      if (variant == 3) c.dtype = DType::Float16;  // on float FMAs: the same forms
      SCOPED_TRACE(c.name());
      const LstmProblem p = make_problem(c, seed += 10);
      const bool chained = B <= kChainedMaxBatch;
      expect_two_threads_give_the_bits_of_one(c, p, seed, [&](const Plans& plans, int threads) {
        if (threads == 1) {
          ASSERT_EQ(plans.forward.step_chained, chained);
          ASSERT_EQ(plans.forward.step_concatenated, !chained);
        } else {
          ASSERT_EQ(plans.forward.threads.threading, Threading::SplitUnits);
          ASSERT_TRUE(plans.forward.step_concatenated);
          ASSERT_FALSE(plans.forward.step_chained);
        }
      });
    }
  }
  ThreadCount count(1);
  // 4H x (I + H) floats = 0.8 MiB: concatenated.
  const Plans small = plans_of(float_config(3, 8, 24, 216, 1, false));
  EXPECT_TRUE(small.forward.step_concatenated);
  EXPECT_FALSE(small.forward.step_chained);
}

// Training calls with float32 saved tensors of kStreamSavedMinBytes and more:
// the fused step streams them (full, aligned vectors; H = 200 rows are 800
// bytes, so every other row starts off a 64-byte line and takes plain
// stores, as does the last partial vector), on one thread and in split mode
// on two (the fence before the barrier), both directions in the second.
TEST(FastPaths, StreamedSavedTensorsAgainstReference) {
  uint64_t seed = 3600;
  for (int threads : {1, 2}) {
    ThreadCount count(threads);
    LstmConfig cfg = float_config(40, 20, 8, 200, 1, false);
    SCOPED_TRACE(cfg.name());
    Plans plans = plans_of(cfg);
    ASSERT_TRUE(plans.forward.stream_saved);
    ASSERT_EQ(plans.forward.threads.threading,
              threads == 2 ? Threading::SplitUnits : Threading::Serial);
    expect_near_reference(cfg, seed += 10);
    cfg.T = 24;
    cfg.bidirectional = true;
    ASSERT_TRUE(plans_of(cfg).forward.stream_saved);
    expect_near_reference(cfg, seed += 10);
    cfg.train = false;
    ASSERT_FALSE(plans_of(cfg).forward.stream_saved);
  }
}

// bfloat16 on the bfloat16 dot-product units (step_forward_bf16.h) in split
// mode (B*4H*H >= 2^19), and with directions on two threads.
TEST(FastPaths, Bfloat16ProductsInSplitModeAgainstReference) {
  ThreadCount two(2);
  LstmConfig cfg = float_config(10, 8, 24, 136, 1, false);
  cfg.dtype = DType::BFloat16;
  const Plans plans = plans_of(cfg);
  ASSERT_EQ(plans.forward.bf16_products, lstmop::kernels::kernel_choice().bf16_step);
  if (plans.forward.bf16_matmul_step) {
    // The matmul form runs all units on one thread: never split.
    std::printf("[fast paths] bfloat16 products in the matmul form: no split mode\n");
    ASSERT_EQ(plans.forward.threads.threading, Threading::Serial);
    ASSERT_EQ(plans.backward.threads.threading, Threading::Serial);
  } else {
    ASSERT_EQ(plans.forward.threads.threading, Threading::SplitUnits);
  }
  expect_low_precision_near_reference(make_problem(cfg, 3400), 3401);
  LstmConfig bidir = float_config(6, 3, 20, 40, 2, true);
  bidir.dtype = DType::BFloat16;
  ASSERT_EQ(plans_of(bidir).forward.threads.threading, Threading::DirectionsInParallel);
  expect_low_precision_near_reference(make_problem(bidir, 3402), 3403);
}

// Unpacked steps of a few rows (lstm_plan.h: at most kUnpackedMaxBatch rows,
// no projections, w_hh of kUnpackedMinBytes; recurrent_rows.h): no packing,
// each step's product on w_hh as stored, then the cell pass, in two parts
// of the units on two threads. Fixed and variable length (steps of 3, 2, 1
// rows, the reverse direction's growing), two bidirectional layers, with and
// without hx, training and inference, float16 (h rounded as stored before
// the next product); one thread against two bitwise, and against the
// reference; H = 264 (parts of 144 and 120 units). Batch 4, projections and
// smaller w_hh keep the fused step.
TEST(FastPaths, UnpackedStepsOfAFewRowsAgainstReference) {
  using lstmop::detail::kUnpackedMaxBatch;
  uint64_t seed = 3700;
  for (int variant = 0; variant < 5; ++variant) {
    LstmConfig c = float_config(5, kUnpackedMaxBatch, 24, 264, 1, false);
    if (variant == 1) {
      c.packed = true;
      c.lengths = {5, 3, 1};
      c.bidirectional = true;
      c.L = 2;
    }
    if (variant == 2) c.with_hx = false;
    if (variant == 3) c.train = false;
    if (variant == 4) c.dtype = DType::Float16;
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, seed += 10);
    expect_two_threads_give_the_bits_of_one(c, p, seed, [](const Plans& plans, int) {
      ASSERT_TRUE(plans.forward.unpacked_steps);
      ASSERT_NE(plans.forward.threads.threading, Threading::SplitUnits);
    });
  }
  ThreadCount count(1);
  EXPECT_FALSE(plans_of(float_config(5, kUnpackedMaxBatch + 1, 24, 264, 1, false))
                   .forward.unpacked_steps);
  EXPECT_FALSE(plans_of(float_config(5, 1, 24, 128, 1, false)).forward.unpacked_steps);
  LstmConfig proj = float_config(5, 1, 24, 264, 1, false);
  proj.P = 200;
  EXPECT_FALSE(plans_of(proj).forward.unpacked_steps);
}

// One time step (lstm_plan.h, ForwardPlan::unpacked_steps): no fused step, the
// products on the weights as stored, then the cell pass. With and without
// hx (without it no recurrent product), projections, two bidirectional
// layers, batch 1 and 8 (8: the concatenated form's size at T > 1), training
// and inference, float32 and float16 (bfloat16 on the dot-product units
// keeps its step); one and two threads (two: the row halves in parallel; B = 8,
// H = 136 is split mode's size at T > 1).
// Against the reference; test_determinism.cpp holds the bits across thread
// counts.
TEST(FastPaths, SingleStepAgainstReference) {
  uint64_t seed = 3600;
  for (int threads : {1, 2}) {
    ThreadCount count(threads);
    SCOPED_TRACE(threads);
    for (int64_t B : {int64_t{1}, int64_t{8}}) {
      SCOPED_TRACE(B);
      LstmConfig c = float_config(1, B, 24, 40, 2, true);
      const Plans plans = plans_of(c);
      ASSERT_TRUE(plans.forward.unpacked_steps);
      ASSERT_FALSE(plans.forward.step_concatenated);
      expect_near_reference(c, seed++);
      LstmConfig no_hx = c;
      no_hx.with_hx = false;
      expect_near_reference(no_hx, seed++);
      LstmConfig proj = c;
      proj.P = 13;
      expect_near_reference(proj, seed++);
      LstmConfig infer = c;
      infer.train = false;
      expect_near_reference(infer, seed++);
      LstmConfig half = c;
      half.dtype = DType::Float16;
      ASSERT_TRUE(plans_of(half).forward.unpacked_steps);
      expect_low_precision_near_reference(make_problem(half, seed), seed + 1);
      seed += 2;
    }
    LstmConfig wide = float_config(1, 8, 24, 136, 1, false);
    ASSERT_TRUE(plans_of(wide).forward.unpacked_steps);
    expect_near_reference(wide, seed++);
  }
  // Two steps: the fused step (the concatenated form from batch 4).
  EXPECT_FALSE(plans_of(float_config(2, 1, 24, 40, 1, false)).forward.unpacked_steps);
  EXPECT_TRUE(plans_of(float_config(2, 8, 24, 40, 1, false)).forward.step_concatenated);
  LstmConfig bf16 = float_config(1, 8, 24, 40, 1, false);
  bf16.dtype = DType::BFloat16;
  const Plans bf16_plans = plans_of(bf16);
  EXPECT_EQ(bf16_plans.forward.unpacked_steps, !bf16_plans.forward.bf16_products);
  if (bf16_plans.forward.bf16_products) {
    std::printf("[fast paths] bfloat16 at T = 1 keeps its dot-product step (%s)\n",
                bf16_plans.forward.bf16_matmul_step ? "matmul form" : "fused step");
  }
  expect_low_precision_near_reference(make_problem(bf16, seed), seed + 1);
}

}  // namespace
}  // namespace lstmtest
