// What the binding's translation units share: the typed handles of the
// registered ops, the argument checks of lstm_ops.cpp that read no data, and
// the checks of batch_sizes' values done in the binding itself.
//
// Error rule of the binding (docs/lstm.md, "Errors"): every bad argument of an
// lstmop op raises c10::Error (Python: RuntimeError), the class torch's own
// aten::lstm raises for the same inputs; the message names the argument, what
// was expected and what came.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace lstmop_torch {

using at::Tensor;
using at::TensorList;
using ForwardTuple =
    std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor>;
using BackwardTuple = std::tuple<Tensor, std::vector<Tensor>, std::vector<Tensor>>;
using ForwardSignature = ForwardTuple(const Tensor&, TensorList, TensorList, bool, int64_t, double,
                                      bool, bool, c10::optional<bool>,
                                      const c10::optional<Tensor>&);
using BackwardSignature = BackwardTuple(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                        TensorList, TensorList, const Tensor&, const Tensor&,
                                        const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                        const Tensor&, bool, int64_t, double, bool, bool,
                                        c10::optional<bool>, const c10::optional<Tensor>&);

// lstmop::_lstm and lstmop::_lstm_backward, called through the dispatcher
// (from whatever dispatch level the caller is at).
const c10::TypedOperatorHandle<ForwardSignature>& forward_op();
const c10::TypedOperatorHandle<BackwardSignature>& backward_op();

// _lstm's and _lstm_backward's argument checks (lstm_ops.cpp), on shapes,
// dtypes, devices and flags only: tensors on any device are accepted and no
// data is read, so batch_sizes' values are not checked (checked_batch_sizes
// does that). Raise c10::Error naming the argument.
void check_forward_arguments(const Tensor& input, TensorList hx, TensorList params, bool has_biases,
                             int64_t num_layers, double dropout, bool train, bool bidirectional,
                             bool batch_first, const c10::optional<Tensor>& batch_sizes);
void check_backward_arguments(const Tensor& grad_y, const Tensor& grad_hy, const Tensor& grad_cy,
                              const Tensor& input, TensorList hx, TensorList params,
                              const Tensor& i, const Tensor& j, const Tensor& f, const Tensor& o,
                              const Tensor& h, const Tensor& c, const Tensor& tanhc,
                              bool has_biases, int64_t num_layers, double dropout, bool train,
                              bool bidirectional, bool batch_first,
                              const c10::optional<Tensor>& batch_sizes);

// The forward and backward on PackedSequence rows (the core's
// lstm_forward_packed_out / lstm_backward_packed_out, src/api/packed.h):
// input (N, I) and output, grad_y, dx (N, .) are the packed rows; hy, cy, the
// saved tensors and the other gradients as _lstm / _lstm_backward have them.
// padded_rows = T*B, the padded shape's rows the arguments were checked on.
// CPU tensors only; called below autograd.
ForwardTuple forward_packed_rows(const Tensor& input, TensorList hx, TensorList params,
                                 bool has_biases, int64_t num_layers, bool bidirectional,
                                 const Tensor& batch_sizes, int64_t padded_rows, bool train);
BackwardTuple backward_packed_rows(const Tensor& grad_y, const Tensor& grad_hy,
                                   const Tensor& grad_cy, const Tensor& input, TensorList hx,
                                   TensorList params, const Tensor& i, const Tensor& j,
                                   const Tensor& f, const Tensor& o, const Tensor& h,
                                   const Tensor& c, const Tensor& tanhc, bool has_biases,
                                   int64_t num_layers, bool bidirectional,
                                   const Tensor& batch_sizes);

// The results of _lstm_backward (or backward_packed_rows) as the gradients of
// an autograd Function's arguments, lists flattened: dx, one per hx entry
// (hx_count: dh0, dc0 when hx was given, none for an empty hx), one per
// params entry, then `trailing` undefined ones for the arguments that have
// no gradient.
std::vector<Tensor> argument_gradients(BackwardTuple result, int64_t hx_count, int64_t trailing);

// True when batch_sizes selects variable-length mode in _lstm's sense: given,
// defined and non-empty (an empty one means fixed length).
bool is_variable_length(const c10::optional<Tensor>& batch_sizes);

// The values of batch_sizes (a CPU int64 1-D tensor, checked here): T >= 1
// entries, non-increasing, each in [1, batch_sizes[0]]. `batch`, when >= 0, is
// the B batch_sizes[0] must equal.
std::vector<int64_t> checked_batch_sizes(const Tensor& batch_sizes, int64_t batch = -1);

// "torch.float32"-style dtype names, as Python users know them.
std::string torch_dtype_name(at::ScalarType type);

}  // namespace lstmop_torch
