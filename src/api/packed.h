// Internal: the forward and backward on PackedSequence rows, for the PyTorch
// binding's lstmop::lstm op (torch/lstm_op.cpp).
//
// lstm_forward_out's variable-length mode takes the input as padded (T*B, I)
// rows and writes the output as padded (T*B, D*R) rows; a PackedSequence
// holds only the valid rows, step t's batch_sizes[t] rows after those of the
// steps before it (the drivers' compact rows, sequence_rows.h). Here input is
// those (N, I) rows, N = sum of batch_sizes, and out.output the (N, D*R) rows
// of the result: no padding to build, fill or drop. Everything else is
// lstm_forward_out's (dropout 0; the saved tensors of a train = true call in
// their usual padded (D*L, T, B, H) layout); the valid rows get exactly the
// bits of that call on the padded rows. The arguments are checked as that
// call checks them on the padded shape (the same errors), then input (N, I)
// and out.output (N, D*R).
#pragma once

#include "lstmop/lstm.h"

namespace lstmop {
namespace detail {

void lstm_forward_packed_out(const ForwardOutputs& out, const TensorView& input,
                             const TensorList& hx, const TensorList& params, bool has_biases,
                             int64_t num_layers, bool bidirectional,
                             const TensorView& batch_sizes, bool train = false);

// The backward of a train = true lstm_forward_packed_out: grad_y (N, D*R) (or
// undefined) and input (N, I) as packed rows, dx (N, I) written as packed
// rows; the saved tensors, grad_hy, grad_cy, dh0, dc0 and dparams as
// lstm_backward_out has them. The same bits as lstm_backward_out on the padded
// rows (dx's valid rows).
void lstm_backward_packed_out(const BackwardOutputs& out, const TensorView& grad_y,
                              const TensorView& grad_hy, const TensorView& grad_cy,
                              const TensorView& input, const TensorList& hx,
                              const TensorList& params, const TensorView& i,
                              const TensorView& j, const TensorView& f, const TensorView& o,
                              const TensorView& h, const TensorView& c, const TensorView& tanhc,
                              bool has_biases, int64_t num_layers, bool bidirectional,
                              const TensorView& batch_sizes);

}  // namespace detail
}  // namespace lstmop
