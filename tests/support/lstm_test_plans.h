// The plans the production drivers make for a test problem (with the current
// thread count), for the tests that reach src/'s internal headers (INTERNAL in
// tests/CMakeLists.txt).
#pragma once

#include "api/checks.h"
#include "lstm_test_support.h"
#include "plan/lstm_plan.h"

namespace lstmtest {

struct Plans {
  lstmop::detail::ForwardPlan forward;
  lstmop::detail::BackwardPlan backward;
};

inline Plans plans_of(const LstmProblem& q) {
  const lstmop::detail::LstmProblem d = lstmop::detail::check_forward_args(
      q.input, q.hx_list(), q.param_list(), q.cfg.has_biases, q.cfg.L, 0.0, q.cfg.train,
      q.cfg.bidirectional, q.cfg.batch_first, q.batch_sizes_view(), true);
  return {lstmop::detail::plan_forward(d), lstmop::detail::plan_backward(d)};
}

inline Plans plans_of(const LstmConfig& cfg) { return plans_of(make_problem(cfg, 1)); }

}  // namespace lstmtest
