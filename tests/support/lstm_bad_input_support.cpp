#include "lstm_bad_input_support.h"

#include <cstring>
#include <utility>

namespace lstmtest {

namespace {

bool names_field(const std::string& argument, const std::string& field) {
  const std::string suffix = "." + field;
  return argument == field ||
         (argument.size() > suffix.size() &&
          argument.compare(argument.size() - suffix.size(), suffix.size(), suffix) == 0);
}

::testing::AssertionResult throws_error_where(
    const std::function<void()>& fn, const std::string& argument,
    const std::vector<std::string>& contains,
    const std::function<bool(const std::string&)>& argument_ok) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    const auto* error = dynamic_cast<const lstmop::Error*>(&e);
    if (error == nullptr) {
      return ::testing::AssertionFailure()
             << "threw a std::invalid_argument that is not an lstmop::Error: " << e.what();
    }
    const std::string what = e.what();
    if (!argument_ok(error->argument())) {
      return ::testing::AssertionFailure() << "argument() is '" << error->argument()
                                           << "', expected '" << argument << "': " << what;
    }
    for (const std::string& s : contains) {
      if (what.find(s) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message lacks '" << s << "' (argument " << argument << "): " << what;
      }
    }
    return ::testing::AssertionSuccess() << what;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw another exception type: " << e.what();
  } catch (...) {
    return ::testing::AssertionFailure() << "threw a non-std exception";
  }
  return ::testing::AssertionFailure() << "did not throw (expected an Error for " << argument
                                       << ")";
}

}  // namespace

::testing::AssertionResult throws_error(const std::function<void()>& fn,
                                        const std::string& argument,
                                        const std::vector<std::string>& contains) {
  return throws_error_where(fn, argument, contains,
                            [&](const std::string& a) { return a == argument; });
}

::testing::AssertionResult throws_output_error(const std::function<void()>& fn,
                                               const std::string& field,
                                               const std::vector<std::string>& contains) {
  return throws_error_where(fn, field, contains,
                            [&](const std::string& a) { return names_field(a, field); });
}

TensorView ForwardArgs::own(Tensor t) {
  keep.push_back(std::move(t));
  return keep.back().view();
}

ForwardArgs forward_args(const LstmProblem& p) {
  ForwardArgs a;
  a.input = p.input;
  a.hx = p.hx_list();
  a.params = p.param_list();
  a.has_biases = p.cfg.has_biases;
  a.num_layers = p.cfg.L;
  a.train = p.cfg.train;
  a.bidirectional = p.cfg.bidirectional;
  a.batch_first = p.cfg.batch_first;
  a.batch_sizes = p.batch_sizes_view();
  return a;
}

BackwardArgs backward_args(const LstmProblem& p) {
  BackwardArgs a;
  a.fwd = forward_args(p);
  a.fwd.train = true;
  LstmProblem q = p;
  q.cfg.train = true;
  a.saved_owner = run_forward(q);
  a.grads_owner = make_grads(p, 4242);
  a.grad_y = a.grads_owner.grad_y;
  a.grad_hy = a.grads_owner.grad_hy;
  a.grad_cy = a.grads_owner.grad_cy;
  const ForwardResult& s = a.saved_owner;
  a.i = s.i;
  a.j = s.j;
  a.f = s.f;
  a.o = s.o;
  a.h = s.h;
  a.c = s.c;
  a.tanhc = s.tanhc;
  return a;
}

namespace {

constexpr unsigned char kSentinel = 0xA5;

Tensor sentinel_tensor(DType dtype, const std::vector<int64_t>& sizes) {
  Tensor t = Tensor::empty(dtype, sizes);
  if (t.numel() > 0) {
    std::memset(t.data<unsigned char>(), kSentinel,
                static_cast<std::size_t>(t.numel()) * lstmop::dtype_size(dtype));
  }
  return t;
}

::testing::AssertionResult all_sentinel(const NamedViews& views) {
  for (const auto& named : views) {
    for (unsigned char byte : to_bytes(named.second)) {
      if (byte != kSentinel) {
        return ::testing::AssertionFailure() << "caller output " << named.first << " was written";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

ForwardResult sentinel_forward_outputs(const LstmProblem& p) {
  const ForwardResult shapes = run_forward(p);
  ForwardResult r;
  const DType dt = p.cfg.dtype;
  r.output = sentinel_tensor(dt, shapes.output.sizes());
  r.hy = sentinel_tensor(dt, shapes.hy.sizes());
  r.cy = sentinel_tensor(dt, shapes.cy.sizes());
  r.i = sentinel_tensor(dt, shapes.i.sizes());
  r.j = sentinel_tensor(dt, shapes.j.sizes());
  r.f = sentinel_tensor(dt, shapes.f.sizes());
  r.o = sentinel_tensor(dt, shapes.o.sizes());
  r.h = sentinel_tensor(dt, shapes.h.sizes());
  r.c = sentinel_tensor(dt, shapes.c.sizes());
  r.tanhc = sentinel_tensor(dt, shapes.tanhc.sizes());
  return r;
}

BackwardResult sentinel_backward_outputs(const LstmProblem& p) {
  const DType dt = p.cfg.dtype;
  const std::vector<int64_t> hidden{p.cfg.S(), p.cfg.B, p.cfg.R()};
  const std::vector<int64_t> cell{p.cfg.S(), p.cfg.B, p.cfg.H};
  BackwardResult r;
  r.dx = sentinel_tensor(dt, p.input.sizes());
  r.dhx = {sentinel_tensor(dt, hidden), sentinel_tensor(dt, cell)};
  for (const Tensor& t : p.params) r.dparams.push_back(sentinel_tensor(dt, t.sizes()));
  return r;
}

::testing::AssertionResult untouched(const ForwardResult& r) {
  return all_sentinel(forward_outputs(r));
}

::testing::AssertionResult untouched(const BackwardResult& r) {
  return all_sentinel(backward_outputs(r));
}

namespace {

// Only views whose data can be read (a test may pass shape-only views).
bool readable(const TensorView& v) {
  return v.defined && v.strides.size() == v.sizes.size() && (v.data != nullptr || v.numel() == 0);
}

void add_readable(Snapshot* s, const std::string& name, const TensorView& v) {
  if (readable(v)) s->add(name, v);
}

void snapshot_forward(Snapshot* s, const ForwardArgs& a) {
  add_readable(s, "input", a.input);
  for (std::size_t k = 0; k < a.hx.size(); ++k) {
    add_readable(s, "hx[" + std::to_string(k) + "]", a.hx[k]);
  }
  for (std::size_t k = 0; k < a.params.size(); ++k) {
    add_readable(s, "params[" + std::to_string(k) + "]", a.params[k]);
  }
  add_readable(s, "batch_sizes", a.batch_sizes);
}

}  // namespace

void expect_forward_rejected(const ForwardArgs& a, const LstmProblem& valid,
                             const std::string& argument,
                             const std::vector<std::string>& contains, bool values_only) {
  Snapshot before;
  snapshot_forward(&before, a);
  EXPECT_TRUE(throws_error(
      [&] {
        lstmop::lstm_forward(a.input, a.hx, a.params, a.has_biases, a.num_layers, a.dropout,
                             a.train, a.bidirectional, a.batch_first, a.batch_sizes);
      },
      argument, contains))
      << "lstm_forward";
  EXPECT_TRUE(throws_error(
      [&] {
        lstmop::reference::lstm_forward(a.input, a.hx, a.params, a.has_biases, a.num_layers,
                                        a.dropout, a.train, a.bidirectional, a.batch_first,
                                        a.batch_sizes);
      },
      argument, contains))
      << "reference::lstm_forward";
  if (!values_only) {
    EXPECT_TRUE(throws_error(
        [&] {
          lstmop::lstm_forward_shapes(a.input, a.hx, a.params, a.has_biases, a.num_layers,
                                      a.dropout, a.train, a.bidirectional, a.batch_first,
                                      a.batch_sizes);
        },
        argument, contains))
        << "lstm_forward_shapes";
  }
  const ForwardResult out = sentinel_forward_outputs(valid);
  EXPECT_TRUE(throws_error(
      [&] {
        lstmop::lstm_forward_out(out.views(), a.input, a.hx, a.params, a.has_biases,
                                 a.num_layers, a.dropout, a.train, a.bidirectional,
                                 a.batch_first, a.batch_sizes);
      },
      argument, contains))
      << "lstm_forward_out";
  EXPECT_TRUE(untouched(out)) << "lstm_forward_out";
  EXPECT_TRUE(before.unchanged());
}

void expect_backward_rejected(const BackwardArgs& b, const LstmProblem& valid,
                              const std::string& argument,
                              const std::vector<std::string>& contains, bool values_only) {
  const ForwardArgs& a = b.fwd;
  Snapshot before;
  snapshot_forward(&before, a);
  const std::pair<const char*, const TensorView*> grads_and_saved[] = {
      {"grad_y", &b.grad_y}, {"grad_hy", &b.grad_hy}, {"grad_cy", &b.grad_cy},
      {"i", &b.i},           {"j", &b.j},             {"f", &b.f},
      {"o", &b.o},           {"h", &b.h},             {"c", &b.c},
      {"tanhc", &b.tanhc}};
  for (const auto& named : grads_and_saved) add_readable(&before, named.first, *named.second);
  EXPECT_TRUE(throws_error(
      [&] {
        lstmop::lstm_backward(b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params, b.i, b.j,
                              b.f, b.o, b.h, b.c, b.tanhc, a.has_biases, a.num_layers, a.dropout,
                              a.train, a.bidirectional, a.batch_first, a.batch_sizes);
      },
      argument, contains))
      << "lstm_backward";
  EXPECT_TRUE(throws_error(
      [&] {
        lstmop::reference::lstm_backward(b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params,
                                         b.i, b.j, b.f, b.o, b.h, b.c, b.tanhc, a.has_biases,
                                         a.num_layers, a.dropout, a.train, a.bidirectional,
                                         a.batch_first, a.batch_sizes);
      },
      argument, contains))
      << "reference::lstm_backward";
  if (!values_only) {
    EXPECT_TRUE(throws_error(
        [&] {
          lstmop::lstm_backward_shapes(b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params,
                                       b.i, b.j, b.f, b.o, b.h, b.c, b.tanhc, a.has_biases,
                                       a.num_layers, a.dropout, a.train, a.bidirectional,
                                       a.batch_first, a.batch_sizes);
        },
        argument, contains))
        << "lstm_backward_shapes";
  }
  const BackwardResult out = sentinel_backward_outputs(valid);
  EXPECT_TRUE(throws_error(
      [&] {
        lstmop::lstm_backward_out(out.views(), b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx,
                                  a.params, b.i, b.j, b.f, b.o, b.h, b.c, b.tanhc, a.has_biases,
                                  a.num_layers, a.dropout, a.train, a.bidirectional,
                                  a.batch_first, a.batch_sizes);
      },
      argument, contains))
      << "lstm_backward_out";
  EXPECT_TRUE(untouched(out)) << "lstm_backward_out";
  EXPECT_TRUE(before.unchanged());
}

LstmConfig bad_input_base_config() {
  LstmConfig c;
  c.T = 3;
  c.B = 2;
  c.I = 5;
  c.H = 3;
  c.L = 2;
  c.bidirectional = true;
  return c;
}

Tensor zeros(DType dtype, const std::vector<int64_t>& sizes) { return filled(dtype, sizes, 0.0); }

TensorView with_fields(const TensorView& v, std::vector<int64_t> sizes,
                       std::vector<int64_t> strides) {
  TensorView w = v;
  w.sizes = std::move(sizes);
  w.strides = std::move(strides);
  return w;
}

BadForwardFixture::BadForwardFixture(uint64_t seed)
    : cfg(bad_input_base_config()), p(make_problem(cfg, seed)) {}

BadBackwardFixture::BadBackwardFixture(uint64_t seed)
    : cfg(bad_input_base_config()), p(make_problem(cfg, seed)) {}

namespace {
LstmConfig variable_length_config() {
  LstmConfig c = bad_input_base_config();
  c.packed = true;
  c.lengths = {3, 2};
  return c;
}
}  // namespace

BadBatchSizesFixture::BadBatchSizesFixture(uint64_t seed)
    : cfg(variable_length_config()), p(make_problem(cfg, seed)) {}

ForwardArgs BadBatchSizesFixture::with_batch_sizes(const std::vector<double>& values) const {
  ForwardArgs a = forward_args(p);
  a.batch_sizes = a.own(from_doubles(DType::Int64, {static_cast<int64_t>(values.size())}, values));
  return a;
}

}  // namespace lstmtest
