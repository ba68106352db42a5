// What the autograd functions of _lstm and lstmop::lstm (LstmFunction,
// PackedLstmFunction) keep of the parameters for the backward, and the
// gradients torch.nn.LSTM leaves None.
//
// torch.nn.LSTM's backward reads the weights but never the biases (a bias
// only adds to the gates), so changing a bias in place between the forward
// and the backward is fine there and an error only for what the backward
// reads. The same here: the weights go through save_for_backward (version
// checked), the biases are kept aside with their versions, which are checked
// only where a value is read: a backward with create_graph=True, whose
// differentiable path recomputes the forward from the biases
// (lstm_autograd.cpp).
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <vector>

namespace lstmop_torch {

// Appends the params that are not biases to `saved` (for save_for_backward,
// in order); keeps the biases (entries 2 and 3 of each layer and direction's
// group w_ih, w_hh, b_ih, b_hh[, w_hr]) and their versions in ctx->saved_data.
void save_params(torch::autograd::AutogradContext* ctx, at::TensorList params, bool has_biases,
                 int64_t num_layers, bool bidirectional, torch::autograd::variable_list& saved);

// How many entries save_params appended to `saved`.
int64_t saved_weight_count(torch::autograd::AutogradContext* ctx);

// The params in their order again: the weights from `weights` (what
// save_params appended, unpacked), the biases from ctx->saved_data. When
// `values_read`, a bias changed in place since the forward is an error (the
// message of torch's own version check).
std::vector<at::Tensor> restored_params(torch::autograd::AutogradContext* ctx,
                                        const at::Tensor* weights, bool values_read);

// Open while lstmop::lstm (the op lstmop.nn.LSTM calls) runs, on its thread:
// the _lstm calls it makes then give torch.nn.LSTM's None gradients
// (drop_unreached_projection_gradients); a direct _lstm call keeps the
// contract's derivative, a zero tensor for every parameter.
class ModuleCallScope {
 public:
  ModuleCallScope();
  ~ModuleCallScope();
  ModuleCallScope(const ModuleCallScope&) = delete;
  ModuleCallScope& operator=(const ModuleCallScope&) = delete;
  static bool active();

 private:
  bool previous_;
};

// gradients: one per forward argument (input, hx..., params..., ...), params
// from index `first_param`. When neither the output's nor hy's gradient came
// (only cy's) and every sequence has one step, the last layer's w_hr did not
// take part in what was differentiated (it only makes h, and no later step
// reads h): its gradients become undefined, the None torch.nn.LSTM leaves.
void drop_unreached_projection_gradients(std::vector<at::Tensor>& gradients, size_t first_param,
                                         size_t param_count, bool has_biases, int64_t num_layers,
                                         bool bidirectional, bool output_or_hy_gradient,
                                         int64_t steps);

}  // namespace lstmop_torch
