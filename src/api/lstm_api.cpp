// The public entry points of lstm.h: validate, allocate (allocating forms),
// then hand over to the production drivers.
#include "lstmop/lstm.h"

#include "api/checks.h"
#include "api/check_support.h"
#include "api/packed.h"
#include "driver/drivers.h"
#include "common/float_environment.h"
#include "common/tensor_alloc.h"

namespace lstmop {

using detail::allocate;

namespace {

// Every entry point: the checks too run with round to nearest and every exception masked (a
// NaN dropout's comparison, the size estimate's log2 would otherwise raise the caller's
// exception flags, or trap), and the caller's MXCSR comes back, status flags included, on
// return and on error; the drivers set the call's own flush mode inside
// (common/float_environment.h).
template <class Fn>
auto entry_point(Fn&& fn) -> decltype(fn()) {
  const detail::ControlWordScope environment(detail::call_control_word(false));
  return detail::translate_bad_alloc(std::forward<Fn>(fn));
}

// The computing forms (_out, _into): one pass of the argument checks, then the
// output views from outputs_for(shapes) (bound to a reference: a view list
// returned by value lives to the end), checked, then the driver.
template <class OutputsFor>
void forward_checked(OutputsFor&& outputs_for, const TensorView& input, const TensorList& hx,
                     const TensorList& params, bool has_biases, int64_t num_layers,
                     double dropout, bool train, bool bidirectional, bool batch_first,
                     const TensorView& batch_sizes) {
  entry_point([&]() {
    const detail::LstmProblem dims =
        detail::check_forward_args(input, hx, params, has_biases, num_layers, dropout, train,
                                   bidirectional, batch_first, batch_sizes, true);
    const ForwardShapes shapes = detail::forward_shapes(dims);
    const ForwardOutputs& out = outputs_for(shapes);
    detail::check_forward_outputs(out, shapes, dims,
                                  detail::forward_input_views(input, hx, params, batch_sizes));
    detail::run_lstm_forward(dims, input, hx, params, out);
  });
}

template <class OutputsFor>
void backward_checked(OutputsFor&& outputs_for, const TensorView& grad_y,
                      const TensorView& grad_hy, const TensorView& grad_cy,
                      const TensorView& input, const TensorList& hx, const TensorList& params,
                      const TensorView& i, const TensorView& j, const TensorView& f,
                      const TensorView& o, const TensorView& h, const TensorView& c,
                      const TensorView& tanhc, bool has_biases, int64_t num_layers,
                      double dropout, bool train, bool bidirectional, bool batch_first,
                      const TensorView& batch_sizes) {
  entry_point([&]() {
    const detail::BackwardInputs saved{&grad_y, &grad_hy, &grad_cy, &i, &j, &f, &o, &h, &c, &tanhc};
    const detail::LstmProblem dims =
        detail::check_backward_args(saved, input, hx, params, has_biases, num_layers, dropout,
                                    train, bidirectional, batch_first, batch_sizes, true);
    const BackwardShapes shapes = detail::backward_shapes(dims, input, params);
    const BackwardOutputs& out = outputs_for(shapes);
    detail::check_backward_outputs(out, shapes, dims,
                                   detail::backward_input_views(saved, input, hx, params, batch_sizes));
    detail::run_lstm_backward(dims, saved, input, hx, params, out);
  });
}

}  // namespace

ForwardOutputs ForwardResult::views() const {
  return {output.view(), hy.view(), cy.view(), i.view(), j.view(),
          f.view(),      o.view(),  h.view(),  c.view(), tanhc.view()};
}

BackwardOutputs BackwardResult::views() const {
  BackwardOutputs out;
  out.dx = dx.view();
  if (dhx.size() == 2) {
    out.dh0 = dhx[0].view();
    out.dc0 = dhx[1].view();
  }
  for (const Tensor& t : dparams) out.dparams.push_back(t.view());
  return out;
}

ForwardShapes lstm_forward_shapes(const TensorView& input, const TensorList& hx,
                                  const TensorList& params, bool has_biases, int64_t num_layers,
                                  double dropout, bool train, bool bidirectional, bool batch_first,
                                  const TensorView& batch_sizes) {
  return entry_point([&]() {
    const detail::LstmProblem dims =
        detail::check_forward_args(input, hx, params, has_biases, num_layers, dropout, train,
                                   bidirectional, batch_first, batch_sizes, false);
    return detail::forward_shapes(dims);
  });
}

void lstm_forward_out(const ForwardOutputs& out, const TensorView& input, const TensorList& hx,
                      const TensorList& params, bool has_biases, int64_t num_layers, double dropout,
                      bool train, bool bidirectional, bool batch_first,
                      const TensorView& batch_sizes) {
  forward_checked([&](const ForwardShapes&) -> const ForwardOutputs& { return out; }, input, hx,
                  params, has_biases, num_layers, dropout, train, bidirectional, batch_first,
                  batch_sizes);
}

void lstm_forward_into(const ForwardAllocator& allocate, const TensorView& input,
                       const TensorList& hx, const TensorList& params, bool has_biases,
                       int64_t num_layers, double dropout, bool train, bool bidirectional,
                       bool batch_first, const TensorView& batch_sizes) {
  forward_checked(allocate, input, hx, params, has_biases, num_layers, dropout, train,
                  bidirectional, batch_first, batch_sizes);
}

ForwardResult lstm_forward(const TensorView& input, const TensorList& hx, const TensorList& params,
                           bool has_biases, int64_t num_layers, double dropout, bool train,
                           bool bidirectional, bool batch_first, const TensorView& batch_sizes) {
  return entry_point([&]() {
    const detail::LstmProblem dims =
        detail::check_forward_args(input, hx, params, has_biases, num_layers, dropout, train,
                                   bidirectional, batch_first, batch_sizes, true);
    const ForwardShapes s = detail::forward_shapes(dims);
    ForwardResult r;
    r.output = allocate("output", dims.dtype, s.output, false);
    r.hy = allocate("hy", dims.dtype, s.hy, false);
    r.cy = allocate("cy", dims.dtype, s.cy, false);
    r.i = allocate("i", dims.dtype, s.i, false);
    r.j = allocate("j", dims.dtype, s.j, false);
    r.f = allocate("f", dims.dtype, s.f, false);
    r.o = allocate("o", dims.dtype, s.o, false);
    r.h = allocate("h", dims.dtype, s.h, false);
    r.c = allocate("c", dims.dtype, s.c, false);
    r.tanhc = allocate("tanhc", dims.dtype, s.tanhc, false);
    detail::run_lstm_forward(dims, input, hx, params, r.views());
    return r;
  });
}

BackwardShapes lstm_backward_shapes(const TensorView& grad_y, const TensorView& grad_hy,
                                    const TensorView& grad_cy, const TensorView& input,
                                    const TensorList& hx, const TensorList& params,
                                    const TensorView& i, const TensorView& j, const TensorView& f,
                                    const TensorView& o, const TensorView& h, const TensorView& c,
                                    const TensorView& tanhc, bool has_biases, int64_t num_layers,
                                    double dropout, bool train, bool bidirectional,
                                    bool batch_first, const TensorView& batch_sizes) {
  return entry_point([&]() {
    const detail::BackwardInputs saved{&grad_y, &grad_hy, &grad_cy, &i, &j, &f, &o, &h, &c, &tanhc};
    const detail::LstmProblem dims =
        detail::check_backward_args(saved, input, hx, params, has_biases, num_layers, dropout,
                                    train, bidirectional, batch_first, batch_sizes, false);
    return detail::backward_shapes(dims, input, params);
  });
}

void lstm_backward_out(const BackwardOutputs& out, const TensorView& grad_y,
                       const TensorView& grad_hy, const TensorView& grad_cy,
                       const TensorView& input, const TensorList& hx, const TensorList& params,
                       const TensorView& i, const TensorView& j, const TensorView& f,
                       const TensorView& o, const TensorView& h, const TensorView& c,
                       const TensorView& tanhc, bool has_biases, int64_t num_layers,
                       double dropout, bool train, bool bidirectional, bool batch_first,
                       const TensorView& batch_sizes) {
  backward_checked([&](const BackwardShapes&) -> const BackwardOutputs& { return out; }, grad_y,
                   grad_hy, grad_cy, input, hx, params, i, j, f, o, h, c, tanhc, has_biases,
                   num_layers, dropout, train, bidirectional, batch_first, batch_sizes);
}

void lstm_backward_into(const BackwardAllocator& allocate, const TensorView& grad_y,
                        const TensorView& grad_hy, const TensorView& grad_cy,
                        const TensorView& input, const TensorList& hx, const TensorList& params,
                        const TensorView& i, const TensorView& j, const TensorView& f,
                        const TensorView& o, const TensorView& h, const TensorView& c,
                        const TensorView& tanhc, bool has_biases, int64_t num_layers,
                        double dropout, bool train, bool bidirectional, bool batch_first,
                        const TensorView& batch_sizes) {
  backward_checked(allocate, grad_y, grad_hy, grad_cy, input, hx, params, i, j, f, o, h, c, tanhc,
                   has_biases, num_layers, dropout, train, bidirectional, batch_first,
                   batch_sizes);
}

BackwardResult lstm_backward(const TensorView& grad_y, const TensorView& grad_hy,
                             const TensorView& grad_cy, const TensorView& input,
                             const TensorList& hx, const TensorList& params, const TensorView& i,
                             const TensorView& j, const TensorView& f, const TensorView& o,
                             const TensorView& h, const TensorView& c, const TensorView& tanhc,
                             bool has_biases, int64_t num_layers, double dropout, bool train,
                             bool bidirectional, bool batch_first, const TensorView& batch_sizes) {
  return entry_point([&]() {
    const detail::BackwardInputs saved{&grad_y, &grad_hy, &grad_cy, &i, &j, &f, &o, &h, &c, &tanhc};
    const detail::LstmProblem dims =
        detail::check_backward_args(saved, input, hx, params, has_biases, num_layers, dropout,
                                    train, bidirectional, batch_first, batch_sizes, true);
    const BackwardShapes s = detail::backward_shapes(dims, input, params);
    BackwardResult r;
    r.dx = allocate("dx", dims.dtype, s.dx, false);
    r.dhx.push_back(allocate("dh0", dims.dtype, s.dh0, false));
    r.dhx.push_back(allocate("dc0", dims.dtype, s.dc0, false));
    for (std::size_t k = 0; k < s.dparams.size(); ++k) {
      r.dparams.push_back(allocate("dparams[" + std::to_string(k) + "]", dims.dtype, s.dparams[k],
                                   false));
    }
    detail::run_lstm_backward(dims, saved, input, hx, params, r.views());
    return r;
  });
}

namespace detail {

namespace {

void require_batch_sizes(const TensorView& batch_sizes) {
  if (!batch_sizes.defined || batch_sizes.numel() == 0) {
    throw Error("batch_sizes", "must be given (the steps' batch sizes of the packed rows), got " +
                                   std::string(batch_sizes.defined ? "an empty tensor"
                                                                   : "an undefined tensor"));
  }
}

// A packed (N, F) tensor seen with the padded (T*B, F) shape the argument
// checks expect (never read through): T and B from batch_sizes when it can be
// read; anything else is passed on as it is, and the checks name the argument
// at fault.
TensorView padded_proxy(const TensorView& packed, const TensorView& batch_sizes) {
  const bool readable = batch_sizes.defined && batch_sizes.dtype == DType::Int64 &&
                        batch_sizes.dim() == 1 && batch_sizes.size(0) >= 1 &&
                        batch_sizes.data != nullptr && packed.defined && packed.dim() == 2;
  if (!readable) return packed;
  const int64_t T = batch_sizes.size(0);
  const int64_t B = static_cast<const int64_t*>(batch_sizes.data)[0];
  int64_t rows = 0;
  if (B < 0 || !mul_ok(T, B, &rows)) return packed;
  return TensorView(packed.data, packed.dtype, {rows, packed.size(1)});
}

// A packed argument's shape: (valid rows, features), `what` naming the features.
void check_packed_rows(const char* name, const TensorView& v, const LstmProblem& dims,
                       int64_t features, const char* what) {
  if (v.dim() != 2 || v.size(0) != dims.valid_rows() || v.size(1) != features) {
    throw Error(name, std::string("must be the packed rows (sum of batch_sizes, ") + what +
                          ") = (" + std::to_string(dims.valid_rows()) + ", " +
                          std::to_string(features) + "), got " + with_dims(v.sizes));
  }
}

}  // namespace

void lstm_forward_packed_out(const ForwardOutputs& out, const TensorView& input,
                             const TensorList& hx, const TensorList& params, bool has_biases,
                             int64_t num_layers, bool bidirectional,
                             const TensorView& batch_sizes, bool train) {
  entry_point([&]() {
    require_batch_sizes(batch_sizes);
    LstmProblem dims = check_forward_args(padded_proxy(input, batch_sizes), hx, params,
                                          has_biases, num_layers, 0.0, train, bidirectional,
                                          false, batch_sizes, /*read_values=*/true);
    check_packed_rows("input", input, dims, dims.I, "input_size");
    dims.packed_rows = true;
    check_forward_outputs(out, forward_shapes(dims), dims,
                          forward_input_views(input, hx, params, batch_sizes));
    run_lstm_forward(dims, input, hx, params, out);
  });
}

void lstm_backward_packed_out(const BackwardOutputs& out, const TensorView& grad_y,
                              const TensorView& grad_hy, const TensorView& grad_cy,
                              const TensorView& input, const TensorList& hx,
                              const TensorList& params, const TensorView& i,
                              const TensorView& j, const TensorView& f, const TensorView& o,
                              const TensorView& h, const TensorView& c, const TensorView& tanhc,
                              bool has_biases, int64_t num_layers, bool bidirectional,
                              const TensorView& batch_sizes) {
  entry_point([&]() {
    require_batch_sizes(batch_sizes);
    const TensorView grad_y_proxy = padded_proxy(grad_y, batch_sizes);
    const BackwardInputs proxies{&grad_y_proxy, &grad_hy, &grad_cy, &i, &j, &f, &o, &h, &c, &tanhc};
    LstmProblem dims = check_backward_args(proxies, padded_proxy(input, batch_sizes), hx, params,
                                           has_biases, num_layers, 0.0, true, bidirectional,
                                           false, batch_sizes, /*read_values=*/true);
    check_packed_rows("input", input, dims, dims.I, "input_size");
    if (grad_y.defined) check_packed_rows("grad_y", grad_y, dims, dims.D * dims.R, "D*R");
    dims.packed_rows = true;
    const BackwardInputs saved{&grad_y, &grad_hy, &grad_cy, &i, &j, &f, &o, &h, &c, &tanhc};
    check_backward_outputs(out, backward_shapes(dims, input, params), dims,
                           backward_input_views(saved, input, hx, params, batch_sizes));
    run_lstm_backward(dims, saved, input, hx, params, out);
  });
}

}  // namespace detail
}  // namespace lstmop
