// The contract's LSTM forward (outputs 0-2: output, hy, cy) written in ATen
// operations, so that autograd can differentiate it to any order. It is the
// recomputation behind _lstm_backward's derivative (lstm_autograd.cpp), the
// op lstmop::_lstm_aten, and the source of the forward-mode derivatives
// (tangents) of _lstm and lstmop::lstm (set_tangents below).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

namespace lstmop_torch {

// Every mode of the contract: layers, bidirectional, has_biases, batch_first,
// variable length (batch_sizes: (T*B, I) rows laid out like (T, B, I), each
// sequence its own length, invalid output rows 0), projections (3 or 5 params
// per slot, w_hr (P, H) last), float32/float64 computed in their dtype,
// float16/bfloat16 in float32 with every h rounded to the dtype as the op
// stores it. hx: [h0 (D*L, B, R), c0 (D*L, B, H)], or empty for zeros.
// Arguments are checked for what the computation needs (counts, ranks,
// shapes, batch_sizes' values); c10::Error names the argument.
std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_aten_forward(
    const at::Tensor& input, at::TensorList hx, at::TensorList params, bool has_biases,
    int64_t num_layers, bool bidirectional, bool batch_first,
    const c10::optional<at::Tensor>& batch_sizes);

// The sizes of h0 and c0 for these arguments: (D*L, B, R) and (D*L, B, H).
// Assumes arguments lstm_aten_forward accepts (or the op's checks passed).
std::pair<std::vector<int64_t>, std::vector<int64_t>> initial_state_shapes(
    const at::Tensor& input, at::TensorList params, bool has_biases, int64_t num_layers,
    bool bidirectional, bool batch_first, const c10::optional<at::Tensor>& batch_sizes);

// Forward-mode automatic differentiation (torch.autograd.forward_ad): the
// dual level torch runs (one at a time, level 0).
constexpr uint64_t kTangentLevel = 0;

// Whether a defined tensor among these carries a tangent (is a dual tensor).
bool any_tangent(at::TensorList tensors);

// What a forward call (input, hx, params) asks of autograd: reverse mode (grad
// mode on and one of them requires grad), forward mode (one carries a tangent).
bool wants_reverse_mode(const at::Tensor& input, at::TensorList hx, at::TensorList params);
bool wants_forward_mode(const at::Tensor& input, at::TensorList hx, at::TensorList params);

// The tensor without its tangent: the primal (a view of it) of a dual tensor,
// the tensor itself otherwise. Gradients of reverse mode reach it through the
// view.
at::Tensor primal(const at::Tensor& tensor);
std::vector<at::Tensor> primals(at::TensorList tensors);

// Gives output, hy and cy (the op's results on the primals) their tangents:
// the forward-mode derivatives of lstm_aten_forward on the dual arguments (the
// ATen operations' own derivative formulas), in the dtype of the results; a
// result whose tangent is zero by construction gets none, as in ATen. Grad
// mode is off inside: the tangents carry no reverse-mode graph.
void set_tangents(const at::Tensor& output, const at::Tensor& hy, const at::Tensor& cy,
                  const at::Tensor& input, at::TensorList hx, at::TensorList params,
                  bool has_biases, int64_t num_layers, bool bidirectional, bool batch_first,
                  const c10::optional<at::Tensor>& batch_sizes);

}  // namespace lstmop_torch
