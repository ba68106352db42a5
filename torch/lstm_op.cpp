// lstmop::lstm: the op lstmop.nn.LSTM calls, as torch.nn.LSTM calls aten::lstm.
//
//   lstm(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases,
//        int num_layers, float dropout, bool training, bool bidirectional, *,
//        bool batch_first=False, Tensor? batch_sizes=None)
//     -> (Tensor output, Tensor hy, Tensor cy)
//
// It runs _lstm over a whole module call: PackedSequence data (batch_sizes
// given: input is the packed (sum of lengths, I) rows, output the packed
// (sum of lengths, D*R) rows), dropout between layers when `training` (one
// _lstm call per layer, at::dropout on each layer's output but the last: the
// time-major (T, B, D*R) output, or the packed rows, exactly where
// torch.nn.LSTM draws its masks, so the same random state gives the same
// masks), or one _lstm call for all layers otherwise.
//
// A CPU PackedSequence in one call (no dropout between layers) skips the
// padded layout altogether: the core reads and writes the packed rows
// (forward_packed_rows; with saved activations through PackedLstmFunction,
// whose backward does the same for grad_y and dx), bitwise what _lstm and
// _lstm_backward give on the padded rows.
//
// Whether _lstm saves its activations (train=True) is decided at run time, by
// the Autograd kernel: only when grad mode is on and input, hx or a parameter
// requires grad; then the result carries _lstm's backward. Otherwise the CPU
// (or Meta) kernel runs _lstm with train=False. So a trace or a TorchScript
// graph holds one call, right for training and for inference.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "lstm_aten.h"
#include "lstm_ops.h"
#include "saved_params.h"

namespace {

using at::Tensor;
using at::TensorList;
using LstmTuple = std::tuple<Tensor, Tensor, Tensor>;
using LstmSignature = LstmTuple(const Tensor&, TensorList, TensorList, bool, int64_t, double, bool,
                                bool, bool, const c10::optional<Tensor>&);

constexpr const char* kLstmSchema =
    "lstm(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, "
    "float dropout, bool training, bool bidirectional, *, bool batch_first=False, "
    "Tensor? batch_sizes=None) -> (Tensor, Tensor, Tensor)";

const c10::TypedOperatorHandle<LstmSignature>& lstm_op() {
  static const auto handle =
      c10::Dispatcher::singleton().findSchemaOrThrow("lstmop::lstm", "").typed<LstmSignature>();
  return handle;
}

std::string with_dims(at::IntArrayRef sizes) {
  return std::to_string(sizes.size()) + "-D " + c10::str(sizes);
}

// The packed layout of a PackedSequence and _lstm's variable-length layout:
// packed row k is padded row valid_rows[k] = t*B + b, for t in time order and
// b < batch_sizes[t] within a step (both orders are step by step, sequence by
// sequence).
struct PackedLayout {
  int64_t steps = 0, batch = 0;
  Tensor valid_rows;  // (sum of lengths,) int64, CPU
};

PackedLayout packed_layout(const Tensor& input, const Tensor& batch_sizes) {
  const std::vector<int64_t> step_batch = lstmop_torch::checked_batch_sizes(batch_sizes);
  PackedLayout layout;
  layout.steps = static_cast<int64_t>(step_batch.size());
  layout.batch = step_batch[0];
  int64_t rows = 0;
  for (int64_t n : step_batch) rows += n;
  TORCH_CHECK(input.dim() == 2,
              "input must be 2-D (the PackedSequence's data: sum of lengths, input_size) when "
              "batch_sizes is given, got ",
              with_dims(input.sizes()));
  TORCH_CHECK(rows == input.size(0), "batch_sizes sums to ", rows,
              " but input (the PackedSequence's data) has ", input.size(0), " rows");
  layout.valid_rows = at::empty({rows}, at::TensorOptions().dtype(at::kLong));
  int64_t* out = layout.valid_rows.data_ptr<int64_t>();
  for (int64_t t = 0; t < layout.steps; ++t) {
    for (int64_t b = 0; b < step_batch[static_cast<size_t>(t)]; ++b) *out++ = t * layout.batch + b;
  }
  return layout;
}

// (N, F) packed rows -> (T*B, F) padded rows, zeros in the invalid rows.
Tensor padded_rows(const Tensor& packed, const PackedLayout& layout) {
  const int64_t rows = layout.steps * layout.batch;
  if (packed.is_meta()) return at::empty({rows, packed.size(1)}, packed.options());
  return at::zeros({rows, packed.size(1)}, packed.options())
      .index_copy(0, layout.valid_rows.to(packed.device()), packed);
}

// (T*B, F) padded rows -> (N, F) packed rows.
Tensor packed_rows(const Tensor& padded, const PackedLayout& layout) {
  if (padded.is_meta()) {
    return at::empty({layout.valid_rows.size(0), padded.size(1)}, padded.options());
  }
  return padded.index_select(0, layout.valid_rows.to(padded.device()));
}

Tensor dropout_on(const Tensor& x, double p) {
  return x.is_meta() ? x : at::dropout(x, p, /*train=*/true);  // meta: shapes only
}

// _lstm's derivative on a PackedSequence's rows (lstmop::lstm with saved
// activations): the forward and the backward run on the packed input,
// output, grad_y and dx rows (forward_packed_rows / backward_packed_rows),
// with the bits of _lstm and _lstm_backward on the padded rows. A backward
// with create_graph=True (grad mode on inside it) instead takes
// _lstm_backward's differentiable path on padded copies (its double backward,
// lstm_autograd.cpp), dx brought back to the packed rows by index_select.
class PackedLstmFunction : public torch::autograd::Function<PackedLstmFunction> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const Tensor& input, TensorList hx,
                                                TensorList params, bool has_biases,
                                                int64_t num_layers, bool bidirectional,
                                                const Tensor& batch_sizes,
                                                const Tensor& valid_rows, int64_t padded_rows) {
    lstmop_torch::ForwardTuple r;
    {
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      r = lstmop_torch::forward_packed_rows(input, hx, params, has_biases, num_layers,
                                            bidirectional, batch_sizes, padded_rows,
                                            /*train=*/true);
    }
    torch::autograd::variable_list outputs{std::get<0>(r), std::get<1>(r), std::get<2>(r),
                                           std::get<3>(r), std::get<4>(r), std::get<5>(r),
                                           std::get<6>(r), std::get<7>(r), std::get<8>(r),
                                           std::get<9>(r)};
    ctx->mark_non_differentiable(
        torch::autograd::variable_list(outputs.begin() + 3, outputs.end()));
    ctx->set_materialize_grads(false);
    // Saved: input, hx..., the params but the biases (saved_params.h), i j f o h c
    // tanhc, batch_sizes, valid_rows.
    torch::autograd::variable_list saved{input};
    saved.insert(saved.end(), hx.begin(), hx.end());
    lstmop_torch::save_params(ctx, params, has_biases, num_layers, bidirectional, saved);
    saved.insert(saved.end(), outputs.begin() + 3, outputs.end());
    saved.push_back(batch_sizes);
    saved.push_back(valid_rows);
    ctx->save_for_backward(std::move(saved));
    ctx->saved_data["hx_count"] = static_cast<int64_t>(hx.size());
    ctx->saved_data["params_count"] = static_cast<int64_t>(params.size());
    ctx->saved_data["has_biases"] = has_biases;
    ctx->saved_data["num_layers"] = num_layers;
    ctx->saved_data["bidirectional"] = bidirectional;
    ctx->saved_data["padded_rows"] = padded_rows;
    return outputs;
  }

  // One gradient per forward argument, lists flattened: input, hx..., params...,
  // then none for has_biases, num_layers, bidirectional, batch_sizes,
  // valid_rows, padded_rows.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const int64_t hx_count = ctx->saved_data["hx_count"].toInt();
    const int64_t params_count = ctx->saved_data["params_count"].toInt();
    const bool has_biases = ctx->saved_data["has_biases"].toBool();
    const int64_t num_layers = ctx->saved_data["num_layers"].toInt();
    const bool bidirectional = ctx->saved_data["bidirectional"].toBool();
    const int64_t padded_rows = ctx->saved_data["padded_rows"].toInt();
    const Tensor& input = saved[0];
    const std::vector<Tensor> hx(saved.begin() + 1, saved.begin() + 1 + hx_count);
    // Grad mode on (create_graph=True), or tangents in the incoming gradients (forward
    // over reverse mode; the forward had none, else it would not be here): the
    // differentiable path below recomputes the forward from the biases' values.
    const bool recomputes = at::GradMode::is_enabled() || lstmop_torch::any_tangent(grads);
    const std::vector<Tensor> params = lstmop_torch::restored_params(
        ctx, saved.data() + 1 + hx_count, /*values_read=*/recomputes);
    const auto a = saved.begin() + 1 + hx_count + lstmop_torch::saved_weight_count(ctx);
    const Tensor& batch_sizes = saved[saved.size() - 2];
    const Tensor& valid_rows = saved.back();

    lstmop_torch::BackwardTuple result;
    if (!recomputes) {
      result = lstmop_torch::backward_packed_rows(grads[0], grads[1], grads[2], input, hx, params,
                                                  a[0], a[1], a[2], a[3], a[4], a[5], a[6],
                                                  has_biases, num_layers, bidirectional,
                                                  batch_sizes);
    } else {
      const auto padded = [&](const Tensor& rows) {
        return at::zeros({padded_rows, rows.size(1)}, rows.options())
            .index_copy(0, valid_rows, rows);
      };
      result = lstmop_torch::backward_op().call(
          grads[0].defined() ? padded(grads[0]) : Tensor(), grads[1], grads[2], padded(input), hx,
          params, a[0], a[1], a[2], a[3], a[4], a[5], a[6], has_biases, num_layers, 0.0, true,
          bidirectional, false, batch_sizes);
      std::get<0>(result) = std::get<0>(result).index_select(0, valid_rows);
    }
    // has_biases, num_layers, bidirectional, batch_sizes, valid_rows, padded_rows.
    torch::autograd::variable_list gradients =
        lstmop_torch::argument_gradients(std::move(result), hx_count, 6);
    lstmop_torch::drop_unreached_projection_gradients(
        gradients, 1 + static_cast<size_t>(hx_count), static_cast<size_t>(params_count),
        has_biases, num_layers, bidirectional, grads[0].defined() || grads[1].defined(),
        batch_sizes.numel());
    return gradients;
  }
};

LstmTuple run_lstm(const Tensor& input, TensorList hx, TensorList params, bool has_biases,
                   int64_t num_layers, double dropout, bool training, bool bidirectional,
                   bool batch_first, const c10::optional<Tensor>& batch_sizes,
                   bool save_activations) {
  // Dropout between layers, as aten::lstm applies it: in training, with more than one layer
  // and dropout != 0 (a NaN too). Its value is checked only then, as torch.nn.LSTM's call
  // checks it (a module whose dropout attribute was set out of range runs in eval mode).
  const bool between_layers = training && num_layers > 1 && dropout != 0.0;
  // isnan first: an ordered comparison of a NaN would raise the caller's "invalid" flag.
  TORCH_CHECK(!between_layers || (!std::isnan(dropout) && dropout >= 0.0 && dropout <= 1.0),
              "dropout must lie in [0, 1] where it is applied (training, num_layers > 1), got ",
              dropout);
  const bool packed = batch_sizes.has_value() && batch_sizes->defined();
  PackedLayout layout;
  c10::optional<Tensor> op_batch_sizes;
  if (packed) {
    layout = packed_layout(input, *batch_sizes);
    op_batch_sizes = *batch_sizes;
  }
  // Every argument is checked on the whole problem first, so that errors name
  // the caller's arguments (not one layer's slice of them); in packed mode on
  // the padded shape the op will see, before anything is allocated. A
  // fixed-length call in one piece passes _lstm these very arguments: _lstm's
  // checks are these, so they run once, there.
  if (packed || between_layers) {
    const Tensor checked_input = packed ? at::empty({layout.steps * layout.batch, input.size(1)},
                                                    input.options().device(at::kMeta))
                                        : input;
    lstmop_torch::check_forward_arguments(checked_input, hx, params, has_biases, num_layers, 0.0,
                                          save_activations, bidirectional, batch_first,
                                          op_batch_sizes);
  }

  // A CPU PackedSequence in one call: the core reads and writes the packed
  // rows themselves (no padded copies of the input, the output, grad_y, dx).
  // Not with tangents: their path is the padded one below (_lstm's).
  if (packed && input.device().is_cpu() && !between_layers &&
      !lstmop_torch::wants_forward_mode(input, hx, params)) {
    const int64_t rows = layout.steps * layout.batch;
    if (!save_activations) {
      const auto r = lstmop_torch::forward_packed_rows(input, hx, params, has_biases, num_layers,
                                                       bidirectional, *batch_sizes, rows,
                                                       /*train=*/false);
      return LstmTuple(std::get<0>(r), std::get<1>(r), std::get<2>(r));
    }
    const auto r = PackedLstmFunction::apply(input, hx, params, has_biases, num_layers,
                                             bidirectional, *batch_sizes, layout.valid_rows, rows);
    return LstmTuple(r[0], r[1], r[2]);
  }
  Tensor layer_input = packed ? padded_rows(input, layout) : input;
  Tensor output, hy, cy;
  if (!between_layers) {
    const auto result = lstmop_torch::forward_op().call(layer_input, hx, params, has_biases,
                                                        num_layers, 0.0, save_activations,
                                                        bidirectional, batch_first, op_batch_sizes);
    output = std::get<0>(result);
    hy = std::get<1>(result);
    cy = std::get<2>(result);
  } else {
    // torch.nn.LSTM draws the masks on time-major layer outputs.
    const bool transposed = !packed && batch_first;
    if (transposed) layer_input = layer_input.transpose(0, 1);  // a view: _lstm reads any strides
    const int64_t directions = bidirectional ? 2 : 1;
    const int64_t per_layer = static_cast<int64_t>(params.size()) / num_layers;
    std::vector<Tensor> hys, cys;
    for (int64_t layer = 0; layer < num_layers; ++layer) {
      std::vector<Tensor> layer_hx;
      if (!hx.empty()) {
        layer_hx = {hx[0].narrow(0, layer * directions, directions),
                    hx[1].narrow(0, layer * directions, directions)};
      }
      const auto result = lstmop_torch::forward_op().call(
          layer_input, layer_hx, params.slice(layer * per_layer, per_layer), has_biases, 1, 0.0,
          save_activations, bidirectional, false, op_batch_sizes);
      layer_input = std::get<0>(result);
      hys.push_back(std::get<1>(result));
      cys.push_back(std::get<2>(result));
      if (layer + 1 < num_layers) {
        layer_input =
            packed ? padded_rows(dropout_on(packed_rows(layer_input, layout), dropout), layout)
                   : dropout_on(layer_input, dropout);
      }
    }
    output = transposed ? layer_input.transpose(0, 1) : layer_input;
    hy = at::cat(hys, 0);
    cy = at::cat(cys, 0);
  }
  if (packed) output = packed_rows(output, layout);
  return LstmTuple(output, hy, cy);
}

// CPU and Meta: nothing will be differentiated, nothing is saved.
LstmTuple lstm_kernel(const Tensor& input, TensorList hx, TensorList params, bool has_biases,
                      int64_t num_layers, double dropout, bool training, bool bidirectional,
                      bool batch_first, const c10::optional<Tensor>& batch_sizes) {
  return run_lstm(input, hx, params, has_biases, num_layers, dropout, training, bidirectional,
                  batch_first, batch_sizes, /*save_activations=*/false);
}

LstmTuple lstm_autograd(c10::DispatchKeySet keys, const Tensor& input, TensorList hx,
                        TensorList params, bool has_biases, int64_t num_layers, double dropout,
                        bool training, bool bidirectional, bool batch_first,
                        const c10::optional<Tensor>& batch_sizes) {
  const bool differentiable = lstmop_torch::wants_reverse_mode(input, hx, params);
  // Forward mode (a dual input, hx or parameter; grad mode is no matter): at the
  // autograd level too, where _lstm's Autograd kernel, the layout and dropout
  // operations carry the tangents.
  if (!differentiable && !lstmop_torch::wants_forward_mode(input, hx, params)) {
    // The kernel below autograd, redispatched (not a second call from the
    // dispatcher's top: one lstmop::lstm event per call for the profiler).
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return lstm_op().redispatch(keys & c10::after_autograd_keyset, input, hx, params,
                                has_biases, num_layers, dropout, training, bidirectional,
                                batch_first, batch_sizes);
  }
  // At the autograd level: _lstm's Autograd kernel and the layout and dropout
  // operations record their backward (with torch.nn.LSTM's None gradients).
  const lstmop_torch::ModuleCallScope module_call;
  return run_lstm(input, hx, params, has_biases, num_layers, dropout, training, bidirectional,
                  batch_first, batch_sizes, /*save_activations=*/differentiable);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(lstmop, m) { m.def(kLstmSchema); }

TORCH_LIBRARY_IMPL(lstmop, CPU, m) { m.impl("lstm", TORCH_FN(lstm_kernel)); }

TORCH_LIBRARY_IMPL(lstmop, Meta, m) { m.impl("lstm", TORCH_FN(lstm_kernel)); }

TORCH_LIBRARY_IMPL(lstmop, Autograd, m) { m.impl("lstm", TORCH_FN(lstm_autograd)); }
