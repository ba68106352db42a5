// The Autograd kernels of lstmop::_lstm and lstmop::_lstm_backward: the
// contract's derivative registration.
//
//   _lstm: outputs 0-2 (output, hy, cy) are differentiable, outputs 3-9 are
//   not; input, every hx tensor and every params tensor get their gradients
//   from
//     _lstm_backward(grads[0], grads[1], grads[2], input, hx, params,
//                    result3..result9, has_biases, num_layers, dropout, train,
//                    bidirectional, batch_first, batch_sizes)
//   where an undefined incoming gradient stays undefined (= zeros to the op).
//
//   _lstm_backward: not differentiable (no double backward); its outputs carry
//   a node that raises if a second derivative is asked for.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

namespace {

using at::Tensor;
using at::TensorList;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using ForwardTuple =
    std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor>;
using BackwardTuple = std::tuple<Tensor, std::vector<Tensor>, std::vector<Tensor>>;

using ForwardSignature = ForwardTuple(const Tensor&, TensorList, TensorList, bool, int64_t, double,
                                      bool, bool, c10::optional<bool>,
                                      const c10::optional<Tensor>&);
using BackwardSignature = BackwardTuple(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                        TensorList, TensorList, const Tensor&, const Tensor&,
                                        const Tensor&, const Tensor&, const Tensor&,
                                        const Tensor&, const Tensor&, bool, int64_t, double, bool,
                                        bool, c10::optional<bool>, const c10::optional<Tensor>&);

const c10::TypedOperatorHandle<ForwardSignature>& forward_op() {
  static const auto handle = c10::Dispatcher::singleton()
                                 .findSchemaOrThrow("lstmop::_lstm", "")
                                 .typed<ForwardSignature>();
  return handle;
}

const c10::TypedOperatorHandle<BackwardSignature>& backward_op() {
  static const auto handle = c10::Dispatcher::singleton()
                                 .findSchemaOrThrow("lstmop::_lstm_backward", "")
                                 .typed<BackwardSignature>();
  return handle;
}

// Number of saved outputs (result3..result9: i, j, f, o, h, c, tanhc).
constexpr int64_t kSavedOutputs = 7;

class LstmFunction : public torch::autograd::Function<LstmFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const Tensor& input, TensorList hx,
                               TensorList params, bool has_biases, int64_t num_layers,
                               double dropout, bool train, bool bidirectional,
                               c10::optional<bool> batch_first,
                               const c10::optional<Tensor>& batch_sizes) {
    ForwardTuple result;
    {
      // Below autograd: reach the CPU / Meta kernel.
      at::AutoDispatchBelowADInplaceOrView below_autograd;
      result = forward_op().call(input, hx, params, has_biases, num_layers, dropout, train,
                                 bidirectional, batch_first, batch_sizes);
    }
    variable_list outputs{std::get<0>(result), std::get<1>(result), std::get<2>(result),
                          std::get<3>(result), std::get<4>(result), std::get<5>(result),
                          std::get<6>(result), std::get<7>(result), std::get<8>(result),
                          std::get<9>(result)};
    ctx->mark_non_differentiable(variable_list(outputs.begin() + 3, outputs.end()));
    // Undefined incoming gradients stay undefined: the op reads them as zeros
    // without materialising zero tensors.
    ctx->set_materialize_grads(false);

    // Saved, in order: input, hx..., params..., result3..result9, [batch_sizes].
    variable_list saved;
    saved.reserve(1 + hx.size() + params.size() + kSavedOutputs + 1);
    saved.push_back(input);
    saved.insert(saved.end(), hx.begin(), hx.end());
    saved.insert(saved.end(), params.begin(), params.end());
    saved.insert(saved.end(), outputs.begin() + 3, outputs.end());
    const bool has_batch_sizes = batch_sizes.has_value() && batch_sizes->defined();
    if (has_batch_sizes) {
      saved.push_back(*batch_sizes);
    }
    ctx->save_for_backward(std::move(saved));
    ctx->saved_data["hx_count"] = static_cast<int64_t>(hx.size());
    ctx->saved_data["params_count"] = static_cast<int64_t>(params.size());
    ctx->saved_data["has_biases"] = has_biases;
    ctx->saved_data["num_layers"] = num_layers;
    ctx->saved_data["dropout"] = dropout;
    ctx->saved_data["train"] = train;
    ctx->saved_data["bidirectional"] = bidirectional;
    ctx->saved_data["batch_first"] = batch_first.value_or(false);
    ctx->saved_data["has_batch_sizes"] = has_batch_sizes;
    return outputs;
  }

  // grads: one per forward output (10); only grads[0..2] can be defined.
  // Returns one gradient per forward argument, list elements flattened:
  // input, hx..., params..., then undefined for has_biases .. batch_sizes.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const int64_t hx_count = ctx->saved_data["hx_count"].toInt();
    const int64_t params_count = ctx->saved_data["params_count"].toInt();
    const bool has_batch_sizes = ctx->saved_data["has_batch_sizes"].toBool();

    const Tensor& input = saved[0];
    const std::vector<Tensor> hx(saved.begin() + 1, saved.begin() + 1 + hx_count);
    const std::vector<Tensor> params(saved.begin() + 1 + hx_count,
                                     saved.begin() + 1 + hx_count + params_count);
    const auto activations = saved.begin() + 1 + hx_count + params_count;  // i j f o h c tanhc
    c10::optional<Tensor> batch_sizes;
    if (has_batch_sizes) {
      batch_sizes = saved.back();
    }

    BackwardTuple result = backward_op().call(
        grads[0], grads[1], grads[2], input, hx, params, activations[0], activations[1],
        activations[2], activations[3], activations[4], activations[5], activations[6],
        ctx->saved_data["has_biases"].toBool(), ctx->saved_data["num_layers"].toInt(),
        ctx->saved_data["dropout"].toDouble(), ctx->saved_data["train"].toBool(),
        ctx->saved_data["bidirectional"].toBool(), ctx->saved_data["batch_first"].toBool(),
        batch_sizes);

    variable_list gradients;
    gradients.reserve(1 + hx_count + params_count + 8);
    gradients.push_back(std::move(std::get<0>(result)));
    // dh0, dc0 exist also for an empty hx; they only have somewhere to go when hx was given.
    for (int64_t k = 0; k < hx_count; ++k) {
      gradients.push_back(std::move(std::get<1>(result).at(static_cast<size_t>(k))));
    }
    for (Tensor& dparam : std::get<2>(result)) {
      gradients.push_back(std::move(dparam));
    }
    // has_biases, num_layers, dropout, train, bidirectional, batch_first, batch_sizes.
    gradients.resize(gradients.size() + 7);
    return gradients;
  }
};

ForwardTuple lstm_autograd(const Tensor& input, TensorList hx, TensorList params, bool has_biases,
                           int64_t num_layers, double dropout, bool train, bool bidirectional,
                           c10::optional<bool> batch_first,
                           const c10::optional<Tensor>& batch_sizes) {
  const variable_list outputs =
      LstmFunction::apply(input, hx, params, has_biases, num_layers, dropout, train,
                          bidirectional, batch_first, batch_sizes);
  return ForwardTuple(outputs[0], outputs[1], outputs[2], outputs[3], outputs[4], outputs[5],
                      outputs[6], outputs[7], outputs[8], outputs[9]);
}

}  // namespace

TORCH_LIBRARY_IMPL(lstmop, Autograd, m) {
  m.impl("_lstm", TORCH_FN(lstm_autograd));
  m.impl("_lstm_backward", torch::autograd::autogradNotImplementedFallback());
}
