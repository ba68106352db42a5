#include "saved_params.h"

#include <c10/util/Exception.h>

#include <string>

namespace lstmop_torch {
namespace {

// The size of one layer and direction's group of params, 0 when the count
// does not divide (the op has refused such params before any of this runs).
size_t group_size(size_t count, int64_t num_layers, bool bidirectional) {
  const size_t groups = static_cast<size_t>(num_layers) * (bidirectional ? 2 : 1);
  return groups > 0 && count % groups == 0 ? count / groups : 0;
}

bool is_bias(size_t k, size_t group, bool has_biases) {
  return has_biases && group >= 4 && (k % group == 2 || k % group == 3);
}

}  // namespace

void save_params(torch::autograd::AutogradContext* ctx, at::TensorList params, bool has_biases,
                 int64_t num_layers, bool bidirectional, torch::autograd::variable_list& saved) {
  const size_t group = group_size(params.size(), num_layers, bidirectional);
  c10::List<at::Tensor> biases;
  std::vector<int64_t> versions, positions;
  int64_t weights = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    if (is_bias(k, group, has_biases)) {
      biases.push_back(params[k]);
      versions.push_back(static_cast<int64_t>(params[k]._version()));
      positions.push_back(static_cast<int64_t>(k));
    } else {
      saved.push_back(params[k]);
      ++weights;
    }
  }
  ctx->saved_data["biases"] = biases;
  ctx->saved_data["bias_versions"] = versions;
  ctx->saved_data["bias_positions"] = positions;
  ctx->saved_data["weight_count"] = weights;
}

int64_t saved_weight_count(torch::autograd::AutogradContext* ctx) {
  return ctx->saved_data["weight_count"].toInt();
}

std::vector<at::Tensor> restored_params(torch::autograd::AutogradContext* ctx,
                                        const at::Tensor* weights, bool values_read) {
  const std::vector<at::Tensor> biases = ctx->saved_data["biases"].toTensorVector();
  const std::vector<int64_t> versions = ctx->saved_data["bias_versions"].toIntVector();
  const std::vector<int64_t> positions = ctx->saved_data["bias_positions"].toIntVector();
  const int64_t weight_count = saved_weight_count(ctx);
  std::vector<at::Tensor> params;
  params.reserve(static_cast<size_t>(weight_count) + biases.size());
  size_t b = 0;
  const at::Tensor* w = weights;
  while (params.size() < static_cast<size_t>(weight_count) + biases.size()) {
    if (b < biases.size() && static_cast<int64_t>(params.size()) == positions[b]) {
      const at::Tensor& bias = biases[b];
      const int64_t version = static_cast<int64_t>(bias._version());
      TORCH_CHECK(!values_read || version == versions[b],
                  "one of the variables needed for gradient computation has been modified by "
                  "an inplace operation: params[", positions[b], "] (a bias, ", bias.toString(),
                  " ", bias.sizes(), ") is at version ", version, "; expected version ",
                  versions[b], " instead. A backward with create_graph=True recomputes the "
                  "forward and reads the biases; a plain backward does not.");
      params.push_back(bias);
      ++b;
    } else {
      params.push_back(*w++);
    }
  }
  return params;
}

namespace {
thread_local bool module_call = false;
}  // namespace

ModuleCallScope::ModuleCallScope() : previous_(module_call) { module_call = true; }
ModuleCallScope::~ModuleCallScope() { module_call = previous_; }
bool ModuleCallScope::active() { return module_call; }

void drop_unreached_projection_gradients(std::vector<at::Tensor>& gradients, size_t first_param,
                                         size_t param_count, bool has_biases, int64_t num_layers,
                                         bool bidirectional, bool output_or_hy_gradient,
                                         int64_t steps) {
  const size_t group = group_size(param_count, num_layers, bidirectional);
  const bool projected = group == (has_biases ? 5u : 3u);
  if (!projected || output_or_hy_gradient || steps != 1) return;
  const size_t directions = bidirectional ? 2 : 1;
  for (size_t d = 0; d < directions; ++d) {
    // The last layer's groups are the last `directions`; w_hr is a group's last entry.
    const size_t k = first_param + param_count - 1 - d * group;
    if (k < gradients.size()) gradients[k] = at::Tensor();
  }
}

}  // namespace lstmop_torch
