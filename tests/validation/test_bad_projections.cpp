// Bad arguments of a call with projections (CONTRACT.md, "Projections": every
// slot ends with w_hr (P, H), 1 <= P < H; h, h0, hy, the saved h and output's
// features are P wide, c stays H wide). Each rejection goes through every entry
// point (expect_forward_rejected / expect_backward_rejected,
// lstm_bad_input_support.h): an lstmop::Error naming the argument, with the
// expected and the actual value, nothing written.
//
// The valid problem: bad_input_base_config() with P = 2: T = 3, B = 2, I = 5,
// H = 3 (4H = 12), L = 2, bidirectional (S = 4), with biases: 20 params, w_hr
// [2, 3] at 4, 9, 14, 19; w_hh [12, 2]; layer 1's w_ih [12, 4] (D*P); h0 and
// hy [4, 2, 2], c0 [4, 2, 3]; saved h [4, 3, 2, 2]; output [3, 2, 4].
#include <string>
#include <vector>

#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

using lstmop::shape_string;

LstmConfig projected_config(bool has_biases = true) {
  LstmConfig c = bad_input_base_config();
  c.P = 2;
  c.has_biases = has_biases;
  return c;
}

class BadProjections : public ::testing::Test {
 protected:
  BadProjections() : cfg(projected_config()), p(make_problem(cfg, 1900)) {}
  void rejected(const ForwardArgs& a, const std::string& argument,
                const std::vector<std::string>& contains) const {
    expect_forward_rejected(a, p, argument, contains);
  }
  LstmConfig cfg;
  LstmProblem p;
};

// ---------------------------------------------------------------------------
// The count of params
// ---------------------------------------------------------------------------

TEST_F(BadProjections, ParamsCountNeitherPlainNorProjected) {
  ForwardArgs a = forward_args(p);
  a.params.pop_back();  // 19: neither 16 nor 20
  rejected(a, "params", {"16", "20", "19", "w_hr"});
  a = forward_args(p);
  a.params.push_back(a.params.back());  // 21
  rejected(a, "params", {"16", "20", "21"});
  a = forward_args(p);
  a.has_biases = false;  // 20 given, 8 or 12 expected
  rejected(a, "params", {"8", "12", "20"});
}

TEST_F(BadProjections, ProjectedCountWithoutBiases) {
  const LstmProblem q = make_problem(projected_config(false), 1901);
  ASSERT_EQ(q.params.size(), 12u);
  ForwardArgs a = forward_args(q);
  a.params.pop_back();  // 11
  expect_forward_rejected(a, q, "params", {"8", "12", "11"});
  a = forward_args(q);
  a.has_biases = true;  // 12 given, 16 or 20 expected
  expect_forward_rejected(a, q, "params", {"16", "20", "12"});
}

// ---------------------------------------------------------------------------
// w_hr and the shapes P sets
// ---------------------------------------------------------------------------

// The first w_hr sets P: its rows must lie in [1, H), its columns be H.
TEST_F(BadProjections, ProjSizeOutOfRange) {
  for (const std::vector<int64_t>& wrong :
       {std::vector<int64_t>{3, 3}, std::vector<int64_t>{4, 3}, std::vector<int64_t>{0, 3}}) {
    SCOPED_TRACE(shape_string(wrong));
    ForwardArgs a = forward_args(p);
    a.params[4] = a.own(zeros(cfg.dtype, wrong));
    rejected(a, "params[4]", {"weight_hr, layer 0, forward", "proj_size", "hidden_size = 3",
                              shape_string(wrong)});
  }
}

TEST_F(BadProjections, FirstProjectionOfWrongColumnsRankOrDtype) {
  ForwardArgs a = forward_args(p);
  a.params[4] = a.own(zeros(cfg.dtype, {2, 4}));
  rejected(a, "params[4]", {"[proj_size, 3]", "[2, 4]"});
  a = forward_args(p);
  a.params[4] = a.own(zeros(cfg.dtype, {3, 2}));  // transposed
  rejected(a, "params[4]", {"[proj_size, 3]", "[3, 2]"});
  a = forward_args(p);
  a.params[4] = a.own(zeros(cfg.dtype, {2}));
  rejected(a, "params[4]", {"2-D", "[2]"});
  a = forward_args(p);
  a.params[4] = a.own(zeros(cfg.dtype, {2, 3, 1}));
  rejected(a, "params[4]", {"2-D", "[2, 3, 1]"});
  a = forward_args(p);
  a.params[4] = a.own(converted(p.params[4], DType::Float64));
  rejected(a, "params[4]", {"float32", "float64"});
  a = forward_args(p);
  a.params[4] = TensorView();
  rejected(a, "params[4]", {"undefined"});
}

// Every entry of every slot, with and without biases, one column (or row)
// more than expected: named with both shapes. The first w_hr's expected shape
// is stated with proj_size, since it sets it.
TEST_F(BadProjections, EveryParamShape) {
  for (bool has_biases : {true, false}) {
    const LstmProblem q = make_problem(projected_config(has_biases), 1902);
    const std::size_t first_w_hr = has_biases ? 4 : 2;
    for (std::size_t k = 0; k < q.params.size(); ++k) {
      SCOPED_TRACE("has_biases " + std::to_string(has_biases) + " params[" + std::to_string(k) +
                   "]");
      const std::vector<int64_t> expected = q.params[k].sizes();
      std::vector<int64_t> wrong = expected;
      wrong.back() += 1;
      ForwardArgs a = forward_args(q);
      a.params[k] = a.own(zeros(q.cfg.dtype, wrong));
      const std::string named = k == first_w_hr ? "[proj_size, 3]" : shape_string(expected);
      expect_forward_rejected(a, q, "params[" + std::to_string(k) + "]",
                              {named, shape_string(wrong)});
    }
  }
}

TEST_F(BadProjections, ShapesThatProjectionsChange) {
  // w_hh with H columns (an unprojected LSTM's) instead of P.
  ForwardArgs a = forward_args(p);
  a.params[1] = a.own(zeros(cfg.dtype, {12, 3}));
  rejected(a, "params[1]", {"weight_hh, layer 0, forward", "[12, 2]", "[12, 3]"});
  // Layer 1's w_ih reading D*H = 6 features instead of D*P = 4.
  a = forward_args(p);
  a.params[10] = a.own(zeros(cfg.dtype, {12, 6}));
  rejected(a, "params[10]", {"weight_ih, layer 1, forward", "[12, 4]", "[12, 6]"});
  // Another proj_size in a later slot.
  a = forward_args(p);
  a.params[19] = a.own(zeros(cfg.dtype, {1, 3}));
  rejected(a, "params[19]", {"weight_hr, layer 1, reverse", "[2, 3]", "[1, 3]"});
  // w_hr where a bias belongs (the entries of a slot out of order).
  a = forward_args(p);
  std::swap(a.params[8], a.params[9]);
  rejected(a, "params[8]", {"bias_hh, layer 0, reverse", "[12]", "[2, 3]"});
}

// h0 is (D*L, B, P), c0 (D*L, B, H): different sizes.
TEST_F(BadProjections, HxWithProjections) {
  ForwardArgs a = forward_args(p);
  a.hx[0] = a.own(zeros(cfg.dtype, {4, 2, 3}));  // H wide
  rejected(a, "hx[0]", {"[4, 2, 2]", "proj_size", "[4, 2, 3]"});
  a = forward_args(p);
  a.hx[1] = a.own(zeros(cfg.dtype, {4, 2, 2}));  // P wide
  rejected(a, "hx[1]", {"[4, 2, 3]", "hidden_size", "[4, 2, 2]"});
  a = forward_args(p);
  std::swap(a.hx[0], a.hx[1]);
  rejected(a, "hx[0]", {"[4, 2, 2]", "[4, 2, 3]"});
}

// ---------------------------------------------------------------------------
// The backward's saved h and gradients
// ---------------------------------------------------------------------------

TEST_F(BadProjections, BackwardSavedHiddenAndGradients) {
  BackwardArgs b = backward_args(p);
  std::vector<Tensor> keep;
  keep.push_back(zeros(cfg.dtype, {4, 3, 2, 3}));  // h H wide
  b.h = keep.back();
  expect_backward_rejected(b, p, "h", {"[4, 3, 2, 2]", "proj_size", "[4, 3, 2, 3]"});
  b = backward_args(p);
  keep.push_back(zeros(cfg.dtype, {4, 3, 2, 2}));  // c P wide
  b.c = keep.back();
  expect_backward_rejected(b, p, "c", {"[4, 3, 2, 3]", "[4, 3, 2, 2]"});
  b = backward_args(p);
  keep.push_back(zeros(cfg.dtype, {4, 2, 3}));
  b.grad_hy = keep.back();
  expect_backward_rejected(b, p, "grad_hy", {"[4, 2, 2]", "proj_size", "[4, 2, 3]"});
  b = backward_args(p);
  keep.push_back(zeros(cfg.dtype, {3, 2, 6}));  // D*H features
  b.grad_y = keep.back();
  expect_backward_rejected(b, p, "grad_y", {"[3, 2, 4]", "[3, 2, 6]"});
  b = backward_args(p);
  keep.push_back(zeros(cfg.dtype, {4, 2, 2}));
  b.grad_cy = keep.back();
  expect_backward_rejected(b, p, "grad_cy", {"[4, 2, 3]", "[4, 2, 2]"});
  // The projected forward's arguments with one w_hr missing.
  b = backward_args(p);
  b.fwd.params.pop_back();
  expect_backward_rejected(b, p, "params", {"16", "20", "19"});
}

}  // namespace
}  // namespace lstmtest
