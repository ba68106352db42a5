// lstmop: the reference implementation, the oracle every fast path is tested
// against. Plain scalar loops over the contract's formulas; every sum and
// every activation is computed in double, whatever the input dtype (inputs are
// read and widened to double). Results are float64 tensors with the shapes of
// the production functions; validation is the same as theirs.
#pragma once

#include "lstmop/lstm.h"

namespace lstmop {
namespace reference {

ForwardResult lstm_forward(const TensorView& input, const TensorList& hx, const TensorList& params,
                           bool has_biases, int64_t num_layers, double dropout, bool train,
                           bool bidirectional, bool batch_first = false,
                           const TensorView& batch_sizes = {});

BackwardResult lstm_backward(const TensorView& grad_y, const TensorView& grad_hy,
                             const TensorView& grad_cy, const TensorView& input,
                             const TensorList& hx, const TensorList& params, const TensorView& i,
                             const TensorView& j, const TensorView& f, const TensorView& o,
                             const TensorView& h, const TensorView& c, const TensorView& tanhc,
                             bool has_biases, int64_t num_layers, double dropout, bool train,
                             bool bidirectional, bool batch_first = false,
                             const TensorView& batch_sizes = {});

}  // namespace reference
}  // namespace lstmop
