// Determinism (contract, "Guarantees"): identical inputs give bitwise
// identical results run after run and whatever the number of threads, for the
// forward and the backward; set_num_threads rejects counts below 1.
#include <limits>
#include <random>

#include "lstm_test_support.h"

namespace lstmtest {
namespace {

// Large enough that the work is split between threads (B = 33 rows, 4H = 160
// gate columns), with remainders everywhere.
std::vector<LstmConfig> configs() {
  std::vector<LstmConfig> out;
  std::mt19937_64 rng(9);
  for (int variant = 0; variant < 5; ++variant) {
    LstmConfig c;
    c.T = 6;
    c.B = 33;
    c.I = 24;
    c.H = 40;
    c.L = 2;
    c.bidirectional = variant != 1;
    c.packed = variant == 2 || variant == 4;
    c.batch_first = variant == 3;
    c.train = variant != 4;
    if (c.packed) c.lengths = random_lengths(c.T, c.B, rng);
    out.push_back(c);
  }
  // One direction with enough recurrent work that two threads split the
  // hidden units (src/plan/lstm_plan.h, split mode): halves of 32 + 40 units (a
  // partial panel), fixed and variable length, train and inference.
  for (int variant = 0; variant < 3; ++variant) {
    LstmConfig c;
    c.T = 30;
    c.B = 33;
    c.I = 24;
    c.H = 72;
    c.L = 2;
    c.packed = variant >= 1;
    c.train = variant != 2;
    if (c.packed) c.lengths = random_lengths(c.T, c.B, rng);
    out.push_back(c);
  }
  // The split backward converting bfloat16 saved tensors column range by
  // column range.
  LstmConfig split_bf16 = out.back();
  split_bf16.train = true;
  split_bf16.dtype = DType::BFloat16;
  out.push_back(split_bf16);
  LstmConfig bf16 = out[0];
  bf16.dtype = DType::BFloat16;
  out.push_back(bf16);
  LstmConfig f64 = out[2];
  f64.dtype = DType::Float64;
  out.push_back(f64);
  // With projections (P = 13 and 20, partial panels): bidirectional (the
  // directions on two threads), variable length, and one direction at the
  // split-mode size (planned serial with projections); float32, bfloat16,
  // float64, inference.
  for (int variant = 0; variant < 5; ++variant) {
    LstmConfig c = variant < 2 ? out[variant == 0 ? 0 : 2] : out[5];
    c.P = variant < 2 ? 13 : 20;
    c.dtype = variant == 3 ? DType::BFloat16 : (variant == 4 ? DType::Float64 : DType::Float32);
    c.train = variant != 2;
    out.push_back(c);
  }
  // H = 256: halves of 512 gate rows, whose weight gradients the AVX-512 TN
  // path computes transposed (lstm_plan.h, weight_gradient_result_transposed),
  // the two halves on two threads at once; variable length, N = 257 summed
  // rows (the form's minimum, kWeightGradTransposedMinK, is 256).
  LstmConfig wide;
  wide.T = 52;
  wide.B = 5;
  wide.I = 40;
  wide.H = 256;
  wide.L = 2;
  wide.bidirectional = true;
  wide.packed = true;
  wide.lengths = {52, 52, 52, 51, 50};
  out.push_back(wide);
  // One time step (lstm_plan.h, ForwardPlan::unpacked_steps), split mode's size
  // at T > 1 (B = 8, H = 136), with projections too.
  LstmConfig single;
  single.T = 1;
  single.B = 8;
  single.I = 24;
  single.H = 136;
  out.push_back(single);
  single.bidirectional = true;
  single.P = 20;
  out.push_back(single);
  // A few rows' unpacked steps (kUnpackedMaxBatch, w_hh of 1 MiB): the unit
  // parts on two threads in lockstep; variable length.
  LstmConfig few;
  few.T = 6;
  few.B = 3;
  few.I = 24;
  few.H = 256;
  few.packed = true;
  few.lengths = {6, 4, 1};
  out.push_back(few);
  return out;
}

// Restores the default thread count whatever a test does.
class Determinism : public ::testing::Test {
 protected:
  void TearDown() override { lstmop::set_num_threads(1); }
};

TEST_F(Determinism, RepeatedRunsAreBitwiseEqual) {
  uint64_t seed = 500;
  for (const LstmConfig& c : configs()) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, ++seed);
    const LstmGrads g = make_grads(p, ++seed);
    const AllResults first = run_all(p, g);
    for (int run = 0; run < 3; ++run) expect_bitwise_same(run_all(p, g), first, c.train);
  }
}

TEST_F(Determinism, ThreadCountDoesNotChangeBits) {
  uint64_t seed = 600;
  for (const LstmConfig& c : configs()) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, ++seed);
    const LstmGrads g = make_grads(p, ++seed);
    lstmop::set_num_threads(1);
    ASSERT_EQ(lstmop::get_num_threads(), 1);
    const AllResults one = run_all(p, g);
    for (int threads : {2, 3, 8}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      lstmop::set_num_threads(threads);
      ASSERT_EQ(lstmop::get_num_threads(), threads);
      expect_bitwise_same(run_all(p, g), one, c.train);
    }
  }
}

// The scratch block a thread keeps between calls (lstm.h,
// release_workspace_cache) holds whatever the previous call left: a call of
// other sizes whose inputs are all NaN, one larger and one smaller, before
// the same problem must not change a bit of its results, on 1 and 2 threads.
TEST_F(Determinism, ReusedScratchDoesNotChangeBits) {
  uint64_t seed = 700;
  for (const LstmConfig& c : configs()) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, ++seed);
    const LstmGrads g = make_grads(p, ++seed);
    for (int threads : {1, 2}) {
      SCOPED_TRACE("threads " + std::to_string(threads));
      lstmop::set_num_threads(threads);
      lstmop::release_workspace_cache();
      const AllResults fresh = run_all(p, g);
      for (int64_t scale : {2, 1}) {
        LstmConfig other = c;
        other.T = c.T * scale + 1;
        other.B = c.B * scale;
        other.H = c.H + 8 * scale;
        other.train = true;
        if (other.packed) other.lengths.assign(other.B, other.T);
        LstmProblem poison = make_problem(other, ++seed);
        for_each_offset(poison.input, [&](int64_t o) {
          store(poison.input, o, std::numeric_limits<double>::quiet_NaN());
        });
        LstmGrads poison_grads = make_grads(poison, ++seed);
        for_each_offset(poison_grads.grad_y, [&](int64_t o) {
          store(poison_grads.grad_y, o, std::numeric_limits<double>::quiet_NaN());
        });
        run_all(poison, poison_grads);
        expect_bitwise_same(run_all(p, g), fresh, c.train);
      }
      lstmop::release_workspace_cache();
      expect_bitwise_same(run_all(p, g), fresh, c.train);
    }
  }
}

TEST_F(Determinism, SetNumThreadsRejectsCountsBelowOne) {
  lstmop::set_num_threads(2);
  for (int bad : {0, -1, -100}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(lstmop::set_num_threads(bad), lstmop::Error);
    EXPECT_THROW(lstmop::set_num_threads(bad), std::invalid_argument);
    try {
      lstmop::set_num_threads(bad);
    } catch (const lstmop::Error& e) {
      EXPECT_EQ(e.argument(), "num_threads");
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find('1'), std::string::npos) << e.what();
    }
    EXPECT_EQ(lstmop::get_num_threads(), 2) << "a rejected count changes nothing";
  }
}

TEST_F(Determinism, DefaultIsOneThread) {
  // TearDown of every test restores 1, and a fresh process starts at 1; this
  // test runs in its own process under ctest.
  EXPECT_EQ(lstmop::get_num_threads(), 1);
}

}  // namespace
}  // namespace lstmtest
