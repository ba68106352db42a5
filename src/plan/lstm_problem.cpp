#include "plan/lstm_problem.h"

namespace lstmop {
namespace detail {

int64_t LstmProblem::sequence_length(int64_t b) const {
  int64_t len = 0;
  while (len < static_cast<int64_t>(step_batch.size()) && step_batch[len] > b) ++len;
  return len;
}

SequenceLayout LstmProblem::sequence_layout(const TensorView& v) const {
  SequenceLayout l;
  if (variable_length) {
    l.t_stride = B * v.stride(0);
    l.b_stride = v.stride(0);
    l.f_stride = v.stride(1);
  } else if (batch_first) {
    l.t_stride = v.stride(1);
    l.b_stride = v.stride(0);
    l.f_stride = v.stride(2);
  } else {
    l.t_stride = v.stride(0);
    l.b_stride = v.stride(1);
    l.f_stride = v.stride(2);
  }
  return l;
}

}  // namespace detail
}  // namespace lstmop
