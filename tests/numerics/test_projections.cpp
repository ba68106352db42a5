// LSTM with projections (CONTRACT.md, "Projections"; PyTorch's proj_size,
// "LSTMP"): params end every slot with w_hr (P, H), 1 <= P < H, and
// h_t = w_hr (o * tanh(c_t)) is P wide, c stays H wide.
//
// Production against the float64 reference (lstm_test_support.h's tolerance,
// whose depth counts the H-long w_hr product too) in every mode: every flag
// combination (biases, bidirectional, batch_first, train, variable length,
// hx given or empty) over sizes across the vector widths, P = 1 and P = H - 1,
// both forms of the fused step (B < 4: one input product, then per step; B >=
// 4: concatenated), products longer than one k block of the packed kernels,
// more rows than one weight-gradient chunk, the directions on two threads;
// float32 and float64, forward and backward (every gradient, w_hr's
// included). Then the saved tensors' meaning with projections, and the plan:
// with projections split mode splits the columns of h and of dh between the
// parts, its results those of one thread.
#include <cmath>
#include <random>

#include "lstm_test_plans.h"
#include "lstm_test_support.h"
#include "plan/lstm_plan.h"
#include "api/checks.h"

namespace lstmtest {
namespace {

struct ProjectedSizes {
  int64_t I, H, P, L;
};

void PrintTo(const ProjectedSizes& s, std::ostream* os) {
  *os << "I" << s.I << " H" << s.H << " P" << s.P << " L" << s.L;
}

std::string sizes_name(const ::testing::TestParamInfo<ProjectedSizes>& info) {
  return "I" + std::to_string(info.param.I) + "_H" + std::to_string(info.param.H) + "_P" +
         std::to_string(info.param.P) + "_L" + std::to_string(info.param.L);
}

const int64_t kTimeBatch[][2] = {{1, 1}, {1, 4}, {5, 1}, {4, 3}, {3, 5}};

// Every combination of has_biases, bidirectional, batch_first, train, packed
// and hx given / empty, for one size.
std::vector<LstmConfig> projected_configs(const ProjectedSizes& s, DType dtype) {
  std::vector<LstmConfig> configs;
  std::mt19937_64 rng(2000 * s.I + 20 * s.H + s.P + s.L);
  for (int flags = 0; flags < 64; ++flags) {
    LstmConfig c;
    c.dtype = dtype;
    c.I = s.I, c.H = s.H, c.P = s.P, c.L = s.L;
    c.has_biases = flags & 1;
    c.bidirectional = flags & 2;
    c.batch_first = flags & 4;
    c.train = flags & 8;
    c.packed = flags & 16;
    c.with_hx = flags & 32;
    c.T = kTimeBatch[flags % 5][0];
    c.B = kTimeBatch[flags % 5][1];
    if (c.packed) c.lengths = random_lengths(c.T, c.B, rng);
    configs.push_back(c);
  }
  return configs;
}

class ProjectionSweep : public ::testing::TestWithParam<ProjectedSizes> {};

TEST_P(ProjectionSweep, Float32EveryFlagCombination) {
  uint64_t seed = 11;
  for (const LstmConfig& cfg : projected_configs(GetParam(), DType::Float32)) {
    expect_near_reference(cfg, seed += 7);
  }
}

TEST_P(ProjectionSweep, Float64EveryFlagCombination) {
  uint64_t seed = 12;
  for (const LstmConfig& cfg : projected_configs(GetParam(), DType::Float64)) {
    expect_near_reference(cfg, seed += 7);
  }
}

// P = 1 and P = H - 1, widths below, across and above the 8 and 16 lanes.
INSTANTIATE_TEST_SUITE_P(Sizes, ProjectionSweep,
                         ::testing::Values(ProjectedSizes{17, 34, 7, 1},
                                           ProjectedSizes{17, 34, 33, 2},
                                           ProjectedSizes{5, 2, 1, 1}, ProjectedSizes{5, 3, 1, 3},
                                           ProjectedSizes{7, 13, 5, 2},
                                           ProjectedSizes{4, 20, 17, 2}),
                         sizes_name);

LstmConfig larger(int64_t B, bool packed, DType dtype) {
  LstmConfig cfg;
  cfg.dtype = dtype;
  cfg.T = 6, cfg.B = B, cfg.I = 19, cfg.H = 37, cfg.P = 19, cfg.L = 2;
  cfg.bidirectional = true;
  cfg.packed = packed;
  std::mt19937_64 rng(static_cast<uint64_t>(B));
  if (packed) cfg.lengths = random_lengths(cfg.T, cfg.B, rng);
  return cfg;
}

// Both forms of the fused step (B = 2: input product then the step; B = 9:
// concatenated), remainders in every tile (H = 37, P = 19, B = 9).
TEST(ProjectionsLarger, BothStepFormsBidirectionalTwoLayers) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t B : {2, 9}) {
      for (bool packed : {false, true}) expect_near_reference(larger(B, packed, dtype), 77 + B);
    }
  }
}

// The directions of a layer on two threads, each with its own projection
// scratch; the same tolerance as on one thread.
TEST(ProjectionsLarger, DirectionsOnTwoThreads) {
  lstmop::set_num_threads(2);
  for (bool packed : {false, true}) expect_near_reference(larger(9, packed, DType::Float32), 81);
  lstmop::set_num_threads(1);
}

// Products longer than one k block (256) of the packed kernels: the forward's
// projection k = H = 300, the backward's dh product k = 4H; and P = 150.
TEST(ProjectionsLarger, ProductsLongerThanOneKBlock) {
  for (int64_t B : {1, 7}) {
    LstmConfig cfg;
    cfg.T = 3, cfg.B = B, cfg.I = 5, cfg.H = 300, cfg.P = 150;
    cfg.bidirectional = B == 7;
    expect_near_reference(cfg, 401 + B);
  }
}

// More rows than one weight-gradient chunk (1024): the transposed path's dW
// products over two chunks (under LSTMOP_KERNEL_ISA=avx2), dw_hr one product.
TEST(ProjectionsLarger, MoreRowsThanOneWeightGradientChunk) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    LstmConfig cfg;
    cfg.dtype = dtype;
    cfg.T = 150, cfg.B = 12, cfg.I = 11, cfg.H = 13, cfg.P = 6, cfg.L = 2;
    cfg.bidirectional = true;
    cfg.packed = true;
    for (int64_t b = 0; b < cfg.B; ++b) cfg.lengths.push_back(cfg.T - 3 * b);
    expect_near_reference(cfg, 501);
  }
}

// The saved tensors with projections, from the production forward:
// h[s, t] = w_hr (o * tanhc) (P wide) at every valid position, the last
// layer's h is its half of output, hy is h at the slot's last step, and
// invalid positions carry the state (forward: the last valid step's h;
// reverse: h0).
TEST(ProjectionsSaved, HiddenIsTheProjectionOfTheCellOutput) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    LstmConfig cfg;
    cfg.dtype = dtype;
    cfg.T = 5, cfg.B = 4, cfg.I = 3, cfg.H = 9, cfg.P = 4, cfg.L = 2;
    cfg.bidirectional = true;
    cfg.packed = true;
    cfg.lengths = {5, 3, 1, 1};
    SCOPED_TRACE(cfg.name());
    const LstmProblem p = make_problem(cfg, 601);
    const ForwardResult r = run_forward(p);
    const int64_t T = cfg.T, B = cfg.B, H = cfg.H, P = cfg.P, D = cfg.D();
    ASSERT_EQ(r.h.sizes(), (std::vector<int64_t>{cfg.S(), T, B, P}));
    ASSERT_EQ(r.hy.sizes(), (std::vector<int64_t>{cfg.S(), B, P}));
    ASSERT_EQ(r.c.sizes(), (std::vector<int64_t>{cfg.S(), T, B, H}));
    ASSERT_EQ(r.output.sizes(), (std::vector<int64_t>{T * B, D * P}));
    const std::vector<double> o = to_doubles(r.o), tanhc = to_doubles(r.tanhc);
    const std::vector<double> h = to_doubles(r.h), hy = to_doubles(r.hy);
    const std::vector<double> out = to_doubles(r.output), h0 = to_doubles(p.hx[0]);
    const double tol = 64 * epsilon(dtype);
    int bad_projection = 0, bad_output = 0, bad_final = 0, bad_invalid = 0, checked = 0;
    for (int64_t s = 0; s < cfg.S(); ++s) {
      const std::vector<double> w_hr = to_doubles(p.params[(s + 1) * 5 - 1]);
      const int64_t layer = s / D, dir = s % D;
      for (int64_t b = 0; b < B; ++b) {
        const int64_t len = cfg.length(b), last = dir == 0 ? len - 1 : 0;
        for (int64_t k = 0; k < P; ++k) {
          const auto h_at = [&](int64_t t) { return h[((s * T + t) * B + b) * P + k]; };
          bad_final += hy[(s * B + b) * P + k] != h_at(last);
          for (int64_t t = 0; t < T; ++t) {
            if (t >= len) {
              const double carried = dir == 0 ? h_at(len - 1) : h0[(s * B + b) * P + k];
              bad_invalid += h_at(t) != carried;
              continue;
            }
            double expected = 0;
            for (int64_t u = 0; u < H; ++u) {
              const std::size_t e = static_cast<std::size_t>(((s * T + t) * B + b) * H + u);
              expected += w_hr[k * H + u] * o[e] * tanhc[e];
            }
            bad_projection += !(std::fabs(h_at(t) - expected) <= tol);
            ++checked;
            if (layer == cfg.L - 1) bad_output += out[(t * B + b) * D * P + dir * P + k] != h_at(t);
          }
        }
      }
    }
    EXPECT_EQ(checked, (5 + 3 + 1 + 1) * P * cfg.S());
    EXPECT_EQ(bad_projection, 0) << "h != w_hr (o * tanhc)";
    EXPECT_EQ(bad_output, 0) << "the last layer's h differs from output";
    EXPECT_EQ(bad_final, 0) << "hy differs from h at the slot's last step";
    EXPECT_EQ(bad_invalid, 0) << "invalid positions must carry h";
  }
}

// Split mode needs every unit's m before a step's h and every column of dh
// before dm: with projections each part takes its columns of h and dh (P = 40
// -> 16 + 24, a partial panel) after a second barrier a step (lstm_plan.h);
// the reference's results on two threads, the bits of one thread.
TEST(ProjectionsPlan, SplitModeSplitsTheColumnsOfH) {
  LstmConfig cfg;
  cfg.T = 30, cfg.B = 33, cfg.I = 24, cfg.H = 72, cfg.L = 1;
  const LstmProblem plain = make_problem(cfg, 701);
  cfg.P = 40;
  const LstmProblem projected = make_problem(cfg, 701);
  lstmop::set_num_threads(2);
  using lstmop::detail::Threading;
  EXPECT_EQ(plans_of(plain).forward.threads.threading, Threading::SplitUnits);
  EXPECT_EQ(plans_of(plain).backward.threads.threading, Threading::SplitUnits);
  EXPECT_EQ(plans_of(projected).forward.threads.threading, Threading::SplitUnits);
  EXPECT_EQ(plans_of(projected).forward.threads.proj_columns[0].end, 16);
  EXPECT_EQ(plans_of(projected).forward.threads.proj_columns[1].begin, 16);
  EXPECT_EQ(plans_of(projected).forward.threads.proj_columns[1].end, 40);
  EXPECT_EQ(plans_of(projected).backward.threads.threading, Threading::SplitUnits);
  EXPECT_EQ(plans_of(projected).backward.threads.proj_columns[1].begin, 16);
  expect_near_reference(projected.cfg, 702);
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    for (bool packed : {false, true}) {
      LstmConfig c = projected.cfg;
      c.dtype = dtype;
      c.train = true;
      c.packed = packed;
      std::mt19937_64 rng(703);
      if (packed) c.lengths = random_lengths(c.T, c.B, rng);
      SCOPED_TRACE(c.name());
      const LstmProblem q = make_problem(c, 704);
      const LstmGrads g = make_grads(q, 705);
      lstmop::set_num_threads(2);
      const AllResults two = run_all(q, g);
      lstmop::set_num_threads(1);
      const AllResults one = run_all(q, g);
      expect_bitwise_same(two, one, true);
    }
  }
  lstmop::set_num_threads(1);
}

// Empty batches (B = 0) with projections: outputs of the projected shapes
// with no elements, zero parameter gradients (dw_hr's included), on 1 and 2
// threads; input_size = 0: the reference's results (an input product of zero).
TEST(ProjectionsEmpty, EmptyBatchAndZeroInputSize) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    for (int threads : {1, 2}) {
      lstmop::set_num_threads(threads);
      LstmConfig cfg;
      cfg.dtype = dtype;
      cfg.T = 4, cfg.B = 0, cfg.I = 5, cfg.H = 6, cfg.P = 2, cfg.L = 2;
      cfg.bidirectional = true;
      SCOPED_TRACE(cfg.name() + " threads " + std::to_string(threads));
      const LstmProblem p = make_problem(cfg, 801);
      const ForwardResult f = run_forward(p);
      EXPECT_EQ(f.output.sizes(), (std::vector<int64_t>{4, 0, 4}));
      EXPECT_EQ(f.hy.sizes(), (std::vector<int64_t>{4, 0, 2}));
      EXPECT_EQ(f.h.sizes(), (std::vector<int64_t>{4, 4, 0, 2}));
      const BackwardResult b = run_backward(p, make_grads(p, 802), f);
      ASSERT_EQ(b.dparams.size(), 20u);
      EXPECT_EQ(b.dhx[0].sizes(), (std::vector<int64_t>{4, 0, 2}));
      for (std::size_t k = 0; k < b.dparams.size(); ++k) {
        EXPECT_EQ(b.dparams[k].sizes(), p.params[k].sizes()) << k;
        EXPECT_EQ(max_abs(b.dparams[k]), 0.0) << "dparams[" << k << "]";
      }
    }
  }
  lstmop::set_num_threads(1);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    LstmConfig cfg;
    cfg.dtype = dtype;
    cfg.T = 3, cfg.B = 5, cfg.I = 0, cfg.H = 7, cfg.P = 3, cfg.L = 2;
    cfg.bidirectional = true;
    expect_near_reference(cfg, 803);
  }
}

// float32 with fp32_precision "bf16": the bfloat16 products are not planned
// with projections (lstm_plan.h), so such a call computes IEEE float32, bit
// for bit the default's results.
TEST(ProjectionsPlan, Fp32PrecisionBf16StaysIeeeWithProjections) {
  LstmConfig cfg;
  cfg.T = 5, cfg.B = 6, cfg.I = 7, cfg.H = 20, cfg.P = 9, cfg.L = 2;
  cfg.bidirectional = true;
  const LstmProblem p = make_problem(cfg, 901);
  const LstmGrads g = make_grads(p, 902);
  const ForwardResult ieee = run_forward(p);
  const BackwardResult ieee_b = run_backward(p, g, ieee);
  lstmop::set_fp32_precision("bf16");
  const ForwardResult bf16 = run_forward(p);
  const BackwardResult bf16_b = run_backward(p, g, bf16);
  lstmop::set_fp32_precision("ieee");
  const NamedViews a = forward_outputs(bf16), b = forward_outputs(ieee);
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
  }
  const NamedViews ga = backward_outputs(bf16_b), gb = backward_outputs(ieee_b);
  for (std::size_t k = 0; k < ga.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(ga[k].second, gb[k].second)) << ga[k].first;
  }
}

}  // namespace
}  // namespace lstmtest
