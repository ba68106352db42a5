// Internal: the one place where the operators' arguments are checked and the
// problem's dimensions derived. Every public entry point (shape functions,
// production, reference) goes through these functions before any work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lstmop/lstm.h"

namespace lstmop {
namespace detail {

// Element offset of (t, b, k) in a sequence tensor (input, output, dx,
// grad_y): t * t_stride + b * b_stride + k * f_stride.
struct SequenceLayout {
  int64_t t_stride = 0, b_stride = 0, f_stride = 0;
};

// The problem, as derived from validated arguments.
struct LstmDims {
  int64_t T = 0, B = 0, I = 0, H = 0;
  int64_t L = 0, D = 0, S = 0;  // layers, directions, slots S = D * L
  bool packed = false;          // variable-length mode (batch_sizes given and non-empty)
  bool batch_first = false;     // effective: false in variable-length mode
  bool has_biases = false;
  bool train = false;
  bool has_hx = false;
  DType dtype = DType::Float32;
  int64_t params_per_slot = 2;                // 2 or 4
  std::vector<int64_t> slot_input_size;       // I_l of each slot s = l * D + d
  // Valid rows of each step (sequences 0..batch_sizes[t]-1): B every step in
  // fixed-length mode, the values of batch_sizes in variable-length mode. Empty
  // when the values were not read (shape functions).
  std::vector<int64_t> step_batch;
  // Compact row offset of each step: sum of step_batch before t; T + 1
  // entries, the last one is the number of valid (t, b) rows.
  std::vector<int64_t> step_offset;

  int64_t valid_rows() const { return step_offset.empty() ? 0 : step_offset.back(); }
  // len_b, the number of steps of sequence b (needs step_batch).
  int64_t sequence_length(int64_t b) const;
  // Layout of a view with the input's format (input, dx) or the output's
  // (output, grad_y): (T, B, F), (B, T, F) if batch_first, (T*B, F) packed.
  SequenceLayout sequence_layout(const TensorView& v) const;
};

// Checks the forward's arguments. With read_values, batch_sizes' values are
// checked and every input tensor with elements must have data (compute);
// without, only shapes, dtypes and flags (shape inference on meta views).
LstmDims check_forward_args(const TensorView& input, const TensorList& hx,
                            const TensorList& params, bool has_biases, int64_t num_layers,
                            double dropout, bool train, bool bidirectional, bool batch_first,
                            const TensorView& batch_sizes, bool read_values);

ForwardShapes forward_shapes(const LstmDims& dims);

// Output views of lstm_forward_out: defined, exact shape, input's dtype,
// contiguous, data when non-empty, not overlapping each other or any input.
void check_forward_outputs(const ForwardOutputs& out, const ForwardShapes& shapes,
                           const LstmDims& dims, const std::vector<const TensorView*>& inputs);

// The backward's saved tensors and incoming gradients, in argument order.
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

LstmDims check_backward_args(const BackwardInputs& saved, const TensorView& input,
                             const TensorList& hx, const TensorList& params, bool has_biases,
                             int64_t num_layers, double dropout, bool train, bool bidirectional,
                             bool batch_first, const TensorView& batch_sizes, bool read_values);

BackwardShapes backward_shapes(const LstmDims& dims, const TensorView& input,
                               const TensorList& params);

void check_backward_outputs(const BackwardOutputs& out, const BackwardShapes& shapes,
                            const LstmDims& dims, const std::vector<const TensorView*>& inputs);

// Every tensor argument of a call, for the overlap checks of the _out forms.
std::vector<const TensorView*> forward_input_views(const TensorView& input, const TensorList& hx,
                                                   const TensorList& params,
                                                   const TensorView& batch_sizes);

// "params[5] (weight_hh, layer 1, reverse)".
std::string param_label(const LstmDims& dims, int64_t index);

}  // namespace detail
}  // namespace lstmop
