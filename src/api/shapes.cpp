// Shape inference (checks.h): the forward's 10 result shapes and the
// backward's gradient shapes of a checked problem.
#include "api/checks.h"

namespace lstmop {
namespace detail {

ForwardShapes forward_shapes(const LstmProblem& d) {
  ForwardShapes s;
  const int64_t out_features = d.D * d.R;  // R: proj_size with projections, else H
  if (d.packed_rows) {
    s.output = {d.valid_rows(), out_features};
  } else if (d.variable_length) {
    s.output = {d.T * d.B, out_features};
  } else if (d.batch_first) {
    s.output = {d.B, d.T, out_features};
  } else {
    s.output = {d.T, d.B, out_features};
  }
  s.hy = {d.slots, d.B, d.R};
  s.cy = {d.slots, d.B, d.H};
  if (d.train) {
    s.i = s.j = s.f = s.o = s.c = s.tanhc = {d.slots, d.T, d.B, d.H};
    s.h = {d.slots, d.T, d.B, d.R};
  } else {
    s.i = s.j = s.f = s.o = s.tanhc = {0};
    s.h = s.hy;
    s.c = s.cy;
  }
  return s;
}

BackwardShapes backward_shapes(const LstmProblem& d, const TensorView& input,
                               const TensorList& params) {
  BackwardShapes s;
  s.dx = input.sizes;
  s.dh0 = {d.slots, d.B, d.R};
  s.dc0 = {d.slots, d.B, d.H};
  for (const TensorView& p : params) s.dparams.push_back(p.sizes);
  return s;
}

}  // namespace detail
}  // namespace lstmop
