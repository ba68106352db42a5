// Internal: the one place where the operators' arguments are checked and the
// problem (plan/lstm_problem.h) derived. Every public entry point (shape
// functions, production, reference) goes through these functions before any
// work: check_forward.cpp, check_backward.cpp, check_outputs.cpp, shapes.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lstmop/lstm.h"
#include "plan/lstm_problem.h"

namespace lstmop {
namespace detail {

// Checks the forward's arguments. With read_values, batch_sizes' values are
// checked and every input tensor with elements must have data (compute);
// without, only shapes, dtypes and flags (shape inference on meta views).
LstmProblem check_forward_args(const TensorView& input, const TensorList& hx,
                               const TensorList& params, bool has_biases, int64_t num_layers,
                               double dropout, bool train, bool bidirectional, bool batch_first,
                               const TensorView& batch_sizes, bool read_values);

ForwardShapes forward_shapes(const LstmProblem& dims);

// Output views of lstm_forward_out: defined, exact shape, input's dtype,
// contiguous, data when non-empty, not overlapping each other or any input.
// Named tensor arguments of a call ("input", "hx[0]", "params[3]", "grad_y", ...).
using NamedViews = std::vector<std::pair<std::string, const TensorView*>>;

void check_forward_outputs(const ForwardOutputs& out, const ForwardShapes& shapes,
                           const LstmProblem& dims, const NamedViews& inputs);

LstmProblem check_backward_args(const BackwardInputs& saved, const TensorView& input,
                                const TensorList& hx, const TensorList& params, bool has_biases,
                                int64_t num_layers, double dropout, bool train, bool bidirectional,
                                bool batch_first, const TensorView& batch_sizes, bool read_values);

BackwardShapes backward_shapes(const LstmProblem& dims, const TensorView& input,
                               const TensorList& params);

void check_backward_outputs(const BackwardOutputs& out, const BackwardShapes& shapes,
                            const LstmProblem& dims, const NamedViews& inputs);

// Every tensor argument of a call, named, for the overlap checks of the _out
// forms; the backward's adds the saved tensors and upstream gradients.
NamedViews forward_input_views(const TensorView& input, const TensorList& hx,
                               const TensorList& params, const TensorView& batch_sizes);
NamedViews backward_input_views(const BackwardInputs& saved, const TensorView& input,
                                const TensorList& hx, const TensorList& params,
                                const TensorView& batch_sizes);

// "params[5] (weight_hh, layer 1, reverse)".
std::string param_label(const LstmProblem& dims, int64_t index);

}  // namespace detail
}  // namespace lstmop
