// src/kernels/lstm_gates: the fused gates against scalar double formulas,
// the activations' accuracy on a sweep (incl. +-1e4, +-inf, NaN), and the
// bitwise guarantees of the header.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "kernel_test_isas.h"
#include "lstm_gates.h"

namespace lstmop {
namespace kernels {
namespace {

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Distance in float ulps between a float result and the exact (double)
// value, measured at the exact value's binade (|exact| >= FLT_MIN).
double ulp_error(float got, double exact) {
  int e = 0;
  std::frexp(exact, &e);
  const double ulp = std::ldexp(1.0, e - 24);
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

// Steps between a float result and the correctly rounded exact value: 0 =
// correctly rounded, 1 = the neighbouring float. Both finite, same sign.
int64_t float_steps(float got, double exact) {
  const float rounded = static_cast<float>(exact);
  int32_t a, b;
  std::memcpy(&a, &got, 4);
  std::memcpy(&b, &rounded, 4);
  if ((a < 0) != (b < 0)) return got == rounded ? 0 : INT64_MAX;
  return a > b ? static_cast<int64_t>(a) - b : static_cast<int64_t>(b) - a;
}

std::vector<float> sweep() {
  std::vector<float> xs;
  for (int k = -40000; k <= 40000; ++k) xs.push_back(static_cast<float>(k) * 5e-4f);  // [-20, 20]
  for (double mag = 1e-30; mag < 2e4; mag *= 1.013) {
    xs.push_back(static_cast<float>(mag));
    xs.push_back(static_cast<float>(-mag));
  }
  for (float v : {0.0f, -0.0f, 1e4f, -1e4f, 88.0f, -88.0f, 89.0f, -89.0f, 104.0f, -104.0f, FLT_MAX,
                  -FLT_MAX, FLT_MIN, -FLT_MIN, 1e-45f, -1e-45f})
    xs.push_back(v);
  return xs;
}

struct Activations {
  std::vector<float> sig, tanh_;
};

// sigmoid via the i output (a_i = x), tanh via the j output (a_g = x).
Activations activations(Isa isa, const std::vector<float>& xs) {
  const int64_t n = static_cast<int64_t>(xs.size());
  std::vector<float> zero(xs.size(), 0.0f), c(xs.size()), h(xs.size()), i(xs.size()), j(xs.size()),
      f(xs.size()), o(xs.size()), tc(xs.size());
  GateForward g;
  g.n = n;
  g.a_i = g.a_f = g.a_g = g.a_o = xs.data();
  g.c_prev = zero.data();
  g.c = c.data();
  g.h = h.data();
  g.i = i.data();
  g.j = j.data();
  g.f = f.data();
  g.o = o.data();
  g.tanhc = tc.data();
  lstm_gates_forward(isa, g);
  return {i, j};
}

TEST(LstmGates, ActivationAccuracyOnSweep) {
  const std::vector<float> xs = sweep();
  for (Isa isa : supported_isas()) {
    const Activations act = activations(isa, xs);
    double sig_ulp = 0, tanh_ulp = 0, sig_abs = 0, tanh_abs = 0;
    int64_t sig_steps = 0, tanh_steps = 0;
    float worst_sig_x = 0, worst_tanh_x = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const double s = sigmoid_ref(xs[k]), t = std::tanh(static_cast<double>(xs[k]));
      sig_abs = std::max(sig_abs, std::fabs(act.sig[k] - s));
      tanh_abs = std::max(tanh_abs, std::fabs(act.tanh_[k] - t));
      if (s >= FLT_MIN) {
        sig_steps = std::max(sig_steps, float_steps(act.sig[k], s));
        if (ulp_error(act.sig[k], s) > sig_ulp) {
          sig_ulp = ulp_error(act.sig[k], s);
          worst_sig_x = xs[k];
        }
      }
      if (std::fabs(t) >= FLT_MIN) {
        tanh_steps = std::max(tanh_steps, float_steps(act.tanh_[k], t));
        if (ulp_error(act.tanh_[k], t) > tanh_ulp) {
          tanh_ulp = ulp_error(act.tanh_[k], t);
          worst_tanh_x = xs[k];
        }
      }
    }
    std::printf("[kernels] %s on %zu points: sigmoid max %.3f ulp (at x=%g), %lld float steps from "
                "correctly rounded, max abs %.3g; tanh max %.3f ulp (at x=%g), %lld steps, max abs "
                "%.3g\n",
                isa_name(isa), xs.size(), sig_ulp, worst_sig_x, static_cast<long long>(sig_steps),
                sig_abs, tanh_ulp, worst_tanh_x, static_cast<long long>(tanh_steps), tanh_abs);
    // tanh: SLEEF's 1-ulp function: at most the float next to the correctly
    // rounded one. sigmoid: exp (1 ulp), 1 + e and 1 / (.) (0.5 ulp each):
    // < 2.5 ulp, so at most 2 floats away.
    EXPECT_LE(tanh_steps, 1) << isa_name(isa);
    EXPECT_LE(sig_steps, 2) << isa_name(isa);
    // Where sigmoid's exact value is below FLT_MIN (x < -87.3) the result may
    // flush to 0: absolute error stays below FLT_MIN.
    EXPECT_LE(sig_abs, 2.0 * std::ldexp(1.0, -24)) << isa_name(isa);
  }
}

TEST(LstmGates, ActivationSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs = {inf, -inf, nan, 1e4f, -1e4f, 0.0f, -0.0f};
  for (Isa isa : supported_isas()) {
    const Activations act = activations(isa, xs);
    EXPECT_EQ(act.sig[0], 1.0f) << isa_name(isa);
    EXPECT_EQ(act.sig[1], 0.0f) << isa_name(isa);
    EXPECT_TRUE(std::isnan(act.sig[2])) << isa_name(isa);
    EXPECT_EQ(act.sig[3], 1.0f) << isa_name(isa);
    EXPECT_EQ(act.sig[4], 0.0f) << isa_name(isa);
    EXPECT_EQ(act.sig[5], 0.5f) << isa_name(isa);
    EXPECT_EQ(act.tanh_[0], 1.0f) << isa_name(isa);
    EXPECT_EQ(act.tanh_[1], -1.0f) << isa_name(isa);
    EXPECT_TRUE(std::isnan(act.tanh_[2])) << isa_name(isa);
    EXPECT_EQ(act.tanh_[3], 1.0f) << isa_name(isa);
    EXPECT_EQ(act.tanh_[4], -1.0f) << isa_name(isa);
    EXPECT_EQ(act.tanh_[5], 0.0f) << isa_name(isa);
    EXPECT_TRUE(std::signbit(act.tanh_[6])) << isa_name(isa) << ": tanh(-0) = -0";
  }
}

// One random step for n units: pre-activations, bias, c_prev; the backward
// inputs too.
struct Step {
  int64_t n;
  std::vector<float> ai, af, ag, ao, bi, bf, bg, bo, cp, dh_a, dh_b, dc_next;
};

Step make_step(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  Step s{n, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  for (std::vector<float>* v : {&s.ai, &s.af, &s.ag, &s.ao, &s.bi, &s.bf, &s.bg, &s.bo, &s.cp,
                                &s.dh_a, &s.dh_b, &s.dc_next}) {
    v->resize(static_cast<std::size_t>(n));
    for (float& x : *v) x = dist(gen);
  }
  return s;
}

struct Forward {
  std::vector<float> c, h, i, j, f, o, tc;
};

Forward forward(Isa isa, const Step& s, bool bias, bool saved, int64_t begin = 0, int64_t end = -1) {
  const std::size_t n = static_cast<std::size_t>(s.n);
  Forward r{std::vector<float>(n, 9.0f), std::vector<float>(n, 9.0f), std::vector<float>(n, 9.0f),
            std::vector<float>(n, 9.0f), std::vector<float>(n, 9.0f), std::vector<float>(n, 9.0f),
            std::vector<float>(n, 9.0f)};
  if (end < 0) end = s.n;
  GateForward g;
  g.n = end - begin;
  g.a_i = s.ai.data() + begin;
  g.a_f = s.af.data() + begin;
  g.a_g = s.ag.data() + begin;
  g.a_o = s.ao.data() + begin;
  if (bias) {
    g.b_i = s.bi.data() + begin;
    g.b_f = s.bf.data() + begin;
    g.b_g = s.bg.data() + begin;
    g.b_o = s.bo.data() + begin;
  }
  g.c_prev = s.cp.data() + begin;
  g.c = r.c.data() + begin;
  g.h = r.h.data() + begin;
  if (saved) {
    g.i = r.i.data() + begin;
    g.j = r.j.data() + begin;
    g.f = r.f.data() + begin;
    g.o = r.o.data() + begin;
    g.tanhc = r.tc.data() + begin;
  }
  lstm_gates_forward(isa, g);
  return r;
}

const int64_t kUnits[] = {1, 7, 8, 9, 15, 16, 17, 33, 100, 128};

TEST(LstmGates, ForwardMatchesDoubleFormulas) {
  for (Isa isa : supported_isas()) {
    for (int64_t n : kUnits) {
      for (bool bias : {false, true}) {
        Step s = make_step(n, static_cast<unsigned>(n * 2 + bias));
        Forward r = forward(isa, s, bias, true);
        for (int64_t u = 0; u < n; ++u) {
          const std::size_t k = static_cast<std::size_t>(u);
          auto b = [&](const std::vector<float>& v) { return bias ? static_cast<double>(v[k]) : 0.0; };
          // The kernel adds bias in float; the reference starts from that float sum.
          const double xi = static_cast<float>(s.ai[k] + static_cast<float>(b(s.bi)));
          const double xf = static_cast<float>(s.af[k] + static_cast<float>(b(s.bf)));
          const double xg = static_cast<float>(s.ag[k] + static_cast<float>(b(s.bg)));
          const double xo = static_cast<float>(s.ao[k] + static_cast<float>(b(s.bo)));
          const double i = sigmoid_ref(xi), f = sigmoid_ref(xf), j = std::tanh(xg), o = sigmoid_ref(xo);
          const double c = f * s.cp[k] + i * j, tc = std::tanh(c), h = o * tc;
          const double e = std::ldexp(1.0, -24);
          EXPECT_LE(float_steps(r.i[k], i), 2) << isa_name(isa) << " n=" << n << " u=" << u;
          EXPECT_LE(float_steps(r.f[k], f), 2);
          EXPECT_LE(float_steps(r.o[k], o), 2);
          EXPECT_LE(float_steps(r.j[k], j), 1);
          // c: errors of f, i, j (<= 4 ulp each) and two roundings, relative to the terms.
          const double c_bound = std::fabs(f * s.cp[k]) + std::fabs(i * j);
          EXPECT_NEAR(r.c[k], c, 12 * e * c_bound) << isa_name(isa) << " n=" << n << " u=" << u;
          // tanh is 1-Lipschitz: tanhc inherits c's error plus its own ulp.
          EXPECT_NEAR(r.tc[k], tc, 12 * e * c_bound + 2 * e * std::fabs(tc));
          EXPECT_NEAR(r.h[k], h, 12 * e * c_bound + 8 * e * std::fabs(h));
        }
      }
    }
  }
}

TEST(LstmGates, InferenceWritesOnlyStateAndGivesSameBits) {
  for (Isa isa : supported_isas()) {
    Step s = make_step(37, 3);
    Forward train = forward(isa, s, true, true);
    Forward infer = forward(isa, s, true, false);
    ASSERT_EQ(0, std::memcmp(train.c.data(), infer.c.data(), train.c.size() * 4));
    ASSERT_EQ(0, std::memcmp(train.h.data(), infer.h.data(), train.h.size() * 4));
    for (float v : infer.i) ASSERT_EQ(v, 9.0f);
    for (float v : infer.tc) ASSERT_EQ(v, 9.0f);
  }
}

TEST(LstmGates, UnitResultsDoNotDependOnPositionOrCount) {
  for (Isa isa : supported_isas()) {
    Step s = make_step(100, 11);
    Forward whole = forward(isa, s, true, true);
    // [0, 37) then [37, 100): unit 37 moves from lane 5 to lane 0.
    Forward a = forward(isa, s, true, true, 0, 37);
    Forward b = forward(isa, s, true, true, 37, 100);
    for (int64_t u = 0; u < 100; ++u) {
      const Forward& part = u < 37 ? a : b;
      const std::size_t k = static_cast<std::size_t>(u);
      ASSERT_EQ(std::memcmp(&whole.h[k], &part.h[k], 4), 0) << isa_name(isa) << " u=" << u;
      ASSERT_EQ(std::memcmp(&whole.c[k], &part.c[k], 4), 0);
      ASSERT_EQ(std::memcmp(&whole.tc[k], &part.tc[k], 4), 0);
    }
  }
}

TEST(LstmGates, StateMayBeUpdatedInPlace) {
  for (Isa isa : supported_isas()) {
    Step s = make_step(45, 4);
    Forward separate = forward(isa, s, true, false);
    std::vector<float> state = s.cp, h(state.size());
    GateForward g;
    g.n = s.n;
    g.a_i = s.ai.data();
    g.a_f = s.af.data();
    g.a_g = s.ag.data();
    g.a_o = s.ao.data();
    g.b_i = s.bi.data();
    g.b_f = s.bf.data();
    g.b_g = s.bg.data();
    g.b_o = s.bo.data();
    g.c_prev = state.data();
    g.c = state.data();
    g.h = h.data();
    lstm_gates_forward(isa, g);
    ASSERT_EQ(0, std::memcmp(state.data(), separate.c.data(), state.size() * 4)) << isa_name(isa);
    ASSERT_EQ(0, std::memcmp(h.data(), separate.h.data(), h.size() * 4)) << isa_name(isa);
  }
}

struct Backward {
  std::vector<float> dai, daf, dag, dao, dcp;
};

Backward backward(Isa isa, const Step& s, const Forward& fw, bool dh_b, bool dc_next) {
  const std::size_t n = static_cast<std::size_t>(s.n);
  Backward r{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n),
             std::vector<float>(n), std::vector<float>(n)};
  GateBackward g;
  g.n = s.n;
  g.dh_a = s.dh_a.data();
  g.dh_b = dh_b ? s.dh_b.data() : nullptr;
  g.dc_next = dc_next ? s.dc_next.data() : nullptr;
  g.i = fw.i.data();
  g.j = fw.j.data();
  g.f = fw.f.data();
  g.o = fw.o.data();
  g.tanhc = fw.tc.data();
  g.c_prev = s.cp.data();
  g.da_i = r.dai.data();
  g.da_f = r.daf.data();
  g.da_g = r.dag.data();
  g.da_o = r.dao.data();
  g.dc_prev = r.dcp.data();
  lstm_gates_backward(isa, g);
  return r;
}

TEST(LstmGates, BackwardMatchesDoubleFormulasAndIsaIndependent) {
  for (int64_t n : kUnits) {
    for (int variant = 0; variant < 4; ++variant) {
      const bool has_dh_b = variant & 1, has_dc = variant & 2;
      Step s = make_step(n, static_cast<unsigned>(100 + n * 4 + variant));
      // Saved activations from the scalar forward: the same inputs for every ISA.
      Forward fw = forward(Isa::Scalar, s, true, true);
      Backward scalar = backward(Isa::Scalar, s, fw, has_dh_b, has_dc);
      for (Isa isa : supported_isas()) {
        Backward r = backward(isa, s, fw, has_dh_b, has_dc);
        for (std::vector<float> Backward::*field :
             {&Backward::dai, &Backward::daf, &Backward::dag, &Backward::dao, &Backward::dcp})
          ASSERT_EQ(0, std::memcmp((r.*field).data(), (scalar.*field).data(), static_cast<std::size_t>(n) * 4))
              << isa_name(isa) << " n=" << n << " variant " << variant;
      }
      const double e = std::ldexp(1.0, -24);
      for (int64_t u = 0; u < n; ++u) {
        const std::size_t k = static_cast<std::size_t>(u);
        const double i = fw.i[k], j = fw.j[k], f = fw.f[k], o = fw.o[k], tc = fw.tc[k], cp = s.cp[k];
        const double dh = static_cast<double>(s.dh_a[k]) + (has_dh_b ? s.dh_b[k] : 0.0);
        const double carried = dh * o * (1 - tc * tc);
        const double dc = (has_dc ? s.dc_next[k] : 0.0) + carried;
        const double dc_mag = (has_dc ? std::fabs(s.dc_next[k]) : 0.0) + std::fabs(dh * o);
        // A handful of roundings each; (1 - x^2) loses relative accuracy near
        // |x| = 1, bounded here by the absolute size of its terms.
        EXPECT_NEAR(scalar.dao[k], dh * tc * o * (1 - o), 8 * e * std::fabs(dh) + 1e-30) << "u=" << u;
        EXPECT_NEAR(scalar.dai[k], dc * j * i * (1 - i), 12 * e * dc_mag + 1e-30);
        EXPECT_NEAR(scalar.dag[k], dc * i * (1 - j * j), 12 * e * dc_mag + 1e-30);
        EXPECT_NEAR(scalar.daf[k], dc * cp * f * (1 - f), 12 * e * dc_mag * std::fabs(cp) + 1e-30);
        EXPECT_NEAR(scalar.dcp[k], dc * f, 12 * e * dc_mag + 1e-30);
      }
    }
  }
}

}  // namespace
}  // namespace kernels
}  // namespace lstmop
