// Internal: the production layer drivers. They assume validated arguments
// (lstm_args.h) and validated, contiguous outputs of the input's dtype.
#pragma once

#include "lstm_args.h"

namespace lstmop {
namespace detail {

// Split mode (float, one direction, two threads; src/README.md) pays a
// barrier per step: only for a layer with enough recurrent work, at least
// 2^19 multiply-adds in its largest step (S5's; S3's B = 1 steps, 2^16, lost
// on two threads) and 2^22 in all, and hidden units to halve along 16-column
// panels. In double: products of huge (validated) sizes may not fit int64.
inline bool worth_splitting(const LstmDims& d) {
  const double unit_work = 4.0 * static_cast<double>(d.H) * static_cast<double>(d.H);
  return d.H >= 32 && static_cast<double>(d.B) * unit_work >= 524288.0 &&
         static_cast<double>(d.valid_rows()) * unit_work >= 4194304.0;
}

void run_lstm_forward(const LstmDims& dims, const TensorView& input, const TensorList& hx,
                      const TensorList& params, const ForwardOutputs& out);

void run_lstm_backward(const LstmDims& dims, const BackwardInputs& saved, const TensorView& input,
                       const TensorList& hx, const TensorList& params, const BackwardOutputs& out);

}  // namespace detail
}  // namespace lstmop
