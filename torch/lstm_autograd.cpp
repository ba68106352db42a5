// The Autograd kernels of lstmop::_lstm and lstmop::_lstm_backward: the
// contract's derivative registrations.
//
//   _lstm: outputs 0-2 (output, hy, cy) are differentiable, outputs 3-9 are
//   not; input, every hx tensor and every params tensor get their gradients
//   from
//     _lstm_backward(grads[0], grads[1], grads[2], input, hx, params,
//                    result3..result9, has_biases, num_layers, dropout, train,
//                    bidirectional, batch_first, batch_sizes)
//   where an undefined incoming gradient stays undefined (= zeros to the op).
//
//   _lstm_backward: differentiable (double backward). When grad mode is on and
//   one of its differentiable arguments (grad_y, grad_hy, grad_cy, input, hx,
//   params) requires grad -- a backward with create_graph=True, or a direct
//   call on such tensors -- its results are computed by autograd through
//   lstm_aten_forward, the forward in ATen operations: the vector-Jacobian
//   product of (output, hy, cy) with (grad_y, grad_hy, grad_cy), taken with
//   create_graph=True, so the results are differentiable functions of all
//   those arguments, to any order. The saved activations are not used on that
//   path (the recomputation recomputes them). Otherwise the op runs below
//   autograd, as a plain kernel call.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

#include "lstm_aten.h"
#include "lstm_ops.h"
#include "saved_params.h"

namespace {

using at::Tensor;
using at::TensorList;
using lstmop_torch::backward_op;
using lstmop_torch::BackwardTuple;
using lstmop_torch::forward_op;
using lstmop_torch::ForwardTuple;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Number of saved outputs (result3..result9: i, j, f, o, h, c, tanhc).
constexpr int64_t kSavedOutputs = 7;

// The arguments of a call in forward mode as the caller passed them (dual
// tensors: primal and tangent); the op runs on their primals.
struct DualArguments {
  const Tensor& input;
  TensorList hx;
  TensorList params;
};

class LstmFunction : public torch::autograd::Function<LstmFunction> {
 public:
  // duals: null, or the dual arguments whose primals input, hx and params are:
  // then those are saved (the backward's results get their tangents, forward
  // over reverse mode, as torch.nn.LSTM's).
  static variable_list forward(AutogradContext* ctx, const Tensor& input, TensorList hx,
                               TensorList params, bool has_biases, int64_t num_layers,
                               double dropout, bool train, bool bidirectional,
                               c10::optional<bool> batch_first,
                               const c10::optional<Tensor>& batch_sizes,
                               const DualArguments* duals) {
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

    // Saved, in order: input, hx..., the params but the biases (saved_params.h),
    // result3..result9, [batch_sizes].
    variable_list saved;
    saved.reserve(1 + hx.size() + params.size() + kSavedOutputs + 1);
    saved.push_back(duals != nullptr ? duals->input : input);
    const TensorList saved_hx = duals != nullptr ? duals->hx : hx;
    saved.insert(saved.end(), saved_hx.begin(), saved_hx.end());
    lstmop_torch::save_params(ctx, duals != nullptr ? duals->params : params, has_biases,
                              num_layers, bidirectional, saved);
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
    ctx->saved_data["module_call"] = lstmop_torch::ModuleCallScope::active();
    return outputs;
  }

  // grads: one per forward output (10); only grads[0..2] can be defined.
  // Returns one gradient per forward argument, list elements flattened:
  // input, hx..., params..., then undefined for has_biases .. batch_sizes and
  // duals.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const int64_t hx_count = ctx->saved_data["hx_count"].toInt();
    const int64_t params_count = ctx->saved_data["params_count"].toInt();
    const int64_t weight_count = lstmop_torch::saved_weight_count(ctx);
    const bool has_batch_sizes = ctx->saved_data["has_batch_sizes"].toBool();
    const bool has_biases = ctx->saved_data["has_biases"].toBool();
    const int64_t num_layers = ctx->saved_data["num_layers"].toInt();
    const bool bidirectional = ctx->saved_data["bidirectional"].toBool();
    const bool batch_first = ctx->saved_data["batch_first"].toBool();

    const Tensor& input = saved[0];
    const std::vector<Tensor> hx(saved.begin() + 1, saved.begin() + 1 + hx_count);
    // Grad mode on (create_graph=True) or a tangent among the arguments (forward over
    // reverse mode): _lstm_backward recomputes the forward from the biases' values.
    std::vector<Tensor> params = lstmop_torch::restored_params(ctx, saved.data() + 1 + hx_count,
                                                               /*values_read=*/false);
    if (at::GradMode::is_enabled() || lstmop_torch::any_tangent(grads) ||
        lstmop_torch::any_tangent(saved) || lstmop_torch::any_tangent(params)) {
      params = lstmop_torch::restored_params(ctx, saved.data() + 1 + hx_count,
                                             /*values_read=*/true);
    }
    const auto activations = saved.begin() + 1 + hx_count + weight_count;  // i j f o h c tanhc
    c10::optional<Tensor> batch_sizes;
    int64_t steps = input.dim() == 3 ? input.size(batch_first ? 1 : 0) : 0;
    if (has_batch_sizes) {
      batch_sizes = saved.back();
      steps = batch_sizes->numel();
    }

    BackwardTuple result = backward_op().call(
        grads[0], grads[1], grads[2], input, hx, params, activations[0], activations[1],
        activations[2], activations[3], activations[4], activations[5], activations[6],
        has_biases, num_layers, ctx->saved_data["dropout"].toDouble(),
        ctx->saved_data["train"].toBool(), bidirectional, batch_first, batch_sizes);

    // has_biases, num_layers, dropout, train, bidirectional, batch_first, batch_sizes, duals.
    variable_list gradients = lstmop_torch::argument_gradients(std::move(result), hx_count, 8);
    if (ctx->saved_data["module_call"].toBool()) {  // a call of lstmop::lstm: torch's None
      lstmop_torch::drop_unreached_projection_gradients(
          gradients, 1 + static_cast<size_t>(hx_count), static_cast<size_t>(params_count),
          has_biases, num_layers, bidirectional, grads[0].defined() || grads[1].defined(),
          steps);
    }
    return gradients;
  }
};

ForwardTuple lstm_autograd(c10::DispatchKeySet keys, const Tensor& input, TensorList hx,
                           TensorList params, bool has_biases, int64_t num_layers, double dropout,
                           bool train, bool bidirectional, c10::optional<bool> batch_first,
                           const c10::optional<Tensor>& batch_sizes) {
  // Nothing to differentiate, in either mode: the kernel below autograd, redispatched (a
  // custom Function's node, outputs and saved state would be built and dropped).
  const bool tangents = lstmop_torch::wants_forward_mode(input, hx, params);
  if (!lstmop_torch::wants_reverse_mode(input, hx, params) && !tangents) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return forward_op().redispatch(keys & c10::after_autograd_keyset, input, hx, params,
                                   has_biases, num_layers, dropout, train, bidirectional,
                                   batch_first, batch_sizes);
  }
  // Forward mode (a dual input, hx or parameter): the op on the primals (reverse mode
  // as always), then the tangents of outputs 0-2 (lstm_aten.h).
  if (tangents) {
    const std::vector<Tensor> hx_primals = lstmop_torch::primals(hx);
    const std::vector<Tensor> params_primals = lstmop_torch::primals(params);
    const DualArguments duals{input, hx, params};
    const variable_list outputs = LstmFunction::apply(
        lstmop_torch::primal(input), TensorList(hx_primals), TensorList(params_primals),
        has_biases, num_layers, dropout, train, bidirectional, batch_first, batch_sizes, &duals);
    lstmop_torch::set_tangents(outputs[0], outputs[1], outputs[2], input, hx, params, has_biases,
                               num_layers, bidirectional, batch_first.value_or(false),
                               batch_sizes);
    return ForwardTuple(outputs[0], outputs[1], outputs[2], outputs[3], outputs[4], outputs[5],
                        outputs[6], outputs[7], outputs[8], outputs[9]);
  }
  const variable_list outputs =
      LstmFunction::apply(input, hx, params, has_biases, num_layers, dropout, train,
                          bidirectional, batch_first, batch_sizes,
                          static_cast<const DualArguments*>(nullptr));
  return ForwardTuple(outputs[0], outputs[1], outputs[2], outputs[3], outputs[4], outputs[5],
                      outputs[6], outputs[7], outputs[8], outputs[9]);
}

bool any_requires_grad(TensorList tensors) {
  for (const Tensor& t : tensors) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

// What autograd differentiates the recomputation with respect to: one fresh
// tensor per argument position, so that each position gets its own gradient
// even when the caller passes one tensor twice (tied weights). An argument
// that requires grad is aliased (a view: the gradient still flows on to it,
// which is what makes the results differentiable); one that does not is
// detached and made to require grad (its gradient is still returned), keeping
// its tangent if it has one (forward over reverse mode).
Tensor differentiation_target(const Tensor& argument) {
  if (argument.requires_grad()) return argument.view_as(argument);  // a tangent stays
  Tensor target = lstmop_torch::primal(argument).detach().requires_grad_(true);
  const Tensor& tangent = argument._fw_grad(lstmop_torch::kTangentLevel);
  if (tangent.defined()) target._set_fw_grad(tangent, lstmop_torch::kTangentLevel, false);
  return target;
}

BackwardTuple backward_by_recomputation(const Tensor& grad_y, const Tensor& grad_hy,
                                        const Tensor& grad_cy, const Tensor& input, TensorList hx,
                                        TensorList params, bool has_biases, int64_t num_layers,
                                        bool bidirectional, bool batch_first,
                                        const c10::optional<Tensor>& batch_sizes) {
  // Gradients with respect to the initial states exist also for an empty hx:
  // those of zero initial states, created here.
  std::vector<Tensor> initial_states(hx.begin(), hx.end());
  if (initial_states.empty()) {
    const auto shapes = lstmop_torch::initial_state_shapes(
        input, params, has_biases, num_layers, bidirectional, batch_first, batch_sizes);
    initial_states = {at::zeros(shapes.first, input.options()),
                      at::zeros(shapes.second, input.options())};
  }
  variable_list targets;
  targets.reserve(3 + params.size());
  targets.push_back(differentiation_target(input));
  for (const Tensor& state : initial_states) targets.push_back(differentiation_target(state));
  for (const Tensor& param : params) targets.push_back(differentiation_target(param));
  const std::vector<Tensor> target_params(targets.begin() + 3, targets.end());

  const auto recomputed = lstmop_torch::lstm_aten_forward(
      targets[0], {targets[1], targets[2]}, target_params, has_biases, num_layers, bidirectional,
      batch_first, batch_sizes);

  // Undefined incoming gradients are zeros: those outputs are left out.
  variable_list outputs, grad_outputs;
  const std::pair<const Tensor*, const Tensor*> pairs[] = {{&std::get<0>(recomputed), &grad_y},
                                                           {&std::get<1>(recomputed), &grad_hy},
                                                           {&std::get<2>(recomputed), &grad_cy}};
  for (const auto& pair : pairs) {
    if (pair.second->defined()) {
      outputs.push_back(*pair.first);
      grad_outputs.push_back(*pair.second);
    }
  }
  variable_list gradients(targets.size());
  if (!outputs.empty()) {
    gradients = torch::autograd::grad(outputs, targets, grad_outputs, /*retain_graph=*/true,
                                      /*create_graph=*/true, /*allow_unused=*/true);
  }
  for (size_t k = 0; k < targets.size(); ++k) {
    // Unused (no path from the outputs): zero, as the op returns it.
    gradients[k] = gradients[k].defined() ? gradients[k].contiguous() : at::zeros_like(targets[k]);
  }
  std::vector<Tensor> dhx(gradients.begin() + 1, gradients.begin() + 3);
  std::vector<Tensor> dparams(gradients.begin() + 3, gradients.end());
  return BackwardTuple(gradients[0], std::move(dhx), std::move(dparams));
}

BackwardTuple lstm_backward_autograd(c10::DispatchKeySet keys, const Tensor& grad_y,
                                     const Tensor& grad_hy,
                                     const Tensor& grad_cy, const Tensor& input, TensorList hx,
                                     TensorList params, const Tensor& i, const Tensor& j,
                                     const Tensor& f, const Tensor& o, const Tensor& h,
                                     const Tensor& c, const Tensor& tanhc, bool has_biases,
                                     int64_t num_layers, double dropout, bool train,
                                     bool bidirectional, c10::optional<bool> batch_first,
                                     const c10::optional<Tensor>& batch_sizes) {
  const bool differentiable =
      at::GradMode::is_enabled() &&
      (any_requires_grad({grad_y, grad_hy, grad_cy, input}) || any_requires_grad(hx) ||
       any_requires_grad(params));
  // Forward mode (a dual argument: forward over reverse, as torch.nn.LSTM's
  // backward): the results' tangents come from the recomputation.
  const bool tangents = lstmop_torch::any_tangent({grad_y, grad_hy, grad_cy, input}) ||
                        lstmop_torch::any_tangent(hx) || lstmop_torch::any_tangent(params);
  if (!differentiable && !tangents) {
    // The kernel below autograd, redispatched (one event per call for the profiler).
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return backward_op().redispatch(keys & c10::after_autograd_keyset, grad_y, grad_hy, grad_cy,
                                    input, hx, params, i, j, f, o, h, c, tanhc, has_biases,
                                    num_layers, dropout, train, bidirectional, batch_first,
                                    batch_sizes);
  }
  // The same checks, with the same errors, as the kernels; then batch_sizes'
  // values, which the recomputation reads.
  lstmop_torch::check_backward_arguments(grad_y, grad_hy, grad_cy, input, hx, params, i, j, f, o,
                                         h, c, tanhc, has_biases, num_layers, dropout, train,
                                         bidirectional, batch_first.value_or(false), batch_sizes);
  if (lstmop_torch::is_variable_length(batch_sizes)) {
    lstmop_torch::checked_batch_sizes(*batch_sizes, input.size(0) / batch_sizes->numel());
  }
  if (differentiable) {
    return backward_by_recomputation(grad_y, grad_hy, grad_cy, input, hx, params, has_biases,
                                     num_layers, bidirectional, batch_first.value_or(false),
                                     batch_sizes);
  }
  // Tangents without grad mode (a backward without create_graph): the
  // recomputation needs its graph; the results leave without it, with their
  // tangents.
  BackwardTuple result;
  {
    const at::AutoGradMode graph(true);
    result = backward_by_recomputation(grad_y, grad_hy, grad_cy, input, hx, params, has_biases,
                                       num_layers, bidirectional, batch_first.value_or(false),
                                       batch_sizes);
  }
  const auto without_graph = [](Tensor& t) {
    const Tensor tangent = t._fw_grad(lstmop_torch::kTangentLevel);
    const Tensor value = lstmop_torch::primal(t).detach();
    t = tangent.defined()
            ? at::_make_dual(value, tangent.detach(), lstmop_torch::kTangentLevel)
            : value;
  };
  without_graph(std::get<0>(result));
  for (Tensor& t : std::get<1>(result)) without_graph(t);
  for (Tensor& t : std::get<2>(result)) without_graph(t);
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(lstmop, Autograd, m) {
  m.impl("_lstm", TORCH_FN(lstm_autograd));
  m.impl("_lstm_backward", TORCH_FN(lstm_backward_autograd));
}
