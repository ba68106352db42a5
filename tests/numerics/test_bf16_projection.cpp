// bfloat16's fast input projection (src/gemm.h: gemm_bf16_nt; the forward
// driver uses it for layer 0 when the CPU has AVX512-BF16):
// - the GEMM itself against a double reference (its products are exact, so
//   it must be as accurate as a float GEMM), or, where the CPU lacks the
//   instructions, that it declines;
// - bf16_operands_normal's threshold (2^-60) and special values;
// - the driver takes the path exactly when it should (large enough, operands
//   normal; once per row half and direction of layer 0), and its results are
//   within the bfloat16 tolerance of the float64 reference (forward and
//   backward, fixed and variable length, 2 layers) and bitwise the same on 1
//   and 2 threads (including split mode, where the halves run on two threads).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <tuple>

#include "gemm/gemm.h"
#include "lstm_test_support.h"
#include "lstmop/lstmop.h"

namespace lstmtest {
namespace {

using lstmop::detail::bf16_gemm_available;
using lstmop::detail::bf16_gemm_runs;
using lstmop::detail::bf16_operands_normal;
using lstmop::detail::gemm_bf16_nt;

uint16_t bits_of(float v) { return lstmop::float_to_bfloat16(v); }

TEST(Bf16Gemm, MatchesDoubleReferenceOrDeclines) {
  std::printf("[bf16 projection] bf16_gemm_available: %s\n", bf16_gemm_available() ? "yes" : "no");
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 12, 5}, {33, 130, 257}, {160, 128, 256}}) {
    const int64_t lda = k + 2, ldb = k + 1, ldc = n + 3;
    std::vector<uint16_t> a(static_cast<std::size_t>(m * lda)), b(static_cast<std::size_t>(n * ldb));
    for (auto& v : a) v = bits_of(dist(gen));
    for (auto& v : b) v = bits_of(dist(gen));
    std::vector<float> c(static_cast<std::size_t>(m * ldc), 42.0f);
    const int64_t runs = bf16_gemm_runs();
    const bool ran = gemm_bf16_nt(m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc);
    if (!bf16_gemm_available()) {
      EXPECT_FALSE(ran);
      EXPECT_EQ(bf16_gemm_runs(), runs);
      continue;
    }
    ASSERT_TRUE(ran) << m << "x" << n << "x" << k;
    EXPECT_EQ(bf16_gemm_runs(), runs + 1);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, bound = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double prod = static_cast<double>(lstmop::bfloat16_to_float(a[i * lda + p])) *
                              lstmop::bfloat16_to_float(b[j * ldb + p]);
          ref += prod;
          bound += std::fabs(prod);
        }
        // k roundings of partial sums, each <= 2^-24 of the running sum of |terms|.
        ASSERT_LE(std::fabs(c[i * ldc + j] - ref), (k + 1) * std::ldexp(1.0, -24) * bound)
            << "C(" << i << ", " << j << ") of " << m << "x" << n << "x" << k;
      }
      for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], 42.0f) << "guard column written";
    }
  }
}

TEST(Bf16Gemm, OperandsNormalThreshold) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 1.0f, -3.5f, std::ldexp(1.0f, -60), -std::ldexp(1.0f, -60), inf, -inf,
                  std::numeric_limits<float>::quiet_NaN(), std::ldexp(1.0f, 127)}) {
    const uint16_t x[3] = {bits_of(1.0f), bits_of(v), bits_of(2.0f)};
    EXPECT_TRUE(bf16_operands_normal(x, 1, 3, 3)) << v;
  }
  for (float v : {std::ldexp(1.0f, -61), -std::ldexp(1.0f, -100), std::ldexp(1.0f, -126), 1e-39f}) {
    const uint16_t x[3] = {bits_of(1.0f), bits_of(v), bits_of(2.0f)};
    EXPECT_FALSE(bf16_operands_normal(x, 1, 3, 3)) << v;
  }
  // Only the (rows, cols) block with row stride ld is read: the tiny value sits in the gap.
  const uint16_t y[6] = {bits_of(1.0f), bits_of(1.0f), bits_of(1e-30f),
                         bits_of(1.0f), bits_of(1.0f), bits_of(1e-30f)};
  EXPECT_TRUE(bf16_operands_normal(y, 2, 2, 3));
  EXPECT_FALSE(bf16_operands_normal(y, 2, 3, 3));
}

// Large enough for the path: each half of layer 0's projection has
// (T*B/2) * 4H * I = 160 * 128 * 256 multiply-adds >= 2^22 (variable length:
// 152 rows).
// Batches below kConcatenatedMinBatch take the fused step's projection form,
// whose input product is the one the bfloat16 GEMM serves (lstm_plan.h).
LstmConfig large_config(bool bidirectional, bool packed) {
  LstmConfig c;
  c.dtype = DType::BFloat16;
  c.T = 110;
  c.B = 3;
  c.I = 256;
  c.H = 32;
  c.L = 2;
  c.bidirectional = bidirectional;
  c.packed = packed;
  if (packed) {
    for (int64_t b = 0; b < c.B; ++b) c.lengths.push_back(c.T - b);  // 327 valid rows
  }
  return c;
}

TEST(Bf16Projection, TakenWhenLargeAndNormalAndWithinTolerance) {
  for (bool bidirectional : {false, true}) {
    for (bool packed : {false, true}) {
      const LstmConfig c = large_config(bidirectional, packed);
      SCOPED_TRACE(c.name());
      const LstmProblem p = make_problem(c, 900 + 2 * bidirectional + packed);
      const int64_t before = bf16_gemm_runs();
      (void)run_forward(p);
      const int64_t expected = bf16_gemm_available() ? 2 * c.D() : 0;
      EXPECT_EQ(bf16_gemm_runs() - before, expected) << "two row halves per direction of layer 0";
      expect_low_precision_near_reference(p, 77);
    }
  }
}

TEST(Bf16Projection, NotTakenForSmallProblemsOrTinyOperands) {
  LstmConfig small = large_config(true, false);
  small.I = 64;  // 165 * 128 * 64 < 2^22
  int64_t before = bf16_gemm_runs();
  (void)run_forward(make_problem(small, 3));
  EXPECT_EQ(bf16_gemm_runs(), before) << "small projection";

  for (int which = 0; which < 2; ++which) {
    LstmProblem p = make_problem(large_config(true, false), 4);
    // One value the instruction would flush: an input element or a w_ih element of direction 1.
    if (which == 0) store(p.input.view(), 17, 1e-39);
    else store(p.params[4].view(), 5, std::ldexp(1.0, -70));
    before = bf16_gemm_runs();
    SCOPED_TRACE(which == 0 ? "subnormal input" : "tiny w_ih");
    (void)run_forward(p);
    EXPECT_EQ(bf16_gemm_runs(), before);
    expect_low_precision_near_reference(p, 78);
  }
}

TEST(Bf16Projection, BitwiseSameOnOneAndTwoThreads) {
  const int saved = lstmop::get_num_threads();
  // Bidirectional (directions on two threads) and one direction with H = 128
  // (split mode on two threads: the projection halves run on both).
  LstmConfig split = large_config(false, false);
  split.H = 128;
  split.T = 64;
  for (const LstmConfig& c : {large_config(true, true), split}) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 31);
    const LstmGrads g = make_grads(p, 32);
    lstmop::set_num_threads(1);
    const ForwardResult f1 = run_forward(p);
    const BackwardResult b1 = run_backward(p, g, f1);
    lstmop::set_num_threads(2);
    const ForwardResult f2 = run_forward(p);
    const BackwardResult b2 = run_backward(p, g, f2);
    const NamedViews a1 = forward_outputs(f1), a2 = forward_outputs(f2);
    for (std::size_t k = 0; k < a1.size(); ++k) EXPECT_TRUE(bitwise_equal(a1[k].second, a2[k].second)) << a1[k].first;
    const NamedViews g1 = backward_outputs(b1), g2 = backward_outputs(b2);
    for (std::size_t k = 0; k < g1.size(); ++k) EXPECT_TRUE(bitwise_equal(g1[k].second, g2[k].second)) << g1[k].first;
  }
  lstmop::set_num_threads(saved);
}

}  // namespace
}  // namespace lstmtest
