// Numerics at the edges: pre-activations of +-1e4, +-inf and other extremes
// (+-20, +-88.72 where float exp overflows, +-710 where double exp overflows,
// +-1e30, +-3e38) reached through huge weights or huge inputs.
//
// The math: sigmoid(+big) = 1, sigmoid(-big) = 0, tanh(+-big) = +-1, so every
// gate saturates and c, h, tanhc follow from the cell formulas with those
// values; nothing is NaN (there is no inf * 0 and no inf - inf in the forward:
// w_hh = 0 meets finite h, the input is 1 or w_ih is +-1). Checked:
// - the reference's gates are exactly 0, 1 or +-1 for |a| >= 1e4, and it has
//   no NaN;
// - production has no NaN, its saturated gates are within one unit of the
//   dtype's precision (eps) of 0, 1 or +-1, and all its results are within the
//   forward tolerance of the reference (float32/float64: accumulation
//   tolerance, float16/bfloat16: L * eps, as in the reference sweep and
//   test_dtypes_shapes);
// - the backward equals the reference's, NaN for NaN and infinity for
//   infinity: the math gives NaN exactly where an infinite weight or input
//   meets a zero gate derivative (inf * 0), e.g. dx = w_ih^T da, and both must
//   agree on where.
#include <cmath>
#include <limits>

#include "numerics_support.h"

namespace lstmtest {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

double forward_tolerance(const LstmConfig& c) {
  if (c.dtype == DType::Float16 || c.dtype == DType::BFloat16) {
    return static_cast<double>(c.L) * epsilon(c.dtype);
  }
  return accumulation_tolerance(c.dtype, forward_depth(c), false);
}

double backward_tolerance(const LstmConfig& c) {
  if (c.dtype == DType::Float16 || c.dtype == DType::BFloat16) return 4 * epsilon(c.dtype);
  return accumulation_tolerance(c.dtype, backward_depth(c), true);
}

// Pre-activation values of the weights variant.
const double kExtremes[] = {1e4,   -1e4,   kInf, -kInf,  20.0, -20.0, 88.72, -88.72,
                            89.0,  -89.0,  710.0, -710.0, 1e30, -1e30, 3e38,  -3e38};
constexpr int kNumExtremes = 16;

// A problem with I = 1, no biases, no hx, w_hh = 0 and the given w_ih column
// (4H values, gate rows i, f, g, o) and input values (T * B, time-major).
LstmProblem saturated_problem(const LstmConfig& cfg, const std::vector<double>& w_ih,
                              const std::vector<double>& x) {
  LstmProblem p = make_problem(cfg, 1600);
  p.input = from_doubles(cfg.dtype, {cfg.T, cfg.B, 1}, x);
  for (int64_t s = 0; s < cfg.S(); ++s) {
    p.params[2 * s] = from_doubles(cfg.dtype, {4 * cfg.H, 1}, w_ih);
    p.params[2 * s + 1] = filled(cfg.dtype, {4 * cfg.H, cfg.H}, 0.0);
  }
  return p;
}

LstmConfig saturated_config(DType dtype, int64_t T, int64_t B, int64_t H, bool bidirectional) {
  LstmConfig c;
  c.dtype = dtype;
  c.T = T;
  c.B = B;
  c.I = 1;
  c.H = H;
  c.L = 1;
  c.bidirectional = bidirectional;
  c.has_biases = false;
  c.with_hx = false;
  c.train = true;
  return c;
}

// Gate activation of pre-activation a, as the math says, for |a| >= 1e4.
double saturated(double a, bool is_tanh) {
  if (is_tanh) return a > 0 ? 1.0 : -1.0;
  return a > 0 ? 1.0 : 0.0;
}

// Checks a forward of p whose pre-activation of gate g, unit k, at (t, b) is
// pre(g, k, t, b) (for both directions: w_hh = 0, so no step depends on
// another's h), then the backward.
void check_saturation(const LstmProblem& p,
                      const std::function<double(int, int64_t, int64_t, int64_t)>& pre) {
  const LstmConfig& c = p.cfg;
  SCOPED_TRACE(c.name());
  const ForwardResult got = run_forward(p);
  const LstmProblem p64 = converted_problem(p, DType::Float64);
  const ForwardResult want = run_reference_forward(p64);

  // Gates i, f, j (g), o of each slot, step, sequence, unit.
  const TensorView gates_got[] = {got.i, got.f, got.j, got.o};
  const TensorView gates_want[] = {want.i, want.f, want.j, want.o};
  const char* const names[] = {"i", "f", "j", "o"};
  const double eps = epsilon(c.dtype);
  int64_t saturated_checked = 0;
  for (int g = 0; g < 4; ++g) {
    for (int64_t s = 0; s < c.S(); ++s) {
      for (int64_t t = 0; t < c.T; ++t) {
        for (int64_t b = 0; b < c.B; ++b) {
          for (int64_t k = 0; k < c.H; ++k) {
            const double a = pre(g, k, t, b);
            if (!(std::fabs(a) >= 1e4)) continue;
            const double exact = saturated(a, g == 2);
            const int64_t off = ((s * c.T + t) * c.B + b) * c.H + k;
            const double r = load(gates_want[g], off);
            const double x = load(gates_got[g], off);
            EXPECT_EQ(r, exact) << "reference " << names[g] << " of a = " << a;
            EXPECT_LE(std::fabs(x - exact), eps)
                << names[g] << " of a = " << a << " is " << x << ", expected " << exact;
            ++saturated_checked;
          }
        }
      }
    }
  }
  EXPECT_GT(saturated_checked, 0);

  const NamedViews fa = forward_outputs(got), fb = forward_outputs(want);
  for (std::size_t k = 0; k < fa.size(); ++k) {
    EXPECT_TRUE(has_no_nan(fb[k].second)) << "reference " << fb[k].first;
    EXPECT_TRUE(has_no_nan(fa[k].second)) << fa[k].first;
    EXPECT_TRUE(close_to_with_specials(fa[k].second, fb[k].second, forward_tolerance(c)))
        << fa[k].first;
  }

  const LstmGrads g = make_grads(p, 1601);
  const BackwardResult bgot = run_backward(p, g, got);
  const BackwardResult bwant = run_reference_backward(p64, converted_grads(g, DType::Float64), want);
  const NamedViews ba = backward_outputs(bgot), bb = backward_outputs(bwant);
  ASSERT_EQ(ba.size(), bb.size());
  for (std::size_t k = 0; k < ba.size(); ++k) {
    EXPECT_TRUE(close_to_with_specials(ba[k].second, bb[k].second, backward_tolerance(c)))
        << ba[k].first;
  }
}

// Huge weights: input 1, w_ih row (g, k) = kExtremes[(k + 5 g) % 16]. H = 35:
// every gate meets every value at least twice, in vector bodies and remainders.
TEST(Saturation, HugeWeights) {
  for (DType dtype : kDtypes) {
    for (bool bidirectional : {false, true}) {
      const LstmConfig c = saturated_config(dtype, 3, 2, 35, bidirectional);
      std::vector<double> w(static_cast<std::size_t>(4 * c.H));
      for (int g = 0; g < 4; ++g) {
        for (int64_t k = 0; k < c.H; ++k) w[g * c.H + k] = kExtremes[(k + 5 * g) % kNumExtremes];
      }
      const LstmProblem p =
          saturated_problem(c, w, std::vector<double>(static_cast<std::size_t>(c.T * c.B), 1.0));
      // The pre-activation as the problem's dtype stores the weight (1e30 is
      // inf in float16).
      const LstmProblem& q = p;
      check_saturation(p, [&](int g, int64_t k, int64_t, int64_t) {
        return load(q.params[0], g * c.H + k);
      });
    }
  }
}

// Huge inputs: x(t, b) = [1e4, -1e4, inf, -inf][(t + b) % 4], w_ih row
// (g, k) = +1 or -1 (bit g of k), H = 19.
TEST(Saturation, HugeInputs) {
  const double xs[] = {1e4, -1e4, kInf, -kInf};
  for (DType dtype : kDtypes) {
    for (bool bidirectional : {false, true}) {
      const LstmConfig c = saturated_config(dtype, 4, 2, 19, bidirectional);
      std::vector<double> w(static_cast<std::size_t>(4 * c.H));
      for (int g = 0; g < 4; ++g) {
        for (int64_t k = 0; k < c.H; ++k) w[g * c.H + k] = ((k >> g) & 1) ? 1.0 : -1.0;
      }
      std::vector<double> x;
      for (int64_t t = 0; t < c.T; ++t) {
        for (int64_t b = 0; b < c.B; ++b) x.push_back(xs[(t + b) % 4]);
      }
      const LstmProblem p = saturated_problem(c, w, x);
      check_saturation(p, [&](int g, int64_t k, int64_t t, int64_t b) {
        return w[g * c.H + k] * xs[(t + b) % 4];
      });
    }
  }
}

// Huge states: c0 = +-1e30 (+-6e4 in float16, whose largest value is 65504)
// and h0 = +-1e4 through w_hh = 1/64, so every gate of sequence 0 sees
// a ~ +2812 (all gates 1: c = c0 + 1 stays huge, tanh(c) = +-1) and of
// sequence 1 a ~ -2812 (all gates 0: c = 0 * c0 + 0 = 0). No NaN, results as
// the reference's.
TEST(Saturation, HugeInitialStates) {
  for (DType dtype : kDtypes) {
    SCOPED_TRACE(lstmop::dtype_name(dtype));
    LstmConfig c = saturated_config(dtype, 3, 2, 18, false);
    c.with_hx = true;
    LstmProblem p = make_problem(c, 1602);
    p.params[1] = filled(dtype, {4 * c.H, c.H}, 1.0 / 64);  // a = h0 * H / 64
    std::vector<double> h0, c0;
    for (int64_t b = 0; b < c.B; ++b) {
      for (int64_t k = 0; k < c.H; ++k) {
        h0.push_back(b == 0 ? 1e4 : -1e4);
        const double big = dtype == DType::Float16 ? 6e4 : 1e30;
        c0.push_back(k % 2 ? big : -big);
      }
    }
    p.hx[0] = from_doubles(dtype, {1, c.B, c.H}, h0);
    p.hx[1] = from_doubles(dtype, {1, c.B, c.H}, c0);
    const ForwardResult got = run_forward(p);
    const LstmProblem p64 = converted_problem(p, DType::Float64);
    const ForwardResult want = run_reference_forward(p64);
    const NamedViews fa = forward_outputs(got), fb = forward_outputs(want);
    for (std::size_t k = 0; k < fa.size(); ++k) {
      EXPECT_TRUE(has_no_nan(fb[k].second)) << "reference " << fb[k].first;
      EXPECT_TRUE(has_no_nan(fa[k].second)) << fa[k].first;
      EXPECT_TRUE(close_to_with_specials(fa[k].second, fb[k].second, forward_tolerance(c)))
          << fa[k].first;
    }
  }
}

}  // namespace
}  // namespace lstmtest
