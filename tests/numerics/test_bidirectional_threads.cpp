// Bidirectional layers on two threads (plan/bidirectional_threads.h): the
// choice between directions in parallel and split mode from the measured
// speeds, the plan that follows it, the drivers' reports, and that both ways
// give the bits of one thread (float32, bfloat16, float16, fixed and variable
// length, inference and training, projections, with split mode's boundary
// moved at every window).
#include <gtest/gtest.h>

#include <random>

#include "driver/unit_balance.h"
#include "lstm_test_plans.h"
#include "lstm_test_support.h"
#include "plan/bidirectional_threads.h"
#include "plan/lstm_plan.h"

namespace lstmtest {
namespace {

using lstmop::detail::BidirectionalThreads;
using lstmop::detail::Threading;
using lstmop::detail::UnitBalance;
using Mode = BidirectionalThreads::Mode;

// Each test starts from the default: adaptive, parallel, nothing pending.
class BidirectionalThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override { restore(); }
  void TearDown() override {
    restore();
    UnitBalance::test_cycle().store(false);
    lstmop::set_num_threads(1);
  }
  static void restore() {
    BidirectionalThreads::set_mode(Mode::Adaptive);
    BidirectionalThreads::reset();
  }
};

// Two calls in a row with one direction's thread twice as slow: split mode after.
bool two_slow_calls() {
  BidirectionalThreads::record_parallel(1000, 2000);
  BidirectionalThreads::record_parallel(2000, 1000);
  return BidirectionalThreads::split();
}

TEST_F(BidirectionalThreadsTest, EqualSpeedsKeepTheDirectionsInParallel) {
  EXPECT_FALSE(BidirectionalThreads::split());
  for (int call = 0; call < 10; ++call) {
    BidirectionalThreads::record_parallel(1000, 1100);  // 1.1: noise, not a slower core
    BidirectionalThreads::record_parallel(1240, 1000);  // just below kSplitRatio
  }
  EXPECT_FALSE(BidirectionalThreads::split());
}

TEST_F(BidirectionalThreadsTest, TwoSlowCallsInARowSwitchToSplitMode) {
  const int64_t switches = BidirectionalThreads::switches();
  BidirectionalThreads::record_parallel(1000, 1600);
  EXPECT_FALSE(BidirectionalThreads::split());  // one call could be an outlier
  BidirectionalThreads::record_parallel(1000, 1050);
  BidirectionalThreads::record_parallel(1600, 1000);
  EXPECT_FALSE(BidirectionalThreads::split());  // not in a row
  BidirectionalThreads::record_parallel(1000, 1250);
  EXPECT_TRUE(BidirectionalThreads::split());
  EXPECT_EQ(BidirectionalThreads::switches(), switches + 1);
  // In split mode the directions' times are not the measure: no change.
  BidirectionalThreads::record_parallel(1000, 1000);
  BidirectionalThreads::record_parallel(1000, 1000);
  EXPECT_TRUE(BidirectionalThreads::split());
  // Nothing measured (0): ignored.
  BidirectionalThreads::reset();
  BidirectionalThreads::record_parallel(0, 5000);
  BidirectionalThreads::record_parallel(5000, 0);
  EXPECT_FALSE(BidirectionalThreads::split());
}

TEST_F(BidirectionalThreadsTest, SplitModeReturnsWhenItsBalanceEndsAtTheHalves) {
  ASSERT_TRUE(two_slow_calls());
  const int64_t switches = BidirectionalThreads::switches();
  // H = 256: 9 groups to 7 (1.29) is still a slower core.
  BidirectionalThreads::record_split(144, 256, 128);
  BidirectionalThreads::record_split(112, 256, 128);
  EXPECT_TRUE(BidirectionalThreads::split());
  BidirectionalThreads::record_split(128, 256, 128);
  BidirectionalThreads::record_split(160, 256, 128);  // 10:6, not in a row
  BidirectionalThreads::record_split(128, 256, 128);
  EXPECT_TRUE(BidirectionalThreads::split());
  BidirectionalThreads::record_split(128, 256, 128);
  EXPECT_FALSE(BidirectionalThreads::split());
  EXPECT_EQ(BidirectionalThreads::switches(), switches + 1);
  // H = 512: 17 groups to 15 (1.13) is the halves as near as split mode gets.
  ASSERT_TRUE(two_slow_calls());
  BidirectionalThreads::record_split(272, 512, 256);
  BidirectionalThreads::record_split(240, 512, 256);
  EXPECT_FALSE(BidirectionalThreads::split());
  // H = 72 (groups 16, 16, 16, 16, 8): the plan's 32:40 is the halves; 48:24 is not.
  ASSERT_TRUE(two_slow_calls());
  BidirectionalThreads::record_split(48, 72, 32);
  BidirectionalThreads::record_split(16, 72, 32);  // 16:56
  EXPECT_TRUE(BidirectionalThreads::split());
  BidirectionalThreads::record_split(32, 72, 32);
  BidirectionalThreads::record_split(32, 72, 32);
  EXPECT_FALSE(BidirectionalThreads::split());
  // No boundary (no balance of this H ran): ignored.
  ASSERT_TRUE(two_slow_calls());
  BidirectionalThreads::record_split(0, 256, 128);
  BidirectionalThreads::record_split(0, 256, 128);
  EXPECT_TRUE(BidirectionalThreads::split());
}

LstmConfig bidirectional_config() {
  LstmConfig c;
  c.T = 30, c.B = 33, c.I = 24, c.H = 72, c.L = 2;
  c.bidirectional = true;
  return c;
}

TEST_F(BidirectionalThreadsTest, ThePlanFollowsTheChoice) {
  const LstmProblem big = make_problem(bidirectional_config(), 801);
  LstmConfig small_cfg = bidirectional_config();
  small_cfg.T = 3, small_cfg.B = 2;  // not worth splitting: always in parallel
  const LstmProblem small = make_problem(small_cfg, 802);
  lstmop::set_num_threads(2);
  EXPECT_EQ(plans_of(big).forward.threads.threading, Threading::DirectionsInParallel);
  EXPECT_TRUE(plans_of(big).forward.threads.measure_directions);
  EXPECT_EQ(plans_of(big).forward.threads.direction_workspaces, 2);
  EXPECT_EQ(plans_of(small).forward.threads.threading, Threading::DirectionsInParallel);
  EXPECT_FALSE(plans_of(small).forward.threads.measure_directions);
  BidirectionalThreads::set_mode(Mode::Split);
  const Plans plans = plans_of(big);
  EXPECT_EQ(plans.forward.threads.threading, Threading::SplitUnits);
  EXPECT_EQ(plans.backward.threads.threading, Threading::SplitUnits);
  EXPECT_FALSE(plans.forward.threads.measure_directions);
  EXPECT_EQ(plans.forward.threads.direction_threads, 1);
  EXPECT_EQ(plans.forward.threads.parts, 2);
  EXPECT_EQ(plans_of(small).forward.threads.threading, Threading::DirectionsInParallel);
  lstmop::set_num_threads(1);
  EXPECT_EQ(plans_of(big).forward.threads.threading, Threading::Serial);
  // Adaptive, after two slow calls: split mode too.
  BidirectionalThreads::set_mode(Mode::Adaptive);
  BidirectionalThreads::record_parallel(1000, 2000);
  BidirectionalThreads::record_parallel(1000, 2000);
  lstmop::set_num_threads(2);
  EXPECT_EQ(plans_of(big).forward.threads.threading, Threading::SplitUnits);
  EXPECT_EQ(plans_of(small).forward.threads.threading, Threading::DirectionsInParallel);
}

TEST_F(BidirectionalThreadsTest, TheForwardReportsEachCallOnce) {
  const LstmProblem big = make_problem(bidirectional_config(), 803);
  const LstmGrads g = make_grads(big, 804);
  LstmConfig small_cfg = bidirectional_config();
  small_cfg.T = 3, small_cfg.B = 2;
  const LstmProblem small = make_problem(small_cfg, 805);
  lstmop::set_num_threads(2);
  BidirectionalThreads::set_mode(Mode::Parallel);
  int64_t parallel = BidirectionalThreads::parallel_reports();
  int64_t split = BidirectionalThreads::split_reports();
  run_all(big, g);  // forward (training) and backward: the forward reports
  EXPECT_EQ(BidirectionalThreads::parallel_reports(), parallel + 1);
  run_all(small, make_grads(small, 806));
  EXPECT_EQ(BidirectionalThreads::parallel_reports(), parallel + 1);
  BidirectionalThreads::set_mode(Mode::Split);
  run_all(big, g);
  EXPECT_EQ(BidirectionalThreads::split_reports(), split + 1);
  EXPECT_EQ(BidirectionalThreads::parallel_reports(), parallel + 1);
  lstmop::set_num_threads(1);
  parallel = BidirectionalThreads::parallel_reports();
  split = BidirectionalThreads::split_reports();
  run_all(big, g);
  EXPECT_EQ(BidirectionalThreads::parallel_reports(), parallel);
  EXPECT_EQ(BidirectionalThreads::split_reports(), split);
}

TEST_F(BidirectionalThreadsTest, BothWaysGiveTheBitsOfOneThread) {
  std::vector<LstmConfig> configs;
  std::mt19937_64 rng(41);
  for (int variant = 0; variant < 7; ++variant) {
    LstmConfig c = bidirectional_config();
    c.packed = variant == 1 || variant == 3 || variant == 5;
    c.train = variant != 2;
    if (variant == 3) c.dtype = DType::BFloat16;
    if (variant == 4) c.dtype = DType::Float16;
    if (variant >= 5) c.P = 40;
    if (c.packed) c.lengths = random_lengths(c.T, c.B, rng);
    configs.push_back(c);
  }
  uint64_t seed = 820;
  UnitBalance::test_cycle().store(true);  // split mode's units change threads every window
  for (const LstmConfig& c : configs) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, ++seed);
    const LstmGrads g = make_grads(p, ++seed);
    lstmop::set_num_threads(1);
    const AllResults one = run_all(p, g);
    lstmop::set_num_threads(2);
    for (Mode mode : {Mode::Parallel, Mode::Split}) {
      SCOPED_TRACE(mode == Mode::Split ? "split mode" : "directions in parallel");
      BidirectionalThreads::set_mode(mode);
      // (bfloat16 in oneDNN's matmul form, on AMX, never splits.)
      const auto plan = plans_of(p).forward;
      const bool splits = mode == Mode::Split && !plan.bf16_matmul_step;
      ASSERT_EQ(plan.threads.threading,
                splits ? Threading::SplitUnits : Threading::DirectionsInParallel);
      const int64_t moves_before = UnitBalance::moves().load();
      const AllResults two = run_all(p, g);
      if (splits) {
        EXPECT_GT(UnitBalance::moves().load(), moves_before);
      }
      expect_bitwise_same(two, one, c.train);
    }
  }
}

}  // namespace
}  // namespace lstmtest
