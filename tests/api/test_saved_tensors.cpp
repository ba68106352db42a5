// What the saved tensors mean (outputs 3-9), for the production forward in
// float32 and float64 and for the reference:
// - the last layer's h of each direction is that direction's half of output;
// - tanhc == tanh(c), c_t == f * c_prev + i * j, h_t == o * tanhc;
// - hy / cy are h / c at the last step of each slot (forward: t = len_b - 1,
//   reverse: t = 0);
// - variable length: invalid output rows are 0, invalid i, j, f, o are 0 and
//   invalid h, c, tanhc hold the carried state (forward: the last valid
//   step's, reverse: hx's);
// - train=False: i, j, f, o, tanhc are (0,), h == hy, c == cy, and output,
//   hy, cy are bitwise the train=True ones;
// - an empty hx is the same as zero h0 and c0.
//
// Copies (h into output, hy from h) must be exact: compared bitwise. The cell
// relations are recomputed here in double from the stored (rounded) values,
// so they hold up to the rounding of the stored results: 4 * eps(dtype) *
// (1 + |terms|).
#include <cmath>
#include <cstring>
#include <random>

#include "lstm_test_support.h"

namespace lstmtest {
namespace {

using ForwardFn = ForwardResult (*)(const LstmProblem&);

struct Implementation {
  const char* name;
  ForwardFn forward;
};

const Implementation kImplementations[] = {
    {"production", run_forward},
    {"reference", run_reference_forward},
};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Values of a forward result, flattened, with index helpers.
struct Saved {
  const LstmConfig& c;
  std::vector<double> output, hy, cy, i, j, f, o, h, c_, tanhc, h0, c0;

  Saved(const LstmConfig& cfg, const ForwardResult& r, const LstmProblem& p)
      : c(cfg),
        output(to_doubles(r.output)),
        hy(to_doubles(r.hy)),
        cy(to_doubles(r.cy)),
        i(to_doubles(r.i)),
        j(to_doubles(r.j)),
        f(to_doubles(r.f)),
        o(to_doubles(r.o)),
        h(to_doubles(r.h)),
        c_(to_doubles(r.c)),
        tanhc(to_doubles(r.tanhc)) {
    if (cfg.with_hx) {
      h0 = to_doubles(p.hx[0]);
      c0 = to_doubles(p.hx[1]);
    } else {
      h0.assign(static_cast<std::size_t>(cfg.S() * cfg.B * cfg.H), 0.0);
      c0 = h0;
    }
  }
  // (S, T, B, H)
  std::size_t at(int64_t s, int64_t t, int64_t b, int64_t k) const {
    return static_cast<std::size_t>(((s * c.T + t) * c.B + b) * c.H + k);
  }
  // (S, B, H)
  std::size_t state(int64_t s, int64_t b, int64_t k) const {
    return static_cast<std::size_t>((s * c.B + b) * c.H + k);
  }
  // output[t, b, feature] in the output's layout.
  std::size_t out(int64_t t, int64_t b, int64_t feature) const {
    const int64_t F = c.D() * c.H;
    if (!c.packed && c.batch_first) return static_cast<std::size_t>((b * c.T + t) * F + feature);
    return static_cast<std::size_t>((t * c.B + b) * F + feature);
  }
};

std::vector<LstmConfig> configs(DType dtype) {
  std::vector<LstmConfig> out;
  std::mt19937_64 rng(3);
  for (int variant = 0; variant < 8; ++variant) {
    LstmConfig c;
    c.dtype = dtype;
    c.T = 5;
    c.B = 4;
    c.I = 3;
    c.H = 6;
    c.L = variant % 2 == 0 ? 2 : 3;
    c.bidirectional = variant & 1;
    c.with_hx = variant & 2;
    c.packed = variant & 4;
    c.batch_first = !c.packed && (variant & 2);
    if (c.packed) c.lengths = variant == 7 ? std::vector<int64_t>{5, 3, 1, 1} : random_lengths(5, 4, rng);
    out.push_back(c);
  }
  return out;
}

void check_saved_meaning(const LstmConfig& cfg, const Implementation& impl) {
  SCOPED_TRACE(std::string(impl.name) + " " + cfg.name());
  const LstmProblem p = make_problem(cfg, 41, 1.5);
  const ForwardResult r = impl.forward(p);
  const Saved v(cfg, r, p);
  const int64_t T = cfg.T, B = cfg.B, H = cfg.H, D = cfg.D();
  // Tolerance of the cell relations: the stored values are rounded to the
  // result dtype (float64 for the reference).
  const double eps = epsilon(impl.forward == run_reference_forward ? DType::Float64 : cfg.dtype);
  const double tol = 4 * eps;
  int bad_copy = 0, bad_cell = 0, bad_invalid = 0, bad_final = 0;
  int64_t invalid_seen = 0, valid_seen = 0;

  for (int64_t s = 0; s < cfg.S(); ++s) {
    const int64_t layer = s / D, dir = s % D;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = cfg.length(b);
      for (int64_t k = 0; k < H; ++k) {
        // Final state: forward after t = len - 1, reverse after t = 0.
        const int64_t last = dir == 0 ? len - 1 : 0;
        bad_final += !same_bits(v.hy[v.state(s, b, k)], v.h[v.at(s, last, b, k)]);
        bad_final += !same_bits(v.cy[v.state(s, b, k)], v.c_[v.at(s, last, b, k)]);
        for (int64_t t = 0; t < T; ++t) {
          const std::size_t e = v.at(s, t, b, k);
          // tanhc == tanh(c) and h == o * tanhc everywhere a value is defined.
          bad_cell += !(std::fabs(v.tanhc[e] - std::tanh(v.c_[e])) <= tol * (1 + std::fabs(v.c_[e])));
          if (t >= len) {
            // Invalid position: gates 0, state carried.
            ++invalid_seen;
            bad_invalid += v.i[e] != 0 || v.j[e] != 0 || v.f[e] != 0 || v.o[e] != 0;
            if (dir == 0) {
              const std::size_t kept = v.at(s, len - 1, b, k);
              bad_invalid += !same_bits(v.h[e], v.h[kept]) || !same_bits(v.c_[e], v.c_[kept]) ||
                             !same_bits(v.tanhc[e], v.tanhc[kept]);
            } else {
              bad_invalid += v.h[e] != v.h0[v.state(s, b, k)] || v.c_[e] != v.c0[v.state(s, b, k)];
            }
            if (layer == cfg.L - 1) bad_invalid += v.output[v.out(t, b, dir * H + k)] != 0.0;
            continue;
          }
          ++valid_seen;
          bad_cell += !(v.i[e] > 0 && v.i[e] < 1 && v.f[e] > 0 && v.f[e] < 1 && v.o[e] > 0 &&
                        v.o[e] < 1 && v.j[e] > -1 && v.j[e] < 1);
          bad_cell += !(std::fabs(v.h[e] - v.o[e] * v.tanhc[e]) <= tol);
          // c_t = f * c_prev + i * j; c_prev is the previous step in the
          // slot's own direction, or c0 at its first step.
          const int64_t prev_t = dir == 0 ? t - 1 : t + 1;
          const bool first = dir == 0 ? t == 0 : t == len - 1;
          const double c_prev = first ? v.c0[v.state(s, b, k)] : v.c_[v.at(s, prev_t, b, k)];
          const double c_expected = v.f[e] * c_prev + v.i[e] * v.j[e];
          bad_cell += !(std::fabs(v.c_[e] - c_expected) <=
                        tol * (1 + std::fabs(v.f[e] * c_prev) + std::fabs(v.i[e] * v.j[e])));
          // The last layer's h is its direction's half of output.
          if (layer == cfg.L - 1) {
            bad_copy += !same_bits(v.output[v.out(t, b, dir * H + k)], v.h[e]);
          }
        }
      }
    }
  }
  // Not vacuous: every valid position was checked, and the invalid ones exist
  // whenever a sequence is shorter than T.
  int64_t valid_expected = 0;
  for (int64_t b = 0; b < B; ++b) valid_expected += cfg.length(b) * H * cfg.S();
  EXPECT_EQ(valid_seen, valid_expected);
  EXPECT_EQ(invalid_seen, T * B * H * cfg.S() - valid_expected);
  EXPECT_EQ(bad_final, 0) << "hy/cy differ from h/c at the slot's last step";
  EXPECT_EQ(bad_cell, 0) << "cell relations (tanhc = tanh(c), h = o*tanhc, c = f*c_prev + i*j, "
                            "gate ranges) violated";
  EXPECT_EQ(bad_invalid, 0) << "invalid positions: gates must be 0, state carried, output 0";
  EXPECT_EQ(bad_copy, 0) << "the last layer's h differs from output";
}

TEST(SavedTensors, MeaningFloat32) {
  for (const LstmConfig& cfg : configs(DType::Float32)) {
    for (const Implementation& impl : kImplementations) check_saved_meaning(cfg, impl);
  }
}

TEST(SavedTensors, MeaningFloat64) {
  for (const LstmConfig& cfg : configs(DType::Float64)) {
    for (const Implementation& impl : kImplementations) check_saved_meaning(cfg, impl);
  }
}

// 16-bit storage: the vector cell pass rounds the saved tensors itself
// (bfloat16 eight at a time), the output goes through the scalar rounding of
// tensor.h; the copy check compares the two bitwise. H = 19: two full
// vectors and a tail.
TEST(SavedTensors, MeaningSixteenBit) {
  for (DType dtype : {DType::BFloat16, DType::Float16}) {
    for (LstmConfig cfg : configs(dtype)) {
      cfg.H = 19;
      check_saved_meaning(cfg, kImplementations[0]);
    }
  }
}

// Variable-length reverse direction with an empty hx: carried state is 0.
TEST(SavedTensors, InvalidPositionsWithEmptyHxAreZeroState) {
  LstmConfig c;
  c.T = 4;
  c.B = 3;
  c.bidirectional = true;
  c.packed = true;
  c.with_hx = false;
  c.lengths = {4, 2, 1};
  for (const Implementation& impl : kImplementations) {
    SCOPED_TRACE(impl.name);
    const LstmProblem p = make_problem(c, 43);
    const ForwardResult r = impl.forward(p);
    const Saved v(c, r, p);
    for (int64_t b = 1; b < c.B; ++b) {
      for (int64_t t = c.lengths[b]; t < c.T; ++t) {
        for (int64_t k = 0; k < c.H; ++k) {
          const std::size_t e = v.at(1, t, b, k);  // slot 1: layer 0 reverse
          EXPECT_EQ(v.h[e], 0.0);
          EXPECT_EQ(v.c_[e], 0.0);
          EXPECT_EQ(v.tanhc[e], 0.0);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// train=False
// ---------------------------------------------------------------------------

TEST(SavedTensors, EvalModeShapesAndBitwiseEqualOutputs) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const LstmConfig& base : configs(dtype)) {
      for (const Implementation& impl : kImplementations) {
        SCOPED_TRACE(std::string(impl.name) + " " + base.name());
        LstmConfig eval_cfg = base;
        eval_cfg.train = false;
        const LstmProblem p = make_problem(base, 45);
        LstmProblem q = p;
        q.cfg = eval_cfg;
        const ForwardResult train = impl.forward(p);
        const ForwardResult eval = impl.forward(q);
        for (const Tensor* t : {&eval.i, &eval.j, &eval.f, &eval.o, &eval.tanhc}) {
          EXPECT_EQ(t->sizes(), std::vector<int64_t>{0});
        }
        const std::vector<int64_t> state{base.S(), base.B, base.H};
        EXPECT_EQ(eval.h.sizes(), state);
        EXPECT_EQ(eval.c.sizes(), state);
        EXPECT_TRUE(bitwise_equal(eval.h, eval.hy));
        EXPECT_TRUE(bitwise_equal(eval.c, eval.cy));
        EXPECT_TRUE(bitwise_equal(eval.output, train.output));
        EXPECT_TRUE(bitwise_equal(eval.hy, train.hy));
        EXPECT_TRUE(bitwise_equal(eval.cy, train.cy));
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Empty hx == zero initial states
// ---------------------------------------------------------------------------

TEST(SavedTensors, EmptyHxEqualsZeroHx) {
  for (const LstmConfig& base : configs(DType::Float32)) {
    if (base.with_hx) continue;
    SCOPED_TRACE(base.name());
    const LstmProblem empty = make_problem(base, 47);
    LstmProblem zero = empty;
    zero.cfg.with_hx = true;
    zero.hx = {filled(base.dtype, {base.S(), base.B, base.H}, 0.0),
               filled(base.dtype, {base.S(), base.B, base.H}, 0.0)};
    const ForwardResult a = run_forward(empty), b = run_forward(zero);
    const NamedViews fa = forward_outputs(a), fb = forward_outputs(b);
    for (std::size_t k = 0; k < fa.size(); ++k) {
      EXPECT_TRUE(values_equal(fa[k].second, fb[k].second)) << fa[k].first;
    }
    const LstmGrads g = make_grads(empty, 48);
    const BackwardResult ga = run_backward(empty, g, a), gb = run_backward(zero, g, b);
    const NamedViews ba = backward_outputs(ga), bb = backward_outputs(gb);
    ASSERT_EQ(ba.size(), bb.size());
    for (std::size_t k = 0; k < ba.size(); ++k) {
      EXPECT_TRUE(values_equal(ba[k].second, bb[k].second)) << ba[k].first;
    }
  }
}

}  // namespace
}  // namespace lstmtest
