// The forward on PackedSequence rows (src/api/packed.h, what the PyTorch
// binding's lstmop::lstm runs for a PackedSequence in inference): input as
// the (N, I) valid rows, step by step, output (N, D*R) in the same rows.
//
// - Bitwise the valid rows of lstm_forward_out's variable-length call on the
//   padded (T*B, I) rows, and the same hy, cy, h, c: every dtype, layers,
//   directions, projections, with and without hx and biases, all lengths
//   equal or not, a strided input (rows not contiguous: gathered) and the
//   contiguous one (read in place).
// - The backward of a train = true call (lstm_backward_packed_out): dx's
//   packed rows bitwise the valid rows of lstm_backward_out's dx on the padded
//   rows, and the same dh0, dc0 and parameter gradients; the forward's saved
//   tensors bitwise the padded call's.
// - Bad arguments: an Error naming input (rows that do not match
//   batch_sizes), params[0] (features that do not match w_ih, as the padded
//   call names them), out.output (the padded shape instead of the packed one)
//   or batch_sizes (missing), and no input written.
#include <random>
#include <string>
#include <vector>

#include "api/packed.h"
#include "lstm_test_support.h"

namespace lstmtest {
namespace {

// The valid rows of a padded (T*B, F) tensor, in packed order, contiguous.
Tensor packed_rows_of(const TensorView& padded, const LstmConfig& c) {
  const int64_t F = padded.size(1);
  std::vector<double> rows;
  const std::vector<double> all = to_doubles(padded);
  for (int64_t t = 0; t < c.T; ++t) {
    for (int64_t b = 0; b < c.B; ++b) {
      if (t >= c.length(b)) continue;
      for (int64_t k = 0; k < F; ++k) rows.push_back(all[static_cast<std::size_t>((t * c.B + b) * F + k)]);
    }
  }
  const int64_t n = static_cast<int64_t>(rows.size()) / (F > 0 ? F : 1);
  return from_doubles(padded.dtype, {n, F}, rows);
}

// (N, F) in a buffer with rows `pad` elements apart beyond F: a strided view.
struct Strided {
  Tensor storage;
  TensorView view;
};
Strided with_row_gap(const TensorView& v, int64_t gap) {
  const int64_t n = v.size(0), F = v.size(1);
  Strided s;
  s.storage = filled(v.dtype, {n, F + gap}, 7.0);
  const std::vector<double> values = to_doubles(v);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t k = 0; k < F; ++k) store(s.storage.view(), r * (F + gap) + k, values[r * F + k]);
  }
  s.view = TensorView(s.storage.view().data, v.dtype, {n, F}, {F + gap, 1});
  return s;
}

struct PackedOutputs {
  Tensor output, hy, cy, h, c, i, j, f, o, tanhc;
  lstmop::ForwardOutputs views() const {
    return {output.view(), hy.view(), cy.view(), i.view(), j.view(),
            f.view(),      o.view(),  h.view(),  c.view(), tanhc.view()};
  }
};

PackedOutputs packed_outputs(const LstmConfig& c, int64_t rows) {
  PackedOutputs o;
  o.output = filled(c.dtype, {rows, c.D() * c.R()}, 3.0);
  o.hy = filled(c.dtype, {c.S(), c.B, c.R()}, 3.0);
  o.cy = filled(c.dtype, {c.S(), c.B, c.H}, 3.0);
  o.h = filled(c.dtype, {c.S(), c.B, c.R()}, 3.0);
  o.c = filled(c.dtype, {c.S(), c.B, c.H}, 3.0);
  for (Tensor* t : {&o.i, &o.j, &o.f, &o.o, &o.tanhc}) *t = Tensor::empty(c.dtype, {0});
  return o;
}

void run_packed(const LstmProblem& p, const TensorView& input, const PackedOutputs& out) {
  lstmop::detail::lstm_forward_packed_out(out.views(), input, p.hx_list(), p.param_list(),
                                          p.cfg.has_biases, p.cfg.L, p.cfg.bidirectional,
                                          p.batch_sizes_view());
}

void check_packed_equals_padded(const LstmConfig& cfg, uint64_t seed) {
  SCOPED_TRACE(cfg.name());
  const LstmProblem p = make_problem(cfg, seed);
  const ForwardResult padded = run_forward(p);  // lstm_forward, train = false
  const Tensor input = packed_rows_of(p.input.view(), cfg);
  const Tensor expected = packed_rows_of(padded.output.view(), cfg);
  const Strided strided = with_row_gap(input.view(), 3);
  for (const TensorView* in : {&input.view(), &strided.view}) {
    SCOPED_TRACE(in == &input.view() ? "contiguous input" : "strided input");
    Snapshot before;
    before.add_problem(p);
    before.add("packed input", *in);
    const PackedOutputs out = packed_outputs(cfg, input.view().size(0));
    run_packed(p, *in, out);
    EXPECT_TRUE(bitwise_equal(out.output.view(), expected.view())) << "output";
    EXPECT_TRUE(bitwise_equal(out.hy.view(), padded.hy.view())) << "hy";
    EXPECT_TRUE(bitwise_equal(out.cy.view(), padded.cy.view())) << "cy";
    EXPECT_TRUE(bitwise_equal(out.h.view(), padded.h.view())) << "h";
    EXPECT_TRUE(bitwise_equal(out.c.view(), padded.c.view())) << "c";
    EXPECT_TRUE(before.unchanged());
  }
}

// Training: the forward with saved activations and the backward, packed
// against padded.
void check_packed_training_equals_padded(LstmConfig cfg, uint64_t seed) {
  cfg.train = true;
  SCOPED_TRACE(cfg.name() + " (training)");
  const LstmProblem p = make_problem(cfg, seed);
  const LstmGrads g = make_grads(p, seed + 1);
  const ForwardResult padded = run_forward(p);
  const BackwardResult padded_b = run_backward(p, g, padded);
  const Tensor input = packed_rows_of(p.input.view(), cfg);
  const Tensor grad_y = packed_rows_of(g.grad_y.view(), cfg);
  const int64_t n = input.view().size(0);
  ForwardResult f;
  f.output = filled(cfg.dtype, {n, cfg.D() * cfg.R()}, 3.0);
  f.hy = Tensor::empty(cfg.dtype, padded.hy.view().sizes);
  f.cy = Tensor::empty(cfg.dtype, padded.cy.view().sizes);
  for (auto [dst, src] : {std::pair{&f.i, &padded.i}, {&f.j, &padded.j}, {&f.f, &padded.f},
                          {&f.o, &padded.o}, {&f.h, &padded.h}, {&f.c, &padded.c},
                          {&f.tanhc, &padded.tanhc}}) {
    *dst = filled(cfg.dtype, src->view().sizes, 3.0);
  }
  lstmop::detail::lstm_forward_packed_out(f.views(), input.view(), p.hx_list(), p.param_list(),
                                          cfg.has_biases, cfg.L, cfg.bidirectional,
                                          p.batch_sizes_view(), /*train=*/true);
  EXPECT_TRUE(bitwise_equal(f.output.view(), packed_rows_of(padded.output.view(), cfg).view()))
      << "output";
  const NamedViews a = forward_outputs(f), b = forward_outputs(padded);
  for (std::size_t k = 1; k < a.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
  }
  BackwardResult r;
  r.dx = filled(cfg.dtype, {n, cfg.I}, 3.0);
  r.dhx = {filled(cfg.dtype, padded_b.dhx[0].view().sizes, 3.0),
           filled(cfg.dtype, padded_b.dhx[1].view().sizes, 3.0)};
  for (const Tensor& d : padded_b.dparams) r.dparams.push_back(filled(cfg.dtype, d.view().sizes, 3.0));
  Snapshot before;
  before.add_problem(p);
  before.add("packed input", input.view());
  before.add("packed grad_y", grad_y.view());
  lstmop::detail::lstm_backward_packed_out(
      r.views(), grad_y.view(), g.grad_hy.view(), g.grad_cy.view(), input.view(), p.hx_list(),
      p.param_list(), f.i.view(), f.j.view(), f.f.view(), f.o.view(), f.h.view(), f.c.view(),
      f.tanhc.view(), cfg.has_biases, cfg.L, cfg.bidirectional, p.batch_sizes_view());
  EXPECT_TRUE(bitwise_equal(r.dx.view(), packed_rows_of(padded_b.dx.view(), cfg).view()))
      << "dx";
  const NamedViews ga = backward_outputs(r), gb = backward_outputs(padded_b);
  for (std::size_t k = 1; k < ga.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(ga[k].second, gb[k].second)) << ga[k].first;
  }
  EXPECT_TRUE(before.unchanged());
}

std::vector<LstmConfig> packed_configs(DType dtype) {
  std::vector<LstmConfig> out;
  std::mt19937_64 rng(11);
  for (int variant = 0; variant < 6; ++variant) {
    LstmConfig c;
    c.dtype = dtype;
    c.train = false;
    c.packed = true;
    c.T = 7;
    c.B = 5;
    c.I = 9;
    c.H = 20;  // a partial last vector of units in every ISA
    c.L = 1 + variant % 2;
    c.bidirectional = variant % 3 != 1;
    c.has_biases = variant != 2;
    c.with_hx = variant != 3;
    c.P = variant == 4 ? 6 : 0;
    c.lengths = random_lengths(c.T, c.B, rng);
    if (variant == 5) c.lengths = {7, 7, 7, 7, 7};  // packed rows == padded rows
    if (variant == 2) c.lengths = {7, 3, 1, 1, 1};
    out.push_back(c);
  }
  return out;
}

TEST(PackedRows, EqualPaddedCallBitwise) {
  uint64_t seed = 300;
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16}) {
    for (const LstmConfig& c : packed_configs(dtype)) check_packed_equals_padded(c, seed += 7);
  }
}

TEST(PackedRows, TrainingEqualsPaddedCallBitwise) {
  uint64_t seed = 600;
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16}) {
    for (const LstmConfig& c : packed_configs(dtype)) {
      check_packed_training_equals_padded(c, seed += 7);
    }
  }
}

TEST(PackedRows, LargerShapesThroughTheFastPaths) {
  // Sizes that take the fused step's prefetching and the split/direction threads.
  LstmConfig c;
  c.train = false;
  c.packed = true;
  c.T = 12;
  c.B = 9;
  c.I = 96;
  c.H = 160;
  c.L = 2;
  c.bidirectional = true;
  std::mt19937_64 rng(5);
  c.lengths = random_lengths(c.T, c.B, rng);
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    c.dtype = dtype;
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      lstmop::set_num_threads(threads);
      check_packed_equals_padded(c, 400);
      check_packed_training_equals_padded(c, 410);
    }
  }
  lstmop::set_num_threads(1);
}

// An Error naming `argument`, and the caller's inputs unwritten.
template <class Call>
void expect_error(const LstmProblem& p, const std::string& argument, Call call) {
  SCOPED_TRACE(argument);
  Snapshot before;
  before.add_problem(p);
  try {
    call();
    ADD_FAILURE() << "no error";
  } catch (const lstmop::Error& e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
  }
  EXPECT_TRUE(before.unchanged());
}

TEST(PackedRows, BadArgumentsNameTheArgument) {
  LstmConfig c = packed_configs(DType::Float32)[0];
  const LstmProblem p = make_problem(c, 500);
  const Tensor input = packed_rows_of(p.input.view(), c);
  const int64_t n = input.view().size(0);
  // Rows that do not match batch_sizes: the padded rows, one row short.
  expect_error(p, "input", [&] { run_packed(p, p.input.view(), packed_outputs(c, c.T * c.B)); });
  const Tensor short_input = Tensor::zeros(c.dtype, {n - 1, c.I});
  expect_error(p, "input", [&] { run_packed(p, short_input.view(), packed_outputs(c, n - 1)); });
  // Features that do not match w_ih: named as the padded call names them.
  const Tensor narrow = Tensor::zeros(c.dtype, {n, c.I - 1});
  expect_error(p, "params[0]", [&] { run_packed(p, narrow.view(), packed_outputs(c, n)); });
  // The output in the padded shape.
  expect_error(p, "out.output",
               [&] { run_packed(p, input.view(), packed_outputs(c, c.T * c.B)); });
  // No batch_sizes.
  expect_error(p, "batch_sizes", [&] {
    lstmop::detail::lstm_forward_packed_out(packed_outputs(c, n).views(), input.view(),
                                            p.hx_list(), p.param_list(), c.has_biases, c.L,
                                            c.bidirectional, TensorView());
  });
}

}  // namespace
}  // namespace lstmtest
