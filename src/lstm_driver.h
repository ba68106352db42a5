// Internal: the production layer drivers. They assume validated arguments
// (lstm_args.h) and validated, contiguous outputs of the input's dtype.
#pragma once

#include "lstm_args.h"

namespace lstmop {
namespace detail {

// Split mode (float, one direction, two threads; src/README.md) pays a
// barrier per step: only for a layer with enough recurrent work (at least
// 2^22 multiply-adds in all) and hidden units to halve along 16-column panels.
inline bool worth_splitting(const LstmDims& d) {
  // In double: the product of huge (validated) sizes may not fit int64.
  return d.H >= 32 && static_cast<double>(d.valid_rows()) * 4.0 * static_cast<double>(d.H) *
                              static_cast<double>(d.H) >= 4194304.0;
}

void run_lstm_forward(const LstmDims& dims, const TensorView& input, const TensorList& hx,
                      const TensorList& params, const ForwardOutputs& out);

void run_lstm_backward(const LstmDims& dims, const BackwardInputs& saved, const TensorView& input,
                       const TensorList& hx, const TensorList& params, const BackwardOutputs& out);

}  // namespace detail
}  // namespace lstmop
