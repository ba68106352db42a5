// The products on bfloat16 dot-product units:
// - the bfloat16 GEMM (gemm/gemm.h: gemm_bf16_nt) against a double reference
//   (its products are exact, so it must be as accurate as a float GEMM), or,
//   where the CPU lacks the instructions, that it declines;
// - bf16_operands_normal's threshold (2^-60) and special values;
// - the forward's bfloat16 products (kernels/step_forward_bf16.h): the plan
//   takes them exactly where the contract's model allows, results bitwise the
//   same on 1, 2 and 3 threads, float32 with fp32_precision "bf16" computing
//   the model on the rounded operands (their agreement with the 16-bit model
//   in every mode: test_sixteen_bit_model);
// - the per-step products of the matmul form (gemm/bf16_matmul_step.h)
//   against a double reference, both layouts of B, every prepared row count,
//   and that the plan takes the form kernel_choice() says (AMX, or
//   LSTMOP_BF16_STEP; ctest reruns these suites in the other form).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>

#include "api/checks.h"
#include "gemm/bf16_matmul_step.h"
#include "gemm/gemm.h"
#include "kernels/cpu_features.h"
#include "kernels/recurrent_product_bf16.h"
#include "kernels/step_forward_amx.h"
#include "plan/lstm_plan.h"
#include "lstm_test_plans.h"
#include "lstm_test_support.h"
#include "lstmop/lstmop.h"

namespace lstmtest {
namespace {

using lstmop::detail::bf16_gemm_available;
using lstmop::detail::bf16_gemm_runs;
using lstmop::detail::bf16_operands_normal;
using lstmop::detail::gemm_bf16_nt;
using lstmop::detail::Threading;

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

// C (m, n) (+)= A (m, k) * B on oneDNN's matmul with B packed once: each
// element within k float roundings of the double sum of the exact products
// (and C's start with accumulate), for every prepared row count; C's columns
// past n (ldc > n) and rows past m untouched.
void check_matmul_step(int64_t k, int64_t n, lstmop::detail::Transpose tb, bool accumulate,
                       std::mt19937& gen) {
  using lstmop::detail::Transpose;
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const std::vector<int64_t> row_counts = {9, 6, 1};
  const int64_t max_m = 9, lda = k + 3, ldc = n + 2;
  std::vector<uint16_t> a(static_cast<std::size_t>(max_m * lda));
  std::vector<uint16_t> b(static_cast<std::size_t>(k * n));
  for (auto& v : a) v = bits_of(dist(gen));
  for (auto& v : b) v = bits_of(dist(gen));
  // B (k, n) element (p, j), stored (k, n) or (n, k).
  auto b_at = [&](int64_t p, int64_t j) {
    return lstmop::bfloat16_to_float(tb == Transpose::No ? b[p * n + j] : b[j * k + p]);
  };
  // C's start: 42, plus the row and column where the product accumulates.
  auto start = [&](int64_t i, int64_t j) {
    return accumulate ? 42.0f + static_cast<float>(i + 2 * j) : 42.0f;
  };
  lstmop::detail::Bf16MatmulStep step;
  ASSERT_TRUE(step.prepare(k, n, tb, row_counts, lda, ldc, accumulate)) << k << "x" << n;
  step.set_b(b.data());
  for (int64_t m : row_counts) {
    SCOPED_TRACE(::testing::Message() << "m " << m << " k " << k << " n " << n
                                      << (tb == Transpose::No ? " B (k, n)" : " B (n, k)")
                                      << " accumulate " << accumulate);
    std::vector<float> c(static_cast<std::size_t>((max_m + 1) * ldc), 42.0f);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = start(i, j);
    }
    const int64_t runs = lstmop::detail::bf16_matmul_step_runs();
    step.multiply(m, a.data(), c.data());
    EXPECT_EQ(lstmop::detail::bf16_matmul_step_runs(), runs + 1);
    for (int64_t i = 0; i <= max_m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const float got = c[i * ldc + j];
        if (i >= m || j >= n) {
          ASSERT_EQ(got, 42.0f) << "C(" << i << ", " << j << ") written";
          continue;
        }
        double ref = accumulate ? start(i, j) : 0.0, bound = std::fabs(ref);
        for (int64_t p = 0; p < k; ++p) {
          const double prod =
              static_cast<double>(lstmop::bfloat16_to_float(a[i * lda + p])) * b_at(p, j);
          ref += prod;
          bound += std::fabs(prod);
        }
        ASSERT_LE(std::fabs(got - ref), (k + 1) * std::ldexp(1.0, -24) * bound)
            << "C(" << i << ", " << j << ")";
      }
    }
  }
}

TEST(Bf16MatmulStep, MatchesDoubleReference) {
  if (!lstmop::kernels::kernel_choice().bf16_step) {
    std::printf("[bf16 matmul step] no AVX512-BF16 (or capped): the bfloat16 products and "
                "their matmul form are not used here; not run\n");
    return;
  }
  std::printf("[bf16 matmul step] %s\n",
              lstmop::kernels::amx_bf16_usable() ? "AMX tiles usable: oneDNN runs them"
                                                  : "no AMX: oneDNN's AVX512-BF16 kernels");
  std::mt19937 gen(17);
  using lstmop::detail::Transpose;
  for (Transpose tb : {Transpose::No, Transpose::Yes}) {
    for (auto [k, n] : {std::pair<int64_t, int64_t>{40, 160}, {136, 34}, {7, 5}}) {
      for (bool accumulate : {false, true}) check_matmul_step(k, n, tb, accumulate, gen);
    }
  }
}

// ref += sum_k a[k * sa] b[k * sb] over the bfloat16 bits' values, each
// product exact in double; bound += the sum of their magnitudes (the float32
// sum's error bound's scale).
void add_bf16_dot(const uint16_t* a, int64_t sa, const uint16_t* b, int64_t sb, int64_t n,
                  double& ref, double& bound) {
  for (int64_t k = 0; k < n; ++k) {
    const double prod = static_cast<double>(lstmop::bfloat16_to_float(a[k * sa])) *
                        lstmop::bfloat16_to_float(b[k * sb]);
    ref += prod;
    bound += std::fabs(prod);
  }
}

// `done` calls of an AMX step: each within one block of 16 rows (rows r0 <
// r0 + block_rows, never crossing a multiple of 16) and the 16 units from a
// multiple of 16 (whole blocks, or slices of a block's rows for pairs of row
// blocks); every row and unit block of the step covered exactly once.
void expect_done_covers_each_block_once(
    const std::vector<std::tuple<int64_t, int64_t, int64_t>>& calls, int64_t rows, int64_t H) {
  std::vector<int> covered(static_cast<std::size_t>(rows * (H / 16)), 0);
  for (const auto& [r0, block_rows, u0] : calls) {
    ASSERT_GE(r0, 0);
    ASSERT_GE(block_rows, 1);
    ASSERT_LE(r0 + block_rows, rows);
    ASSERT_EQ(r0 / 16, (r0 + block_rows - 1) / 16) << "a call across two row blocks";
    ASSERT_EQ(u0 % 16, 0);
    ASSERT_LT(u0, H);
    for (int64_t r = r0; r < r0 + block_rows; ++r) ++covered[r * (H / 16) + u0 / 16];
  }
  for (std::size_t e = 0; e < covered.size(); ++e) {
    ASSERT_EQ(covered[e], 1) << "row " << e / (H / 16) << " units from " << e % (H / 16) * 16;
  }
}

// The AMX step (step_forward_amx.h): gates += h w_hh^T within the float32
// sum's bound of the double sum of the exact products, the rows past the
// step's and the padding of h untouched, and `done` once for each row of each
// block of at most 16 rows and 16 units (in either loop order: H = 384 packs
// w_hh beyond 1 MiB, unit blocks outermost), after that block's sums (its
// gates final).
TEST(Bf16AmxStep, MatchesDoubleReferenceBlockByBlock) {
  if (!lstmop::kernels::amx_bf16_usable()) {
    std::printf("[bf16 AMX step] no AMX tiles for bfloat16 (AMX-TILE, AMX-BF16, the OS's "
                "permission): lstmop's AMX step is not used here; not run\n");
    return;
  }
  std::printf("[bf16 AMX step] AMX tiles usable: checked\n");
  std::mt19937 gen(23);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t H : {16, 48, 64, 384}) {
    ASSERT_TRUE(lstmop::detail::amx_step_supported(H));
    const int64_t G = 4 * H, kp = lstmop::detail::amx_k_padded(H);
    EXPECT_EQ(kp, (H + 31) / 32 * 32);
    std::vector<uint16_t> w(static_cast<std::size_t>(G * H));
    for (auto& v : w) v = bits_of(dist(gen));
    std::vector<uint16_t> packed(static_cast<std::size_t>(lstmop::detail::amx_packed_size(H)));
    lstmop::detail::amx_pack_w_hh(H, w.data(), H, packed.data());
    for (int64_t rows : {1, 5, 16, 17, 35, 64}) {
      if (H == 384 && rows != 17) continue;
      SCOPED_TRACE(::testing::Message() << "H " << H << " rows " << rows);
      std::vector<uint16_t> h(static_cast<std::size_t>(rows * kp), 0);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = 0; k < H; ++k) h[r * kp + k] = bits_of(dist(gen));
      }
      std::vector<float> start(static_cast<std::size_t>((rows + 1) * G));
      for (auto& v : start) v = dist(gen);
      std::vector<float> gates = start;
      struct Seen {
        std::vector<std::tuple<int64_t, int64_t, int64_t>> blocks;
      } seen;
      // Per block, the gates of that block as they were when it was done.
      std::vector<float> block_values(gates.size(), std::nanf(""));
      struct Ctx {
        Seen* seen;
        std::vector<float>* gates;
        std::vector<float>* values;
        int64_t H;
      } ctx{&seen, &gates, &block_values, H};
      const auto record = [](void* c, int64_t r0, int64_t block_rows, int64_t u0) {
        Ctx& x = *static_cast<Ctx*>(c);
        x.seen->blocks.emplace_back(r0, block_rows, u0);
        const int64_t G4 = 4 * x.H;
        for (int64_t r = r0; r < r0 + block_rows; ++r) {
          for (int64_t g = 0; g < 4; ++g) {
            for (int64_t u = u0; u < u0 + 16; ++u) {
              (*x.values)[r * G4 + g * x.H + u] = (*x.gates)[r * G4 + g * x.H + u];
            }
          }
        }
      };
      const std::vector<uint16_t> h_before = h;
      lstmop::detail::amx_step_forward(rows, H, packed.data(), h.data(), kp, gates.data(),
                                       record, &ctx);
      EXPECT_EQ(h, h_before);
      expect_done_covers_each_block_once(seen.blocks, rows, H);
      for (int64_t r = 0; r <= rows; ++r) {
        for (int64_t n = 0; n < G; ++n) {
          const float got = gates[r * G + n];
          if (r == rows) {
            ASSERT_EQ(got, start[r * G + n]) << "a row past the step's written";
            continue;
          }
          ASSERT_EQ(got, block_values[r * G + n]) << "gates(" << r << ", " << n
                                                  << ") changed after its block was done";
          double ref = start[r * G + n], bound = std::fabs(ref);
          add_bf16_dot(h.data() + r * kp, 1, w.data() + n * H, 1, H, ref, bound);
          ASSERT_LE(std::fabs(got - ref), (H + 1) * std::ldexp(1.0, -24) * bound)
              << "gates(" << r << ", " << n << ")";
        }
      }
    }
  }
}

// The AMX step with its input on the tiles: gates = x w_ih^T + h w_hh^T
// within the float32 sum's bound of the double sum of the exact products,
// written without being read (they start as NaN), for input sizes of one and
// several k blocks and blocks of 16 rows and partial ones.
TEST(Bf16AmxStep, InputOnTheTilesMatchesDoubleReference) {
  if (!lstmop::kernels::amx_bf16_usable()) {
    std::printf("[bf16 AMX step, input on the tiles] no AMX tiles for bfloat16: not run\n");
    return;
  }
  std::mt19937 gen(31);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (auto [H, K] : {std::pair<int64_t, int64_t>{16, 32}, {48, 96}, {64, 64}}) {
    const int64_t G = 4 * H, kp = lstmop::detail::amx_k_padded(H);
    std::vector<uint16_t> w_hh(static_cast<std::size_t>(G * H)), w_ih(static_cast<std::size_t>(G * K));
    for (auto& v : w_hh) v = bits_of(dist(gen));
    for (auto& v : w_ih) v = bits_of(dist(gen));
    std::vector<uint16_t> packed_hh(static_cast<std::size_t>(lstmop::detail::amx_packed_size(H)));
    std::vector<uint16_t> packed_ih(
        static_cast<std::size_t>(lstmop::detail::amx_packed_size(H, K)));
    lstmop::detail::amx_pack_w_hh(H, w_hh.data(), H, packed_hh.data());
    lstmop::detail::amx_pack_gates(H, K, w_ih.data(), K, packed_ih.data());
    for (int64_t rows : {1, 16, 21, 40}) {
      SCOPED_TRACE(::testing::Message() << "H " << H << " K " << K << " rows " << rows);
      std::vector<uint16_t> h(static_cast<std::size_t>(rows * kp), 0), x(static_cast<std::size_t>(rows * K));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = 0; k < H; ++k) h[r * kp + k] = bits_of(dist(gen));
      }
      for (auto& v : x) v = bits_of(dist(gen));
      std::vector<float> gates(static_cast<std::size_t>((rows + 1) * G), std::nanf(""));
      std::vector<std::tuple<int64_t, int64_t, int64_t>> calls;
      const auto count = [](void* c, int64_t r0, int64_t block_rows, int64_t u0) {
        static_cast<std::vector<std::tuple<int64_t, int64_t, int64_t>>*>(c)->emplace_back(
            r0, block_rows, u0);
      };
      const lstmop::detail::AmxInput input{K, packed_ih.data(), x.data(), K};
      const int64_t before = lstmop::detail::amx_input_runs();
      lstmop::detail::amx_step_forward_input(rows, H, &input, packed_hh.data(), h.data(), kp,
                                             gates.data(), count, &calls);
      EXPECT_EQ(lstmop::detail::amx_input_runs(), before + 1);
      expect_done_covers_each_block_once(calls, rows, H);
      for (int64_t r = 0; r <= rows; ++r) {
        for (int64_t n = 0; n < G; ++n) {
          const float got = gates[r * G + n];
          if (r == rows) {
            ASSERT_TRUE(std::isnan(got)) << "a row past the step's written";
            continue;
          }
          double ref = 0, bound = 0;
          add_bf16_dot(x.data() + r * K, 1, w_ih.data() + n * K, 1, K, ref, bound);
          add_bf16_dot(h.data() + r * kp, 1, w_hh.data() + n * H, 1, H, ref, bound);
          ASSERT_LE(std::fabs(got - ref), (K + H + 1) * std::ldexp(1.0, -24) * bound)
              << "gates(" << r << ", " << n << ")";
        }
      }
    }
  }
}

// The backward's dh on AMX tiles: dh = d_gates w_hh within the float32 sum's
// bound of the double sum of the exact products, for 1 to 4 column tiles in
// the last group, blocks of 16 rows and partial ones, pairs of row blocks
// (two column tiles at a time, an odd last one alone); the row past the
// step's untouched.
TEST(Bf16AmxStep, DhMatchesDoubleReference) {
  if (!lstmop::kernels::amx_bf16_usable()) {
    std::printf("[bf16 AMX dh] no AMX tiles for bfloat16: not run\n");
    return;
  }
  std::mt19937 gen(29);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t H : {16, 48, 80, 96, 112}) {
    const int64_t G = 4 * H;
    std::vector<uint16_t> w(static_cast<std::size_t>(G * H));
    for (auto& v : w) v = bits_of(dist(gen));
    std::vector<uint16_t> packed(static_cast<std::size_t>(lstmop::detail::amx_dh_packed_size(H)));
    lstmop::detail::amx_pack_w_hh_for_dh(H, w.data(), H, packed.data());
    for (int64_t rows : {1, 16, 19, 40}) {
      SCOPED_TRACE(::testing::Message() << "H " << H << " rows " << rows);
      std::vector<uint16_t> d(static_cast<std::size_t>(rows * G));
      for (auto& v : d) v = bits_of(dist(gen));
      std::vector<float> dh(static_cast<std::size_t>((rows + 1) * H), 42.0f);
      const int64_t before = lstmop::detail::amx_dh_runs();
      lstmop::detail::amx_dh(rows, H, packed.data(), d.data(), dh.data());
      EXPECT_EQ(lstmop::detail::amx_dh_runs(), before + 1);
      // Split mode's parts: the columns in two calls, the same bits, nothing
      // written outside a call's columns.
      if (H >= 32) {
        const int64_t n1 = H / 32 * 16;
        std::vector<float> parts(dh.size(), 42.0f);
        lstmop::detail::amx_dh(rows, H, packed.data(), d.data(), parts.data(), 0, n1);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t n = n1; n < H; ++n) ASSERT_EQ(parts[r * H + n], 42.0f) << r << " " << n;
        }
        lstmop::detail::amx_dh(rows, H, packed.data(), d.data(), parts.data(), n1, H);
        EXPECT_EQ(0, std::memcmp(parts.data(), dh.data(), dh.size() * sizeof(float)));
      }
      for (int64_t r = 0; r <= rows; ++r) {
        for (int64_t n = 0; n < H; ++n) {
          const float got = dh[r * H + n];
          if (r == rows) {
            ASSERT_EQ(got, 42.0f) << "a row past the step's written";
            continue;
          }
          double ref = 0, bound = 0;
          add_bf16_dot(d.data() + r * G, 1, w.data() + n, H, G, ref, bound);
          ASSERT_LE(std::fabs(got - ref), (G + 1) * std::ldexp(1.0, -24) * bound)
              << "dh(" << r << ", " << n << ")";
        }
      }
    }
  }
}

// Which calls run the AMX step: bfloat16 (and float32 at fp32_precision
// bf16) in the matmul form, H a multiple of 16, the CPU's default choice
// (LSTMOP_BF16_STEP=matmul keeps oneDNN's matmul per step).
TEST(Bf16AmxStep, TakenWhereTheCpuAndShapeAllow) {
  const auto& choice = lstmop::kernels::kernel_choice();
  std::printf("[bf16 AMX step] %s\n", choice.bf16_amx_step
                                           ? "taken: bfloat16 matmul-form calls with H % 16 == 0"
                                           : "not taken here (no AMX, or LSTMOP_BF16_STEP set)");
  EXPECT_EQ(choice.bf16_amx_step, choice.bf16_matmul_step && lstmop::kernels::amx_bf16_usable() &&
                                      std::getenv("LSTMOP_BF16_STEP") == nullptr);
  EXPECT_FALSE(lstmop::detail::amx_step_supported(20));
  struct Case {
    int64_t H, B, I;
    DType dtype;
    bool train;
  };
  // Below bf16_matmul_min_batch rows too (no primitive per step); the input
  // on the tiles from kAmxInputOnTilesMinRows rows, and below them with w_ih
  // and w_hh packed within kAmxInputOnTilesMaxBytes: in inference, and in
  // training from kAmxSplitTrainingMinDhWork multiply-adds of dh a step.
  for (const Case& k :
       {Case{16, 5, 6, DType::BFloat16, true}, Case{20, 5, 6, DType::BFloat16, true},
        Case{32, 5, 6, DType::Float32, true}, Case{16, 2, 6, DType::BFloat16, false},
        Case{16, 2, 6, DType::BFloat16, true}, Case{32, 5, 64, DType::BFloat16, false},
        Case{32, 5, 64, DType::Float32, false}, Case{32, 5, 64, DType::BFloat16, true},
        Case{32, 64, 64, DType::BFloat16, true}, Case{32, 64, 48, DType::BFloat16, true},
        Case{512, 8, 64, DType::BFloat16, false}, Case{512, 64, 64, DType::BFloat16, false},
        Case{256, 32, 256, DType::BFloat16, true}, Case{256, 31, 256, DType::BFloat16, true},
        Case{256, 32, 288, DType::BFloat16, true}}) {
    LstmConfig c;
    c.dtype = k.dtype;
    c.T = 3, c.B = k.B, c.I = k.I, c.H = k.H;
    c.train = k.train;
    const LstmProblem p = make_problem(c, 3);
    if (k.dtype == DType::Float32) lstmop::set_fp32_precision("bf16");
    const int64_t before = lstmop::detail::amx_step_runs();
    const int64_t dh_before = lstmop::detail::amx_dh_runs();
    const int64_t input_before = lstmop::detail::amx_input_runs();
    const ForwardResult f = run_forward(p);
    if (k.train) run_backward(p, make_grads(p, 4), f);
    lstmop::set_fp32_precision("ieee");
    const bool taken = choice.bf16_amx_step && k.H % 16 == 0;
    EXPECT_EQ(lstmop::detail::amx_step_runs() - before, taken ? c.T : 0) << c.name();
    // The backward's dh per step on the tiles too.
    const bool dh_taken = taken && k.train;
    EXPECT_EQ(lstmop::detail::amx_dh_runs() - dh_before, dh_taken ? c.T : 0) << c.name();
    const bool in_l2 = (k.I + k.H) * 4 * k.H * 2 <= lstmop::detail::kAmxInputOnTilesMaxBytes;
    const bool split_size =
        k.B * 4 * k.H * k.H >= static_cast<int64_t>(lstmop::detail::kAmxSplitTrainingMinDhWork);
    const bool input_taken =
        taken && c.I % 32 == 0 &&
        (k.B >= lstmop::detail::kAmxInputOnTilesMinRows || (in_l2 && (!k.train || split_size)));
    EXPECT_EQ(lstmop::detail::amx_input_runs() - input_before, input_taken ? c.T : 0)
        << c.name();
  }
}

// Training with the step's input on the tiles (kAmxInputOnTilesMinRows rows
// and more): outputs and gradients against the double reference, pairs of
// row blocks and a partial one, variable length, both directions, two
// layers; and a batch of 32 at the split size; the counter shows the path
// was taken where the CPU has AMX.
TEST(Bf16AmxStep, InputOnTheTilesInTrainingAgainstReference) {
  LstmConfig c;
  c.dtype = DType::BFloat16;
  c.T = 4, c.B = 70, c.I = 32, c.H = 32, c.L = 2;
  c.bidirectional = true;
  c.packed = true;
  for (int64_t b = 0; b < c.B; ++b) c.lengths.push_back(4 - b * 4 / c.B);
  const int64_t before = lstmop::detail::amx_input_runs();
  expect_low_precision_near_reference(make_problem(c, 3500), 3501);
  const bool amx = lstmop::kernels::kernel_choice().bf16_amx_step;
  std::printf("[bf16 AMX step] input on the tiles in training: %s\n",
              amx ? "run" : "not run here (no AMX, or LSTMOP_BF16_STEP set)");
  // Forward only: four slots of T steps.
  EXPECT_EQ(lstmop::detail::amx_input_runs() - before, amx ? 4 * c.T : 0);
  // Below kAmxInputOnTilesMinRows at the split size (B x 4H x H = 2^23), the
  // weights packed within kAmxInputOnTilesMaxBytes: one pair of row blocks.
  LstmConfig small;
  small.dtype = DType::BFloat16;
  small.T = 3, small.B = 32, small.I = 32, small.H = 256;
  const int64_t small_before = lstmop::detail::amx_input_runs();
  expect_low_precision_near_reference(make_problem(small, 3502), 3503);
  EXPECT_EQ(lstmop::detail::amx_input_runs() - small_before, amx ? small.T : 0);
}

// Split mode on the AMX tiles (inference's steps' unit blocks in two parts,
// one a thread, meeting after each step; in training from 2^23 multiply-adds
// of dh a step the forward's so and the backward's, each part its units' cell
// pass and its dh columns): on 2 and 3 threads the bits of one thread, with
// the input product in the layer or on the tiles, pairs of row blocks and
// single ones, variable length, two layers. Training below that work on one
// thread.
TEST(Bf16AmxStep, SplitModeGivesTheBitsOfOneThread) {
  if (!lstmop::kernels::kernel_choice().bf16_amx_step) {
    std::printf("[bf16 AMX step] not taken here (no AMX, or LSTMOP_BF16_STEP set): its split "
                "mode not run\n");
    return;
  }
  const int saved = lstmop::get_num_threads();
  LstmConfig layer;  // the input product in the layer (input size 24)
  layer.dtype = DType::BFloat16;
  layer.T = 12, layer.B = 8, layer.I = 24, layer.H = 128, layer.L = 1;
  layer.train = false;
  LstmConfig tiles = layer;  // the input on the tiles (within 1 MiB), units 64 | 80
  tiles.T = 6, tiles.B = 33, tiles.I = 64, tiles.H = 144, tiles.L = 2;
  tiles.packed = true;
  for (int64_t b = 0; b < tiles.B; ++b) tiles.lengths.push_back(6 - b * 5 / tiles.B);
  LstmConfig wide = layer;  // the input on the tiles from 64 rows (70: pairs and a single)
  wide.T = 4, wide.B = 70, wide.I = 32, wide.H = 128;
  LstmConfig train = layer;  // 2^19 multiply-adds of dh a step: not split
  train.train = true;
  LstmConfig train_split = train;  // 2^23: the backward split, variable length, two layers
  train_split.T = 5, train_split.B = 32, train_split.I = 40, train_split.H = 256;
  train_split.L = 2;
  train_split.packed = true;
  for (int64_t b = 0; b < train_split.B; ++b) train_split.lengths.push_back(5 - b * 4 / 32);
  for (const LstmConfig& c : {layer, tiles, wide, train, train_split}) {
    SCOPED_TRACE(c.name());
    const bool backward_split = c.train && c.B * 4 * c.H * c.H >= (int64_t{1} << 23);
    const LstmProblem p = make_problem(c, 37);
    const LstmGrads g = make_grads(p, 38);
    lstmop::set_num_threads(1);
    const ForwardResult f1 = run_forward(p);
    const BackwardResult b1 = c.train ? run_backward(p, g, f1) : BackwardResult{};
    for (int threads : {2, 3}) {
      lstmop::set_num_threads(threads);
      const Plans plans = plans_of(p);
      ASSERT_TRUE(plans.forward.bf16_matmul_step);
      EXPECT_EQ(plans.forward.threads.threading,
                c.train && !backward_split ? Threading::Serial : Threading::SplitUnits)
          << threads;
      EXPECT_EQ(plans.backward.threads.threading,
                backward_split ? Threading::SplitUnits : Threading::Serial)
          << threads;
      const int64_t before = lstmop::detail::amx_step_runs();
      const ForwardResult f = run_forward(p);
      // Split, each part calls the step for its units: two calls a step.
      EXPECT_EQ(lstmop::detail::amx_step_runs() - before,
                (c.train && !backward_split ? 1 : 2) * c.T * c.L)
          << threads;
      const NamedViews a1 = forward_outputs(f1), a = forward_outputs(f);
      for (std::size_t k = 0; k < a1.size(); ++k) {
        EXPECT_TRUE(bitwise_equal(a1[k].second, a[k].second)) << a1[k].first << " " << threads;
      }
      if (!c.train) continue;
      const int64_t dh_before = lstmop::detail::amx_dh_runs();
      const BackwardResult b = run_backward(p, g, f);
      EXPECT_EQ(lstmop::detail::amx_dh_runs() - dh_before,
                (backward_split ? 2 : 1) * c.T * c.L)
          << threads;
      const NamedViews g1 = backward_outputs(b1), gb = backward_outputs(b);
      for (std::size_t k = 0; k < g1.size(); ++k) {
        EXPECT_TRUE(bitwise_equal(g1[k].second, gb[k].second)) << g1[k].first << " " << threads;
      }
    }
  }
  lstmop::set_num_threads(saved);
}

// The backward's d_gates^T for the weight gradients (transpose_to_bfloat16_bits,
// the AMX form up to kAmxWeightGradTransposedMaxValues values): every value
// the bits round_to_bfloat16_bits gives its row (the products read the same
// operand either way), for whole and partial 16 x 16 blocks and strided rows;
// nothing past a column's rows written.
TEST(Bf16Products, TransposedGateBitsAreTheRowsBits) {
  if (!lstmop::kernels::kernel_choice().bf16_step) {
    std::printf("[bf16 transposed bits] no AVX512-BF16 here: not run\n");
    return;
  }
  std::mt19937 gen(41);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (int64_t rows : {1, 15, 16, 17, 40}) {
    for (int64_t cols : {1, 16, 20, 33}) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
      const int64_t lds = cols + 3, ldd = rows + 5;
      std::vector<float> src(static_cast<std::size_t>(rows * lds));
      for (auto& v : src) v = dist(gen);
      src[0] = std::ldexp(1.0f + 0x1p-8f, 3);  // a tie: even, down
      std::vector<uint16_t> dst(static_cast<std::size_t>(cols * ldd), 0xabcd);
      lstmop::detail::transpose_to_bfloat16_bits(rows, cols, src.data(), lds, dst.data(), ldd);
      std::vector<uint16_t> row_bits(static_cast<std::size_t>(cols));
      for (int64_t r = 0; r < rows; ++r) {
        lstmop::detail::round_to_bfloat16_bits(src.data() + r * lds, cols, row_bits.data());
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(dst[c * ldd + r], row_bits[c]) << "row " << r << " column " << c;
        }
      }
      for (int64_t c = 0; c < cols; ++c) {
        for (int64_t r = rows; r < ldd; ++r) ASSERT_EQ(dst[c * ldd + r], 0xabcd) << r;
      }
      EXPECT_EQ(dst[0], 0x4100);
    }
  }
}

// Infinities in op(A) give C's infinities and NaNs where the double sum of
// the exact products has them, for every transposition, even and odd k, dense
// and padded row strides. (oneDNN 2.6's matmul gave NaN for a whole row of C
// at an odd k with a padded operand: gemm_bf16 copies those dense first; the
// fuzzer had found it through a bfloat16 w_ih with a padded row stride.)
TEST(Bf16Gemm, InfinitiesAsTheExactSums) {
  using lstmop::detail::gemm_bf16;
  using lstmop::detail::Transpose;
  if (!bf16_gemm_available()) {
    std::printf("[bf16 projection] no bfloat16 GEMM on this CPU (needs AVX512-BF16): "
                "gemm_bf16 declines, checked in MatchesDoubleReferenceOrDeclines\n");
    return;
  }
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 gen(11);
  std::uniform_int_distribution<int> grid(-100, 100);
  int checked = 0;
  for (Transpose ta : {Transpose::No, Transpose::Yes}) {
    for (Transpose tb : {Transpose::No, Transpose::Yes}) {
      for (int64_t k : {1, 4, 5, 21}) {
        for (int64_t pad : {0, 1, 3}) {
          const int64_t m = 5, n = 24;
          const int64_t a_rows = ta == Transpose::No ? m : k, a_cols = ta == Transpose::No ? k : m;
          const int64_t b_rows = tb == Transpose::No ? k : n, b_cols = tb == Transpose::No ? n : k;
          const int64_t lda = a_cols + pad, ldb = b_cols + (pad == 1 ? 0 : pad);
          std::vector<uint16_t> a(static_cast<std::size_t>(a_rows * lda), bits_of(1.0f));
          std::vector<uint16_t> b(static_cast<std::size_t>(b_rows * ldb), bits_of(1.0f));
          auto a_at = [&](int64_t i, int64_t p) -> uint16_t& {
            return ta == Transpose::No ? a[i * lda + p] : a[p * lda + i];
          };
          auto b_at = [&](int64_t p, int64_t j) -> uint16_t& {
            return tb == Transpose::No ? b[p * ldb + j] : b[j * ldb + p];
          };
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t p = 0; p < k; ++p) a_at(i, p) = bits_of(grid(gen) / 64.0f);
          }
          for (int64_t p = 0; p < k; ++p) {
            for (int64_t j = 0; j < n; ++j) b_at(p, j) = bits_of(grid(gen) / 64.0f);
          }
          // Row 1 all +inf (C's row: +-inf by the sign of B's column, NaN
          // where the column's signs differ); row 3 one -inf at the last k.
          for (int64_t p = 0; p < k; ++p) a_at(1, p) = bits_of(inf);
          a_at(3, k - 1) = bits_of(-inf);
          // Column 2 of op(B) all positive, column 5 all negative.
          for (int64_t p = 0; p < k; ++p) {
            b_at(p, 2) = bits_of(0.5f);
            b_at(p, 5) = bits_of(-0.25f);
          }
          std::vector<float> c(static_cast<std::size_t>(m * n), 42.0f);
          ASSERT_TRUE(gemm_bf16(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n));
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) {
              double ref = 0.0;
              for (int64_t p = 0; p < k; ++p) {
                ref += static_cast<double>(lstmop::bfloat16_to_float(a_at(i, p))) *
                       lstmop::bfloat16_to_float(b_at(p, j));
              }
              const float got = c[i * n + j];
              const std::string where =
                  "C(" + std::to_string(i) + ", " + std::to_string(j) + ") ta " +
                  std::to_string(ta == Transpose::Yes) + " tb " +
                  std::to_string(tb == Transpose::Yes) + " k " + std::to_string(k) + " lda " +
                  std::to_string(lda) + " ldb " + std::to_string(ldb);
              if (std::isnan(ref)) {
                ASSERT_TRUE(std::isnan(got)) << where << ": " << got << ", expected NaN";
              } else if (std::isinf(ref)) {
                ASSERT_EQ(got, static_cast<float>(ref)) << where;
              } else {
                ASSERT_LE(std::fabs(got - ref), 1e-5 * (1.0 + std::fabs(ref))) << where;
              }
              ++checked;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 4 * 3 * 5 * 24);
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

// The plan takes the bfloat16 products (step_forward_bf16.h) exactly where
// the contract's model allows them: bfloat16 calls and float32 calls with
// fp32_precision "bf16", on a CPU with AVX512-BF16 (kernel_choice) and while
// subnormals are flushed (the instruction flushes them).
lstmop::detail::ForwardPlan plan_of(DType dtype, int64_t B = 2, int64_t H = 8, int64_t I = 4) {
  LstmConfig c;
  c.dtype = dtype;
  c.T = 3, c.B = B, c.I = I, c.H = H;
  const LstmProblem p = make_problem(c, 1);
  return lstmop::detail::plan_forward(lstmop::detail::check_forward_args(
      p.input, p.hx_list(), p.param_list(), c.has_biases, c.L, 0.0, c.train, c.bidirectional,
      c.batch_first, p.batch_sizes_view(), true));
}

TEST(Bf16Products, TakenWhereTheModelAllows) {
  const bool units = lstmop::kernels::kernel_choice().bf16_step;
  std::printf("[bf16 products] %s\n",
              units ? "AVX512-BF16: bfloat16 calls run on vdpbf16ps"
                    : "no AVX512-BF16 (or capped): the float FMA path runs every call");
  const bool matmul = lstmop::kernels::kernel_choice().bf16_matmul_step;
  std::printf("[bf16 products] step form: %s\n",
              !units   ? "none"
              : matmul ? "oneDNN matmul per step + cell pass"
                       : "fused vdpbf16ps step");
  EXPECT_EQ(plan_of(DType::BFloat16).bf16_products, units);
  // plan_of's batch is 2: the matmul form there only when forced (from batch 1).
  const bool small_batch_matmul =
      matmul && lstmop::kernels::kernel_choice().bf16_matmul_min_batch <= 2;
  EXPECT_EQ(plan_of(DType::BFloat16).bf16_matmul_step, units && small_batch_matmul);
  // The fused step's form (lstm_plan.h, kConcatenatedMinBatch): the
  // projection form below batch 4, whatever the weights' size.
  if (units && !matmul) {
    EXPECT_FALSE(plan_of(DType::BFloat16).step_concatenated);
    EXPECT_FALSE(plan_of(DType::BFloat16, 3, 128, 128).step_concatenated);
    EXPECT_TRUE(plan_of(DType::BFloat16, 4, 128, 128).step_concatenated);
    EXPECT_TRUE(plan_of(DType::BFloat16, 4, 256, 256).step_concatenated);
    EXPECT_GT(plan_of(DType::BFloat16).gates, 0);  // the input product's buffer
    EXPECT_GT(plan_of(DType::BFloat16).w_ih_bits, 0);
    EXPECT_EQ(plan_of(DType::BFloat16, 4, 128, 128).gates, 0);
  }
  EXPECT_FALSE(plan_of(DType::Float16).bf16_matmul_step);
  EXPECT_FALSE(plan_of(DType::Float16).bf16_products);
  EXPECT_FALSE(plan_of(DType::Float32).bf16_products);
  lstmop::set_fp32_precision("bf16");
  EXPECT_EQ(lstmop::get_fp32_precision(), "bf16");
  EXPECT_EQ(plan_of(DType::Float32).bf16_products, units);
  EXPECT_FALSE(plan_of(DType::Float64).bf16_products);
  lstmop::set_flush_denormal(false);
  EXPECT_FALSE(plan_of(DType::BFloat16).bf16_products);
  EXPECT_FALSE(plan_of(DType::Float32).bf16_products);
  lstmop::set_flush_denormal(true);
  lstmop::set_fp32_precision("ieee");
  EXPECT_EQ(lstmop::get_fp32_precision(), "ieee");
  try {
    lstmop::set_fp32_precision("tf32");
    ADD_FAILURE() << "tf32 accepted";
  } catch (const lstmop::Error& e) {
    EXPECT_EQ(e.argument(), "precision");
    EXPECT_NE(std::string(e.what()).find("\"tf32\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(lstmop::get_fp32_precision(), "ieee");
}

// Bitwise the same on 1, 2 and 3 threads: directions on two threads, and one
// direction in split mode (B*4H*H >= 2^19), fixed and variable length.
TEST(Bf16Products, BitwiseSameOnOneTwoThreeThreads) {
  const int saved = lstmop::get_num_threads();
  LstmConfig bidir;
  bidir.dtype = DType::BFloat16;
  bidir.T = 9, bidir.B = 7, bidir.I = 33, bidir.H = 40, bidir.L = 2;
  bidir.bidirectional = true;
  bidir.packed = true;
  bidir.lengths = {9, 9, 8, 6, 6, 3, 1};
  LstmConfig split = bidir;
  split.bidirectional = false;
  split.packed = false;
  split.lengths.clear();
  split.B = 8, split.H = 136, split.L = 1, split.T = 12;
  // The fused step's projection form (batch < 4): one direction in split
  // mode (2 x 4 x 256^2 >= 2^19), two layers; and directions on two threads.
  LstmConfig small = split;
  small.B = 2, small.H = 256, small.I = 40, small.L = 2, small.T = 8;
  LstmConfig small_bidir = bidir;
  small_bidir.B = 3;
  small_bidir.lengths = {9, 7, 2};
  for (const LstmConfig& c : {bidir, split, small, small_bidir}) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 31);
    const LstmGrads g = make_grads(p, 32);
    lstmop::set_num_threads(1);
    const ForwardResult f1 = run_forward(p);
    const BackwardResult b1 = run_backward(p, g, f1);
    for (int threads : {2, 3}) {
      lstmop::set_num_threads(threads);
      const ForwardResult f = run_forward(p);
      const BackwardResult b = run_backward(p, g, f);
      const NamedViews a1 = forward_outputs(f1), a = forward_outputs(f);
      for (std::size_t k = 0; k < a1.size(); ++k) {
        EXPECT_TRUE(bitwise_equal(a1[k].second, a[k].second)) << a1[k].first << " " << threads;
      }
      const NamedViews g1 = backward_outputs(b1), gb = backward_outputs(b);
      for (std::size_t k = 0; k < g1.size(); ++k) {
        EXPECT_TRUE(bitwise_equal(g1[k].second, gb[k].second)) << g1[k].first << " " << threads;
      }
    }
  }
  lstmop::set_num_threads(saved);
}

// float32 with fp32_precision "bf16": the products take bfloat16 operands.
// Where the CPU has AVX512-BF16 the results are those of the model on the
// bfloat16-rounded problem (the reference run on it: its h rounded as the
// operand, the call's float32 h unrounded, within a bfloat16 rounding), and
// differ from IEEE float32's; elsewhere they are IEEE float32's, bit for bit.
void float32_with_bf16_precision(int64_t batch) {
  LstmConfig c;
  c.T = 6, c.B = batch, c.I = 12, c.H = 24, c.L = 2;
  c.bidirectional = true;
  const LstmProblem p = make_problem(c, 41);
  const LstmGrads g = make_grads(p, 42);
  const ForwardResult ieee = run_forward(p);
  const BackwardResult ieee_b = run_backward(p, g, ieee);
  lstmop::set_fp32_precision("bf16");
  const ForwardResult f = run_forward(p);
  const BackwardResult b = run_backward(p, g, f);
  lstmop::set_fp32_precision("ieee");
  const NamedViews fi = forward_outputs(ieee), fb = forward_outputs(f);
  if (!lstmop::kernels::kernel_choice().bf16_step) {
    std::printf("[bf16 products] no AVX512-BF16: fp32_precision bf16 stays IEEE float32\n");
    for (std::size_t k = 0; k < fi.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(fi[k].second, fb[k].second)) << fi[k].first;
    }
    return;
  }
  EXPECT_FALSE(bitwise_equal(fi[0].second, fb[0].second)) << "output: the IEEE path ran";
  // The model on the rounded problem: the bfloat16 reference.
  const LstmProblem rounded = converted_problem(p, DType::BFloat16);
  const ForwardResult model = run_reference_forward(rounded);
  const NamedViews fm = forward_outputs(model);
  for (std::size_t k = 0; k < fb.size(); ++k) {
    EXPECT_TRUE(close_to(fb[k].second, fm[k].second, 2 * epsilon(DType::BFloat16))) << fb[k].first;
  }
  // The backward (float32 on the saved float32 tensors) near IEEE's.
  const NamedViews gi = backward_outputs(ieee_b), gb = backward_outputs(b);
  for (std::size_t k = 0; k < gi.size(); ++k) {
    EXPECT_TRUE(close_to(gb[k].second, gi[k].second, 8 * epsilon(DType::BFloat16))) << gi[k].first;
  }
}

TEST(Bf16Products, Float32WithBf16Precision) {
  for (int64_t batch : {5, 2}) {  // the fused step's concatenated and projection forms
    SCOPED_TRACE("B = " + std::to_string(batch));
    float32_with_bf16_precision(batch);
  }
}

}  // namespace
}  // namespace lstmtest
