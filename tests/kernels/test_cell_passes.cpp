// The forward cell pass's AVX-512 body (src/lstm_cell_avx512.cpp) against its
// AVX2 body (src/lstm_cell_avx2.cpp): both are lstm_cell_simd.h's operations
// lane for lane, so every output must have the same bits: c, h, the layer
// output and all seven saved tensors in float, float16 and bfloat16, for
// hidden sizes with and without a partial last vector, unit ranges (split
// mode's halves) and inputs that reach every branch (the small-|x| tanh
// polynomial, saturation, +-inf, NaN, subnormals). Runs where the CPU has
// both; elsewhere it says so and checks nothing. (NaN results match as NaN,
// not by payload.)
// Also the vector activations' accuracy against double (the bounds
// lstm_cell_avx2.h states) and their limits, on every CPU with AVX2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cell_pass_isa.h"
#include "kernels/cpu_features.h"
#include "lstmop/tensor.h"

namespace lstmop {
namespace detail {
namespace {

std::vector<float> inputs(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f), narrow(-0.4f, 0.4f);
  const float specials[] = {0.0f, -0.0f, 0.29999f, -0.3f, 88.5f, -88.5f, 1e4f, -1e4f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 1e-39f, -3e-42f, 20.0f};
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const unsigned pick = gen() % 10;
    v[k] = pick < 5 ? wide(gen) : pick < 8 ? narrow(gen) : specials[gen() % std::size(specials)];
  }
  return v;
}

bool is_nan(float v) { return std::isnan(v); }
bool is_nan(Half v) { return (v.bits & 0x7c00) == 0x7c00 && (v.bits & 0x03ff) != 0; }
bool is_nan(BFloat16 v) { return (v.bits & 0x7f80) == 0x7f80 && (v.bits & 0x007f) != 0; }

template <class S>
void compare(int64_t rows, int64_t H, int64_t u0, int64_t u1, unsigned seed,
             const std::vector<float>* c_given = nullptr, bool pass_c_through = false) {
  std::vector<float> gates = inputs(rows * 4 * H, seed), bias = inputs(4 * H, seed + 1),
                     c0 = c_given != nullptr ? *c_given : inputs(rows * H, seed + 2);
  if (pass_c_through) {
    // i = sigmoid(-1e4) = 0, f = sigmoid(1e4) = 1, g = 0: c = 1 * c0 + 0 * 0 = c0
    // exactly, so the saved c is the rounding of the given values.
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < H; ++k) {
        gates[r * 4 * H + k] = -1e4f;
        gates[r * 4 * H + H + k] = 1e4f;
        gates[r * 4 * H + 2 * H + k] = 0.0f;
      }
    }
    std::fill(bias.begin(), bias.end(), 0.0f);
  }
  struct Run {
    std::vector<float> c, h, out;
    std::vector<S> saved[7];
  };
  Run run[2];
  for (int isa = 0; isa < 2; ++isa) {
    Run& r = run[isa];
    r.c = c0;
    r.h.assign(static_cast<std::size_t>(rows * H), 7.0f);
    r.out.assign(static_cast<std::size_t>(rows * 2 * H), 7.0f);  // ld_out = 2H: a gap after each row
    for (auto& s : r.saved) s.assign(static_cast<std::size_t>(rows * H), S{});
    StepSaved<S> saved{r.saved[0].data(), r.saved[1].data(), r.saved[2].data(), r.saved[3].data(),
                       r.saved[4].data(), r.saved[5].data(), r.saved[6].data()};
    if (isa == 0) {
      cell_pass_forward_avx2<S>(rows, H, u0, u1, gates.data(), bias.data(), r.c.data(), r.h.data(),
                                r.out.data(), 2 * H, &saved);
    } else {
      cell_pass_forward_avx512<S>(rows, H, u0, u1, gates.data(), bias.data(), r.c.data(),
                                  r.h.data(), r.out.data(), 2 * H, &saved);
    }
  }
  // Bitwise, except that two NaNs match whatever their payloads: x86 passes
  // on the first operand's NaN, and the compiler may order the operands of a
  // commutative add or multiply differently in the two bodies.
  const auto same = [](const auto& a, const auto& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t e = 0; e < a.size(); ++e) {
      if (std::memcmp(&a[e], &b[e], sizeof(a[e])) == 0) continue;
      if (!(is_nan(a[e]) && is_nan(b[e]))) return false;
    }
    return true;
  };
  SCOPED_TRACE("rows " + std::to_string(rows) + " H " + std::to_string(H) + " units [" +
               std::to_string(u0) + ", " + std::to_string(u1) + ")");
  EXPECT_TRUE(same(run[0].c, run[1].c)) << "c";
  EXPECT_TRUE(same(run[0].h, run[1].h)) << "h";
  EXPECT_TRUE(same(run[0].out, run[1].out)) << "layer output (and the gap after each row)";
  for (int k = 0; k < 7; ++k) EXPECT_TRUE(same(run[0].saved[k], run[1].saved[k])) << "saved tensor " << k;
  // The pass really ran: some unit in range changed its h from the fill value.
  EXPECT_NE(run[1].h[static_cast<std::size_t>(u0)], 7.0f);
}

TEST(CellPasses, Avx512ForwardGivesTheAvx2Bits) {
  if (!kernels::isa_supported(kernels::Isa::Avx512) || !kernels::isa_supported(kernels::Isa::Avx2)) {
    std::printf("[cell passes] this CPU lacks AVX-512 F/BW or AVX2: nothing to compare\n");
    return;
  }
  unsigned seed = 1;
  for (int64_t H : {1, 7, 8, 15, 16, 17, 33, 128, 200}) {
    for (int64_t rows : {1, 3}) {
      compare<float>(rows, H, 0, H, seed++);
      compare<Half>(rows, H, 0, H, seed++);
      compare<BFloat16>(rows, H, 0, H, seed++);
    }
  }
  // Rounding to bfloat16 / float16 at exact ties (nearest even) and of NaNs,
  // through the saved c: float bits 0x3f808000 (a tie, even: down),
  // 0x3f818000 (a tie, odd: up), 0x3f807fff, 0x3f808001, a NaN with payload.
  std::vector<float> ties;
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u, 0xbf808000u,
                        0x7fc12345u, 0x3f801000u, 0x40002000u}) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    ties.push_back(v);
  }
  while (ties.size() < 64) ties.push_back(ties[ties.size() % 8] * 2.0f);
  compare<BFloat16>(2, 32, 0, 32, seed++, &ties, true);
  compare<Half>(2, 32, 0, 32, seed++, &ties, true);

  // Split mode's unit halves (the first a multiple of 16).
  compare<float>(4, 200, 0, 96, seed++);
  compare<float>(4, 200, 96, 200, seed++);
  compare<BFloat16>(4, 50, 16, 50, seed++);
}

// Units in the last place of the float nearest v.
double float_ulp(double v) {
  const float f = static_cast<float>(std::fabs(v));
  return static_cast<double>(std::nextafter(f, std::numeric_limits<float>::infinity())) - f;
}

TEST(CellPasses, ActivationsWithinStatedErrorOfDouble) {
  if (!kernels::isa_supported(kernels::Isa::Avx2)) {
    std::printf("[cell passes] this CPU lacks AVX2: the scalar loops use std::exp / std::tanh\n");
    return;
  }
  // Every 1024th float of [-20, 20] (2.1M points, densest near 0, as floats are) ...
  std::vector<float> x;
  uint32_t top;
  const float twenty = 20.0f;
  std::memcpy(&top, &twenty, sizeof top);
  for (uint32_t bits = 0; bits <= top; bits += 1024) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    x.push_back(v);
    x.push_back(-v);
  }
  std::vector<float> s(x.size()), t(x.size());
  sigmoid_avx2(static_cast<int64_t>(x.size()), x.data(), s.data());
  tanh_avx2(static_cast<int64_t>(x.size()), x.data(), t.data());
  double s_abs = 0, s_ulp = 0, t_abs = 0, t_ulp = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double xs = x[k], rs = 1.0 / (1.0 + std::exp(-xs)), rt = std::tanh(xs);
    s_abs = std::max(s_abs, std::fabs(s[k] - rs));
    s_ulp = std::max(s_ulp, std::fabs(s[k] - rs) / float_ulp(rs));
    t_abs = std::max(t_abs, std::fabs(t[k] - rt));
    t_ulp = std::max(t_ulp, std::fabs(t[k] - rt) / float_ulp(rt));
  }
  std::printf("[cell passes] %zu points: sigmoid %.3g abs, %.2f ulp; tanh %.3g abs, %.2f ulp\n",
              x.size(), s_abs, s_ulp, t_abs, t_ulp);
  EXPECT_LE(s_ulp, 2.5);
  EXPECT_LE(s_abs, 1e-7);
  EXPECT_LE(t_ulp, 2.5);
  EXPECT_LE(t_abs, 1e-7);
  // ... the limits ...
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> edge{inf, -inf, 1e4f, -1e4f, 88.5f, -88.5f, nan, -0.0f, 0.0f};
  std::vector<float> es(edge.size()), et(edge.size());
  sigmoid_avx2(static_cast<int64_t>(edge.size()), edge.data(), es.data());
  tanh_avx2(static_cast<int64_t>(edge.size()), edge.data(), et.data());
  EXPECT_EQ(es[0], 1.0f);
  EXPECT_EQ(es[1], 0.0f);
  EXPECT_EQ(es[2], 1.0f);
  EXPECT_EQ(es[3], 0.0f);
  EXPECT_EQ(es[5], 0.0f);
  EXPECT_TRUE(std::isnan(es[6]));
  EXPECT_EQ(es[8], 0.5f);
  EXPECT_EQ(et[0], 1.0f);
  EXPECT_EQ(et[1], -1.0f);
  EXPECT_EQ(et[2], 1.0f);
  EXPECT_EQ(et[3], -1.0f);
  EXPECT_TRUE(std::isnan(et[6]));
  EXPECT_TRUE(et[7] == 0.0f && std::signbit(et[7])) << "tanh(-0) = -0";
  // ... and the AVX-512 tanh (the carried tanhc of invalid positions) gives the same bits.
  if (kernels::isa_supported(kernels::Isa::Avx512)) {
    std::vector<float> t512(x.size());
    tanh_avx512(static_cast<int64_t>(x.size()), x.data(), t512.data());
    EXPECT_EQ(0, std::memcmp(t.data(), t512.data(), t.size() * sizeof(float)));
  }
}

}  // namespace
}  // namespace detail
}  // namespace lstmop
