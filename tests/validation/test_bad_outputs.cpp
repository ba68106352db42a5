// Bad caller outputs of the _out forms, and the promise that inputs are never
// written:
// - an output of the wrong shape, dtype or layout, undefined, or overlapping
//   an input or another output: an Error naming that output, and not one
//   byte written to any caller output (sentinel fill);
// - every input buffer (input, hx, params, batch_sizes, grads, saved tensors)
//   has the same bytes after every successful call, in every entry point.
//
// The valid problem (bad_input_base_config): T = 3, B = 2, I = 5, H = 3
// (4H = 12), L = 2, bidirectional (S = 4), with biases: 16 params.
#include <functional>
#include <string>
#include <vector>

#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

using lstmop::shape_string;

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
  expect_forward_out_rejected(p, "hy", over_h0, {"an input tensor", "overlapping hx[0]"});
  // cy over hy's buffer: two outputs sharing memory.
  expect_forward_out_rejected(p, "cy", TensorView(), {"another output", "overlapping out.hy"},
                              "hy");
  // cy (24 floats) over the head of the input's buffer (30 floats).
  const TensorView over_input(p.input.data<float>(), DType::Float32, {4, 2, 3});
  expect_forward_out_rejected(p, "cy", over_input, {"overlapping input"});
  // hy (24 floats) inside a weight (w_hh of layer 0, reverse: 36 floats): the
  // message names the params entry.
  const TensorView over_weight(p.params[5].data<float>(), DType::Float32, {4, 2, 3});
  expect_forward_out_rejected(p, "hy", over_weight, {"overlapping params[5]"});
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
  // Outputs over the saved tensors and upstream gradients: named as such.
  check("dh0", [&](lstmop::BackwardOutputs& o) { o.dh0 = TensorView(b.grad_hy.data, DType::Float32, {4, 2, 3}); },
        {"an input tensor", "overlapping grad_hy"});
  check("dc0", [&](lstmop::BackwardOutputs& o) { o.dc0 = TensorView(b.tanhc.data, DType::Float32, {4, 2, 3}); },
        {"overlapping tanhc"});
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
