// Non-contiguous inputs give bitwise the results of their contiguous copies
// (tensor.h: any strides are allowed for inputs): transposed (column-major)
// views, views with gaps between elements, stride-0 (expanded) views, and
// negative strides, for input, hx, params, batch_sizes and, in the backward,
// grad_y / grad_hy / grad_cy and the saved tensors. The strided inputs are
// never written.
#include <functional>
#include <random>

#include "lstm_test_support.h"

namespace lstmtest {
namespace {

// Every tensor argument of a forward + backward call.
struct CallArgs {
  LstmConfig cfg;
  TensorView input, batch_sizes;
  TensorList hx, params;
  TensorView grad_y, grad_hy, grad_cy;
};

struct CallResults {
  ForwardResult fwd;
  BackwardResult bwd;
};

// Forward, then (train) backward from `saved` (the saved tensors 3-9 to use;
// transformed by the caller like every other backward input).
ForwardResult forward(const CallArgs& a) {
  const LstmConfig& c = a.cfg;
  return lstmop::lstm_forward(a.input, a.hx, a.params, c.has_biases, c.L, 0.0, c.train,
                              c.bidirectional, c.batch_first, a.batch_sizes);
}

BackwardResult backward(const CallArgs& a, const std::vector<TensorView>& saved) {
  const LstmConfig& c = a.cfg;
  return lstmop::lstm_backward(a.grad_y, a.grad_hy, a.grad_cy, a.input, a.hx, a.params, saved[0],
                               saved[1], saved[2], saved[3], saved[4], saved[5], saved[6],
                               c.has_biases, c.L, 0.0, true, c.bidirectional, c.batch_first,
                               a.batch_sizes);
}

std::vector<TensorView> saved_views(const ForwardResult& r) {
  return {r.i, r.j, r.f, r.o, r.h, r.c, r.tanhc};
}

CallArgs contiguous_args(const LstmProblem& p, const LstmGrads& g) {
  CallArgs a;
  a.cfg = p.cfg;
  a.input = p.input;
  a.batch_sizes = p.batch_sizes_view();
  a.hx = p.hx_list();
  a.params = p.param_list();
  a.grad_y = g.grad_y;
  a.grad_hy = g.grad_hy;
  a.grad_cy = g.grad_cy;
  return a;
}

// Applies `transform` to every tensor of `a` (and of `saved`), keeping the new
// storages alive in `keep`. The transform gets a running index, so that
// different tensors can get different layouts.
using Transform = std::function<StridedTensor(const TensorView&, int)>;

CallArgs transformed(const CallArgs& a, std::vector<TensorView>* saved, const Transform& transform,
                     std::vector<StridedTensor>* keep) {
  int index = 0;
  auto apply = [&](const TensorView& v) {
    if (!v.defined) return v;
    keep->push_back(transform(v, index++));
    return keep->back().view;
  };
  CallArgs b = a;
  b.input = apply(a.input);
  b.batch_sizes = apply(a.batch_sizes);
  for (TensorView& v : b.hx) v = apply(v);
  for (TensorView& v : b.params) v = apply(v);
  b.grad_y = apply(a.grad_y);
  b.grad_hy = apply(a.grad_hy);
  b.grad_cy = apply(a.grad_cy);
  if (saved != nullptr) {
    for (TensorView& v : *saved) v = apply(v);
  }
  return b;
}

void snapshot_args(Snapshot* s, const CallArgs& a, const std::vector<TensorView>& saved) {
  s->add("input", a.input);
  s->add("batch_sizes", a.batch_sizes);
  for (std::size_t k = 0; k < a.hx.size(); ++k) s->add("hx[" + std::to_string(k) + "]", a.hx[k]);
  for (std::size_t k = 0; k < a.params.size(); ++k) {
    s->add("params[" + std::to_string(k) + "]", a.params[k]);
  }
  s->add("grad_y", a.grad_y);
  s->add("grad_hy", a.grad_hy);
  s->add("grad_cy", a.grad_cy);
  for (std::size_t k = 0; k < saved.size(); ++k) s->add("saved " + std::to_string(k), saved[k]);
}

// Results of the strided call are bitwise those of the contiguous call.
void check_strided_equals_contiguous(const CallArgs& contiguous, const Transform& transform,
                                     const std::string& what) {
  SCOPED_TRACE(what + " " + contiguous.cfg.name());
  const ForwardResult ref_fwd = forward(contiguous);
  std::vector<StridedTensor> keep;
  std::vector<TensorView> saved = contiguous.cfg.train ? saved_views(ref_fwd)
                                                       : std::vector<TensorView>{};
  const CallArgs strided = transformed(contiguous, &saved, transform, &keep);
  int non_contiguous = 0;
  for (const StridedTensor& t : keep) non_contiguous += !t.view.is_contiguous();
  EXPECT_GE(non_contiguous, static_cast<int>(keep.size()) / 2) << "the views are mostly strided";
  Snapshot before;
  snapshot_args(&before, strided, saved);

  const ForwardResult fwd = forward(strided);
  const NamedViews a = forward_outputs(fwd), b = forward_outputs(ref_fwd);
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
  }
  if (contiguous.cfg.train) {
    const BackwardResult ref_bwd = backward(contiguous, saved_views(ref_fwd));
    const BackwardResult bwd = backward(strided, saved);
    const NamedViews ga = backward_outputs(bwd), gb = backward_outputs(ref_bwd);
    ASSERT_EQ(ga.size(), gb.size());
    for (std::size_t k = 0; k < ga.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(ga[k].second, gb[k].second)) << ga[k].first;
    }
  }
  EXPECT_TRUE(before.unchanged());
}

std::vector<LstmConfig> stride_configs() {
  std::vector<LstmConfig> out;
  for (int variant = 0; variant < 6; ++variant) {
    LstmConfig c;
    c.T = 4;
    c.B = 3;
    c.I = 5;
    c.H = 6;
    c.L = 2;
    c.bidirectional = variant % 2 == 0;
    c.batch_first = variant == 1 || variant == 4;
    c.packed = variant >= 4;
    c.with_hx = variant != 3;
    c.has_biases = variant != 2;
    if (c.packed) c.lengths = variant == 4 ? std::vector<int64_t>{4, 2, 1}
                                           : std::vector<int64_t>{4, 4, 3};
    out.push_back(c);
  }
  LstmConfig eval = out[0];
  eval.train = false;
  out.push_back(eval);
  LstmConfig f64 = out[4];
  f64.dtype = DType::Float64;
  out.push_back(f64);
  LstmConfig half = out[0];
  half.dtype = DType::Float16;
  out.push_back(half);
  // With projections (w_hr (P, H) strided too; h0, saved h and grad_hy P wide).
  for (int variant : {0, 4, 1}) {
    LstmConfig projected = out[static_cast<std::size_t>(variant)];
    projected.P = variant == 1 ? 5 : 2;
    out.push_back(projected);
  }
  return out;
}

TEST(Strides, EveryTensorInOneLayout) {
  uint64_t seed = 100;
  for (const LstmConfig& c : stride_configs()) {
    const LstmProblem p = make_problem(c, ++seed);
    const LstmGrads g = make_grads(p, ++seed);
    const CallArgs args = contiguous_args(p, g);
    for (Layout layout : {Layout::Transposed, Layout::Gapped, Layout::Negative}) {
      check_strided_equals_contiguous(
          args, [layout](const TensorView& v, int) { return relayout(v, layout); },
          layout_name(layout));
    }
  }
}

TEST(Strides, MixedLayouts) {
  uint64_t seed = 200;
  const Layout cycle[] = {Layout::Negative, Layout::Contiguous, Layout::Gapped,
                          Layout::Transposed};
  for (const LstmConfig& c : stride_configs()) {
    const LstmProblem p = make_problem(c, ++seed);
    const LstmGrads g = make_grads(p, ++seed);
    for (int shift = 0; shift < 4; ++shift) {
      check_strided_equals_contiguous(
          contiguous_args(p, g),
          [&](const TensorView& v, int index) { return relayout(v, cycle[(index + shift) % 4]); },
          "mixed layouts, shift " + std::to_string(shift));
    }
  }
}

// A view of `v` with strides of its dim 0 and 1 swapped in memory (the
// transposed storage of a matrix, the time-major storage of a batch-first
// input), but with its logical values unchanged.
TEST(Strides, TransposedInnerDimensionsOnly) {
  LstmConfig c = stride_configs()[0];
  const LstmProblem p = make_problem(c, 300);
  const LstmGrads g = make_grads(p, 301);
  check_strided_equals_contiguous(
      contiguous_args(p, g),
      [](const TensorView& v, int) {
        if (v.dim() < 2) return relayout(v, Layout::Gapped);
        // Swap dims 0 and 1, store contiguously, swap back.
        TensorView swapped = v;
        std::swap(swapped.sizes[0], swapped.sizes[1]);
        std::swap(swapped.strides[0], swapped.strides[1]);
        StridedTensor s = relayout(swapped, Layout::Contiguous);
        std::swap(s.view.sizes[0], s.view.sizes[1]);
        std::swap(s.view.strides[0], s.view.strides[1]);
        return s;
      },
      "dims 0 and 1 swapped in memory");
}

// ---------------------------------------------------------------------------
// Stride 0: one value repeated along a dimension, like torch.expand
// ---------------------------------------------------------------------------

// v's first entry along dimension `dim`, repeated with stride 0.
StridedTensor expand_first(const TensorView& v, int64_t dim) {
  TensorView first = v;
  first.sizes[static_cast<std::size_t>(dim)] = 1;
  const Tensor one = contiguous_copy(first);
  return expanded(one, dim, v.sizes[static_cast<std::size_t>(dim)]);
}

TEST(Strides, ExpandedInputsHxParamsAndGrads) {
  uint64_t seed = 400;
  for (LstmConfig c : stride_configs()) {
    if (c.packed) {
      // An expanded batch_sizes holds one value, B, repeated: all lengths T.
      c.lengths.assign(static_cast<std::size_t>(c.B), c.T);
    }
    const LstmProblem p = make_problem(c, ++seed);
    const LstmGrads g = make_grads(p, ++seed);
    // The contiguous call gets the expanded tensors' values, materialised.
    std::vector<StridedTensor> expanded_views;
    std::vector<Tensor> materialised;
    auto expand = [&](const TensorView& v, int64_t dim) {
      expanded_views.push_back(expand_first(v, dim));
      materialised.push_back(contiguous_copy(expanded_views.back().view));
      return materialised.back().view();
    };
    CallArgs contiguous = contiguous_args(p, g);
    // input: the same x at every step (time-major dim 0, batch-first dim 1,
    // packed: every row the same).
    contiguous.input = expand(contiguous.input, (c.batch_first && !c.packed) ? 1 : 0);
    if (c.packed) contiguous.batch_sizes = expand(contiguous.batch_sizes, 0);
    for (TensorView& v : contiguous.hx) v = expand(v, 1);          // same state for every b
    for (TensorView& v : contiguous.params) v = expand(v, 0);      // same row for every gate
    contiguous.grad_y = expand(contiguous.grad_y, 0);
    contiguous.grad_hy = expand(contiguous.grad_hy, 0);
    std::size_t next = 0;
    // The strided call: the stride-0 views themselves, in the order created.
    check_strided_equals_contiguous(
        contiguous,
        [&](const TensorView& v, int) {
          if (next < materialised.size() && v.data == materialised[next].view().data) {
            return expanded_views[next++];
          }
          return relayout(v, Layout::Gapped);  // grad_cy, saved tensors
        },
        "expanded");
    EXPECT_EQ(next, materialised.size()) << "every expanded view was used";
  }
}

}  // namespace
}  // namespace lstmtest
