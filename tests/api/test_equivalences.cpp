// Two equivalences of the contract:
// - variable length == running each sequence alone in fixed-length mode
//   (B = 1, T = len_b): output, hy, cy, the saved tensors at valid
//   positions, and every gradient (dparams summed over the sequences);
// - batch_first == the time-major call on the transposed input (outputs,
//   saved tensors and gradients).
//
// Tolerance of the first: both sides are float computations of the same exact
// values, each within accumulation_tolerance of them (see
// test_reference_sweep.cpp), so they agree within twice that; float64 within
// ~1e-14.
//
// The second is bitwise: a contiguous batch_first input (B, T, I) is the
// time-major input (T, B, I) seen through strides (I, T*I, 1), and strided
// inputs give bitwise the contiguous results (test_strides.cpp), so nothing
// but the layout of input, output, grad_y and dx may change.
#include <limits>
#include <random>

#include "lstm_test_support.h"

namespace lstmtest {
namespace {

// View of v (a, b, ...) as (b, a, ...): dimensions 0 and 1 swapped.
TensorView swap01(const TensorView& v) {
  TensorView t = v;
  std::swap(t.sizes[0], t.sizes[1]);
  std::swap(t.strides[0], t.strides[1]);
  return t;
}

// Rows of sequence b of a packed (T*B, F) tensor, as a (len, 1, F) tensor.
Tensor sequence_rows(const TensorView& packed, const LstmConfig& c, int64_t b) {
  const int64_t F = packed.size(1), len = c.length(b);
  TensorView rows(packed.data, packed.dtype, {len, 1, F},
                  {c.B * packed.stride(0), packed.stride(0), packed.stride(1)});
  rows.data = static_cast<char*>(packed.data) +
              b * packed.stride(0) * static_cast<int64_t>(lstmop::dtype_size(packed.dtype));
  return contiguous_copy(rows);
}

// Column b of an (S, B, ...) tensor as (S, 1, ...).
Tensor batch_column(const TensorView& v, int64_t b) {
  TensorView col = v;
  col.sizes[1] = 1;
  col.data = static_cast<char*>(v.data) +
             b * v.stride(1) * static_cast<int64_t>(lstmop::dtype_size(v.dtype));
  return contiguous_copy(col);
}

// Saved tensor (S, T, B, H) restricted to sequence b's first len steps:
// (S, len, 1, H).
Tensor saved_sequence(const TensorView& v, int64_t b, int64_t len) {
  TensorView part = v;
  part.sizes[1] = len;
  part.sizes[2] = 1;
  part.data = static_cast<char*>(v.data) +
              b * v.stride(2) * static_cast<int64_t>(lstmop::dtype_size(v.dtype));
  return contiguous_copy(part);
}

void check_variable_length_equals_alone(const LstmConfig& cfg, uint64_t seed) {
  SCOPED_TRACE(cfg.name());
  ASSERT_TRUE(cfg.packed);
  const LstmProblem p = make_problem(cfg, seed);
  const LstmGrads g = make_grads(p, seed + 1);
  const ForwardResult fwd = run_forward(p);
  const BackwardResult bwd = run_backward(p, g, fwd);
  const double fwd_tol = 2 * accumulation_tolerance(cfg.dtype, forward_depth(cfg), false);
  const double bwd_tol = 2 * accumulation_tolerance(cfg.dtype, backward_depth(cfg), true);

  std::vector<std::vector<double>> dparams_sum(p.params.size());
  for (std::size_t k = 0; k < p.params.size(); ++k) {
    dparams_sum[k].assign(static_cast<std::size_t>(p.params[k].numel()), 0.0);
  }
  for (int64_t b = 0; b < cfg.B; ++b) {
    SCOPED_TRACE("sequence " + std::to_string(b));
    const int64_t len = cfg.length(b);
    LstmProblem q = p;
    q.cfg.packed = false;
    q.cfg.batch_first = false;
    q.cfg.lengths.clear();
    q.cfg.T = len;
    q.cfg.B = 1;
    q.batch_sizes = Tensor();
    q.input = sequence_rows(p.input, cfg, b);
    for (Tensor& t : q.hx) t = batch_column(t, b);
    LstmGrads qg;
    qg.grad_y = sequence_rows(g.grad_y, cfg, b);
    qg.grad_hy = batch_column(g.grad_hy, b);
    qg.grad_cy = batch_column(g.grad_cy, b);
    const ForwardResult alone = run_forward(q);
    const BackwardResult alone_b = run_backward(q, qg, alone);

    EXPECT_TRUE(close_to(sequence_rows(fwd.output, cfg, b), alone.output, fwd_tol)) << "output";
    EXPECT_TRUE(close_to(batch_column(fwd.hy, b), alone.hy, fwd_tol)) << "hy";
    EXPECT_TRUE(close_to(batch_column(fwd.cy, b), alone.cy, fwd_tol)) << "cy";
    const NamedViews packed_saved = forward_outputs(fwd), alone_saved = forward_outputs(alone);
    for (std::size_t k = 3; k < packed_saved.size(); ++k) {
      EXPECT_TRUE(close_to(saved_sequence(packed_saved[k].second, b, len),
                           alone_saved[k].second, fwd_tol))
          << packed_saved[k].first;
    }
    EXPECT_TRUE(close_to(sequence_rows(bwd.dx, cfg, b), alone_b.dx, bwd_tol)) << "dx";
    EXPECT_TRUE(close_to(batch_column(bwd.dhx[0], b), alone_b.dhx[0], bwd_tol)) << "dh0";
    EXPECT_TRUE(close_to(batch_column(bwd.dhx[1], b), alone_b.dhx[1], bwd_tol)) << "dc0";
    for (std::size_t k = 0; k < p.params.size(); ++k) {
      const std::vector<double> d = to_doubles(alone_b.dparams[k]);
      for (std::size_t e = 0; e < d.size(); ++e) dparams_sum[k][e] += d[e];
    }
  }
  for (std::size_t k = 0; k < p.params.size(); ++k) {
    const Tensor sum = from_doubles(DType::Float64, p.params[k].sizes(), dparams_sum[k]);
    EXPECT_TRUE(close_to(bwd.dparams[k], sum, bwd_tol)) << "dparams[" << k << "]";
  }
  // dx is 0 in invalid rows.
  const std::vector<double> dx = to_doubles(bwd.dx);
  for (int64_t t = 0; t < cfg.T; ++t) {
    for (int64_t b = 0; b < cfg.B; ++b) {
      if (t < cfg.length(b)) continue;
      for (int64_t k = 0; k < cfg.I; ++k) {
        EXPECT_EQ(dx[static_cast<std::size_t>((t * cfg.B + b) * cfg.I + k)], 0.0)
            << "dx row t=" << t << " b=" << b;
      }
    }
  }
}

std::vector<LstmConfig> variable_length_configs(DType dtype) {
  std::vector<LstmConfig> out;
  std::mt19937_64 rng(7);
  for (int variant = 0; variant < 6; ++variant) {
    LstmConfig c;
    c.dtype = dtype;
    c.T = 6;
    c.B = 5;
    c.I = 7;
    c.H = 13;
    c.L = 1 + variant % 3;
    c.bidirectional = variant % 2 == 0;
    c.has_biases = variant != 3;
    c.with_hx = variant != 4;
    c.packed = true;
    c.lengths = random_lengths(c.T, c.B, rng);
    if (variant == 1) c.lengths = {6, 6, 6, 6, 6};  // all equal
    if (variant == 2) c.lengths = {6, 4, 1, 1, 1};  // with length-1 sequences
    out.push_back(c);
  }
  return out;
}

TEST(VariableLength, EqualsEachSequenceAloneFloat32) {
  uint64_t seed = 50;
  for (const LstmConfig& c : variable_length_configs(DType::Float32)) {
    check_variable_length_equals_alone(c, seed += 3);
  }
}

TEST(VariableLength, EqualsEachSequenceAloneFloat64) {
  uint64_t seed = 60;
  for (const LstmConfig& c : variable_length_configs(DType::Float64)) {
    check_variable_length_equals_alone(c, seed += 3);
  }
}

// The invalid rows of a packed input are padding, not data (a PackedSequence
// has no such rows): whatever they hold, NaN and infinities included, every
// result is bitwise the same.
TEST(VariableLength, PaddingRowsDoNotMatter) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    LstmConfig c = variable_length_configs(dtype)[2];  // lengths 6, 4, 1, 1, 1
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 75);
    const LstmGrads g = make_grads(p, 76);
    auto with_padding = [&](double value) {
      LstmProblem q = p;
      q.input = contiguous_copy(p.input);
      for (int64_t t = 0; t < c.T; ++t) {
        for (int64_t b = 0; b < c.B; ++b) {
          if (t < c.length(b)) continue;
          for (int64_t k = 0; k < c.I; ++k) store(q.input, (t * c.B + b) * c.I + k, value);
        }
      }
      return q;
    };
    const LstmProblem zero = with_padding(0.0);
    const ForwardResult expected = run_forward(zero);
    const BackwardResult expected_b = run_backward(zero, g, expected);
    for (double padding : {std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(), -1e30}) {
      SCOPED_TRACE("padding " + std::to_string(padding));
      const LstmProblem q = with_padding(padding);
      const ForwardResult r = run_forward(q);
      const BackwardResult rb = run_backward(q, g, r);
      const NamedViews a = forward_outputs(r), b = forward_outputs(expected);
      for (std::size_t k = 0; k < a.size(); ++k) {
        EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
      }
      const NamedViews ga = backward_outputs(rb), gb = backward_outputs(expected_b);
      for (std::size_t k = 0; k < ga.size(); ++k) {
        EXPECT_TRUE(bitwise_equal(ga[k].second, gb[k].second)) << ga[k].first;
      }
    }
  }
}

// batch_first is ignored in variable-length mode.
TEST(VariableLength, BatchFirstIsIgnored) {
  LstmConfig c = variable_length_configs(DType::Float32)[0];
  const LstmProblem p = make_problem(c, 70);
  LstmProblem q = p;
  q.cfg.batch_first = true;
  const ForwardResult a = run_forward(p), b = run_forward(q);
  const NamedViews fa = forward_outputs(a), fb = forward_outputs(b);
  for (std::size_t k = 0; k < fa.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(fb[k].second, fa[k].second)) << fa[k].first;
  }
  const LstmGrads g = make_grads(p, 71);
  const BackwardResult ga = run_backward(p, g, a), gb = run_backward(q, g, b);
  const NamedViews ba = backward_outputs(ga), bb = backward_outputs(gb);
  for (std::size_t k = 0; k < ba.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(bb[k].second, ba[k].second)) << ba[k].first;
  }
}

// ---------------------------------------------------------------------------
// batch_first == transposed time-major call
// ---------------------------------------------------------------------------

void check_batch_first_equals_transposed(const LstmConfig& cfg, uint64_t seed) {
  SCOPED_TRACE(cfg.name());
  ASSERT_TRUE(cfg.batch_first);
  const LstmProblem p = make_problem(cfg, seed);  // input (B, T, I)
  LstmProblem q = p;
  q.cfg.batch_first = false;
  q.input = contiguous_copy(swap01(p.input));  // (T, B, I)
  LstmGrads g = make_grads(p, seed + 1);        // grad_y (B, T, D*H)
  LstmGrads qg = g;
  qg.grad_y = contiguous_copy(swap01(g.grad_y));

  const ForwardResult a = run_forward(p), b = run_forward(q);
  EXPECT_EQ(a.output.sizes(), (std::vector<int64_t>{cfg.B, cfg.T, cfg.D() * cfg.H}));
  EXPECT_TRUE(bitwise_equal(swap01(a.output), b.output)) << "output";
  const NamedViews fa = forward_outputs(a), fb = forward_outputs(b);
  for (std::size_t k = 1; k < fa.size(); ++k) {  // hy, cy and the time-major saved tensors
    EXPECT_TRUE(bitwise_equal(fa[k].second, fb[k].second)) << fa[k].first;
  }
  if (!cfg.train) return;
  const BackwardResult ga = run_backward(p, g, a), gb = run_backward(q, qg, b);
  EXPECT_EQ(ga.dx.sizes(), p.input.sizes());
  EXPECT_TRUE(bitwise_equal(swap01(ga.dx), gb.dx)) << "dx";
  const NamedViews ba = backward_outputs(ga), bb = backward_outputs(gb);
  for (std::size_t k = 1; k < ba.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(ba[k].second, bb[k].second)) << ba[k].first;
  }
}

TEST(BatchFirst, EqualsTransposedCall) {
  uint64_t seed = 80;
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16}) {
    for (int variant = 0; variant < 8; ++variant) {
      LstmConfig c;
      c.dtype = dtype;
      c.batch_first = true;
      c.T = variant % 2 ? 1 : 5;
      c.B = variant % 4 < 2 ? 3 : 1;
      c.I = 5;
      c.H = 7;
      c.L = variant < 4 ? 2 : 1;
      c.bidirectional = variant % 3 != 0;
      c.with_hx = variant % 2 == 0;
      c.train = variant != 6;
      check_batch_first_equals_transposed(c, seed += 2);
    }
  }
}

}  // namespace
}  // namespace lstmtest
