// Internal: the production layer drivers. They assume validated arguments
// (api/checks.h) and validated, contiguous outputs of the input's dtype;
// each fills its plan (plan/lstm_plan.h) once, books its scratch, and runs.
#pragma once

#include "lstmop/lstm.h"
#include "plan/lstm_problem.h"

namespace lstmop {
namespace detail {

void run_lstm_forward(const LstmProblem& problem, const TensorView& input, const TensorList& hx,
                      const TensorList& params, const ForwardOutputs& out);

void run_lstm_backward(const LstmProblem& problem, const BackwardInputs& saved,
                       const TensorView& input, const TensorList& hx, const TensorList& params,
                       const BackwardOutputs& out);

}  // namespace detail
}  // namespace lstmop
