// lstm_aten_forward: the contract's forward in ATen operations (lstm_aten.h),
// and the op lstmop::_lstm_aten that exposes it (CompositeImplicitAutograd:
// autograd differentiates its ATen operations, to any order).
//
// Per slot the step loop follows the contract literally: gates from one
// product of the whole layer input with w_ih^T (T, B, 4H) plus the step's
// product h_prev w_hh^T, the cell update, and in variable-length mode only the
// first batch_sizes[t] rows of step t take part (the sequences are sorted by
// length, so the valid rows of a step are always the first ones): the forward
// direction carries the state of finished sequences to the end, the reverse
// direction reaches each sequence at its last valid step with hx's state
// untouched.
#include "lstm_aten.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "lstm_ops.h"

namespace lstmop_torch {
namespace {

std::string with_dims(at::IntArrayRef sizes) {
  return std::to_string(sizes.size()) + "-D " + c10::str(sizes);
}

// Where the arithmetic happens: float16/bfloat16 compute in float32, as the op.
at::ScalarType compute_type(at::ScalarType dtype) {
  return dtype == at::kHalf || dtype == at::kBFloat16 ? at::kFloat : dtype;
}

// What the arguments describe.
struct Layout {
  int64_t D = 1, slots = 1, per_slot = 2, H = 1, R = 1, T = 1, B = 0;
  bool projections = false;
  bool variable_length = false;
  std::vector<int64_t> step_batch;  // rows of each step that take part (B in fixed length)
};

Layout layout_of(const at::Tensor& input, at::TensorList params, bool has_biases,
                 int64_t num_layers, bool bidirectional, bool batch_first,
                 const c10::optional<at::Tensor>& batch_sizes) {
  Layout l;
  TORCH_CHECK(num_layers >= 1, "num_layers must be >= 1, got ", num_layers);
  l.D = bidirectional ? 2 : 1;
  l.slots = l.D * num_layers;
  const int64_t plain = has_biases ? 4 : 2;
  const auto count = static_cast<int64_t>(params.size());
  TORCH_CHECK(count == plain * l.slots || count == (plain + 1) * l.slots, "params must hold ",
              plain, " (or ", plain + 1, " with projections) tensors per layer and direction, ",
              plain * l.slots, " or ", (plain + 1) * l.slots, " for ", l.slots, " slots, got ",
              count);
  l.per_slot = count / l.slots;
  l.projections = l.per_slot == plain + 1;
  TORCH_CHECK(params[0].dim() == 2 && params[0].size(0) % 4 == 0 && params[0].size(0) >= 4,
              "params[0] (w_ih) must be 2-D (4*hidden_size, input_size), got ",
              with_dims(params[0].sizes()));
  l.H = params[0].size(0) / 4;
  l.R = l.H;
  if (l.projections) {
    const at::Tensor& w_hr = params[l.per_slot - 1];
    TORCH_CHECK(w_hr.dim() == 2 && w_hr.size(1) == l.H && w_hr.size(0) >= 1 && w_hr.size(0) < l.H,
                "params[", l.per_slot - 1, "] (w_hr) must be (proj_size, ", l.H,
                ") with 1 <= proj_size < ", l.H, ", got ", with_dims(w_hr.sizes()));
    l.R = w_hr.size(0);
  }
  l.variable_length = is_variable_length(batch_sizes);
  if (l.variable_length) {
    TORCH_CHECK(input.dim() == 2,
                "input must be 2-D (T*B, input_size) when batch_sizes is given, got ",
                with_dims(input.sizes()));
    l.T = batch_sizes->numel();
    TORCH_CHECK(input.size(0) % l.T == 0, "batch_sizes length T = ", l.T,
                " must divide input.size(0) = ", input.size(0));
    l.B = input.size(0) / l.T;
    l.step_batch = checked_batch_sizes(*batch_sizes, l.B);
  } else {
    TORCH_CHECK(input.dim() == 3,
                "input must be 3-D (T, B, input_size), or (B, T, input_size) with ",
                "batch_first, got ", with_dims(input.sizes()));
    l.T = batch_first ? input.size(1) : input.size(0);
    l.B = batch_first ? input.size(0) : input.size(1);
    l.step_batch.assign(static_cast<size_t>(l.T), l.B);
  }
  TORCH_CHECK(l.T >= 1, "input must have at least one time step (T >= 1), got ",
              with_dims(input.sizes()));
  return l;
}

void check_shape(const at::Tensor& tensor, const std::string& name,
                 const std::vector<int64_t>& expected) {
  TORCH_CHECK(tensor.sizes() == at::IntArrayRef(expected), name, " must be ",
              c10::str(at::IntArrayRef(expected)), ", got ", with_dims(tensor.sizes()));
}

}  // namespace

std::pair<std::vector<int64_t>, std::vector<int64_t>> initial_state_shapes(
    const at::Tensor& input, at::TensorList params, bool has_biases, int64_t num_layers,
    bool bidirectional, bool batch_first, const c10::optional<at::Tensor>& batch_sizes) {
  const Layout l =
      layout_of(input, params, has_biases, num_layers, bidirectional, batch_first, batch_sizes);
  return {{l.slots, l.B, l.R}, {l.slots, l.B, l.H}};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_aten_forward(
    const at::Tensor& input, at::TensorList hx, at::TensorList params, bool has_biases,
    int64_t num_layers, bool bidirectional, bool batch_first,
    const c10::optional<at::Tensor>& batch_sizes) {
  const Layout l =
      layout_of(input, params, has_biases, num_layers, bidirectional, batch_first, batch_sizes);
  const at::ScalarType dtype = input.scalar_type();
  const at::ScalarType compute = compute_type(dtype);
  const bool rounds_products = compute != dtype;  // 16-bit: product operands are 16-bit values

  // Time-major (T, B, I) input.
  at::Tensor x = l.variable_length ? input.reshape({l.T, l.B, input.size(1)})
                                   : (batch_first ? input.transpose(0, 1) : input);
  x = x.to(compute);

  TORCH_CHECK(hx.empty() || hx.size() == 2, "hx must be empty or hold 2 tensors [h0, c0], got ",
              hx.size());
  at::Tensor h0, c0;
  if (hx.empty()) {
    h0 = at::zeros({l.slots, l.B, l.R}, x.options());
    c0 = at::zeros({l.slots, l.B, l.H}, x.options());
  } else {
    check_shape(hx[0], "hx[0]", {l.slots, l.B, l.R});
    check_shape(hx[1], "hx[1]", {l.slots, l.B, l.H});
    h0 = hx[0].to(compute);
    c0 = hx[1].to(compute);
  }

  std::vector<at::Tensor> hy(static_cast<size_t>(l.slots)), cy(static_cast<size_t>(l.slots));
  at::Tensor layer_input = x;  // (T, B, I_l)
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    const int64_t layer_input_size = layer_input.size(2);
    std::vector<at::Tensor> direction_outputs;
    for (int64_t d = 0; d < l.D; ++d) {
      const int64_t s = layer * l.D + d;
      const int64_t first = s * l.per_slot;
      auto param = [&](int64_t k, const char* what, std::vector<int64_t> shape) {
        check_shape(params[first + k],
                    "params[" + std::to_string(first + k) + "] (" + what + ", layer " +
                        std::to_string(layer) + (d == 0 ? ", forward)" : ", reverse)"),
                    shape);
        return params[first + k].to(compute);
      };
      const at::Tensor w_ih = param(0, "w_ih", {4 * l.H, layer_input_size});
      const at::Tensor w_hh = param(1, "w_hh", {4 * l.H, l.R});
      at::Tensor input_gates = at::matmul(layer_input, w_ih.t());  // (T, B, 4H)
      if (has_biases) {
        input_gates = input_gates + (param(2, "b_ih", {4 * l.H}) + param(3, "b_hh", {4 * l.H}));
      }
      const at::Tensor w_hr =
          l.projections ? param(l.per_slot - 1, "w_hr", {l.R, l.H}) : at::Tensor();

      at::Tensor h = h0[s];  // (B, R)
      at::Tensor c = c0[s];  // (B, H)
      std::vector<at::Tensor> step_outputs(static_cast<size_t>(l.T));
      for (int64_t k = 0; k < l.T; ++k) {
        const int64_t t = d == 0 ? k : l.T - 1 - k;
        const int64_t n = l.step_batch[static_cast<size_t>(t)];
        const bool all_rows = n == l.B;
        const at::Tensor h_prev = all_rows ? h : h.narrow(0, 0, n);
        const at::Tensor c_prev = all_rows ? c : c.narrow(0, 0, n);
        const at::Tensor step_input_gates =
            all_rows ? input_gates[t] : input_gates[t].narrow(0, 0, n);
        const std::vector<at::Tensor> gates =
            (step_input_gates + at::matmul(h_prev, w_hh.t())).chunk(4, 1);  // i f g o
        const at::Tensor c_new =
            at::sigmoid(gates[1]) * c_prev + at::sigmoid(gates[0]) * at::tanh(gates[2]);
        at::Tensor h_new = at::sigmoid(gates[3]) * at::tanh(c_new);
        if (l.projections) {
          if (rounds_products) h_new = h_new.to(dtype).to(compute);
          h_new = at::matmul(h_new, w_hr.t());
        }
        // The op stores h in the dtype and multiplies the stored value.
        if (rounds_products) h_new = h_new.to(dtype).to(compute);
        if (all_rows) {
          h = h_new;
          c = c_new;
          step_outputs[static_cast<size_t>(t)] = h_new;
        } else {
          h = at::cat({h_new, h.narrow(0, n, l.B - n)});
          c = at::cat({c_new, c.narrow(0, n, l.B - n)});
          step_outputs[static_cast<size_t>(t)] =
              at::cat({h_new, at::zeros({l.B - n, l.R}, h_new.options())});
        }
      }
      direction_outputs.push_back(at::stack(step_outputs));  // (T, B, R)
      hy[static_cast<size_t>(s)] = h;
      cy[static_cast<size_t>(s)] = c;
    }
    layer_input = l.D == 1 ? direction_outputs[0] : at::cat(direction_outputs, 2);
  }

  at::Tensor output = layer_input.to(dtype);  // (T, B, D*R)
  if (l.variable_length) {
    output = output.reshape({l.T * l.B, l.D * l.R});
  } else if (batch_first) {
    output = output.transpose(0, 1).contiguous();
  }
  return {output, at::stack(hy).to(dtype), at::stack(cy).to(dtype)};
}

bool any_tangent(at::TensorList tensors) {
  for (const at::Tensor& t : tensors) {
    if (t.defined() && t._fw_grad(kTangentLevel).defined()) return true;
  }
  return false;
}

namespace {

bool any_requires_grad(at::TensorList tensors) {
  for (const at::Tensor& t : tensors) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

}  // namespace

bool wants_reverse_mode(const at::Tensor& input, at::TensorList hx, at::TensorList params) {
  return at::GradMode::is_enabled() &&
         (input.requires_grad() || any_requires_grad(hx) || any_requires_grad(params));
}

bool wants_forward_mode(const at::Tensor& input, at::TensorList hx, at::TensorList params) {
  return any_tangent(input) || any_tangent(hx) || any_tangent(params);
}

at::Tensor primal(const at::Tensor& tensor) {
  return tensor.defined() && tensor._fw_grad(kTangentLevel).defined()
             ? tensor._fw_primal(kTangentLevel)
             : tensor;
}

std::vector<at::Tensor> primals(at::TensorList tensors) {
  std::vector<at::Tensor> result;
  result.reserve(tensors.size());
  for (const at::Tensor& t : tensors) result.push_back(primal(t));
  return result;
}

void set_tangents(const at::Tensor& output, const at::Tensor& hy, const at::Tensor& cy,
                  const at::Tensor& input, at::TensorList hx, at::TensorList params,
                  bool has_biases, int64_t num_layers, bool bidirectional, bool batch_first,
                  const c10::optional<at::Tensor>& batch_sizes) {
  std::tuple<at::Tensor, at::Tensor, at::Tensor> dual;
  {
    const at::NoGradGuard no_graph;
    dual = lstm_aten_forward(input, hx, params, has_biases, num_layers, bidirectional,
                             batch_first, batch_sizes);
  }
  const std::pair<const at::Tensor*, const at::Tensor*> pairs[] = {
      {&output, &std::get<0>(dual)}, {&hy, &std::get<1>(dual)}, {&cy, &std::get<2>(dual)}};
  for (const auto& pair : pairs) {
    const at::Tensor& tangent = pair.second->_fw_grad(kTangentLevel);
    if (tangent.defined()) {
      pair.first->_set_fw_grad(tangent.to(pair.first->scalar_type()), kTangentLevel,
                               /*is_inplace_op=*/false);
    }
  }
}

}  // namespace lstmop_torch

namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_aten(
    const at::Tensor& input, at::TensorList hx, at::TensorList params, bool has_biases,
    int64_t num_layers, bool bidirectional, bool batch_first,
    const c10::optional<at::Tensor>& batch_sizes) {
  return lstmop_torch::lstm_aten_forward(input, hx, params, has_biases, num_layers, bidirectional,
                                         batch_first, batch_sizes);
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(lstmop, m) {
  m.def(
      "_lstm_aten(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, "
      "bool bidirectional, *, bool batch_first=False, Tensor? batch_sizes=None) -> "
      "(Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(lstmop, CompositeImplicitAutograd, m) {
  m.impl("_lstm_aten", TORCH_FN(lstm_aten));
}
