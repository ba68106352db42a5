// Internal: the production layer drivers. They assume validated arguments
// (lstm_args.h) and validated, contiguous outputs of the input's dtype.
#pragma once

#include "lstm_args.h"

namespace lstmop {
namespace detail {

void run_lstm_forward(const LstmDims& dims, const TensorView& input, const TensorList& hx,
                      const TensorList& params, const ForwardOutputs& out);

void run_lstm_backward(const LstmDims& dims, const BackwardInputs& saved, const TensorView& input,
                       const TensorList& hx, const TensorList& params, const BackwardOutputs& out);

}  // namespace detail
}  // namespace lstmop
