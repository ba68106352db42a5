// Subnormal numbers (CONTRACT.md, "Subnormal numbers"): float32 and 16-bit
// calls treat subnormal operands and results as zero (FTZ + DAZ on every
// thread of the call), so subnormal data costs no time; float64 and every call
// after set_flush_denormal(false) keep IEEE subnormals; the caller's MXCSR is
// the same after a call, also after an error, and lstmop's results do not
// depend on it.
//
// The slow inputs: input, h0, c0 and the incoming gradients scaled into the
// subnormal range of the compute type (float32: 1e-39 and below, float64:
// 1e-310), weights normal. Then w_ih x, every gate's deviation from its
// midpoint, c, h, tanhc, and in the backward every gradient are subnormal too:
// every GEMM and every cell pass works on subnormals. A core that neither
// flushes them (FTZ/DAZ) nor avoids them pays a microcode assist per
// operation (often 10-100x slower on x86).
//
// The timing assertion, robust on a noisy shared machine: forward + backward of
// the subnormal problem and of the same problem with normal values (scaled by
// 1 instead), interleaved, each the minimum of 9 runs; the ratio must stay
// below 3. A calibration loop (a scalar multiply-add chain on subnormals vs
// normals) is printed to show whether this machine penalises subnormals at all.
#include <xmmintrin.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "numerics_support.h"

namespace lstmtest {
namespace {

double seconds_of(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The problem with input, hx and grads multiplied by `scale`.
struct Scaled {
  LstmProblem p;
  LstmGrads g;
};

Tensor scaled(const Tensor& t, double scale) {
  Tensor out = contiguous_copy(t);
  for (int64_t k = 0; k < out.numel(); ++k) store(out, k, load(t, k) * scale);
  return out;
}

Scaled scaled_problem(const LstmConfig& c, double scale) {
  Scaled s;
  s.p = make_problem(c, 1800);
  s.g = make_grads(s.p, 1801);
  s.p.input = scaled(s.p.input, scale);
  for (Tensor& t : s.p.hx) t = scaled(t, scale);
  s.g.grad_y = scaled(s.g.grad_y, scale);
  s.g.grad_hy = scaled(s.g.grad_hy, scale);
  s.g.grad_cy = scaled(s.g.grad_cy, scale);
  return s;
}

// Fraction of a tensor's nonzero elements that are subnormal in float32 (or
// float64 for a float64 tensor).
double subnormal_fraction(const TensorView& v) {
  const double min_normal = v.dtype == DType::Float64 ? std::numeric_limits<double>::min()
                                                      : double(std::numeric_limits<float>::min());
  int64_t nonzero = 0, sub = 0;
  for (double x : to_doubles(v)) {
    if (x == 0.0 || std::isnan(x)) continue;
    ++nonzero;
    sub += std::fabs(x) < min_normal;
  }
  return nonzero == 0 ? 0.0 : double(sub) / double(nonzero);
}

// Minimum over `runs` of the time of forward + backward.
double best_time(const Scaled& s, int runs) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    best = std::min(best, seconds_of([&] {
      const ForwardResult f = run_forward(s.p);
      run_backward(s.p, s.g, f);
    }));
  }
  return best;
}

// ns per step of a dependent chain acc = (acc * down) * up: with acc = x
// tiny, every step makes a subnormal and multiplies it back (normal inputs
// otherwise). Volatile factors keep the compiler from folding it away.
template <class T>
double chain_ns(T x, T down) {
  volatile T seed = x, vdown = down, vup = T(1) / down;
  T acc = seed;
  const T d = vdown, u = vup;
  constexpr int kSteps = 1000000;
  const double s = seconds_of([&] {
    for (int k = 0; k < kSteps; ++k) acc = (acc * d) * u;
  });
  volatile T sink = acc;
  (void)sink;
  return s * 1e9 / kSteps;
}

struct Case {
  DType dtype;
  double subnormal_scale;
};

class Denormals : public ::testing::TestWithParam<Case> {};

TEST_P(Denormals, NoSlowdownAndReferenceResults) {
  const Case k = GetParam();
  LstmConfig c;
  c.dtype = k.dtype;
  c.T = 12;
  c.B = 16;
  c.I = 48;
  c.H = 48;
  c.L = 1;
  c.bidirectional = true;
  c.has_biases = false;  // a bias would lift every pre-activation out of the subnormal range
  SCOPED_TRACE(c.name());
  const Scaled normal = scaled_problem(c, 1.0);
  const Scaled sub = scaled_problem(c, k.subnormal_scale);

  // The data really is subnormal (bfloat16 has float32's exponent range).
  EXPECT_GT(subnormal_fraction(sub.p.input), 0.99);
  const ForwardResult f = run_forward(sub.p);
  const BackwardResult b = run_backward(sub.p, sub.g, f);

  // Results: as the reference's (a core that flushes subnormals to zero is
  // off by less than the smallest normal, far inside the tolerance).
  const LstmProblem p64 = converted_problem(sub.p, DType::Float64);
  const ForwardResult rf = run_reference_forward(p64);
  const BackwardResult rb =
      run_reference_backward(p64, converted_grads(sub.g, DType::Float64), rf);
  const double fwd_tol = c.dtype == DType::BFloat16 ? c.L * epsilon(c.dtype)
                                                    : accumulation_tolerance(c.dtype, forward_depth(c), false);
  const double bwd_tol = c.dtype == DType::BFloat16 ? 4 * epsilon(c.dtype)
                                                    : accumulation_tolerance(c.dtype, backward_depth(c), true);
  const NamedViews fa = forward_outputs(f), fb = forward_outputs(rf);
  for (std::size_t n = 0; n < fa.size(); ++n) {
    EXPECT_TRUE(close_to(fa[n].second, fb[n].second, fwd_tol)) << fa[n].first;
  }
  const NamedViews ba = backward_outputs(b), bb = backward_outputs(rb);
  for (std::size_t n = 0; n < ba.size(); ++n) {
    EXPECT_TRUE(close_to(ba[n].second, bb[n].second, bwd_tol)) << ba[n].first;
  }

  // Timing: interleaved rounds, minimum of each.
  best_time(normal, 1);  // warm up
  double t_normal = 1e30, t_sub = 1e30;
  for (int round = 0; round < 3; ++round) {
    t_normal = std::min(t_normal, best_time(normal, 3));
    t_sub = std::min(t_sub, best_time(sub, 3));
  }
  const double ratio = t_sub / t_normal;
  const double chain_ratio = k.dtype == DType::Float64
                                 ? chain_ns(1e-300, 1e-10) / chain_ns(1.0, 1e-10)
                                 : chain_ns(1e-30f, 1e-10f) / chain_ns(1.0f, 1e-10f);
  std::printf("[ denormals ] %s: normal %.3f ms, subnormal %.3f ms, ratio %.2f "
              "(scalar subnormal/normal chain on this machine: %.1fx)\n",
              lstmop::dtype_name(c.dtype), t_normal * 1e3, t_sub * 1e3, ratio, chain_ratio);
  if (k.dtype == DType::Float64) {
    // IEEE subnormals by contract: a core that takes assists on them is slow here.
    std::printf("[ denormals ] float64 keeps IEEE subnormals: no timing bound\n");
  } else {
    EXPECT_LT(ratio, 3.0) << "subnormal data makes forward + backward " << ratio
                          << "x slower than normal data";
  }
}

// Flushing: with FTZ + DAZ the subnormal problem computes exactly what the
// all-zero problem does (every product of a zero operand is 0, every
// subnormal result 0), on one thread and on two (directions in parallel,
// row halves on the helper thread); the IEEE cases do not, and stay near the
// reference.
LstmProblem zeroed(const LstmProblem& p) {
  LstmProblem z = p;
  z.input = scaled(p.input, 0.0);
  for (Tensor& t : z.hx) t = scaled(t, 0.0);
  return z;
}
LstmGrads zeroed(const LstmGrads& g) {
  return {scaled(g.grad_y, 0.0), scaled(g.grad_hy, 0.0), scaled(g.grad_cy, 0.0)};
}

bool same_bits(const NamedViews& a, const NamedViews& b) {
  for (std::size_t n = 0; n < a.size(); ++n) {
    if (to_bytes(a[n].second) != to_bytes(b[n].second)) return false;
  }
  return true;
}

class Flush : public ::testing::TestWithParam<Case> {};

TEST_P(Flush, SubnormalDataComputesAsZeroUnlessIeee) {
  const Case k = GetParam();
  LstmConfig c;
  c.dtype = k.dtype;
  c.T = 5, c.B = 6, c.I = 10, c.H = 20, c.L = 2;
  c.bidirectional = true;
  c.has_biases = false;
  SCOPED_TRACE(c.name());
  const Scaled sub = scaled_problem(c, k.subnormal_scale);
  const LstmProblem zero = zeroed(sub.p);
  const LstmGrads zero_g = zeroed(sub.g);
  const int saved_threads = lstmop::get_num_threads();
  for (bool flush : {true, false}) {
    lstmop::set_flush_denormal(flush);
    EXPECT_EQ(lstmop::get_flush_denormal(), flush);
    const bool ieee = !flush || k.dtype == DType::Float64;
    // Two threads give one thread's bits: the helper thread computes in the
    // call's environment whatever its own (it may have been started by a
    // flushing call, or not).
    ForwardResult f1;
    BackwardResult b1;
    for (int threads : {1, 2}) {
      lstmop::set_num_threads(threads);
      SCOPED_TRACE("flush setting " + std::to_string(flush) + ", threads " + std::to_string(threads));
      const ForwardResult f = run_forward(sub.p), fz = run_forward(zero);
      const BackwardResult b = run_backward(sub.p, sub.g, f), bz = run_backward(zero, zero_g, fz);
      const bool forward_as_zero = same_bits(forward_outputs(f), forward_outputs(fz));
      const bool backward_as_zero = same_bits(backward_outputs(b), backward_outputs(bz));
      EXPECT_EQ(forward_as_zero, !ieee);
      EXPECT_EQ(backward_as_zero, !ieee);
      if (threads == 1) {
        f1 = f;
        b1 = b;
      } else {
        EXPECT_TRUE(same_bits(forward_outputs(f), forward_outputs(f1)));
        EXPECT_TRUE(same_bits(backward_outputs(b), backward_outputs(b1)));
      }
      if (ieee && k.dtype != DType::BFloat16) {
        // IEEE: the subnormal results of the reference survive (bfloat16's
        // outputs round every subnormal h, c to a bfloat16 subnormal too).
        EXPECT_GT(subnormal_fraction(f.cy.view()), 0.5);
      }
    }
  }
  lstmop::set_flush_denormal(true);
  lstmop::set_num_threads(saved_threads);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Flush,
                         // float16 has no value in float32's subnormal range (its own
                         // subnormals widen to normal floats).
                         ::testing::Values(Case{DType::Float32, 1e-39}, Case{DType::BFloat16, 1e-39},
                                           Case{DType::Float64, 1e-310}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(lstmop::dtype_name(info.param.dtype));
                         });

// The caller's MXCSR (here: round toward zero, no FTZ/DAZ, a status flag
// set) is the same after float32 and float64 calls, forward and backward, one
// and two threads, and after a call that fails validation; the results are
// those of a caller with the default MXCSR, bit for bit.
TEST(FloatEnvironment, CallerControlWordUnchangedAndIrrelevant) {
  LstmConfig c;
  c.T = 4, c.B = 5, c.I = 7, c.H = 18, c.L = 1;
  c.bidirectional = true;
  const uint32_t default_word = _mm_getcsr();
  const uint32_t caller_word = (default_word & ~0x8040u & ~0x6000u) | 0x6000u | 0x0020u;
  const int saved_threads = lstmop::get_num_threads();
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    c.dtype = dtype;
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 1900);
    const LstmGrads g = make_grads(p, 1901);
    for (int threads : {1, 2}) {
      lstmop::set_num_threads(threads);
      const ForwardResult f_default = run_forward(p);
      const BackwardResult b_default = run_backward(p, g, f_default);
      _mm_setcsr(caller_word);
      const ForwardResult f = run_forward(p);
      const uint32_t after_forward = _mm_getcsr();
      const BackwardResult b = run_backward(p, g, f);
      const uint32_t after_backward = _mm_getcsr();
      bool threw = false;
      try {
        (void)lstmop::lstm_forward(p.input, p.hx_list(), p.param_list(), c.has_biases, 0, 0.0,
                                   c.train, c.bidirectional);
      } catch (const lstmop::Error&) {
        threw = true;
      }
      const uint32_t after_error = _mm_getcsr();
      _mm_setcsr(default_word);
      EXPECT_TRUE(threw);
      EXPECT_EQ(after_forward, caller_word);
      EXPECT_EQ(after_backward, caller_word);
      EXPECT_EQ(after_error, caller_word);
      EXPECT_TRUE(same_bits(forward_outputs(f), forward_outputs(f_default)));
      EXPECT_TRUE(same_bits(backward_outputs(b), backward_outputs(b_default)));
    }
  }
  lstmop::set_num_threads(saved_threads);
}

// The checks themselves run in lstmop's environment: a NaN dropout (its
// comparison raises "invalid"), the size bound's log2 of a huge problem
// ("precision") leave the caller's status flags clear, and with the invalid
// exception unmasked (a trap, feenableexcept(FE_INVALID)) they are the
// lstmop::Error of a bad argument, not SIGFPE. Every entry point: forward,
// its _out and shapes forms, backward and its shapes form, the reference.
TEST(FloatEnvironment, ChecksLeaveTheCallersFlagsAndTrapsAlone) {
  LstmConfig c;
  c.T = 3, c.B = 2, c.I = 4, c.H = 5, c.L = 1;
  c.train = true;
  const LstmProblem p = make_problem(c, 1910);
  const LstmGrads g = make_grads(p, 1911);
  const ForwardResult f = run_forward(p);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const lstmop::TensorList hx = p.hx_list(), params = p.param_list();
  // A shape-only problem (bfloat16, T = B = 2^30) past 2^44 bytes.
  const int64_t big = int64_t(1) << 30;
  const TensorView huge_input(nullptr, DType::BFloat16, {big, big, 3});
  const TensorView w_ih(nullptr, DType::BFloat16, {4096, 3}), w_hh(nullptr, DType::BFloat16, {4096, 1024});
  const TensorView b(nullptr, DType::BFloat16, {4096});
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"lstm_forward NaN dropout",
       [&] { (void)lstmop::lstm_forward(p.input, hx, params, true, 1, nan, true, false); }},
      {"lstm_forward_shapes NaN dropout",
       [&] { (void)lstmop::lstm_forward_shapes(p.input, hx, params, true, 1, nan, true, false); }},
      {"lstm_forward_out NaN dropout",
       [&] { lstmop::lstm_forward_out(f.views(), p.input, hx, params, true, 1, nan, true, false); }},
      {"lstm_backward NaN dropout",
       [&] {
         (void)lstmop::lstm_backward(g.grad_y.view(), g.grad_hy.view(), g.grad_cy.view(), p.input,
                                     hx, params, f.i, f.j, f.f, f.o, f.h, f.c, f.tanhc, true, 1,
                                     nan, true, false);
       }},
      {"lstm_backward_shapes NaN dropout",
       [&] {
         (void)lstmop::lstm_backward_shapes(g.grad_y.view(), g.grad_hy.view(), g.grad_cy.view(),
                                            p.input, hx, params, f.i, f.j, f.f, f.o, f.h, f.c,
                                            f.tanhc, true, 1, nan, true, false);
       }},
      {"reference::lstm_forward NaN dropout",
       [&] { (void)lstmop::reference::lstm_forward(p.input, hx, params, true, 1, nan, true, false); }},
      {"lstm_forward_shapes of 2^45 bytes",
       [&] {
         (void)lstmop::lstm_forward_shapes(huge_input, {}, {w_ih, w_hh, b, b}, true, 1, 0.0, false,
                                           false);
       }},
  };
  const uint32_t default_word = _mm_getcsr();
  const uint32_t clear = default_word & ~0x3fu;  // no status flag set
  for (const uint32_t caller_word : {clear, clear & ~0x80u /* invalid unmasked: traps */}) {
    for (const auto& call : calls) {
      SCOPED_TRACE(call.first + (caller_word & 0x80u ? "" : ", FE_INVALID trapping"));
      std::string what;
      _mm_setcsr(caller_word);
      try {
        call.second();
      } catch (const lstmop::Error& e) {
        what = e.what();
      }
      const uint32_t after = _mm_getcsr();
      _mm_setcsr(default_word);
      EXPECT_FALSE(what.empty()) << "no lstmop::Error";
      EXPECT_EQ(after, caller_word) << std::hex << "MXCSR 0x" << caller_word << " -> 0x" << after
                                    << ": " << what;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Denormals,
                         ::testing::Values(Case{DType::Float32, 1e-39}, Case{DType::BFloat16, 1e-39},
                                           Case{DType::Float64, 1e-310}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(lstmop::dtype_name(info.param.dtype));
                         });

}  // namespace
}  // namespace lstmtest
