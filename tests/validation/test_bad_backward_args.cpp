// Bad backward arguments: train=False, saved tensors missing, of an eval
// forward, of another problem, of the wrong shape or dtype; gradients of the
// wrong shape, layout or dtype (all undefined is valid: zeros); malformed
// views; the forward's own argument errors. Each through lstm_backward,
// reference::lstm_backward, lstm_backward_out and lstm_backward_shapes
// (expect_backward_rejected, lstm_bad_input_support.h).
//
// The valid problem (bad_input_base_config): T = 3, B = 2, I = 5, H = 3
// (4H = 12), L = 2, bidirectional (S = 4), with biases: 16 params; saved
// tensors [4, 3, 2, 3].
#include <string>
#include <utility>
#include <vector>

#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

using lstmop::shape_string;

class BadBackward : public BadBackwardFixture {
 protected:
  BadBackward() : BadBackwardFixture(950) {}
};

// The saved tensors of a BackwardArgs by name.
TensorView* saved_member(BackwardArgs& b, const std::string& name) {
  if (name == "i") return &b.i;
  if (name == "j") return &b.j;
  if (name == "f") return &b.f;
  if (name == "o") return &b.o;
  if (name == "h") return &b.h;
  if (name == "c") return &b.c;
  return &b.tanhc;
}

const char* const kSavedNames[] = {"i", "j", "f", "o", "h", "c", "tanhc"};

TEST_F(BadBackward, TrainFalse) {
  BackwardArgs b = args();
  b.fwd.train = false;
  rejected(b, "train", {"true", "false"});
}

// ---------------------------------------------------------------------------
// Saved tensors
// ---------------------------------------------------------------------------

// The outputs of a train=False forward: i..tanhc are (0,), h and c (S, B, H).
TEST_F(BadBackward, SavedTensorsOfAnEvalForward) {
  BackwardArgs b = args();
  LstmProblem q = p;
  q.cfg.train = false;
  const ForwardResult eval = run_forward(q);
  b.saved_owner = eval;
  b.i = eval.i;
  b.j = eval.j;
  b.f = eval.f;
  b.o = eval.o;
  b.h = eval.h;
  b.c = eval.c;
  b.tanhc = eval.tanhc;
  rejected(b, "i", {"[4, 3, 2, 3]", "[0]"});
}

// Saved tensors mixed from a train=True and a train=False forward: the first
// eval one is blamed.
TEST_F(BadBackward, MixOfTrainAndEvalSavedTensors) {
  LstmProblem q = p;
  q.cfg.train = false;
  const ForwardResult eval = run_forward(q);
  BackwardArgs b = backward_args(p);
  b.saved_owner.h = eval.h;  // keep alive
  b.h = eval.h;              // (S, B, H) instead of (S, T, B, H)
  expect_backward_rejected(b, p, "h", {"[4, 3, 2, 3]", "[4, 2, 3]"});
  b = backward_args(p);
  b.tanhc = eval.tanhc;  // (0,)
  b.saved_owner.tanhc = eval.tanhc;
  expect_backward_rejected(b, p, "tanhc", {"[4, 3, 2, 3]", "[0]"});
}

TEST_F(BadBackward, MissingSavedTensor) {
  for (const char* name : kSavedNames) {
    SCOPED_TRACE(name);
    BackwardArgs b = args();
    *saved_member(b, name) = TensorView();
    rejected(b, name, {"undefined"});
  }
}

TEST_F(BadBackward, SavedTensorOfWrongShape) {
  for (const char* name : kSavedNames) {
    SCOPED_TRACE(name);
    // The seed document's layout (T, B, D*L*H).
    BackwardArgs b = args();
    *saved_member(b, name) = b.fwd.own(filled(cfg.dtype, {3, 2, 12}, 0.5));
    rejected(b, name, {"[4, 3, 2, 3]", "[3, 2, 12]"});
    // One step short.
    b = args();
    *saved_member(b, name) = b.fwd.own(filled(cfg.dtype, {4, 2, 2, 3}, 0.5));
    rejected(b, name, {"[4, 3, 2, 3]", "[4, 2, 2, 3]"});
  }
}

// Saved tensors of another problem: one more step, another batch, another
// hidden size, a unidirectional forward.
TEST_F(BadBackward, SavedTensorsOfAnotherProblem) {
  const std::pair<std::vector<int64_t>, const char*> wrong[] = {
      {{4, 4, 2, 3}, "T + 1"}, {{4, 3, 3, 3}, "B + 1"}, {{4, 3, 2, 4}, "H + 1"},
      {{2, 3, 2, 3}, "D = 1"}, {{4, 6, 3}, "(S, T*B, H)"}, {{4, 3, 2, 3, 1}, "rank 5"}};
  for (const auto& w : wrong) {
    SCOPED_TRACE(w.second);
    BackwardArgs b = backward_args(p);
    b.c = b.fwd.own(filled(cfg.dtype, w.first, 0.25));
    expect_backward_rejected(b, p, "c", {"[4, 3, 2, 3]", shape_string(w.first)});
  }
}

TEST_F(BadBackward, SavedTensorOfWrongDtype) {
  for (const char* name : kSavedNames) {
    SCOPED_TRACE(name);
    BackwardArgs b = args();
    *saved_member(b, name) = b.fwd.own(converted(*saved_member(b, name), DType::Float64));
    rejected(b, name, {"float32", "float64"});
  }
}

// ---------------------------------------------------------------------------
// Gradients
// ---------------------------------------------------------------------------

TEST_F(BadBackward, GradOfWrongShape) {
  BackwardArgs b = args();
  b.grad_y = b.fwd.own(filled(cfg.dtype, {3, 2, 3}, 1.0));  // H instead of D*H
  rejected(b, "grad_y", {"[3, 2, 6]", "[3, 2, 3]"});
  b = args();
  b.grad_hy = b.fwd.own(filled(cfg.dtype, {2, 2, 3}, 1.0));  // L slots instead of D*L
  rejected(b, "grad_hy", {"[4, 2, 3]", "[2, 2, 3]"});
  b = args();
  b.grad_cy = b.fwd.own(filled(cfg.dtype, {4, 2, 4}, 1.0));
  rejected(b, "grad_cy", {"[4, 2, 3]", "[4, 2, 4]"});
  b = args();
  b.grad_y = b.fwd.own(filled(cfg.dtype, {6, 6}, 1.0));  // packed layout, fixed-length call
  rejected(b, "grad_y", {"[3, 2, 6]", "[6, 6]"});
}

TEST_F(BadBackward, GradTimeMajorWithBatchFirst) {
  LstmConfig c = cfg;
  c.batch_first = true;
  const LstmProblem q = make_problem(c, 951);
  BackwardArgs b = backward_args(q);
  b.grad_y = b.fwd.own(filled(c.dtype, {3, 2, 6}, 1.0));
  expect_backward_rejected(b, q, "grad_y", {"[2, 3, 6]", "[3, 2, 6]"});
}

TEST_F(BadBackward, GradOfWrongDtype) {
  BackwardArgs b = args();
  b.grad_hy = b.fwd.own(converted(b.grad_hy, DType::BFloat16));
  rejected(b, "grad_hy", {"float32", "bfloat16"});
  b = args();
  b.grad_y = b.fwd.own(converted(b.grad_y, DType::Float64));
  rejected(b, "grad_y", {"float32", "float64"});
}

TEST_F(BadBackward, GradientsOfIntegerDtypeOrExtraDimension) {
  BackwardArgs b = backward_args(p);
  b.grad_cy = b.fwd.own(zeros(DType::Int64, {4, 2, 3}));
  expect_backward_rejected(b, p, "grad_cy", {"float32", "int64"});
  b = backward_args(p);
  b.grad_y = b.fwd.own(zeros(cfg.dtype, {1, 3, 2, 6}));
  expect_backward_rejected(b, p, "grad_y", {"[3, 2, 6]", "[1, 3, 2, 6]"});
  b = backward_args(p);
  b.grad_hy = b.fwd.own(zeros(cfg.dtype, {4, 2, 3, 1}));
  expect_backward_rejected(b, p, "grad_hy", {"[4, 2, 3]", "[4, 2, 3, 1]"});
}

// Every gradient undefined is valid (all zeros): every result is 0.
TEST_F(BadBackward, AllGradientsUndefinedGiveZeros) {
  BackwardArgs b = backward_args(p);
  const ForwardArgs& a = b.fwd;
  const BackwardResult r = lstmop::lstm_backward(
      TensorView(), TensorView(), TensorView(), a.input, a.hx, a.params, b.i, b.j, b.f, b.o, b.h,
      b.c, b.tanhc, a.has_biases, a.num_layers, 0.0, true, a.bidirectional, a.batch_first,
      a.batch_sizes);
  for (const auto& named : backward_outputs(r)) {
    EXPECT_EQ(max_abs(named.second), 0.0) << named.first;
  }
}

// ---------------------------------------------------------------------------
// Malformed views; the forward's arguments
// ---------------------------------------------------------------------------

// The same for the backward's own tensors: saved i..tanhc and the gradients.
TEST(BadBackwardViews, MalformedViewsOfSavedTensorsAndGradients) {
  const LstmProblem p = make_problem(bad_input_base_config(), 1310);
  const char* const names[] = {"grad_y", "grad_hy", "grad_cy", "i", "j", "f", "o", "h", "c",
                               "tanhc"};
  for (std::size_t n = 0; n < 10; ++n) {
    const char* name = names[n];
    for (int variant = 0; variant < 2; ++variant) {
      SCOPED_TRACE(std::string(name) + (variant == 0 ? " negative size" : " strides missing"));
      BackwardArgs b = backward_args(p);
      TensorView* members[] = {&b.grad_y, &b.grad_hy, &b.grad_cy, &b.i, &b.j,
                               &b.f,      &b.o,       &b.h,       &b.c, &b.tanhc};
      TensorView& v = *members[n];
      std::vector<int64_t> sizes = v.sizes, strides = v.strides;
      if (variant == 0) {
        sizes.front() = -sizes.front();
      } else {
        strides.pop_back();
      }
      v = with_fields(v, sizes, strides);
      if (variant == 0) v.data = nullptr;
      expect_backward_rejected(b, p, name,
                               {variant == 0 ? "non-negative" : "one stride per dimension"});
    }
  }
}

// The backward validates the forward's arguments like the forward does.
TEST_F(BadBackward, ForwardArgumentErrors) {
  BackwardArgs b = args();
  b.fwd.params.pop_back();
  rejected(b, "params", {"16", "15"});
  b = args();
  b.fwd.hx[0] = b.fwd.own(filled(cfg.dtype, {4, 2, 4}, 0.0));
  rejected(b, "hx[0]", {"[4, 2, 3]", "[4, 2, 4]"});
  b = args();
  b.fwd.dropout = 0.25;
  rejected(b, "dropout", {"lstmop.nn.LSTM", "0.25"});
  b = args();
  b.fwd.num_layers = 0;
  rejected(b, "num_layers", {"1", "0"});
}

TEST(BadBackwardPacked, BatchSizesValues) {
  LstmConfig c = bad_input_base_config();
  c.packed = true;
  c.lengths = {3, 2};
  const LstmProblem p = make_problem(c, 952);
  BackwardArgs b = backward_args(p);
  b.fwd.batch_sizes = b.fwd.own(from_doubles(DType::Int64, {3}, {2, 1, 2}));
  expect_backward_rejected(b, p, "batch_sizes", {"non-increasing", "batch_sizes[2]"}, true);
  b = backward_args(p);
  b.grad_y = b.fwd.own(filled(c.dtype, {3, 2, 6}, 1.0));  // 3-D where output is (T*B, D*H)
  expect_backward_rejected(b, p, "grad_y", {"[6, 6]", "[3, 2, 6]"});
}

}  // namespace
}  // namespace lstmtest
