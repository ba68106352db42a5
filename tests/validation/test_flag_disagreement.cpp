// Backward calls whose flags disagree with the forward that produced the
// saved tensors: bidirectional, has_biases, num_layers, batch_first or the
// variable-length mode differ. Every disagreement that changes a shape is an
// lstmop::Error naming the first argument whose shape no longer fits, with both
// shapes (through lstm_backward, reference::lstm_backward, lstm_backward_out
// and lstm_backward_shapes; no output and no input byte written).
//
// A disagreement that keeps every shape (batch_first flipped with T == B, other
// batch_sizes with the same T) computes the gradients of another valid problem;
// those are checked to equal the reference's on the same arguments.
//
// The forward: T = 3, B = 2, I = 5, H = 3, L = 2, bidirectional, with biases;
// saved tensors [4, 3, 2, 3].
#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

class FlagDisagreement : public BadBackwardFixture {
 protected:
  FlagDisagreement() : BadBackwardFixture(1400) {}
};

TEST_F(FlagDisagreement, UnidirectionalBackwardOfABidirectionalForward) {
  BackwardArgs b = backward_args(p);
  b.fwd.bidirectional = false;  // expects 2 * 4 = 8 params, gets 16
  expect_backward_rejected(b, p, "params", {"8", "16"});
  // With the params of a unidirectional model too, the saved tensors (4 slots) are blamed.
  LstmConfig c = cfg;
  c.bidirectional = false;
  const LstmProblem q = make_problem(c, 1401);
  b = backward_args(p);
  b.fwd.params = q.param_list();
  b.fwd.hx = q.hx_list();
  b.fwd.bidirectional = false;
  expect_backward_rejected(b, p, "i", {"[2, 3, 2, 3]", "[4, 3, 2, 3]"});
}

TEST_F(FlagDisagreement, BidirectionalBackwardOfAUnidirectionalForward) {
  LstmConfig c = cfg;
  c.bidirectional = false;
  const LstmProblem q = make_problem(c, 1402);
  BackwardArgs b = backward_args(q);
  b.fwd.bidirectional = true;
  expect_backward_rejected(b, q, "params", {"16", "8"});
}

TEST_F(FlagDisagreement, HasBiasesFlipped) {
  BackwardArgs b = backward_args(p);
  b.fwd.has_biases = false;
  expect_backward_rejected(b, p, "params", {"8", "16"});
  LstmConfig c = cfg;
  c.has_biases = false;
  const LstmProblem q = make_problem(c, 1403);
  b = backward_args(q);
  b.fwd.has_biases = true;
  expect_backward_rejected(b, q, "params", {"16", "8"});
}

TEST_F(FlagDisagreement, NumLayersDiffers) {
  BackwardArgs b = backward_args(p);
  b.fwd.num_layers = 1;
  expect_backward_rejected(b, p, "params", {"8", "16"});
  // The first layer's params only, with num_layers = 1: hx (4 slots) no longer fits.
  b = backward_args(p);
  b.fwd.num_layers = 1;
  b.fwd.params.resize(8);
  expect_backward_rejected(b, p, "hx[0]", {"[2, 2, 3]", "[4, 2, 3]"});
  // ... and without hx, the saved tensors.
  b.fwd.hx.clear();
  expect_backward_rejected(b, p, "i", {"[2, 3, 2, 3]", "[4, 3, 2, 3]"});
}

TEST_F(FlagDisagreement, BatchFirstFlipped) {
  // Forward time-major (T = 3, B = 2), backward batch_first: input (3, 2, 5)
  // now reads B = 3, T = 2, and hx (4, 2, 3) has B = 2 rows.
  BackwardArgs b = backward_args(p);
  b.fwd.batch_first = true;
  expect_backward_rejected(b, p, "hx[0]", {"[4, 3, 3]", "[4, 2, 3]"});
  b.fwd.hx.clear();
  expect_backward_rejected(b, p, "i", {"[4, 2, 3, 3]", "[4, 3, 2, 3]"});
  // Forward batch_first, backward time-major.
  LstmConfig c = cfg;
  c.batch_first = true;
  c.with_hx = false;
  const LstmProblem q = make_problem(c, 1404);
  b = backward_args(q);
  b.fwd.batch_first = false;
  expect_backward_rejected(b, q, "i", {"[4, 2, 3, 3]", "[4, 3, 2, 3]"});
}

TEST_F(FlagDisagreement, VariableLengthForwardFixedLengthBackward) {
  LstmConfig c = cfg;
  c.packed = true;
  c.lengths = {3, 1};
  const LstmProblem q = make_problem(c, 1405);
  BackwardArgs b = backward_args(q);
  b.fwd.batch_sizes = TensorView();  // input (6, 5) is 2-D
  expect_backward_rejected(b, q, "input", {"3-D", "[6, 5]"});
}

TEST_F(FlagDisagreement, FixedLengthForwardVariableLengthBackward) {
  BackwardArgs b = backward_args(p);
  const Tensor bs = from_doubles(DType::Int64, {3}, {2, 2, 1});
  b.fwd.batch_sizes = bs;  // input (3, 2, 5) is 3-D
  expect_backward_rejected(b, p, "input", {"2-D", "[3, 2, 5]"});
  // With the input flattened to (6, 5) too, grad_y (3, 2, 6) is blamed.
  b.fwd.input = TensorView(p.input.view().data, p.input.dtype(), {6, 5});
  expect_backward_rejected(b, p, "grad_y", {"[6, 6]", "[3, 2, 6]"});
}

TEST_F(FlagDisagreement, BatchSizesOfAnotherLength) {
  LstmConfig c = cfg;
  c.packed = true;
  c.lengths = {3, 2};
  const LstmProblem q = make_problem(c, 1406);
  BackwardArgs b = backward_args(q);
  // T = 2 divides the 6 rows: B = 3, and hx (4, 2, 3) no longer fits.
  const Tensor bs = from_doubles(DType::Int64, {2}, {3, 3});
  b.fwd.batch_sizes = bs;
  expect_backward_rejected(b, q, "hx[0]", {"[4, 3, 3]", "[4, 2, 3]"});
  b.fwd.hx.clear();
  expect_backward_rejected(b, q, "i", {"[4, 2, 3, 3]", "[4, 3, 2, 3]"});
}

// Disagreements that keep every shape are other valid problems: the backward
// must equal the reference backward given the same arguments.
void expect_matches_reference(const BackwardArgs& b) {
  const ForwardArgs& a = b.fwd;
  const BackwardResult got = lstmop::lstm_backward(
      b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params, b.i, b.j, b.f, b.o, b.h, b.c,
      b.tanhc, a.has_biases, a.num_layers, a.dropout, true, a.bidirectional, a.batch_first,
      a.batch_sizes);
  const BackwardResult want = lstmop::reference::lstm_backward(
      b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params, b.i, b.j, b.f, b.o, b.h, b.c,
      b.tanhc, a.has_biases, a.num_layers, a.dropout, true, a.bidirectional, a.batch_first,
      a.batch_sizes);
  LstmConfig c;
  c.T = b.i.sizes[1];
  c.B = b.i.sizes[2];
  c.H = b.i.sizes[3];
  c.I = a.input.sizes.back();
  c.L = a.num_layers;
  c.bidirectional = a.bidirectional;
  const double tol = accumulation_tolerance(a.input.dtype, backward_depth(c), true);
  const NamedViews x = backward_outputs(got), y = backward_outputs(want);
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    EXPECT_TRUE(close_to(x[k].second, y[k].second, tol)) << x[k].first;
  }
}

TEST(FlagDisagreementSameShapes, BatchFirstFlippedWithTEqualToB) {
  LstmConfig c = bad_input_base_config();
  c.T = 2;  // T == B
  const LstmProblem p = make_problem(c, 1407);
  BackwardArgs b = backward_args(p);
  b.fwd.batch_first = true;
  expect_matches_reference(b);
}

TEST(FlagDisagreementSameShapes, OtherBatchSizesOfTheSameLength) {
  LstmConfig c = bad_input_base_config();
  c.packed = true;
  c.lengths = {3, 3};
  const LstmProblem p = make_problem(c, 1408);
  BackwardArgs b = backward_args(p);
  const Tensor bs = from_doubles(DType::Int64, {3}, {2, 1, 1});
  b.fwd.batch_sizes = bs;
  expect_matches_reference(b);
}

}  // namespace
}  // namespace lstmtest
