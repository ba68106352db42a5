// dtypes, the _out forms and the shape functions:
// - float16 / bfloat16 results are within a stated tolerance of the float64
//   reference run on the same (rounded) data, forward and backward;
// - every result has the input's dtype, for all four dtypes;
// - the _out forms write into caller buffers exactly what the allocating
//   forms return;
// - lstm_forward_shapes / lstm_backward_shapes give the documented shapes in
//   every mode (train=False, packed, batch_first) and work on shape-only
//   views (data == nullptr).
//
// float16 / bfloat16 tolerance, relative to max(1, max |reference|) of each
// tensor, in units of the dtype's machine epsilon eps = 2u (u = unit
// roundoff; 2^-10 and 2^-7):
// - forward: L * eps. Every stored result is rounded once (u); the input of
//   each layer after the first is the previous layer's rounded output
//   (another u each, carried with a gain of about 1 by weights of size
//   1/sqrt(H)); the float32 arithmetic adds ~1e-6. That is L * u, doubled.
// - backward: 4 * eps. Every product of the backward has about four factors
//   read from rounded saved tensors (i, f, o, tanhc, c), each within u, plus
//   the rounding of the result: ~5u; the rest is margin for the sums.
// Measured on these shapes: forward <= 0.46 eps, backward <= 0.78 eps.
#include <cstring>
#include <random>

#include "lstm_test_support.h"

namespace lstmtest {
namespace {

// ---------------------------------------------------------------------------
// float16 / bfloat16 vs the float64 reference
// ---------------------------------------------------------------------------

void check_low_precision(const LstmConfig& cfg, uint64_t seed) {
  SCOPED_TRACE(cfg.name());
  expect_low_precision_near_reference(make_problem(cfg, seed), seed + 1);  // rounded to cfg.dtype
}

void low_precision_sweep(DType dtype) {
  uint64_t seed = 700;
  std::mt19937_64 rng(11);
  for (int64_t L = 1; L <= 3; ++L) {
    for (int64_t T : {1, 5}) {
      for (int flags = 0; flags < 4; ++flags) {
        LstmConfig c;
        c.dtype = dtype;
        c.T = T;
        c.B = 4;
        c.I = 17;
        c.H = 34;
        c.L = L;
        c.bidirectional = flags & 1;
        c.packed = flags & 2;
        c.batch_first = !c.packed && L == 2;
        c.with_hx = L != 3;
        if (c.packed) c.lengths = random_lengths(T, c.B, rng);
        check_low_precision(c, seed += 2);
      }
    }
  }
}

TEST(LowPrecision, Float16WithinToleranceOfFloat64Reference) {
  low_precision_sweep(DType::Float16);
}

TEST(LowPrecision, BFloat16WithinToleranceOfFloat64Reference) {
  low_precision_sweep(DType::BFloat16);
}

// ---------------------------------------------------------------------------
// Result dtypes
// ---------------------------------------------------------------------------

TEST(Dtypes, EveryResultHasTheInputDtype) {
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (bool train : {true, false}) {
      LstmConfig c;
      c.dtype = dtype;
      c.L = 2;
      c.bidirectional = true;
      c.train = train;
      SCOPED_TRACE(c.name());
      const LstmProblem p = make_problem(c, 800);
      const ForwardResult fwd = run_forward(p);
      for (const auto& named : forward_outputs(fwd)) {
        EXPECT_EQ(named.second.dtype, dtype) << named.first;
      }
      if (!train) continue;
      const BackwardResult bwd = run_backward(p, make_grads(p, 801), fwd);
      for (const auto& named : backward_outputs(bwd)) {
        EXPECT_EQ(named.second.dtype, dtype) << named.first;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// _out forms == allocating forms
// ---------------------------------------------------------------------------

// Caller buffers filled with a byte pattern that is no plausible result.
Tensor sentinel(DType dtype, const std::vector<int64_t>& sizes) {
  Tensor t = Tensor::empty(dtype, sizes);
  if (t.numel() > 0) {
    std::memset(t.data<unsigned char>(), 0xA5,
                static_cast<std::size_t>(t.numel()) * lstmop::dtype_size(dtype));
  }
  return t;
}

std::vector<LstmConfig> out_form_configs() {
  std::vector<LstmConfig> out;
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    for (int variant = 0; variant < 4; ++variant) {
      LstmConfig c;
      c.dtype = dtype;
      c.T = 4;
      c.B = 3;
      c.I = 5;
      c.H = 6;
      c.L = 2;
      c.bidirectional = variant % 2 == 0;
      c.train = variant != 3;
      c.packed = variant >= 2;
      c.batch_first = variant == 1;
      c.with_hx = variant != 0;
      if (c.packed) c.lengths = {4, 3, 1};
      out.push_back(c);
    }
  }
  return out;
}

TEST(OutForms, ForwardOutEqualsAllocatingForm) {
  for (const LstmConfig& c : out_form_configs()) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 810);
    const ForwardResult expected = run_forward(p);
    const lstmop::ForwardShapes s =
        lstmop::lstm_forward_shapes(p.input, p.hx_list(), p.param_list(), c.has_biases, c.L, 0.0,
                                    c.train, c.bidirectional, c.batch_first, p.batch_sizes_view());
    ForwardResult buffers;
    buffers.output = sentinel(c.dtype, s.output);
    buffers.hy = sentinel(c.dtype, s.hy);
    buffers.cy = sentinel(c.dtype, s.cy);
    buffers.i = sentinel(c.dtype, s.i);
    buffers.j = sentinel(c.dtype, s.j);
    buffers.f = sentinel(c.dtype, s.f);
    buffers.o = sentinel(c.dtype, s.o);
    buffers.h = sentinel(c.dtype, s.h);
    buffers.c = sentinel(c.dtype, s.c);
    buffers.tanhc = sentinel(c.dtype, s.tanhc);
    lstmop::lstm_forward_out(buffers.views(), p.input, p.hx_list(), p.param_list(), c.has_biases,
                             c.L, 0.0, c.train, c.bidirectional, c.batch_first,
                             p.batch_sizes_view());
    const NamedViews a = forward_outputs(buffers), b = forward_outputs(expected);
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
    }
  }
}

TEST(OutForms, BackwardOutEqualsAllocatingForm) {
  for (const LstmConfig& c : out_form_configs()) {
    if (!c.train) continue;
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 820);
    const LstmGrads g = make_grads(p, 821);
    const ForwardResult fwd = run_forward(p);
    const BackwardResult expected = run_backward(p, g, fwd);
    const lstmop::BackwardShapes s = lstmop::lstm_backward_shapes(
        g.grad_y, g.grad_hy, g.grad_cy, p.input, p.hx_list(), p.param_list(), fwd.i, fwd.j,
        fwd.f, fwd.o, fwd.h, fwd.c, fwd.tanhc, c.has_biases, c.L, 0.0, true, c.bidirectional,
        c.batch_first, p.batch_sizes_view());
    BackwardResult buffers;
    buffers.dx = sentinel(c.dtype, s.dx);
    buffers.dhx = {sentinel(c.dtype, s.dh0), sentinel(c.dtype, s.dc0)};
    for (const auto& shape : s.dparams) buffers.dparams.push_back(sentinel(c.dtype, shape));
    lstmop::lstm_backward_out(buffers.views(), g.grad_y, g.grad_hy, g.grad_cy, p.input,
                              p.hx_list(), p.param_list(), fwd.i, fwd.j, fwd.f, fwd.o, fwd.h,
                              fwd.c, fwd.tanhc, c.has_biases, c.L, 0.0, true, c.bidirectional,
                              c.batch_first, p.batch_sizes_view());
    const NamedViews a = backward_outputs(buffers), b = backward_outputs(expected);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
    }
  }
}

// The _into forms: one allocation callback, called once with the shapes the
// shape functions give, after the argument checks; the bits of the allocating
// forms; the views it returns checked as the _out forms check theirs.
TEST(IntoForms, ForwardIntoEqualsAllocatingFormAndAllocatesOnce) {
  for (const LstmConfig& c : out_form_configs()) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 830);
    const ForwardResult expected = run_forward(p);
    const lstmop::ForwardShapes s =
        lstmop::lstm_forward_shapes(p.input, p.hx_list(), p.param_list(), c.has_biases, c.L, 0.0,
                                    c.train, c.bidirectional, c.batch_first, p.batch_sizes_view());
    ForwardResult buffers;
    int calls = 0;
    lstmop::lstm_forward_into(
        [&](const lstmop::ForwardShapes& shapes) {
          ++calls;
          EXPECT_EQ(shapes.output, s.output);
          EXPECT_EQ(shapes.hy, s.hy);
          EXPECT_EQ(shapes.cy, s.cy);
          EXPECT_EQ(shapes.i, s.i);
          EXPECT_EQ(shapes.h, s.h);
          EXPECT_EQ(shapes.c, s.c);
          EXPECT_EQ(shapes.tanhc, s.tanhc);
          buffers.output = sentinel(c.dtype, shapes.output);
          buffers.hy = sentinel(c.dtype, shapes.hy);
          buffers.cy = sentinel(c.dtype, shapes.cy);
          buffers.i = sentinel(c.dtype, shapes.i);
          buffers.j = sentinel(c.dtype, shapes.j);
          buffers.f = sentinel(c.dtype, shapes.f);
          buffers.o = sentinel(c.dtype, shapes.o);
          buffers.h = sentinel(c.dtype, shapes.h);
          buffers.c = sentinel(c.dtype, shapes.c);
          buffers.tanhc = sentinel(c.dtype, shapes.tanhc);
          return buffers.views();
        },
        p.input, p.hx_list(), p.param_list(), c.has_biases, c.L, 0.0, c.train, c.bidirectional,
        c.batch_first, p.batch_sizes_view());
    EXPECT_EQ(calls, 1);
    const NamedViews a = forward_outputs(buffers), b = forward_outputs(expected);
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
    }
  }
}

TEST(IntoForms, BackwardIntoEqualsAllocatingForm) {
  for (const LstmConfig& c : out_form_configs()) {
    if (!c.train) continue;
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 840);
    const LstmGrads g = make_grads(p, 841);
    const ForwardResult fwd = run_forward(p);
    const BackwardResult expected = run_backward(p, g, fwd);
    BackwardResult buffers;
    int calls = 0;
    lstmop::lstm_backward_into(
        [&](const lstmop::BackwardShapes& shapes) {
          ++calls;
          buffers.dx = sentinel(c.dtype, shapes.dx);
          buffers.dhx = {sentinel(c.dtype, shapes.dh0), sentinel(c.dtype, shapes.dc0)};
          for (const auto& shape : shapes.dparams) {
            buffers.dparams.push_back(sentinel(c.dtype, shape));
          }
          return buffers.views();
        },
        g.grad_y, g.grad_hy, g.grad_cy, p.input, p.hx_list(), p.param_list(), fwd.i, fwd.j,
        fwd.f, fwd.o, fwd.h, fwd.c, fwd.tanhc, c.has_biases, c.L, 0.0, true, c.bidirectional,
        c.batch_first, p.batch_sizes_view());
    EXPECT_EQ(calls, 1);
    const NamedViews a = backward_outputs(buffers), b = backward_outputs(expected);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
    }
  }
}

TEST(IntoForms, BadArgumentsFailBeforeTheCallbackAndBadViewsAfterIt) {
  LstmConfig c = out_form_configs()[0];
  const LstmProblem p = make_problem(c, 850);
  int calls = 0;
  auto fresh = [&](const lstmop::ForwardShapes& shapes, ForwardResult& r) {
    ++calls;
    r.output = sentinel(c.dtype, shapes.output);
    r.hy = sentinel(c.dtype, shapes.hy);
    r.cy = sentinel(c.dtype, shapes.cy);
    r.i = sentinel(c.dtype, shapes.i);
    r.j = sentinel(c.dtype, shapes.j);
    r.f = sentinel(c.dtype, shapes.f);
    r.o = sentinel(c.dtype, shapes.o);
    r.h = sentinel(c.dtype, shapes.h);
    r.c = sentinel(c.dtype, shapes.c);
    r.tanhc = sentinel(c.dtype, shapes.tanhc);
    return r.views();
  };
  ForwardResult r;
  // A bad argument: lstmop::Error naming it, and no allocation.
  try {
    lstmop::lstm_forward_into([&](const lstmop::ForwardShapes& s) { return fresh(s, r); },
                              p.input, p.hx_list(), p.param_list(), c.has_biases, c.L + 1, 0.0,
                              c.train, c.bidirectional, c.batch_first, p.batch_sizes_view());
    ADD_FAILURE() << "no error";
  } catch (const lstmop::Error& e) {
    EXPECT_EQ(e.argument(), "params") << e.what();
  }
  EXPECT_EQ(calls, 0);
  // A view of the wrong shape from the callback: the _out form's error, nothing written.
  try {
    lstmop::lstm_forward_into(
        [&](const lstmop::ForwardShapes& s) {
          lstmop::ForwardOutputs out = fresh(s, r);
          std::vector<int64_t> wrong = s.hy;
          wrong.back() += 1;
          r.hy = sentinel(c.dtype, wrong);
          out.hy = r.hy.view();
          return out;
        },
        p.input, p.hx_list(), p.param_list(), c.has_biases, c.L, 0.0, c.train, c.bidirectional,
        c.batch_first, p.batch_sizes_view());
    ADD_FAILURE() << "no error";
  } catch (const lstmop::Error& e) {
    EXPECT_EQ(e.argument(), "out.hy") << e.what();
  }
  const Tensor untouched = sentinel(c.dtype, r.output.sizes());
  EXPECT_TRUE(bitwise_equal(r.output.view(), untouched.view()));
  // The callback's own exception comes through.
  EXPECT_THROW(lstmop::lstm_forward_into(
                   [&](const lstmop::ForwardShapes&) -> lstmop::ForwardOutputs {
                     throw std::runtime_error("caller's allocation failed");
                   },
                   p.input, p.hx_list(), p.param_list(), c.has_biases, c.L, 0.0, c.train,
                   c.bidirectional, c.batch_first, p.batch_sizes_view()),
               std::runtime_error);
}

// ---------------------------------------------------------------------------
// Shape functions on shape-only views
// ---------------------------------------------------------------------------

TensorView meta(DType dtype, const std::vector<int64_t>& sizes) {
  return TensorView(nullptr, dtype, sizes);
}

TEST(ShapeFunctions, DocumentedShapesOnShapeOnlyViews) {
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    for (int flags = 0; flags < 64; ++flags) {
      const bool has_biases = flags & 1, bidirectional = flags & 2, batch_first = flags & 4,
                 train = flags & 8, packed = flags & 16, with_hx = flags & 32;
      const int64_t T = 5, B = 3, I = 7, H = 4, L = 1 + flags % 3;
      const int64_t D = bidirectional ? 2 : 1, S = D * L;
      SCOPED_TRACE("flags " + std::to_string(flags) + " L " + std::to_string(L));
      const TensorView input =
          packed ? meta(dtype, {T * B, I})
                 : (batch_first ? meta(dtype, {B, T, I}) : meta(dtype, {T, B, I}));
      const TensorView batch_sizes = packed ? meta(DType::Int64, {T}) : TensorView();
      TensorList hx;
      if (with_hx) hx = {meta(dtype, {S, B, H}), meta(dtype, {S, B, H})};
      TensorList params;
      for (int64_t l = 0; l < L; ++l) {
        for (int64_t d = 0; d < D; ++d) {
          params.push_back(meta(dtype, {4 * H, l == 0 ? I : D * H}));
          params.push_back(meta(dtype, {4 * H, H}));
          if (has_biases) {
            params.push_back(meta(dtype, {4 * H}));
            params.push_back(meta(dtype, {4 * H}));
          }
        }
      }
      const lstmop::ForwardShapes s = lstmop::lstm_forward_shapes(
          input, hx, params, has_biases, L, 0.0, train, bidirectional, batch_first, batch_sizes);
      const std::vector<int64_t> output = packed ? std::vector<int64_t>{T * B, D * H}
                                          : batch_first ? std::vector<int64_t>{B, T, D * H}
                                                        : std::vector<int64_t>{T, B, D * H};
      const std::vector<int64_t> state{S, B, H}, steps{S, T, B, H}, none{0};
      EXPECT_EQ(s.output, output);
      EXPECT_EQ(s.hy, state);
      EXPECT_EQ(s.cy, state);
      for (const auto* gate : {&s.i, &s.j, &s.f, &s.o, &s.tanhc}) {
        EXPECT_EQ(*gate, train ? steps : none);
      }
      EXPECT_EQ(s.h, train ? steps : state);
      EXPECT_EQ(s.c, train ? steps : state);
      if (!train) continue;

      // The backward on shape-only saved tensors, with and without grads.
      for (bool with_grads : {true, false}) {
        const TensorView grad_y = with_grads ? meta(dtype, output) : TensorView();
        const TensorView grad_h = with_grads ? meta(dtype, state) : TensorView();
        const TensorView saved = meta(dtype, steps);
        const lstmop::BackwardShapes bs = lstmop::lstm_backward_shapes(
            grad_y, grad_h, grad_h, input, hx, params, saved, saved, saved, saved, saved, saved,
            saved, has_biases, L, 0.0, true, bidirectional, batch_first, batch_sizes);
        EXPECT_EQ(bs.dx, input.sizes);
        EXPECT_EQ(bs.dh0, state);  // also when hx is empty
        EXPECT_EQ(bs.dc0, state);
        ASSERT_EQ(bs.dparams.size(), params.size());
        for (std::size_t k = 0; k < params.size(); ++k) EXPECT_EQ(bs.dparams[k], params[k].sizes);
      }
    }
  }
}

// The allocating forms return tensors of the shape functions' shapes.
TEST(ShapeFunctions, AllocatingFormsMatchShapeFunctions) {
  for (const LstmConfig& c : out_form_configs()) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 830);
    const ForwardResult r = run_forward(p);
    const lstmop::ForwardShapes s =
        lstmop::lstm_forward_shapes(p.input, p.hx_list(), p.param_list(), c.has_biases, c.L, 0.0,
                                    c.train, c.bidirectional, c.batch_first, p.batch_sizes_view());
    EXPECT_EQ(r.output.sizes(), s.output);
    EXPECT_EQ(r.hy.sizes(), s.hy);
    EXPECT_EQ(r.cy.sizes(), s.cy);
    EXPECT_EQ(r.i.sizes(), s.i);
    EXPECT_EQ(r.j.sizes(), s.j);
    EXPECT_EQ(r.f.sizes(), s.f);
    EXPECT_EQ(r.o.sizes(), s.o);
    EXPECT_EQ(r.h.sizes(), s.h);
    EXPECT_EQ(r.c.sizes(), s.c);
    EXPECT_EQ(r.tanhc.sizes(), s.tanhc);
    if (!c.train) continue;
    const BackwardResult b = run_backward(p, make_grads(p, 831), r);
    EXPECT_EQ(b.dx.sizes(), p.input.sizes());
    ASSERT_EQ(b.dhx.size(), 2u);
    EXPECT_EQ(b.dhx[0].sizes(), s.hy);
    EXPECT_EQ(b.dhx[1].sizes(), s.cy);
    ASSERT_EQ(b.dparams.size(), p.params.size());
    for (std::size_t k = 0; k < p.params.size(); ++k) {
      EXPECT_EQ(b.dparams[k].sizes(), p.params[k].sizes());
    }
  }
}

}  // namespace
}  // namespace lstmtest
