// src/kernels/recurrent_gemm: the packed product against a double reference,
// and the bitwise guarantees its header makes (same bits for every ISA, for
// any column split and any number of rows).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_isas.h"
#include "recurrent_gemm.h"

namespace lstmop {
namespace kernels {
namespace {

struct Problem {
  int64_t m, k, n;
  std::vector<float> a, w, c0;  // a (m, k), w (n, k) = B^T, c0 (m, n)
};

Problem make_problem(int64_t m, int64_t k, int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Problem p{m, k, n, {}, {}, {}};
  p.a.resize(static_cast<std::size_t>(m * k));
  p.w.resize(static_cast<std::size_t>(n * k));
  p.c0.resize(static_cast<std::size_t>(m * n));
  for (float& v : p.a) v = dist(gen);
  for (float& v : p.w) v = dist(gen);
  for (float& v : p.c0) v = dist(gen);
  return p;
}

std::vector<float> packed(const Problem& p, const int64_t* order = nullptr) {
  std::vector<float> out(static_cast<std::size_t>(packed_b_size(p.k, p.n)), -7.0f);
  pack_b_from_rows(p.w.data(), p.k, p.k, p.n, order, out.data());
  return out;
}

// C with a guard column each side of the n columns (ldc = n + 2), so writes
// outside [n_begin, n_end) are caught.
std::vector<float> run(Isa isa, const Problem& p, const std::vector<float>& pb, int64_t n_begin,
                       int64_t n_end) {
  const int64_t ldc = p.n + 2;
  std::vector<float> c(static_cast<std::size_t>(p.m * ldc), 42.0f);
  for (int64_t i = 0; i < p.m; ++i)
    std::memcpy(&c[static_cast<std::size_t>(i * ldc + 1)], &p.c0[static_cast<std::size_t>(i * p.n)],
                static_cast<std::size_t>(p.n) * 4);
  gemm_packed_accumulate(isa, p.m, p.k, p.a.data(), p.k, pb.data(), n_begin, n_end, c.data() + 1, ldc);
  return c;
}

const int64_t kRows[] = {1, 2, 3, 5, 6, 7, 8, 9, 13, 32, 64};
// 300 and 600 cross the kernel's depth blocks (kDepthBlock = 256).
const int64_t kDepths[] = {1, 7, 128, 300};
const int64_t kCols[] = {1, 15, 16, 17, 64, 100, 512};

TEST(RecurrentGemm, MatchesDoubleReferenceForEveryIsaAndShape) {
  for (Isa isa : supported_isas()) {
    for (int64_t m : kRows) {
      for (int64_t k : kDepths) {
        for (int64_t n : kCols) {
          Problem p = make_problem(m, k, n, static_cast<unsigned>(m * 1000 + k * 10 + n));
          std::vector<float> pb = packed(p);
          std::vector<float> c = run(isa, p, pb, 0, n);
          const int64_t ldc = n + 2;
          for (int64_t i = 0; i < m; ++i) {
            ASSERT_EQ(c[static_cast<std::size_t>(i * ldc)], 42.0f) << "guard before row " << i;
            ASSERT_EQ(c[static_cast<std::size_t>(i * ldc + n + 1)], 42.0f) << "guard after row " << i;
            for (int64_t j = 0; j < n; ++j) {
              double ref = p.c0[static_cast<std::size_t>(i * n + j)], bound = std::fabs(ref);
              for (int64_t kk = 0; kk < k; ++kk) {
                const double prod = static_cast<double>(p.a[static_cast<std::size_t>(i * k + kk)]) *
                                    p.w[static_cast<std::size_t>(j * k + kk)];
                ref += prod;
                bound += std::fabs(prod);
              }
              // k+1 roundings of partial sums, each <= 2^-24 of the running |sum|.
              const double tol = (k + 1) * std::ldexp(1.0, -24) * bound;
              ASSERT_NEAR(c[static_cast<std::size_t>(i * ldc + 1 + j)], ref, tol)
                  << isa_name(isa) << " m=" << m << " k=" << k << " n=" << n << " at " << i << "," << j;
            }
          }
        }
      }
    }
  }
}

TEST(RecurrentGemm, SameBitsForEveryIsa) {
  for (int64_t m : kRows) {
    for (int64_t n : {17, 100, 512}) {
      for (int64_t k : {128, 600}) {
      Problem p = make_problem(m, k, n, static_cast<unsigned>(7 * m + n + k));
      std::vector<float> pb = packed(p);
      std::vector<float> scalar = run(Isa::Scalar, p, pb, 0, n);
      for (Isa isa : supported_isas()) {
        std::vector<float> c = run(isa, p, pb, 0, n);
        ASSERT_EQ(0, std::memcmp(c.data(), scalar.data(), c.size() * 4))
            << isa_name(isa) << " differs from scalar, m=" << m << " n=" << n << " k=" << k;
      }
      }
    }
  }
}

TEST(RecurrentGemm, ColumnSplitsAndRowCountsDoNotChangeBits) {
  const int64_t m = 13, k = 520, n = 200;
  Problem p = make_problem(m, k, n, 99);
  std::vector<float> pb = packed(p);
  const int64_t ldc = n + 2;
  for (Isa isa : supported_isas()) {
    std::vector<float> whole = run(isa, p, pb, 0, n);
    // Two threads' worth: [0, 64) then [64, n), written into one C.
    std::vector<float> split = run(isa, p, pb, 0, 64);
    std::vector<float> rest = run(isa, p, pb, 64, n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 64; j < n; ++j)
        split[static_cast<std::size_t>(i * ldc + 1 + j)] = rest[static_cast<std::size_t>(i * ldc + 1 + j)];
    ASSERT_EQ(0, std::memcmp(whole.data(), split.data(), whole.size() * 4)) << isa_name(isa);
    // Columns before n_begin are untouched by the [64, n) call.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < 64; ++j)
        ASSERT_EQ(rest[static_cast<std::size_t>(i * ldc + 1 + j)], p.c0[static_cast<std::size_t>(i * n + j)]);
    // Every row alone (m = 1: a different tile shape) gives the same bits.
    for (int64_t i = 0; i < m; ++i) {
      Problem row{1, k, n, {}, p.w, {}};
      row.a.assign(p.a.begin() + i * k, p.a.begin() + (i + 1) * k);
      row.c0.assign(p.c0.begin() + i * n, p.c0.begin() + (i + 1) * n);
      std::vector<float> alone = run(isa, row, pb, 0, n);
      ASSERT_EQ(0, std::memcmp(alone.data(), whole.data() + i * ldc, static_cast<std::size_t>(ldc) * 4))
          << isa_name(isa) << " row " << i;
    }
  }
}

TEST(RecurrentGemm, ZeroRowsOrEmptyColumnRangeWriteNothing) {
  Problem p = make_problem(4, 8, 32, 5);
  std::vector<float> pb = packed(p);
  for (Isa isa : supported_isas()) {
    std::vector<float> c = run(isa, p, pb, 16, 16);
    std::vector<float> expected = run(Isa::Scalar, p, pb, 0, 0);
    ASSERT_EQ(0, std::memcmp(c.data(), expected.data(), c.size() * 4));
    std::vector<float> none(8, 3.0f);
    gemm_packed_accumulate(isa, 0, p.k, p.a.data(), p.k, pb.data(), 0, p.n, none.data(), p.n);
    for (float v : none) ASSERT_EQ(v, 3.0f);
  }
}

TEST(RecurrentGemm, PackingLayoutAndColumnOrder) {
  const int64_t hidden = 20, k = 3;
  std::vector<int64_t> order = gate_interleaved_columns(hidden, 16);
  ASSERT_EQ(order.size(), 80u);
  // Group 0: units 0..15 of i, f, g, o; group 1: units 16..19.
  for (int64_t gate = 0; gate < 4; ++gate) {
    for (int64_t u = 0; u < 16; ++u) EXPECT_EQ(order[static_cast<std::size_t>(gate * 16 + u)], gate * hidden + u);
    for (int64_t u = 0; u < 4; ++u)
      EXPECT_EQ(order[static_cast<std::size_t>(64 + gate * 4 + u)], gate * hidden + 16 + u);
  }
  Problem p = make_problem(1, k, 4 * hidden, 1);
  std::vector<float> pb = packed(p, order.data());
  ASSERT_EQ(pb.size(), static_cast<std::size_t>(80 * k));  // 80 = 5 full panels
  for (int64_t j = 0; j < 80; ++j)
    for (int64_t kk = 0; kk < k; ++kk)
      ASSERT_EQ(pb[static_cast<std::size_t>((j / 16) * 16 * k + kk * 16 + j % 16)],
                p.w[static_cast<std::size_t>(order[static_cast<std::size_t>(j)] * k + kk)]);
  // A partial last panel is zero-padded.
  Problem q = make_problem(1, k, 17, 2);
  std::vector<float> qb = packed(q);
  for (int64_t lane = 1; lane < 16; ++lane)
    for (int64_t kk = 0; kk < k; ++kk) ASSERT_EQ(qb[static_cast<std::size_t>(16 * k + kk * 16 + lane)], 0.0f);
}

TEST(RecurrentGemm, BestIsaIsSupported) {
  EXPECT_TRUE(isa_supported(best_isa()));
  EXPECT_TRUE(isa_supported(Isa::Scalar));
  EXPECT_FALSE(supported_isas().empty());
}

}  // namespace
}  // namespace kernels
}  // namespace lstmop
