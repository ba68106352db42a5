// The output-view checks of the _out forms (checks.h): defined, exact shape,
// the input's dtype, contiguous, data when non-empty, no byte shared with an
// input or another output.
#include <cstdint>
#include <utility>

#include "api/check_support.h"
#include "api/checks.h"

namespace lstmop {
namespace detail {
namespace {

// Byte range [lo, hi) a view addresses; lo == hi when empty.
struct ByteRange {
  uintptr_t lo = 0, hi = 0;
};

ByteRange byte_range(const TensorView& v) {
  ByteRange r;
  if (!v.defined || v.data == nullptr || v.numel() == 0) return r;
  int64_t lo = 0, hi = 0;
  for (std::size_t k = 0; k < v.sizes.size(); ++k) {
    const int64_t span = v.strides[k] * (v.sizes[k] - 1);
    (span < 0 ? lo : hi) += span;
  }
  const int64_t es = static_cast<int64_t>(dtype_size(v.dtype));
  const uintptr_t base = reinterpret_cast<uintptr_t>(v.data);
  r.lo = base + static_cast<uintptr_t>(lo * es);  // lo <= 0: wraps to base - |lo| * es
  r.hi = base + static_cast<uintptr_t>((hi + 1) * es);
  return r;
}

bool overlaps(const ByteRange& a, const ByteRange& b) {
  return a.lo < a.hi && b.lo < b.hi && a.lo < b.hi && b.lo < a.hi;
}

// One caller-allocated output: defined, exact shape, dtype, contiguous, data,
// and no byte shared with an input or another output.
void check_output(const std::string& name, const TensorView& v, const std::vector<int64_t>& shape,
                  DType dtype, const NamedViews& inputs,
                  const NamedViews& earlier) {
  check_view(name, v, " (a caller-allocated output)");
  check_shape(name, v, shape, "");
  if (v.dtype != dtype) {
    fail(name, std::string("must have the input's dtype ") + dtype_name(dtype) + ", got " +
                   dtype_name(v.dtype));
  }
  if (!v.is_contiguous()) {
    fail(name, "must be contiguous (strides " + shape_string(contiguous_strides(v.sizes)) +
                   "), got strides " + shape_string(v.strides));
  }
  check_data(name, v, true);
  const ByteRange r = byte_range(v);
  for (const auto& in : inputs) {
    if (in.second != nullptr && overlaps(r, byte_range(*in.second))) {
      fail(name, "must not share memory with an input tensor, got one overlapping " + in.first);
    }
  }
  for (const auto& e : earlier) {
    if (overlaps(r, byte_range(*e.second))) {
      fail(name, "must not share memory with another output, got one overlapping " + e.first);
    }
  }
}

}  // namespace

NamedViews forward_input_views(const TensorView& input, const TensorList& hx,
                               const TensorList& params, const TensorView& batch_sizes) {
  NamedViews v{{"input", &input}, {"batch_sizes", &batch_sizes}};
  for (std::size_t k = 0; k < hx.size(); ++k) v.emplace_back("hx[" + std::to_string(k) + "]", &hx[k]);
  for (std::size_t k = 0; k < params.size(); ++k) {
    v.emplace_back("params[" + std::to_string(k) + "]", &params[k]);
  }
  return v;
}

NamedViews backward_input_views(const BackwardInputs& saved, const TensorView& input,
                                const TensorList& hx, const TensorList& params,
                                const TensorView& batch_sizes) {
  NamedViews v = forward_input_views(input, hx, params, batch_sizes);
  const std::pair<const char*, const TensorView*> items[] = {
      {"grad_y", saved.grad_y}, {"grad_hy", saved.grad_hy}, {"grad_cy", saved.grad_cy},
      {"i", saved.i},           {"j", saved.j},             {"f", saved.f},
      {"o", saved.o},           {"h", saved.h},             {"c", saved.c},
      {"tanhc", saved.tanhc}};
  for (const auto& item : items) v.emplace_back(item.first, item.second);
  return v;
}

void check_forward_outputs(const ForwardOutputs& out, const ForwardShapes& s, const LstmProblem& d,
                           const NamedViews& inputs) {
  const std::pair<const char*, std::pair<const TensorView*, const std::vector<int64_t>*>> items[] = {
      {"out.output", {&out.output, &s.output}}, {"out.hy", {&out.hy, &s.hy}},
      {"out.cy", {&out.cy, &s.cy}},             {"out.i", {&out.i, &s.i}},
      {"out.j", {&out.j, &s.j}},                {"out.f", {&out.f, &s.f}},
      {"out.o", {&out.o, &s.o}},                {"out.h", {&out.h, &s.h}},
      {"out.c", {&out.c, &s.c}},                {"out.tanhc", {&out.tanhc, &s.tanhc}}};
  NamedViews earlier;
  for (const auto& item : items) {
    check_output(item.first, *item.second.first, *item.second.second, d.dtype, inputs, earlier);
    earlier.emplace_back(item.first, item.second.first);
  }
}

void check_backward_outputs(const BackwardOutputs& out, const BackwardShapes& s,
                            const LstmProblem& d, const NamedViews& inputs) {
  NamedViews earlier;
  check_output("out.dx", out.dx, s.dx, d.dtype, inputs, earlier);
  earlier.emplace_back("out.dx", &out.dx);
  check_output("out.dh0", out.dh0, s.dh0, d.dtype, inputs, earlier);
  earlier.emplace_back("out.dh0", &out.dh0);
  check_output("out.dc0", out.dc0, s.dc0, d.dtype, inputs, earlier);
  earlier.emplace_back("out.dc0", &out.dc0);
  if (out.dparams.size() != s.dparams.size()) {
    fail("out.dparams", "must hold one tensor per params entry (" +
                            std::to_string(s.dparams.size()) + "), got " +
                            std::to_string(out.dparams.size()));
  }
  for (std::size_t k = 0; k < s.dparams.size(); ++k) {
    const std::string name = "out.dparams[" + std::to_string(k) + "]";
    check_output(name, out.dparams[k], s.dparams[k], d.dtype, inputs, earlier);
    earlier.emplace_back(name, &out.dparams[k]);
  }
}

}  // namespace detail
}  // namespace lstmop
