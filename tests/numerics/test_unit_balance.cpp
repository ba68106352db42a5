// Split mode's balance of the hidden units between its two threads
// (driver/unit_balance.h): where the measured times move the boundary, and
// that moving units between the threads mid-call changes no bit (the
// units change threads at every window here, float and bfloat16, fixed and
// variable length, inference and training, with projections).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "driver/unit_balance.h"
#include "lstm_test_plans.h"
#include "lstm_test_support.h"

namespace lstmtest {
namespace {

using lstmop::detail::UnitBalance;

TEST(UnitBalance, EqualTimesKeepTheBoundary) {
  const UnitBalance b(256, 128);
  EXPECT_EQ(b.rebalanced(128, 1000, 1000), 128);
  // A few percent apart: less than 3/4 of a group's worth, no move.
  EXPECT_EQ(b.rebalanced(128, 1050, 1000), 128);
  EXPECT_EQ(b.rebalanced(128, 1000, 1060), 128);
}

TEST(UnitBalance, MovesUnitsToTheFasterThread) {
  const UnitBalance b(256, 128);  // 16 groups, 8 each
  // Part 0 takes twice as long for its 8 groups: equal times need 16/3 = 5.33
  // groups there; the move is limited to a quarter of the groups (4) a window.
  EXPECT_EQ(b.rebalanced(128, 2000, 1000), 5 * 16);
  EXPECT_EQ(b.rebalanced(128, 1000, 2000), 11 * 16);
  // Speeds 125 and 200 (a busy sibling core): 16 * 125 / 325 = 6.15 groups.
  EXPECT_EQ(b.rebalanced(128, 1600, 1000), 6 * 16);
  // Far apart: at most 4 groups a window, and each part keeps one.
  EXPECT_EQ(b.rebalanced(128, 100000, 1000), 4 * 16);
  EXPECT_EQ(b.rebalanced(32, 100000, 1000), 16);
  EXPECT_EQ(b.rebalanced(240, 1000, 100000), 240);
  // No time measured (an empty window): no move.
  EXPECT_EQ(b.rebalanced(128, 0, 1000), 128);
}

TEST(UnitBalance, PartialLastGroup) {
  const UnitBalance b(72, 32);  // groups of 16, 16, 16, 16, 8
  EXPECT_EQ(b.rebalanced(32, 1000, 1000 * 3 / 2), 32);
  EXPECT_EQ(b.rebalanced(32, 1000, 3000), 48);
  EXPECT_EQ(b.rebalanced(64, 100000, 1000), 48);  // limit: 5 / 4 -> 1 group
}

TEST(UnitBalance, StartsWhereTheLastBalanceOfTheSameSizeEnded) {
  const UnitBalance first(72, 32);
  UnitBalance::Local local = first.start();
  local.boundary = 16;
  first.finish(local, 0);
  EXPECT_EQ(UnitBalance(72, 32).start().boundary, 16);
  local.boundary = 48;
  first.finish(local, 1);  // part 1's view: not stored
  EXPECT_EQ(UnitBalance(72, 32).start().boundary, 16);
  first.finish(local, 0);
  EXPECT_EQ(UnitBalance(72, 32).start().boundary, 48);
  EXPECT_EQ(UnitBalance(80, 32).start().boundary, 32);  // another H: the plan's
  local.boundary = 32;
  first.finish(local, 0);
  EXPECT_EQ(UnitBalance(72, 16).start().boundary, 32);
}

// Moves the boundary every window while a test runs; restores the default.
class UnitsChangeThreads : public ::testing::Test {
 protected:
  void SetUp() override { UnitBalance::test_cycle().store(true); }
  void TearDown() override {
    UnitBalance::test_cycle().store(false);
    lstmop::set_num_threads(1);
  }
};

TEST_F(UnitsChangeThreads, ResultsAreBitwiseTheOneThreadResults) {
  // One direction with enough recurrent work that two threads split its
  // units (T * B rows of H = 72: five groups, the last partial), with
  // projections too.
  std::vector<LstmConfig> configs;
  std::mt19937_64 rng(31);
  for (int variant = 0; variant < 7; ++variant) {
    LstmConfig c;
    c.T = 30;
    c.B = 33;
    c.I = 24;
    c.H = 72;
    c.L = 2;
    c.packed = variant == 1 || variant == 3 || variant == 6;
    c.train = variant != 2;
    if (variant == 3 || variant == 4) c.dtype = DType::BFloat16;
    if (variant >= 5) c.P = 40;  // projections: two barriers a step, h and dh in columns
    if (c.packed) c.lengths = random_lengths(c.T, c.B, rng);
    configs.push_back(c);
  }
  uint64_t seed = 900;
  for (const LstmConfig& c : configs) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, ++seed);
    const LstmGrads g = make_grads(p, ++seed);
    lstmop::set_num_threads(1);
    const AllResults one = run_all(p, g);
    lstmop::set_num_threads(2);
    const int64_t moves_before = UnitBalance::moves().load();
    const AllResults two = run_all(p, g);
    // 30 steps: 3 windows a layer, each a move (when split mode's pair ran).
    // bfloat16 in oneDNN's matmul form (the default on AMX) never splits: no
    // move; ctest reruns this suite in the fused form there
    // (bf16_fused_test_unit_balance), where it splits.
    const auto plan = plans_of(p).forward;
    ASSERT_EQ(plan.threads.threading == lstmop::detail::Threading::SplitUnits,
              !plan.bf16_matmul_step);
    if (plan.bf16_matmul_step) {
      EXPECT_EQ(UnitBalance::moves().load(), moves_before);
    } else {
      EXPECT_GT(UnitBalance::moves().load(), moves_before);
    }
    expect_bitwise_same(two, one, c.train);
  }
}

}  // namespace
}  // namespace lstmtest
