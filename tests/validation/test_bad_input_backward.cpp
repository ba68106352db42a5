// Bad backward arguments, bad caller outputs of the _out forms, and the
// promise that inputs are never written:
// - backward: train=False, missing (undefined) saved tensors, saved tensors of
//   the wrong shape or dtype, gradients of the wrong shape or dtype, and the
//   forward's own argument errors, each through lstm_backward,
//   reference::lstm_backward, lstm_backward_out and lstm_backward_shapes;
// - _out forms: an output of the wrong shape, dtype or layout, undefined, or
//   overlapping an input: an Error naming that output, and not one byte
//   written to any caller output (sentinel fill);
// - every input buffer (input, hx, params, batch_sizes, grads, saved tensors)
//   has the same bytes after every successful call, in every entry point.
//
// The valid problem: T = 3, B = 2, I = 5, H = 3 (4H = 12), L = 2,
// bidirectional (S = 4), with biases: 16 params; saved tensors [4, 3, 2, 3].
#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

using lstmop::shape_string;

class BadBackward : public ::testing::Test {
 protected:
  BadBackward() : cfg(bad_input_base_config()), p(make_problem(cfg, 950)) {}
  LstmConfig cfg;
  LstmProblem p;

  BackwardArgs args() const { return backward_args(p); }
  void rejected(const BackwardArgs& b, const std::string& argument,
                const std::vector<std::string>& contains, bool values_only = false) {
    expect_backward_rejected(b, p, argument, contains, values_only);
  }
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

TEST_F(BadBackward, SavedTensorOfWrongDtype) {
  for (const char* name : kSavedNames) {
    SCOPED_TRACE(name);
    BackwardArgs b = args();
    *saved_member(b, name) = b.fwd.own(converted(*saved_member(b, name), DType::Float64));
    rejected(b, name, {"float32", "float64"});
  }
}

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

// ---------------------------------------------------------------------------
// _out forms: bad caller outputs
// ---------------------------------------------------------------------------

// The output view of a ForwardOutputs by name.
TensorView& output_member(lstmop::ForwardOutputs& out, const std::string& field) {
  TensorView* member[] = {&out.output, &out.hy, &out.cy, &out.i, &out.j,
                          &out.f,      &out.o,  &out.h,  &out.c, &out.tanhc};
  const char* names[] = {"output", "hy", "cy", "i", "j", "f", "o", "h", "c", "tanhc"};
  for (int k = 0; k < 9; ++k) {
    if (field == names[k]) return *member[k];
  }
  return *member[9];
}

// A forward _out call in which output `field` is replaced by `bad` (or by
// the call's own output `alias_of`, when given): it must throw an Error naming
// the field, and write no byte of any caller output.
void expect_forward_out_rejected(const LstmProblem& p, const std::string& field,
                                 const TensorView& bad, const std::vector<std::string>& contains,
                                 const std::string& alias_of = "") {
  SCOPED_TRACE(field);
  const ForwardResult buffers = sentinel_forward_outputs(p);
  lstmop::ForwardOutputs out = buffers.views();
  output_member(out, field) = alias_of.empty() ? bad : output_member(out, alias_of);
  Snapshot before;
  before.add_problem(p);
  const LstmConfig& c = p.cfg;
  EXPECT_TRUE(throws_output_error(
      [&] {
        lstmop::lstm_forward_out(out, p.input, p.hx_list(), p.param_list(), c.has_biases, c.L,
                                 0.0, c.train, c.bidirectional, c.batch_first,
                                 p.batch_sizes_view());
      },
      field, contains));
  EXPECT_TRUE(untouched(buffers));
  EXPECT_TRUE(before.unchanged());
}

TEST(BadOutputs, ForwardOutputOfWrongShapeOrDtype) {
  const LstmProblem p = make_problem(bad_input_base_config(), 960);
  const ForwardResult ok = run_forward(p);
  std::vector<Tensor> keep;
  for (const auto& named : forward_outputs(ok)) {
    std::vector<int64_t> wrong = named.second.sizes;
    wrong.back() += 1;
    keep.push_back(filled(DType::Float32, wrong, 0.0));
    expect_forward_out_rejected(p, named.first, keep.back(),
                                {shape_string(named.second.sizes), shape_string(wrong)});
    keep.push_back(filled(DType::Float64, named.second.sizes, 0.0));
    expect_forward_out_rejected(p, named.first, keep.back(), {"float32", "float64"});
  }
}

TEST(BadOutputs, ForwardOutputOfEvalModeShapes) {
  // train=False shapes given to a train=True call: h is (S, B, H), i is (0,).
  const LstmProblem p = make_problem(bad_input_base_config(), 961);
  const Tensor state = filled(DType::Float32, {4, 2, 3}, 0.0);
  expect_forward_out_rejected(p, "h", state, {"[4, 3, 2, 3]", "[4, 2, 3]"});
  const Tensor none = Tensor::empty(DType::Float32, {0});
  expect_forward_out_rejected(p, "i", none, {"[4, 3, 2, 3]", "[0]"});
}

TEST(BadOutputs, ForwardOutputUndefinedNonContiguousOrAliasingAnInput) {
  const LstmProblem p = make_problem(bad_input_base_config(), 962);
  expect_forward_out_rejected(p, "cy", TensorView(), {"undefined"});
  const ForwardResult ok = run_forward(p);
  const StridedTensor transposed = relayout(ok.c, Layout::Transposed);
  expect_forward_out_rejected(p, "c", transposed, {"contiguous"});
  // hy written over h0's buffer: an input would be written.
  const TensorView over_h0(p.hx[0].data<float>(), DType::Float32, {4, 2, 3});
  expect_forward_out_rejected(p, "hy", over_h0, {});
  // cy over hy's buffer: two outputs sharing memory.
  expect_forward_out_rejected(p, "cy", TensorView(), {}, "hy");
  // cy (24 floats) over the head of the input's buffer (30 floats).
  const TensorView over_input(p.input.data<float>(), DType::Float32, {4, 2, 3});
  expect_forward_out_rejected(p, "cy", over_input, {});
}

TEST(BadOutputs, BackwardOutputs) {
  const LstmProblem p = make_problem(bad_input_base_config(), 963);
  const BackwardArgs b = backward_args(p);
  const ForwardArgs& a = b.fwd;
  Snapshot before;
  before.add_problem(p);
  auto call = [&](const lstmop::BackwardOutputs& out) {
    lstmop::lstm_backward_out(out, b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params, b.i,
                              b.j, b.f, b.o, b.h, b.c, b.tanhc, a.has_biases, a.num_layers,
                              a.dropout, a.train, a.bidirectional, a.batch_first, a.batch_sizes);
  };
  std::vector<Tensor> keep;
  auto check = [&](const std::string& field, const std::function<void(lstmop::BackwardOutputs&)>& edit,
                   const std::vector<std::string>& contains) {
    SCOPED_TRACE(field);
    const BackwardResult buffers = sentinel_backward_outputs(p);
    lstmop::BackwardOutputs out = buffers.views();
    edit(out);
    EXPECT_TRUE(throws_output_error([&] { call(out); }, field, contains));
    EXPECT_TRUE(untouched(buffers));
  };
  keep.push_back(filled(DType::Float32, {3, 2, 6}, 0.0));
  check("dx", [&](lstmop::BackwardOutputs& o) { o.dx = keep.back(); }, {"[3, 2, 5]", "[3, 2, 6]"});
  keep.push_back(filled(DType::Float64, {4, 2, 3}, 0.0));
  check("dh0", [&](lstmop::BackwardOutputs& o) { o.dh0 = keep.back(); }, {"float32", "float64"});
  keep.push_back(filled(DType::Float32, {4, 3, 3}, 0.0));
  check("dc0", [&](lstmop::BackwardOutputs& o) { o.dc0 = keep.back(); }, {"[4, 2, 3]", "[4, 3, 3]"});
  keep.push_back(filled(DType::Float32, {12, 4}, 0.0));
  check("dparams[13]", [&](lstmop::BackwardOutputs& o) { o.dparams[13] = keep.back(); },
        {"[12, 3]", "[12, 4]"});
  keep.push_back(filled(DType::Float16, {12}, 0.0));
  check("dparams[3]", [&](lstmop::BackwardOutputs& o) { o.dparams[3] = keep.back(); },
        {"float32", "float16"});
  check("dparams", [&](lstmop::BackwardOutputs& o) { o.dparams.pop_back(); }, {"16", "15"});
  check("dh0", [&](lstmop::BackwardOutputs& o) { o.dh0 = TensorView(); }, {"undefined"});
  check("dparams[0]", [&](lstmop::BackwardOutputs& o) { o.dparams[0] = o.dparams[1]; },
        {"[12, 5]", "[12, 3]"});
  EXPECT_TRUE(before.unchanged());
}

// ---------------------------------------------------------------------------
// Inputs are never written by successful calls
// ---------------------------------------------------------------------------

TEST(InputsNeverWritten, EveryEntryPoint) {
  for (int variant = 0; variant < 4; ++variant) {
    LstmConfig c = bad_input_base_config();
    c.packed = variant >= 2;
    if (c.packed) c.lengths = {3, 1};
    c.dtype = variant == 1 ? DType::BFloat16 : (variant == 3 ? DType::Float64 : DType::Float32);
    c.with_hx = variant != 2;
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 970);
    const BackwardArgs b = backward_args(p);
    const ForwardArgs& a = b.fwd;
    Snapshot before;
    before.add_problem(p);
    const std::pair<const char*, const TensorView*> others[] = {
        {"grad_y", &b.grad_y}, {"grad_hy", &b.grad_hy}, {"grad_cy", &b.grad_cy},
        {"i", &b.i},           {"j", &b.j},             {"f", &b.f},
        {"o", &b.o},           {"h", &b.h},             {"c", &b.c},
        {"tanhc", &b.tanhc}};
    for (const auto& named : others) before.add(named.first, *named.second);

    lstmop::lstm_forward(a.input, a.hx, a.params, a.has_biases,
                                                   a.num_layers, 0.0, true, a.bidirectional,
                                                   a.batch_first, a.batch_sizes);
    lstmop::reference::lstm_forward(a.input, a.hx, a.params, a.has_biases, a.num_layers, 0.0,
                                    true, a.bidirectional, a.batch_first, a.batch_sizes);
    lstmop::lstm_forward_shapes(a.input, a.hx, a.params, a.has_biases, a.num_layers, 0.0, true,
                                a.bidirectional, a.batch_first, a.batch_sizes);
    const ForwardResult out = sentinel_forward_outputs(p);
    lstmop::lstm_forward_out(out.views(), a.input, a.hx, a.params, a.has_biases, a.num_layers,
                             0.0, true, a.bidirectional, a.batch_first, a.batch_sizes);
    lstmop::lstm_backward(b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params, b.i, b.j, b.f,
                          b.o, b.h, b.c, b.tanhc, a.has_biases, a.num_layers, 0.0, true,
                          a.bidirectional, a.batch_first, a.batch_sizes);
    lstmop::reference::lstm_backward(b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params,
                                     b.i, b.j, b.f, b.o, b.h, b.c, b.tanhc, a.has_biases,
                                     a.num_layers, 0.0, true, a.bidirectional, a.batch_first,
                                     a.batch_sizes);
    lstmop::lstm_backward_shapes(b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params, b.i,
                                 b.j, b.f, b.o, b.h, b.c, b.tanhc, a.has_biases, a.num_layers,
                                 0.0, true, a.bidirectional, a.batch_first, a.batch_sizes);
    const BackwardResult gout = sentinel_backward_outputs(p);
    lstmop::lstm_backward_out(gout.views(), b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx,
                              a.params, b.i, b.j, b.f, b.o, b.h, b.c, b.tanhc, a.has_biases,
                              a.num_layers, 0.0, true, a.bidirectional, a.batch_first,
                              a.batch_sizes);
    EXPECT_TRUE(before.unchanged());
    EXPECT_FALSE(untouched(out)) << "the successful _out call wrote its outputs";
  }
}

}  // namespace
}  // namespace lstmtest
