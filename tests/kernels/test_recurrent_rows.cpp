// recurrent_rows_product (src/kernels/recurrent_rows.h), the unpacked steps'
// product of a few rows on w_hh as stored, in every ISA body this CPU runs (a
// body the CPU lacks skipped visibly): each out element must be out + the
// body's sum, written out here in its order (lane chains of std::fma over k,
// lanes past K adding fma(0, 0, .), then a fixed tree over the lanes): 16
// lanes for the AVX-512 and generic bodies, 8 for AVX2. Bits must not depend
// on the range of columns a call covers (threads split it anywhere), nor on
// the rows around (blocks of 4); out outside the call's block, h and w keep
// their values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/recurrent_rows.h"

namespace lstmop {
namespace detail {
namespace {

using kernels::Isa;

// The sum of h_row . w_row in the order of a body of `lanes` lanes (16 or 8).
float ordered_sum(const float* a, const float* b, int64_t K, int lanes) {
  float lane[16] = {};
  for (int64_t k0 = 0; k0 < K; k0 += lanes) {
    for (int e = 0; e < lanes; ++e) {
      const bool in = k0 + e < K;
      lane[e] = std::fma(in ? a[k0 + e] : 0.0f, in ? b[k0 + e] : 0.0f, lane[e]);
    }
  }
  float half[8];
  for (int e = 0; e < 8; ++e) half[e] = lanes == 16 ? lane[e] + lane[e + 8] : lane[e];
  return ((half[0] + half[1]) + (half[2] + half[3])) + ((half[4] + half[5]) + (half[6] + half[7]));
}

struct Case {
  int64_t rows, K, N, n_begin, n_end;
};

void check_case(Isa isa, int lanes, const Case& cs, unsigned seed) {
  const int64_t ld_h = cs.K + 3, ld_w = cs.K + 1, ld_out = cs.N + 5;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> h(static_cast<std::size_t>(cs.rows * ld_h)),
      w(static_cast<std::size_t>(cs.N * ld_w)), out0(static_cast<std::size_t>(cs.rows * ld_out));
  for (float& v : h) v = dist(gen);
  for (float& v : w) v = dist(gen);
  for (float& v : out0) v = dist(gen);
  const std::vector<float> h_copy = h, w_copy = w;
  std::vector<float> expected = out0;
  for (int64_t r = 0; r < cs.rows; ++r) {
    for (int64_t n = cs.n_begin; n < cs.n_end; ++n) {
      const std::size_t e = static_cast<std::size_t>(r * ld_out + n);
      expected[e] = out0[e] + ordered_sum(&h[static_cast<std::size_t>(r * ld_h)],
                                          &w[static_cast<std::size_t>(n * ld_w)], cs.K, lanes);
    }
  }
  const auto name = [&] {
    return std::string(kernels::isa_name(isa)) + " rows=" + std::to_string(cs.rows) +
           " K=" + std::to_string(cs.K) + " n=[" + std::to_string(cs.n_begin) + ", " +
           std::to_string(cs.n_end) + ")";
  };
  std::vector<float> out = out0;
  recurrent_rows_product(isa, cs.rows, cs.n_begin, cs.n_end, cs.K, h.data(), ld_h, w.data(),
                         ld_w, out.data(), ld_out);
  ASSERT_EQ(0, std::memcmp(out.data(), expected.data(), out.size() * sizeof(float))) << name();
  // The same columns in two calls split at an odd column: the same bits.
  const int64_t mid = (cs.n_begin + (cs.n_end - cs.n_begin) / 2) | 1;
  if (mid < cs.n_end) {
    std::vector<float> split = out0;
    recurrent_rows_product(isa, cs.rows, cs.n_begin, mid, cs.K, h.data(), ld_h, w.data(), ld_w,
                           split.data(), ld_out);
    recurrent_rows_product(isa, cs.rows, mid, cs.n_end, cs.K, h.data(), ld_h, w.data(), ld_w,
                           split.data(), ld_out);
    ASSERT_EQ(0, std::memcmp(split.data(), expected.data(), out.size() * sizeof(float)))
        << name() << " split at " << mid;
  }
  ASSERT_EQ(h, h_copy) << name() << ": h was written";
  ASSERT_EQ(w, w_copy) << name() << ": w was written";
}

// Rows 1..6 (blocks of 4 and a tail), depths with partial vectors of either
// width, column ranges with partial blocks of 4 and an offset start; then
// the benchmark's unpacked shapes (4H x H, H = 256, 512).
void check_body(Isa isa, int lanes) {
  unsigned seed = 1;
  for (int64_t rows : {1, 2, 3, 4, 5, 6})
    for (int64_t K : {1, 7, 8, 16, 17, 40, 256, 300})
      for (Case c : {Case{rows, K, 13, 0, 13}, Case{rows, K, 64, 5, 62}}) {
        check_case(isa, lanes, c, seed++);
      }
  check_case(isa, lanes, {2, 256, 1024, 0, 1024}, 100);
  check_case(isa, lanes, {3, 512, 2048, 0, 2048}, 101);
}

TEST(RecurrentRows, GenericGivesTheAvx512Order) { check_body(Isa::Scalar, 16); }

TEST(RecurrentRows, Avx2GivesItsOrder) {
  if (!kernels::isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs AVX2 + FMA, which this CPU lacks";
  check_body(Isa::Avx2, 8);
}

TEST(RecurrentRows, Avx512GivesItsOrder) {
  if (!kernels::isa_supported(Isa::Avx512)) {
    GTEST_SKIP() << "needs AVX-512 F/BW, which this CPU lacks";
  }
  check_body(Isa::Avx512, 16);
}

}  // namespace
}  // namespace detail
}  // namespace lstmop
