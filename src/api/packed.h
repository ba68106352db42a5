// Internal: the forward on PackedSequence rows, for the PyTorch binding's
// lstmop::lstm op (torch/lstm_op.cpp) in inference.
//
// lstm_forward_out's variable-length mode takes the input as padded (T*B, I)
// rows and writes the output as padded (T*B, D*R) rows; a PackedSequence
// holds only the valid rows, step t's batch_sizes[t] rows after those of the
// steps before it (the drivers' compact rows, sequence_rows.h). Here input is
// those (N, I) rows, N = sum of batch_sizes, and out.output the (N, D*R) rows
// of the result: no padding to build, fill or drop. Everything else is
// lstm_forward_out's with train = false (out.i .. out.tanhc shaped (0),
// out.h / out.c hy's / cy's copies); the valid rows get exactly the bits of
// that call on the padded rows. The arguments are checked as that call
// checks them on the padded shape (the same errors), then input (N, I) and
// out.output (N, D*R).
#pragma once

#include "lstmop/lstm.h"

namespace lstmop {
namespace detail {

void lstm_forward_packed_out(const ForwardOutputs& out, const TensorView& input,
                             const TensorList& hx, const TensorList& params, bool has_biases,
                             int64_t num_layers, bool bidirectional,
                             const TensorView& batch_sizes);

}  // namespace detail
}  // namespace lstmop
