// Finite-difference checks of the backward, in float64, for the reference and
// the production implementation: every element of input, h0, c0 and every
// parameter (w_ih, w_hh, b_ih, b_hh, and w_hr with projections, of every
// layer and direction), with the
// loss sum(grad_y * output) + sum(grad_hy * hy) + sum(grad_cy * cy) for random
// grad_y, grad_hy, grad_cy. Each implementation's backward is checked against
// central differences of its own forward.
//
// Tolerance: |fd - analytic| <= 1e-6 * max(1, |analytic|). With step
// h = 1e-6 the central difference has a truncation error of about
// h^2 / 6 * |loss'''| ~ 1e-13 and a rounding error of about
// eps64 * |loss| / h ~ 2e-16 * 10 / 1e-6 = 2e-9, so 1e-6 leaves a wide margin
// while any wrong term of the backward (an error of the order of the
// gradients themselves, 1e-3 and up on these shapes) fails.
//
// Also: undefined grad_y / grad_hy / grad_cy behave as zeros, and
// d b_ih == d b_hh exactly.
#include <cmath>
#include <functional>
#include <random>

#include "lstm_test_support.h"

namespace lstmtest {
namespace {

using ForwardFn = std::function<ForwardResult(const LstmProblem&)>;
using BackwardFn =
    std::function<BackwardResult(const LstmProblem&, const LstmGrads&, const ForwardResult&)>;

struct Implementation {
  const char* name;
  ForwardFn forward;
  BackwardFn backward;
};

const Implementation kImplementations[] = {
    {"reference", run_reference_forward, run_reference_backward},
    {"production", run_forward, run_backward},
};

constexpr double kStep = 1e-6;
constexpr double kFdTolerance = 1e-6;

// Compares every element of `analytic` with the central difference of the
// loss in the matching element of `wrt` (perturbed in place, then restored).
void check_against_fd(const std::string& name, const Tensor& wrt, const TensorView& analytic,
                      LstmProblem& p, const LstmGrads& g, const ForwardFn& forward) {
  ASSERT_EQ(wrt.sizes(), analytic.sizes) << name;
  ASSERT_EQ(wrt.dtype(), DType::Float64);
  const std::vector<double> an = to_doubles(analytic);
  int failures = 0;
  for (int64_t k = 0; k < wrt.numel(); ++k) {
    const double x = load(wrt.view(), k);
    store(wrt.view(), k, x + kStep);
    const double up = loss(forward(p), g);
    store(wrt.view(), k, x - kStep);
    const double down = loss(forward(p), g);
    store(wrt.view(), k, x);
    const double fd = (up - down) / (2 * kStep);
    if (!(std::fabs(fd - an[k]) <= kFdTolerance * std::max(1.0, std::fabs(an[k])))) {
      if (++failures <= 5) {
        ADD_FAILURE() << name << " element " << k << ": analytic " << an[k]
                      << ", finite difference " << fd;
      }
    }
  }
  EXPECT_EQ(failures, 0) << name << ": " << failures << " of " << wrt.numel()
                         << " elements disagree with the finite difference";
}

void gradcheck(const LstmConfig& cfg, uint64_t seed) {
  ASSERT_EQ(cfg.dtype, DType::Float64);
  ASSERT_TRUE(cfg.with_hx) << "h0 and c0 are perturbed, so they must be given";
  for (const Implementation& impl : kImplementations) {
    SCOPED_TRACE(std::string(impl.name) + " " + cfg.name());
    // Weights 1.5x PyTorch's init so that the gates leave their linear range.
    LstmProblem p = make_problem(cfg, seed, 1.5);
    const LstmGrads g = make_grads(p, seed + 1);
    const ForwardResult fwd = impl.forward(p);
    const BackwardResult bwd = impl.backward(p, g, fwd);
    ASSERT_EQ(bwd.dhx.size(), 2u);
    ASSERT_EQ(bwd.dparams.size(), p.params.size());
    check_against_fd("dx", p.input, bwd.dx, p, g, impl.forward);
    check_against_fd("dh0", p.hx[0], bwd.dhx[0], p, g, impl.forward);
    check_against_fd("dc0", p.hx[1], bwd.dhx[1], p, g, impl.forward);
    for (std::size_t k = 0; k < p.params.size(); ++k) {
      check_against_fd("dparams[" + std::to_string(k) + "]", p.params[k], bwd.dparams[k], p, g,
                       impl.forward);
    }
  }
}

LstmConfig small_config() {
  LstmConfig c;
  c.dtype = DType::Float64;
  c.T = 3;
  c.B = 2;
  c.I = 3;
  c.H = 2;
  c.L = 2;
  c.bidirectional = true;
  return c;
}

TEST(GradCheck, FixedLengthBidirectional2Layers) { gradcheck(small_config(), 11); }

TEST(GradCheck, FixedLengthBidirectional2LayersNoBiases) {
  LstmConfig c = small_config();
  c.has_biases = false;
  gradcheck(c, 12);
}

TEST(GradCheck, FixedLengthUnidirectional2LayersBatchFirst) {
  LstmConfig c = small_config();
  c.bidirectional = false;
  c.batch_first = true;
  c.H = 3;
  gradcheck(c, 13);
}

// With projections (proj_size): w_hr (P, H) ends every slot, h and h0 are P
// wide; every element of every gradient, dw_hr's included.
TEST(GradCheck, ProjectionsFixedLengthBidirectional2Layers) {
  LstmConfig c = small_config();
  c.H = 3;
  c.P = 2;
  gradcheck(c, 21);
}

TEST(GradCheck, ProjectionsVariableLengthUnidirectional3LayersNoBiasesBatchFirst) {
  LstmConfig c = small_config();
  c.T = 4;
  c.B = 3;
  c.H = 4;
  c.P = 1;
  c.L = 3;
  c.bidirectional = false;
  c.has_biases = false;
  c.packed = true;
  c.lengths = {4, 3, 1};
  gradcheck(c, 22);
}

TEST(GradCheck, ProjectionsBatchFirstBidirectional) {
  LstmConfig c = small_config();
  c.B = 3;
  c.H = 5;
  c.P = 3;
  c.L = 1;
  c.batch_first = true;
  gradcheck(c, 23);
}

// Lengths 4, 2, 1: a sequence of length 1, one in the middle, one full.
TEST(GradCheck, VariableLengthBidirectional2Layers) {
  LstmConfig c = small_config();
  c.T = 4;
  c.B = 3;
  c.packed = true;
  c.lengths = {4, 2, 1};
  gradcheck(c, 14);
}

TEST(GradCheck, VariableLengthUnidirectional2LayersNoBiases) {
  LstmConfig c = small_config();
  c.T = 3;
  c.B = 3;
  c.bidirectional = false;
  c.has_biases = false;
  c.packed = true;
  c.lengths = {3, 3, 2};
  gradcheck(c, 15);
}

// ---------------------------------------------------------------------------
// Undefined gradients are zeros
// ---------------------------------------------------------------------------

void check_undefined_grads_are_zeros(const LstmConfig& cfg) {
  for (const Implementation& impl : kImplementations) {
    SCOPED_TRACE(std::string(impl.name) + " " + cfg.name());
    const LstmProblem p = make_problem(cfg, 21);
    const LstmGrads random = make_grads(p, 22);
    const ForwardResult fwd = converted_result(impl.forward(p), cfg.dtype);
    // Bit k of mask set: that gradient is undefined in one call and a zero
    // tensor in the other; the others are the random ones in both.
    for (int mask = 1; mask < 8; ++mask) {
      SCOPED_TRACE("undefined mask " + std::to_string(mask));
      LstmGrads undefined = random, zeros = random;
      if (mask & 1) {
        undefined.grad_y = Tensor();
        zeros.grad_y = filled(cfg.dtype, random.grad_y.sizes(), 0.0);
      }
      if (mask & 2) {
        undefined.grad_hy = Tensor();
        zeros.grad_hy = filled(cfg.dtype, random.grad_hy.sizes(), 0.0);
      }
      if (mask & 4) {
        undefined.grad_cy = Tensor();
        zeros.grad_cy = filled(cfg.dtype, random.grad_cy.sizes(), 0.0);
      }
      const BackwardResult with_undefined = impl.backward(p, undefined, fwd);
      const BackwardResult with_zeros = impl.backward(p, zeros, fwd);
      const NamedViews a = backward_outputs(with_undefined), b = backward_outputs(with_zeros);
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t k = 0; k < a.size(); ++k) {
        EXPECT_TRUE(values_equal(a[k].second, b[k].second)) << a[k].first;
      }
      if (mask == 7) {  // no gradient at all: every result is 0
        for (const auto& named : a) EXPECT_EQ(max_abs(named.second), 0.0) << named.first;
      }
    }
  }
}

TEST(UndefinedGrads, BehaveAsZerosFixedLength) {
  LstmConfig c = small_config();
  c.dtype = DType::Float32;
  check_undefined_grads_are_zeros(c);
}

TEST(UndefinedGrads, BehaveAsZerosVariableLengthEmptyHx) {
  LstmConfig c = small_config();
  c.dtype = DType::Float32;
  c.T = 4;
  c.B = 3;
  c.packed = true;
  c.lengths = {4, 3, 1};
  c.with_hx = false;
  check_undefined_grads_are_zeros(c);
}

// ---------------------------------------------------------------------------
// The two biases enter as their sum, so their gradients are the same tensor
// ---------------------------------------------------------------------------

TEST(BiasGradients, IhEqualsHhBitwise) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (bool packed : {false, true}) {
      LstmConfig c = small_config();
      c.dtype = dtype;
      c.T = 4;
      c.B = 3;
      c.H = 5;
      c.packed = packed;
      if (packed) c.lengths = {4, 2, 2};
      for (const Implementation& impl : kImplementations) {
        SCOPED_TRACE(std::string(impl.name) + " " + c.name());
        const LstmProblem p = make_problem(c, 31);
        const BackwardResult r = impl.backward(p, make_grads(p, 32), converted_result(impl.forward(p), dtype));
        ASSERT_EQ(r.dparams.size(), static_cast<std::size_t>(4 * c.S()));
        for (int64_t s = 0; s < c.S(); ++s) {
          EXPECT_GT(max_abs(r.dparams[4 * s + 2]), 0.0) << "slot " << s;
          EXPECT_TRUE(bitwise_equal(r.dparams[4 * s + 2], r.dparams[4 * s + 3])) << "slot " << s;
        }
      }
    }
  }
}

}  // namespace
}  // namespace lstmtest
