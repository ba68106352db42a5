// Every body of the cell passes (src/kernels/cell_pass_isa.h) that this CPU
// runs, called directly whatever LSTMOP_KERNEL_ISA says:
//
// - against an independent oracle: the formulas of cell_pass.h evaluated in
//   double on the body's own float pre-activations (gates + bias, one float
//   add, as every body computes it), within bounds derived below from the
//   activations' stated error; the generic bodies in float and in double, the
//   AVX2 forward and backward, the AVX-512 forward. Also that nothing outside
//   the unit range, nor the gap after each layer-output row, is written.
// - bitwise against each other where that is the documented guarantee: the
//   AVX-512 forward gives the AVX2 forward's bits (c, h, the layer output and
//   all seven saved tensors in float, float16 and bfloat16, hidden sizes with
//   and without a partial last vector, unit ranges (split mode's halves) and
//   inputs that reach every branch: the small-|x| tanh polynomial,
//   saturation, +-inf, NaN, subnormals); the AVX2 backward gives the generic
//   backward's bits (same products, same order, no FMA). NaN results match as
//   NaN, not by payload.
// - the vector activations against double (the bounds cell_pass_isa.h
//   states) and their limits.
//
// A test that needs an instruction set the CPU lacks says so with
// GTEST_SKIP (visible in the output) instead of passing silently.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/element_access.h"
#include "kernels/cell_pass_isa.h"
#include "kernels/cpu_features.h"
#include "lstmop/tensor.h"

namespace lstmop {
namespace detail {
namespace {

using kernels::Isa;
using kernels::isa_supported;

constexpr double kInf = std::numeric_limits<double>::infinity();

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

// Finite values of every magnitude a state or a gradient takes (the oracle's
// bounds are relative to them: an infinite state has no meaningful error).
std::vector<float> finite_inputs(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f), unit(-1.0f, 1.0f);
  const float specials[] = {0.0f, -0.0f, 1e-39f, -3e-42f, 1e4f, -1e4f, 1.0f, -1.0f};
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const unsigned pick = gen() % 10;
    v[k] = pick < 4 ? wide(gen) : pick < 8 ? unit(gen) : specials[gen() % std::size(specials)];
  }
  return v;
}

// Activation values in [0, 1] (i, f, o) or [-1, 1] (j, tanhc), ends included.
std::vector<float> activations(int64_t n, bool symmetric, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(symmetric ? -1.0f : 0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const unsigned pick = gen() % 16;
    v[k] = pick == 0 ? 1.0f : pick == 1 ? (symmetric ? -1.0f : 0.0f) : dist(gen);
  }
  return v;
}

bool is_nan(float v) { return std::isnan(v); }
bool is_nan(Half v) { return (v.bits & 0x7c00) == 0x7c00 && (v.bits & 0x03ff) != 0; }
bool is_nan(BFloat16 v) { return (v.bits & 0x7f80) == 0x7f80 && (v.bits & 0x007f) != 0; }

double widen(float v) { return v; }
double widen(double v) { return v; }
double widen(Half v) { return half_to_float(v.bits); }
double widen(BFloat16 v) { return bfloat16_to_float(v.bits); }

// Unit roundoff of a compute or storage type, and the absolute rounding of
// its subnormal range (0 for float and double: the bounds' other terms cover it).
template <class T>
double unit_roundoff() {
  if constexpr (std::is_same_v<T, double>) return std::ldexp(1.0, -53);
  if constexpr (std::is_same_v<T, float>) return std::ldexp(1.0, -24);
  if constexpr (std::is_same_v<T, Half>) return std::ldexp(1.0, -11);
  return std::ldexp(1.0, -8);  // BFloat16
}
template <class T>
double subnormal_rounding() {
  return std::is_same_v<T, Half> ? std::ldexp(1.0, -25) : 0.0;
}

// The largest error of a body's sigmoid and tanh against double, absolute:
// the vector bodies' stated bound (cell_pass_isa.h: 8.9e-8 measured, 1e-7
// checked below); the generic float body's std::exp / std::tanh in float, a
// sigmoid of three roundings of at most an ulp each on values <= 1 (3 *
// 2^-24 < 2e-7); double's libm, a few ulp of values <= 1.
template <class Acc>
double activation_bound(Isa isa) {
  if constexpr (std::is_same_v<Acc, double>) {
    (void)isa;
    return 1e-15;
  } else {
    return isa == Isa::Scalar ? 2e-7 : 1e-7;
  }
}

std::string where(const char* what, int64_t r, int64_t k) {
  return std::string(what) + " at row " + std::to_string(r) + ", unit " + std::to_string(k);
}

// |actual - expected| <= bound, NaN exactly where expected is NaN.
::testing::AssertionResult within(double actual, double expected, double bound) {
  if (std::isnan(expected) || std::isnan(actual)) {
    if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "actual " << actual << ", expected " << expected;
  }
  if (actual == expected) return ::testing::AssertionSuccess();  // infinities
  if (std::fabs(actual - expected) <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "actual " << actual << ", expected " << expected
                                       << ", error " << std::fabs(actual - expected)
                                       << " > bound " << bound;
}

// ---------------------------------------------------------------------------
// Forward: every body against the double oracle
// ---------------------------------------------------------------------------

template <class Acc, class S>
void run_forward(Isa isa, int64_t rows, int64_t H, int64_t u0, int64_t u1, const Acc* gates,
                 const Acc* bias, Acc* c, Acc* h, Acc* out, int64_t ld_out,
                 const StepSaved<S>* saved) {
  if constexpr (std::is_same_v<Acc, float>) {
    if (isa == Isa::Avx512) {
      cell_pass_forward_avx512<S>(rows, H, u0, u1, gates, bias, c, h, out, ld_out, saved);
      return;
    }
    if (isa == Isa::Avx2) {
      cell_pass_forward_avx2<S>(rows, H, u0, u1, gates, bias, c, h, out, ld_out, saved);
      return;
    }
  }
  cell_pass_forward_generic<Acc, S>(rows, H, u0, u1, gates, bias, c, h, out, ld_out, saved);
}

// The forward pass of `isa` on (rows, H) with units [u0, u1) against
//   i, f, o = sigmoid(x), j = tanh(x), x = the float sum gates + bias;
//   c = f c0 + i j;  tanhc = tanh(c);  h = o tanhc
// in double. With A the activation bound and u the unit roundoff of Acc:
// the saved i, j, f, o are within A; c within A (|c0| + 2) (f's error times
// c0, i's and j's times |j|, |i| <= 1) plus the roundings of two products and
// a sum, 4u (|c0| + 1); tanhc within c's bound + A (tanh' <= 1); h within
// tanhc's + A + u. A saved tensor of a narrower type S adds its rounding
// (u_S |value|, and float16's subnormal spacing).
template <class Acc, class S>
void check_forward_against_double(Isa isa, int64_t rows, int64_t H, int64_t u0, int64_t u1,
                                  unsigned seed) {
  SCOPED_TRACE(std::string(kernels::isa_name(isa)) + " rows " + std::to_string(rows) + " H " +
               std::to_string(H) + " units [" + std::to_string(u0) + ", " + std::to_string(u1) +
               ")");
  const std::vector<float> g = inputs(rows * 4 * H, seed), b = inputs(4 * H, seed + 1);
  const std::vector<float> c_given = finite_inputs(rows * H, seed + 2);
  const std::vector<Acc> gates(g.begin(), g.end()), bias(b.begin(), b.end()),
      c0(c_given.begin(), c_given.end());
  const Acc fill = Acc(7);
  std::vector<Acc> c = c0, h(static_cast<std::size_t>(rows * H), fill),
                   out(static_cast<std::size_t>(rows * 2 * H), fill);  // ld_out = 2H: a gap
  std::vector<S> saved[7];
  for (auto& v : saved) v.assign(static_cast<std::size_t>(rows * H), StoreAs<S>::from(fill));
  const StepSaved<S> where_saved{saved[0].data(), saved[1].data(), saved[2].data(),
                                 saved[3].data(), saved[4].data(), saved[5].data(),
                                 saved[6].data()};
  run_forward<Acc, S>(isa, rows, H, u0, u1, gates.data(), bias.data(), c.data(), h.data(),
                      out.data(), 2 * H, &where_saved);

  const double A = activation_bound<Acc>(isa), u = unit_roundoff<Acc>();
  const double us = unit_roundoff<S>(), sub = subnormal_rounding<S>();
  const auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  const auto stored_bound = [&](double bound, double value) {
    return bound * (1 + us) + us * std::fabs(value) + sub;
  };
  int failures = 0;
  const auto expect = [&](::testing::AssertionResult r, const std::string& what) {
    if (!r && ++failures <= 10) ADD_FAILURE() << what << ": " << r.message();
  };
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < H; ++k) {
      const int64_t e = r * H + k;
      if (k < u0 || k >= u1) {  // outside the unit range: nothing written
        expect(::testing::AssertionResult(std::memcmp(&c[e], &c0[e], sizeof(Acc)) == 0 &&
                                          h[e] == fill && out[r * 2 * H + k] == fill),
               where("c, h, output outside the units", r, k));
        for (const auto& v : saved) {
          expect(::testing::AssertionResult(widen(v[e]) == double(fill)),
                 where("saved tensor outside the units", r, k));
        }
        continue;
      }
      // The body's pre-activation: one add in Acc.
      const auto x = [&](int64_t gate) {
        return double(Acc(gates[r * 4 * H + gate * H + k] + bias[gate * H + k]));
      };
      const double i = sigmoid(x(0)), f = sigmoid(x(1)), j = std::tanh(x(2)), o = sigmoid(x(3));
      const double cp = double(c0[e]);
      const double cn = f * cp + i * j, tc = std::tanh(cn), hn = o * tc;
      const double c_bound = A * (std::fabs(cp) + 2) + 4 * u * (std::fabs(cp) + 1);
      const double tc_bound = c_bound + A, h_bound = tc_bound + A + u;
      expect(within(double(c[e]), cn, c_bound), where("c", r, k));
      expect(within(double(h[e]), hn, h_bound), where("h", r, k));
      expect(::testing::AssertionResult(std::memcmp(&out[r * 2 * H + k], &h[e], sizeof(Acc)) == 0),
             where("layer output != h", r, k));
      expect(within(widen(saved[0][e]), i, stored_bound(A, i)), where("saved i", r, k));
      expect(within(widen(saved[1][e]), j, stored_bound(A, j)), where("saved j", r, k));
      expect(within(widen(saved[2][e]), f, stored_bound(A, f)), where("saved f", r, k));
      expect(within(widen(saved[3][e]), o, stored_bound(A, o)), where("saved o", r, k));
      expect(within(widen(saved[4][e]), hn, stored_bound(h_bound, hn)), where("saved h", r, k));
      expect(within(widen(saved[5][e]), cn, stored_bound(c_bound, cn)), where("saved c", r, k));
      expect(within(widen(saved[6][e]), tc, stored_bound(tc_bound, tc)),
             where("saved tanhc", r, k));
    }
    for (int64_t k = H; k < 2 * H; ++k) {
      expect(::testing::AssertionResult(out[r * 2 * H + k] == fill),
             where("the gap after a layer-output row", r, k));
    }
  }
  EXPECT_EQ(failures, 0);
}

// Every hidden size class (below, at and across the vector widths), one and
// several rows, all units and split mode's halves, every storage type.
template <class Acc>
void check_forward_body(Isa isa) {
  unsigned seed = 11;
  for (int64_t H : {1, 7, 8, 15, 16, 17, 33, 128, 200}) {
    for (int64_t rows : {1, 3}) {
      check_forward_against_double<Acc, Acc>(isa, rows, H, 0, H, seed++);
      if constexpr (std::is_same_v<Acc, float>) {
        check_forward_against_double<float, Half>(isa, rows, H, 0, H, seed++);
        check_forward_against_double<float, BFloat16>(isa, rows, H, 0, H, seed++);
      }
    }
  }
  check_forward_against_double<Acc, Acc>(isa, 4, 200, 0, 96, seed++);
  check_forward_against_double<Acc, Acc>(isa, 4, 200, 96, 200, seed++);
  if constexpr (std::is_same_v<Acc, float>) {
    check_forward_against_double<float, BFloat16>(isa, 4, 50, 16, 50, seed++);
  }
}

TEST(CellPassForward, GenericFloatWithinBoundOfDouble) { check_forward_body<float>(Isa::Scalar); }

TEST(CellPassForward, GenericDoubleWithinBoundOfDouble) {
  check_forward_body<double>(Isa::Scalar);
}

TEST(CellPassForward, Avx2WithinBoundOfDouble) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs AVX2 + FMA, which this CPU lacks";
  check_forward_body<float>(Isa::Avx2);
}

TEST(CellPassForward, Avx512WithinBoundOfDouble) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "needs AVX-512 F/BW, which this CPU lacks";
  check_forward_body<float>(Isa::Avx512);
}

// ---------------------------------------------------------------------------
// Forward: the AVX-512 body gives the AVX2 body's bits
// ---------------------------------------------------------------------------

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

TEST(CellPassForward, Avx512GivesTheAvx2Bits) {
  if (!isa_supported(Isa::Avx512)) {
    GTEST_SKIP() << "needs AVX-512 F/BW (and AVX2), which this CPU lacks: nothing to compare";
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

// ---------------------------------------------------------------------------
// Backward: every body against the double oracle; AVX2 = generic bitwise
// ---------------------------------------------------------------------------

template <class Acc>
struct BackwardCase {
  int64_t rows, H, u0, u1;
  std::vector<Acc> i, j, f, o, tanhc, c_prev, d_out, dh_state, dc_state0;  // d_out: ld 2H
};

template <class Acc>
BackwardCase<Acc> backward_case(int64_t rows, int64_t H, int64_t u0, int64_t u1, unsigned seed) {
  const auto as = [](const std::vector<float>& v) { return std::vector<Acc>(v.begin(), v.end()); };
  const int64_t n = rows * H;
  return BackwardCase<Acc>{rows,
                           H,
                           u0,
                           u1,
                           as(activations(n, false, seed)),
                           as(activations(n, true, seed + 1)),
                           as(activations(n, false, seed + 2)),
                           as(activations(n, false, seed + 3)),
                           as(activations(n, true, seed + 4)),
                           as(finite_inputs(n, seed + 5)),
                           as(finite_inputs(rows * 2 * H, seed + 6)),
                           as(finite_inputs(n, seed + 7)),
                           as(finite_inputs(n, seed + 8))};
}

// Runs the body of `isa` (Scalar: the generic one); returns d_gates (rows,
// 4H, filled with 7 first) and the dc state.
template <class Acc>
std::pair<std::vector<Acc>, std::vector<Acc>> run_backward(Isa isa, const BackwardCase<Acc>& k) {
  std::vector<Acc> d_gates(static_cast<std::size_t>(k.rows * 4 * k.H), Acc(7));
  std::vector<Acc> dc = k.dc_state0;
  if constexpr (std::is_same_v<Acc, float>) {
    if (isa == Isa::Avx2) {
      cell_pass_backward_avx2(k.rows, k.H, k.u0, k.u1, k.i.data(), k.j.data(), k.f.data(),
                              k.o.data(), k.tanhc.data(), k.c_prev.data(), k.d_out.data(),
                              2 * k.H, k.dh_state.data(), dc.data(), d_gates.data());
      return {d_gates, dc};
    }
    if (isa == Isa::Avx512) {
      cell_pass_backward_avx512(k.rows, k.H, k.u0, k.u1, k.i.data(), k.j.data(), k.f.data(),
                                k.o.data(), k.tanhc.data(), k.c_prev.data(), k.d_out.data(),
                                2 * k.H, k.dh_state.data(), dc.data(), d_gates.data());
      return {d_gates, dc};
    }
  }
  cell_pass_backward_generic<Acc>(k.rows, k.H, k.u0, k.u1, k.i.data(), k.j.data(), k.f.data(),
                                  k.o.data(), k.tanhc.data(), k.c_prev.data(), k.d_out.data(),
                                  2 * k.H, k.dh_state.data(), dc.data(), d_gates.data());
  return {d_gates, dc};
}

// The formulas of cell_pass.h in double. Each result is a chain of at most 10
// float operations (adds, subtractions, multiplications), so its error is at
// most 12u times its magnitude, the same chain on absolute values (Higham's
// forward bound, first order): M(dh) = |dh_state| + |dy|, M(dc) = |dc_state|
// + M(dh) |o| (1 + tanhc^2), M(d_i) = M(dc) |j| |i| (1 + |i|), ...; plus, for
// results in the subnormal range (gradual underflow, no flush), 12 roundings
// of the spacing there (2^-149 in float), none of them scaled up afterwards
// (every later factor is an activation or 1 - one, at most 2).
template <class Acc>
void check_backward_against_double(Isa isa, int64_t rows, int64_t H, int64_t u0, int64_t u1,
                                   unsigned seed) {
  SCOPED_TRACE(std::string(kernels::isa_name(isa)) + " rows " + std::to_string(rows) + " H " +
               std::to_string(H) + " units [" + std::to_string(u0) + ", " + std::to_string(u1) +
               ")");
  const BackwardCase<Acc> k = backward_case<Acc>(rows, H, u0, u1, seed);
  const auto [d_gates, dc] = run_backward<Acc>(isa, k);
  const double bound = 12 * unit_roundoff<Acc>();
  const double underflow = 12 * std::ldexp(1.0, std::is_same_v<Acc, float> ? -149 : -1074);
  int failures = 0;
  const auto expect = [&](::testing::AssertionResult r, const std::string& what) {
    if (!r && ++failures <= 10) ADD_FAILURE() << what << ": " << r.message();
  };
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t u = 0; u < H; ++u) {
      const int64_t e = r * H + u;
      const Acc* dg = d_gates.data() + r * 4 * H;
      if (u < u0 || u >= u1) {
        for (int gate = 0; gate < 4; ++gate) {
          expect(::testing::AssertionResult(dg[gate * H + u] == Acc(7)),
                 where("d_gates outside the units", r, u));
        }
        expect(::testing::AssertionResult(dc[e] == k.dc_state0[e]),
               where("dc outside the units", r, u));
        continue;
      }
      const double i = k.i[e], j = k.j[e], f = k.f[e], o = k.o[e], tc = k.tanhc[e];
      const double cp = k.c_prev[e], dy = k.d_out[r * 2 * H + u];
      const double dh = double(k.dh_state[e]) + dy;
      const double m_dh = std::fabs(double(k.dh_state[e])) + std::fabs(dy);
      const double dcv = double(k.dc_state0[e]) + dh * o * (1 - tc * tc);
      const double m_dc = std::fabs(double(k.dc_state0[e])) + m_dh * std::fabs(o) * (1 + tc * tc);
      const double expected[4] = {dcv * j * i * (1 - i), dcv * cp * f * (1 - f),
                                  dcv * i * (1 - j * j), dh * tc * o * (1 - o)};
      const double magnitude[4] = {m_dc * std::fabs(j * i) * (1 + std::fabs(i)),
                                   m_dc * std::fabs(cp * f) * (1 + std::fabs(f)),
                                   m_dc * std::fabs(i) * (1 + j * j),
                                   m_dh * std::fabs(tc * o) * (1 + std::fabs(o))};
      const char* names[4] = {"d_i", "d_f", "d_g", "d_o"};
      for (int gate = 0; gate < 4; ++gate) {
        expect(within(double(dg[gate * H + u]), expected[gate],
                      bound * magnitude[gate] + underflow),
               where(names[gate], r, u));
      }
      expect(within(double(dc[e]), dcv * f, bound * m_dc * std::fabs(f) + underflow),
             where("dc", r, u));
    }
  }
  EXPECT_EQ(failures, 0);
}

template <class Acc>
void check_backward_body(Isa isa) {
  unsigned seed = 101;
  for (int64_t H : {1, 7, 8, 15, 16, 17, 33, 128, 200}) {
    for (int64_t rows : {1, 3}) check_backward_against_double<Acc>(isa, rows, H, 0, H, seed += 10);
  }
  check_backward_against_double<Acc>(isa, 4, 200, 0, 96, seed += 10);
  check_backward_against_double<Acc>(isa, 4, 200, 96, 200, seed += 10);
}

TEST(CellPassBackward, GenericFloatWithinBoundOfDouble) {
  check_backward_body<float>(Isa::Scalar);
}

TEST(CellPassBackward, GenericDoubleWithinBoundOfDouble) {
  check_backward_body<double>(Isa::Scalar);
}

TEST(CellPassBackward, Avx2WithinBoundOfDouble) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs AVX2 + FMA, which this CPU lacks";
  check_backward_body<float>(Isa::Avx2);
}

TEST(CellPassBackward, Avx512WithinBoundOfDouble) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "needs AVX-512 F/BW, which this CPU lacks";
  check_backward_body<float>(Isa::Avx512);
}

// The vector body of `isa` gives the generic loop's bits (no FMA, the same
// order), full vectors, partial last ones and unit ranges, with gradients
// reaching every branch of the arithmetic (infinities, NaN).
void check_backward_generic_bits(Isa isa) {
  unsigned seed = 501;
  for (int64_t H : {1, 7, 8, 17, 33, 200}) {
    for (auto [u0, u1] : {std::pair<int64_t, int64_t>{0, H}, {H / 32 * 16, H}}) {
      SCOPED_TRACE(std::string(kernels::isa_name(isa)) + " H " + std::to_string(H) +
                   " units [" + std::to_string(u0) + ", " + std::to_string(u1) + ")");
      BackwardCase<float> k = backward_case<float>(3, H, u0, u1, seed += 10);
      // Gradients reaching every branch of the arithmetic: infinities, NaN.
      const std::vector<float> wild = inputs(3 * H, seed + 5);
      for (std::size_t e = 0; e < wild.size(); e += 3) k.dh_state[e] = wild[e];
      const auto generic = run_backward<float>(Isa::Scalar, k);
      const auto vector = run_backward<float>(isa, k);
      for (const auto& [a, b] : {std::pair{&generic.first, &vector.first},
                                 std::pair{&generic.second, &vector.second}}) {
        ASSERT_EQ(a->size(), b->size());
        for (std::size_t e = 0; e < a->size(); ++e) {
          const float x = (*a)[e], y = (*b)[e];
          EXPECT_TRUE(std::memcmp(&x, &y, sizeof x) == 0 || (std::isnan(x) && std::isnan(y)))
              << "element " << e << ": generic " << x << ", " << kernels::isa_name(isa) << " "
              << y;
        }
      }
    }
  }
}

TEST(CellPassBackward, Avx2GivesTheGenericBits) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs AVX2 + FMA, which this CPU lacks";
  check_backward_generic_bits(Isa::Avx2);
}

TEST(CellPassBackward, Avx512GivesTheGenericBits) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "needs AVX-512 F/BW, which this CPU lacks";
  check_backward_generic_bits(Isa::Avx512);
}

// bfloat16 saved tensors read as bits (cell_pass_backward_bf16's bodies): the
// bits of the float pass on float copies of the widened values, in the
// generic body and in the vector ones, full vectors, partial last vectors and unit
// ranges. A body that widened a lane wrongly, or read the wrong element,
// changes some d_gates or dc.
void check_bf16_saved_body(Isa isa) {
  unsigned seed = 701;
  for (int64_t H : {1, 7, 8, 9, 17, 33, 200}) {
    for (auto [u0, u1] : {std::pair<int64_t, int64_t>{0, H}, {H / 32 * 16, H}}) {
      SCOPED_TRACE(std::string(kernels::isa_name(isa)) + " H " + std::to_string(H) +
                   " units [" + std::to_string(u0) + ", " + std::to_string(u1) + ")");
      BackwardCase<float> k = backward_case<float>(3, H, u0, u1, seed += 10);
      std::vector<uint16_t> bits[6];
      std::vector<float>* saved[6] = {&k.i, &k.j, &k.f, &k.o, &k.tanhc, &k.c_prev};
      for (int q = 0; q < 6; ++q) {
        for (float& v : *saved[q]) {
          bits[q].push_back(float_to_bfloat16(v));
          v = bfloat16_to_float(bits[q].back());  // the float copy holds the widened value
        }
      }
      const auto expected = run_backward<float>(isa, k);
      std::vector<float> d_gates(static_cast<std::size_t>(k.rows * 4 * k.H), 7.0f);
      std::vector<float> dc = k.dc_state0;
      if (isa == Isa::Avx2) {
        cell_pass_backward_bf16_avx2(k.rows, k.H, k.u0, k.u1, bits[0].data(), bits[1].data(),
                                     bits[2].data(), bits[3].data(), bits[4].data(),
                                     bits[5].data(), k.d_out.data(), 2 * k.H,
                                     k.dh_state.data(), dc.data(), d_gates.data());
      } else if (isa == Isa::Avx512) {
        cell_pass_backward_bf16_avx512(k.rows, k.H, k.u0, k.u1, bits[0].data(), bits[1].data(),
                                       bits[2].data(), bits[3].data(), bits[4].data(),
                                       bits[5].data(), k.d_out.data(), 2 * k.H,
                                       k.dh_state.data(), dc.data(), d_gates.data());
      } else {
        cell_pass_backward_generic<float>(k.rows, k.H, k.u0, k.u1, bits[0].data(),
                                          bits[1].data(), bits[2].data(), bits[3].data(),
                                          bits[4].data(), bits[5].data(), k.d_out.data(),
                                          2 * k.H, k.dh_state.data(), dc.data(),
                                          d_gates.data());
      }
      ASSERT_EQ(d_gates.size(), expected.first.size());
      EXPECT_EQ(std::memcmp(d_gates.data(), expected.first.data(), d_gates.size() * 4), 0);
      EXPECT_EQ(std::memcmp(dc.data(), expected.second.data(), dc.size() * 4), 0);
    }
  }
}

TEST(CellPassBackward, GenericOnBfloat16SavedGivesTheFloatCopiesBits) {
  check_bf16_saved_body(Isa::Scalar);
}

TEST(CellPassBackward, Avx2OnBfloat16SavedGivesTheFloatCopiesBits) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs AVX2 + FMA, which this CPU lacks";
  check_bf16_saved_body(Isa::Avx2);
}

TEST(CellPassBackward, Avx512OnBfloat16SavedGivesTheFloatCopiesBits) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "needs AVX-512 F/BW, which this CPU lacks";
  check_bf16_saved_body(Isa::Avx512);
}

// ---------------------------------------------------------------------------
// The vector activations
// ---------------------------------------------------------------------------

// Units in the last place of the float nearest v.
double float_ulp(double v) {
  const float f = static_cast<float>(std::fabs(v));
  return static_cast<double>(std::nextafter(f, std::numeric_limits<float>::infinity())) - f;
}

// Every 1024th float of [-20, 20] (2.1M points, densest near 0, as floats are).
std::vector<float> activation_sweep() {
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
  return x;
}

using Activation = void (*)(int64_t, const float*, float*);

// The stated error (cell_pass_isa.h) on the sweep, and the limits.
void check_activations(const char* isa, Activation sigmoid, Activation tanh_fn) {
  const std::vector<float> x = activation_sweep();
  std::vector<float> s(x.size()), t(x.size());
  sigmoid(static_cast<int64_t>(x.size()), x.data(), s.data());
  tanh_fn(static_cast<int64_t>(x.size()), x.data(), t.data());
  double s_abs = 0, s_ulp = 0, t_abs = 0, t_ulp = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double xs = x[k], rs = 1.0 / (1.0 + std::exp(-xs)), rt = std::tanh(xs);
    s_abs = std::max(s_abs, std::fabs(s[k] - rs));
    s_ulp = std::max(s_ulp, std::fabs(s[k] - rs) / float_ulp(rs));
    t_abs = std::max(t_abs, std::fabs(t[k] - rt));
    t_ulp = std::max(t_ulp, std::fabs(t[k] - rt) / float_ulp(rt));
  }
  std::printf("[cell passes] %s, %zu points: sigmoid %.3g abs, %.2f ulp; tanh %.3g abs, %.2f ulp\n",
              isa, x.size(), s_abs, s_ulp, t_abs, t_ulp);
  EXPECT_LE(s_ulp, 2.5);
  EXPECT_LE(s_abs, 1e-7);
  EXPECT_LE(t_ulp, 2.5);
  EXPECT_LE(t_abs, 1e-7);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> edge{inf, -inf, 1e4f, -1e4f, 88.5f, -88.5f, nan, -0.0f, 0.0f};
  std::vector<float> es(edge.size()), et(edge.size());
  sigmoid(static_cast<int64_t>(edge.size()), edge.data(), es.data());
  tanh_fn(static_cast<int64_t>(edge.size()), edge.data(), et.data());
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
}

TEST(CellPassActivations, Avx2WithinStatedErrorOfDouble) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "needs AVX2 + FMA, which this CPU lacks";
  check_activations("avx2", sigmoid_avx2, tanh_avx2);
}

TEST(CellPassActivations, Avx512WithinStatedErrorOfDoubleAndGivesTheAvx2Bits) {
  if (!isa_supported(Isa::Avx512)) {
    GTEST_SKIP() << "needs AVX-512 F/BW (and AVX2), which this CPU lacks";
  }
  check_activations("avx512", sigmoid_avx512, tanh_avx512);
  // The AVX-512 tanh (the carried tanhc of invalid positions) and sigmoid give
  // the AVX2 ones' bits.
  const std::vector<float> x = activation_sweep();
  std::vector<float> t2(x.size()), t512(x.size()), s2(x.size()), s512(x.size());
  tanh_avx2(static_cast<int64_t>(x.size()), x.data(), t2.data());
  tanh_avx512(static_cast<int64_t>(x.size()), x.data(), t512.data());
  sigmoid_avx2(static_cast<int64_t>(x.size()), x.data(), s2.data());
  sigmoid_avx512(static_cast<int64_t>(x.size()), x.data(), s512.data());
  EXPECT_EQ(0, std::memcmp(t2.data(), t512.data(), t2.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(s2.data(), s512.data(), s2.size() * sizeof(float)));
}

// The fused steps' epilogues interleave two rows' eight gate activations
// (cell_simd::activate): each vector gets the bits of its activation applied
// alone (sigmoid_avx512 / tanh_avx512), on the sweep and the limits.
TEST(CellPassActivations, Avx512InterleavedGatesGiveTheBitsOfOneAtATime) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "needs AVX-512 F/BW, which this CPU lacks";
  std::vector<float> x = activation_sweep();
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {inf, -inf, 1e4f, -1e4f, 88.5f, -88.5f, std::numeric_limits<float>::quiet_NaN(),
                  -0.0f, 0.0f, 0.3f, -0.3f, std::nextafter(0.3f, 0.0f)}) {
    x.push_back(v);
  }
  x.resize((x.size() + 127) / 128 * 128, 0.5f);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> g(x.size()), s(x.size()), t(x.size());
  gate_activations_avx512(n, x.data(), g.data());
  sigmoid_avx512(n, x.data(), s.data());
  tanh_avx512(n, x.data(), t.data());
  int64_t differing = 0;
  for (int64_t k = 0; k < n; ++k) {
    const bool is_tanh = (k / 16) % 4 == 2;
    const float want = is_tanh ? t[k] : s[k];
    if (std::memcmp(&g[k], &want, sizeof want) != 0 && ++differing <= 5) {
      ADD_FAILURE() << "x = " << x[k] << " (" << (is_tanh ? "tanh" : "sigmoid") << "): " << g[k]
                    << " interleaved, " << want << " alone";
    }
  }
  EXPECT_EQ(differing, 0);
}

// The saved tensors at positions a sequence does not reach, in bfloat16:
// zeros in i, j, f, o and h, c, tanh(c) rounded as float_to_bfloat16 rounds
// them (tensor.h: nearest even, overflow to infinity, NaN quieted with sign
// and payload), for NaNs, infinities, ties, the largest floats and
// subnormals; tanh(c) with the forward pass's own tanh.
TEST(CellPassFillInvalid, Bfloat16AsFloatToBfloat16Rounds) {
  std::vector<float> v;
  const auto from_bits = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  };
  for (uint32_t b : {0x7fc00001u, 0xffc12345u, 0x7f800001u, 0xff812345u, 0x7f800000u,
                     0xff800000u, 0x7f7fffffu, 0xff7f8000u, 0x7f7f7fffu, 0x3f808000u,
                     0x3f818000u, 0x3f808001u, 0xbf807fffu, 0x00000001u, 0x80008000u,
                     0x00018000u, 0x00000000u, 0x80000000u}) {
    v.push_back(from_bits(b));
  }
  std::mt19937 gen(41);
  std::uniform_int_distribution<uint32_t> bits;
  while (v.size() < 3 * 67) v.push_back(from_bits(bits(gen)));
  const int64_t rows = 3, H = 67, n = rows * H;
  std::vector<float> h(v.begin(), v.begin() + n), c(h.rbegin(), h.rend());
  std::vector<BFloat16> i(n, BFloat16(1.0f)), j = i, f = i, o = i, sh = i, sc = i, st = i;
  const StepSaved<BFloat16> saved{i.data(), j.data(), f.data(), o.data(),
                                  sh.data(), sc.data(), st.data()};
  cell_pass_fill_invalid<float, BFloat16>(rows, H, h.data(), c.data(), saved);
  std::vector<float> tanh_c(n);
  switch (kernels::kernel_choice().cell_forward) {
    case Isa::Avx512: tanh_avx512(n, c.data(), tanh_c.data()); break;
    case Isa::Avx2: tanh_avx2(n, c.data(), tanh_c.data()); break;
    case Isa::Scalar: tanh_generic<float>(n, c.data(), tanh_c.data()); break;
  }
  for (int64_t e = 0; e < n; ++e) {
    SCOPED_TRACE(::testing::Message() << "element " << e << " h " << h[e] << " c " << c[e]);
    for (const auto* zero : {&i, &j, &f, &o}) EXPECT_EQ((*zero)[e].bits, 0u);
    EXPECT_EQ(sh[e].bits, float_to_bfloat16(h[e]));
    EXPECT_EQ(sc[e].bits, float_to_bfloat16(c[e]));
    EXPECT_EQ(st[e].bits, float_to_bfloat16(tanh_c[e]));
  }
}

}  // namespace
}  // namespace detail
}  // namespace lstmop
