// Internal: the production layer drivers. They assume validated arguments
// (lstm_args.h) and validated, contiguous outputs of the input's dtype.
#pragma once

#include <algorithm>
#include <cstdint>

#include "api/lstm_args.h"

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

// Split mode's parts: part 0 gets the first split_units(H) hidden units (a
// multiple of 16, the recurrent product's panel width), part 1 the rest.
inline int64_t split_units(int64_t H) { return H / 32 * 16; }

// One of the two fixed halves of n rows the big products are issued in
// (the same calls whatever the thread count, hence the same bits).
struct RowHalf {
  int64_t first, count;
};
inline RowHalf row_half(int64_t n, int64_t part) {
  const int64_t half = (n + 1) / 2, first = part * half;
  return RowHalf{first, (part == 0 ? std::min(n, half) : n - half)};
}

void run_lstm_forward(const LstmDims& dims, const TensorView& input, const TensorList& hx,
                      const TensorList& params, const ForwardOutputs& out);

void run_lstm_backward(const LstmDims& dims, const BackwardInputs& saved, const TensorView& input,
                       const TensorList& hx, const TensorList& params, const BackwardOutputs& out);

}  // namespace detail
}  // namespace lstmop
