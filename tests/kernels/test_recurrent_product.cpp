// The production per-step product (src/kernels/recurrent_product.h) in every
// ISA body this CPU runs (generic, AVX2, AVX-512; one test each, a body the
// CPU lacks skipped visibly): each C element must be one fma chain over k in
// order from C's value, so every body gives exactly the bits of a std::fma
// loop written here, whatever the number of rows (tile choice and row
// blocking), the depth (k blocks of 256) or a partial last panel; rows and
// columns outside C's (m, n) block, and the operands, are left untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/recurrent_product.h"
#include "common/workspace.h"

namespace lstmop {
namespace detail {
namespace {

using kernels::Isa;

struct Case {
  int64_t m, k, n;
  int64_t lda = 0;  // 0: k + 3
};

// A (m, k) with row stride lda (k + 3 unless given); W (n, k) = B^T; C (m, n)
// with row stride n + 5, the 5 columns after each row a guard that must keep
// its value.
void check_case(Isa isa, const Case& cs, unsigned seed) {
  const int64_t lda = cs.lda > 0 ? cs.lda : cs.k + 3, ldc = cs.n + 5;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(static_cast<std::size_t>(cs.m * lda)), w(static_cast<std::size_t>(cs.n * cs.k)),
      c0(static_cast<std::size_t>(cs.m * ldc));
  for (float& v : a) v = dist(gen);
  for (float& v : w) v = dist(gen);
  for (float& v : c0) v = dist(gen);
  const std::vector<float> a_copy = a;

  // The scalar chain, written out here.
  std::vector<float> expected = c0;
  for (int64_t i = 0; i < cs.m; ++i) {
    for (int64_t j = 0; j < cs.n; ++j) {
      float acc = c0[static_cast<std::size_t>(i * ldc + j)];
      for (int64_t kk = 0; kk < cs.k; ++kk) {
        acc = std::fma(a[static_cast<std::size_t>(i * lda + kk)], w[static_cast<std::size_t>(j * cs.k + kk)], acc);
      }
      expected[static_cast<std::size_t>(i * ldc + j)] = acc;
    }
  }

  WorkspaceArena arena;
  RecurrentProduct product;
  product.allocate(arena, cs.k, cs.n);
  arena.commit();
  product.set_b_from_rows(w.data(), cs.k);
  std::vector<float> c = c0;
  product.accumulate(isa, cs.m, a.data(), lda, c.data(), ldc);
  ASSERT_EQ(0, std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)))
      << kernels::isa_name(isa) << " m=" << cs.m << " k=" << cs.k << " n=" << cs.n;
  ASSERT_EQ(a, a_copy) << kernels::isa_name(isa) << ": A was written";
}

// Rows: every AVX-512 tile height 1..12 and balanced blocks (13 = 7 + 6,
// 25 = 9 + 8 + 8, 64 = 4 x 11 + 2 x 10); AVX2's 6-row blocks and 7..9 tails.
// Depths across the 256 blocks; columns with partial last panels and runs of
// panels shorter than a tile's. Then the forward and backward step shapes of
// the benchmark suite (S1, S2, S5), and row strides of a multiple of 2 KiB.
void check_body(Isa isa) {
  const int64_t rows[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 25, 64};
  const int64_t depths[] = {1, 17, 256, 300};
  const int64_t cols[] = {1, 12, 16, 40, 80, 136};
  unsigned seed = 1;
  for (int64_t m : rows)
    for (int64_t k : depths)
      for (int64_t n : cols) check_case(isa, {m, k, n}, seed++);
  check_case(isa, {64, 512, 2048}, 7);
  check_case(isa, {64, 2048, 512}, 8);
  check_case(isa, {32, 256, 1024}, 9);
  check_case(isa, {8, 512, 128}, 10);
  // Row strides of a multiple of 2 KiB (the AVX-512 body copies each row
  // block's slice of A first): the backward's 4H-wide rows, and wider ones
  // with a partial last k block.
  check_case(isa, {64, 2048, 512, 2048}, 11);
  check_case(isa, {13, 300, 40, 1024}, 12);
  check_case(isa, {2, 17, 16, 512}, 13);
}

TEST(RecurrentProduct, GenericGivesTheFmaChainBitwise) { check_body(Isa::Scalar); }

TEST(RecurrentProduct, Avx2GivesTheFmaChainBitwise) {
  if (!kernels::isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs AVX2 + FMA, which this CPU lacks";
  check_body(Isa::Avx2);
}

TEST(RecurrentProduct, Avx512GivesTheFmaChainBitwise) {
  if (!kernels::isa_supported(Isa::Avx512)) {
    GTEST_SKIP() << "needs AVX-512 F/BW, which this CPU lacks";
  }
  check_body(Isa::Avx512);
}

// The body the library runs (kernel_choice(), capped by LSTMOP_KERNEL_ISA).
TEST(RecurrentProduct, KernelChoiceIsSupported) {
  const kernels::KernelChoice& c = kernels::kernel_choice();
  std::printf("[recurrent product] %s\n", kernels::describe(c).c_str());
  EXPECT_TRUE(kernels::isa_supported(c.recurrent_product));
  EXPECT_TRUE(kernels::isa_supported(c.cell_forward));
  EXPECT_TRUE(kernels::isa_supported(c.cell_backward));
  EXPECT_TRUE(kernels::isa_supported(c.transpose));
}

}  // namespace
}  // namespace detail
}  // namespace lstmop
