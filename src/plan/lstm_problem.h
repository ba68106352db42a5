// Internal: the problem of one call, as derived from validated arguments
// (api/checks.h derives it; the plan, the drivers and the reference read it).
#pragma once

#include <cstdint>
#include <vector>

#include "lstmop/tensor.h"

namespace lstmop {
namespace detail {

// Element offset of (t, b, k) in a sequence tensor (input, output, dx,
// grad_y): t * t_stride + b * b_stride + k * f_stride.
struct SequenceLayout {
  int64_t t_stride = 0, b_stride = 0, f_stride = 0;
};

struct LstmProblem {
  int64_t T = 0, B = 0, I = 0, H = 0;
  // Projections (proj_size, "LSTMP"): P = the rows of every slot's w_hr (P, H),
  // 1 <= P < H, h_t = w_hr (o * tanh(c_t)); P = 0 without projections.
  int64_t P = 0;
  // The width of h and of everything that carries it (h0, hy, the saved h,
  // output's features per direction, w_hh's columns): P with projections,
  // else H. c keeps H features.
  int64_t R = 0;
  int64_t L = 0, D = 0;  // layers, directions
  int64_t slots = 0;     // D * L; slot s = l * D + d is layer l, direction d
  bool variable_length = false;  // batch_sizes given and non-empty
  // Variable length only: the tensors in the input's or the output's format
  // (input, output, grad_y, dx) are the compact (valid rows, F) rows
  // themselves, PackedSequence's data (api/packed.h); the saved tensors and
  // the states keep their layouts.
  bool packed_rows = false;
  bool batch_first = false;      // effective: false with variable length
  bool has_biases = false;
  bool train = false;
  bool has_hx = false;
  DType dtype = DType::Float32;
  // [w_ih, w_hh, (b_ih, b_hh,) (w_hr)]: 2 or 4, one more with projections.
  int64_t params_per_slot = 2;
  std::vector<int64_t> slot_input_size;       // I_l of each slot
  // Valid rows of each step (sequences 0..batch_sizes[t]-1): B every step in
  // fixed-length mode, the values of batch_sizes with variable length. Empty
  // when the values were not read (shape functions).
  std::vector<int64_t> step_batch;
  // Compact row offset of each step: sum of step_batch before t; T + 1
  // entries, the last one is the number of valid (t, b) rows.
  std::vector<int64_t> step_offset;

  bool projections() const { return P > 0; }
  // Index of slot s's w_hr in params (projections only): the slot's last entry.
  int64_t w_hr_index(int64_t s) const { return (s + 1) * params_per_slot - 1; }
  int64_t valid_rows() const { return step_offset.empty() ? 0 : step_offset.back(); }
  // len_b, the number of steps of sequence b (needs step_batch).
  int64_t sequence_length(int64_t b) const;
  // Layout of a view with the input's format (input, dx) or the output's
  // (output, grad_y): (T, B, F), (B, T, F) if batch_first, (T*B, F) with
  // variable length (not for packed_rows: row_offset).
  SequenceLayout sequence_layout(const TensorView& v) const;
  // Element offset of (step t, sequence b)'s row in a view with the input's
  // or the output's format, also with packed_rows (row step_offset[t] + b).
  int64_t row_offset(const TensorView& v, const SequenceLayout& l, int64_t t, int64_t b) const {
    return packed_rows ? (step_offset[t] + b) * v.stride(0) : t * l.t_stride + b * l.b_stride;
  }
};

// The backward's saved tensors and incoming gradients, in argument order
// (checked by api/, read by the backward driver and the reference).
struct BackwardInputs {
  const TensorView* grad_y;
  const TensorView* grad_hy;
  const TensorView* grad_cy;
  const TensorView* i;
  const TensorView* j;
  const TensorView* f;
  const TensorView* o;
  const TensorView* h;
  const TensorView* c;
  const TensorView* tanhc;
};

}  // namespace detail
}  // namespace lstmop
