// libFuzzer target: bytes -> one forward call (and, when it succeeds, a
// backward call on the saved tensors of a train=True forward of the same call) with decoded sizes, flags, dtype,
// layouts, batch_sizes, values and at most one deliberate corruption
// (fuzz_case.h). The oracle, for every call:
// - it either throws lstmop::Error or returns; nothing else (any other
//   exception, a crash, a sanitizer report, a hang is a finding);
// - the reference (same arguments, same views) throws the same Error message
//   exactly when production throws; the shape functions throw the same Error
//   or, when the error is only visible in batch_sizes' values, return shapes;
//   an Error's what() starts with its argument();
// - returned results have the shapes of the shape functions and the input's
//   dtype, and equal the reference's within the suite's tolerances (float32 /
//   float64: 4 (1 + backward) ceil(log2 depth) eps; float16 / bfloat16: L eps
//   forward, 4 eps backward); with special values (NaN, +-inf, +-1e4 in input
//   and hx) the forward's NaN and infinity positions equal the reference's and
//   every gate, tanh(c), output and hy lies in its range;
// - the _out forms write bitwise what the allocating forms return, or throw
//   the same Error and leave every caller output byte as it was; an output
//   over an input's memory is refused;
// - with two core threads, every result is bitwise the one-thread result;
// - no input storage byte (data, padding, gaps) changes: FNV-1a checksums of
//   every storage before and after all calls.
// On a violation it prints the case and aborts (libFuzzer saves the input).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "fuzz_case.h"
#include "lstmop/lstmop.h"

namespace lstmfuzz {
namespace {

// The cases are small: without this the plan would run them on one thread
// and the two-thread check would compare a path with itself
// (plan/lstm_plan.h, LSTMOP_MIN_PARALLEL_WORK).
const bool kEveryCallMayTakeTwoThreads = [] {
  setenv("LSTMOP_MIN_PARALLEL_WORK", "0", 0);
  return true;
}();

const Case* g_case = nullptr;
// LSTMOP_FUZZ_VERBOSE=1: one line per call saying how it went (to see what a corpus covers).
const bool g_verbose = std::getenv("LSTMOP_FUZZ_VERBOSE") != nullptr;

template <class T>
void report(const char* what, const T& outcome) {
  if (g_verbose) {
    std::fprintf(stderr, "lstmop_fuzz: %s [%s] %s: %s\n", g_case->describe().c_str(),
                 corruption_name(g_case->corruption), what,
                 outcome.ok() ? "ok" : outcome.error.c_str());
  }
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "lstmop_fuzz: %s\n  case: %s\n", what.c_str(),
               g_case ? g_case->describe().c_str() : "?");
  std::abort();
}

// Outcome of a call: a value, or the Error's message.
template <class T>
struct Outcome {
  std::optional<T> value;
  std::string error;    // what() of the lstmop::Error
  std::string argument;
  bool ok() const { return value.has_value(); }
};

template <class T>
Outcome<T> attempt(const char* name, const std::function<T()>& fn) {
  Outcome<T> r;
  try {
    r.value = fn();
  } catch (const lstmop::Error& e) {
    r.error = e.what();
    r.argument = e.argument();
    if (r.argument.empty() || r.error.rfind(r.argument, 0) != 0) {
      fail(std::string(name) + ": the Error's message does not start with its argument '" +
           r.argument + "': " + r.error);
    }
  } catch (const std::exception& e) {
    fail(std::string(name) + " threw a non-lstmop exception: " + e.what());
  } catch (...) {
    fail(std::string(name) + " threw a non-std exception");
  }
  return r;
}

template <class A, class B>
void expect_same_outcome(const char* what, const Outcome<A>& a, const Outcome<B>& b) {
  if (a.ok() != b.ok() || a.error != b.error) {
    fail(std::string(what) + " disagree: '" + (a.ok() ? "ok" : a.error) + "' vs '" +
         (b.ok() ? "ok" : b.error) + "'");
  }
}

double epsilon(DType d) {
  switch (d) {
    case DType::Float32: return std::ldexp(1.0, -23);
    case DType::Float64: return std::ldexp(1.0, -52);
    case DType::Float16: return std::ldexp(1.0, -10);
    case DType::BFloat16: return std::ldexp(1.0, -7);
    default: return 0.0;
  }
}

bool low_precision(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

// |a - e| <= tol * max(1, max |e|) for every element; NaN must face NaN.
void expect_close(const std::string& name, const TensorView& a, const TensorView& e, double tol) {
  if (a.sizes != e.sizes) fail(name + ": shape " + lstmop::shape_string(a.sizes) + " vs " +
                               lstmop::shape_string(e.sizes));
  const std::vector<double> x = values_of(a), y = values_of(e);
  double scale = 1.0;
  for (double v : y) {
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  }
  for (std::size_t k = 0; k < x.size(); ++k) {
    const bool ok = std::isnan(y[k]) ? std::isnan(x[k])
                                     : std::fabs(x[k] - y[k]) <= tol * scale;
    if (!ok) {
      fail(name + " element " + std::to_string(k) + ": " + std::to_string(x[k]) +
           " vs reference " + std::to_string(y[k]) + " (tolerance " + std::to_string(tol) +
           " * " + std::to_string(scale) + ")");
    }
  }
}

// Special-values mode: same NaN / infinity positions; gates in [0, 1],
// j, tanhc, output, hy in [-1, 1]. (Not h: in variable-length mode its
// invalid positions of the reverse direction carry hx's h0, which may be huge.
// Not output and hy with projections: h = w_hr m is bounded by sum |w_hr|.)
void expect_special_consistent(const std::string& name, const TensorView& a,
                               const TensorView& e, bool projections) {
  const std::vector<double> x = values_of(a), y = values_of(e);
  const bool gate = name == "i" || name == "f" || name == "o";
  const bool hidden = name == "output" || name == "hy";
  const bool unit = name == "j" || name == "tanhc" || (hidden && !projections);
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (std::isnan(x[k]) != std::isnan(y[k]) || (std::isinf(y[k]) && x[k] != y[k]) ||
        (std::isinf(x[k]) && x[k] != y[k])) {
      fail(name + " element " + std::to_string(k) + ": " + std::to_string(x[k]) +
           " vs reference " + std::to_string(y[k]) + " (NaN/inf positions differ)");
    }
    if (std::isnan(x[k])) continue;
    if ((gate && (x[k] < 0.0 || x[k] > 1.0)) || (unit && std::fabs(x[k]) > 1.0)) {
      fail(name + " element " + std::to_string(k) + " = " + std::to_string(x[k]) +
           " is out of its range");
    }
  }
}

void expect_bitwise(const std::string& name, const TensorView& a, const TensorView& b) {
  if (a.sizes != b.sizes || a.dtype != b.dtype) fail(name + ": shape or dtype differs");
  const std::size_t n = static_cast<std::size_t>(a.numel()) * lstmop::dtype_size(a.dtype);
  if (n > 0 && std::memcmp(a.data, b.data, n) != 0) fail(name + ": bits differ");
}

using Named = std::vector<std::pair<std::string, TensorView>>;

Named forward_named(const lstmop::ForwardResult& r) {
  return {{"output", r.output}, {"hy", r.hy}, {"cy", r.cy}, {"i", r.i}, {"j", r.j},
          {"f", r.f},           {"o", r.o},   {"h", r.h},   {"c", r.c}, {"tanhc", r.tanhc}};
}

Named backward_named(const lstmop::BackwardResult& r) {
  Named v{{"dx", r.dx}};
  if (r.dhx.size() == 2) {
    v.emplace_back("dh0", r.dhx[0]);
    v.emplace_back("dc0", r.dhx[1]);
  }
  for (std::size_t k = 0; k < r.dparams.size(); ++k) {
    v.emplace_back("dparams[" + std::to_string(k) + "]", r.dparams[k]);
  }
  return v;
}

std::vector<std::vector<int64_t>> forward_shape_list(const lstmop::ForwardShapes& s) {
  return {s.output, s.hy, s.cy, s.i, s.j, s.f, s.o, s.h, s.c, s.tanhc};
}

// Sentinel-filled contiguous buffers of the given shapes.
constexpr unsigned char kSentinel = 0xA5;
lstmop::Tensor sentinel(DType dtype, const std::vector<int64_t>& sizes) {
  lstmop::Tensor t = lstmop::Tensor::empty(dtype, sizes);
  if (t.numel() > 0) {
    std::memset(t.data<unsigned char>(), kSentinel,
                static_cast<std::size_t>(t.numel()) * lstmop::dtype_size(dtype));
  }
  return t;
}

bool all_sentinel(const TensorView& v) {
  const unsigned char* p = static_cast<const unsigned char*>(v.data);
  const std::size_t n = static_cast<std::size_t>(v.numel()) * lstmop::dtype_size(v.dtype);
  for (std::size_t k = 0; k < n; ++k) {
    if (p[k] != kSentinel) return false;
  }
  return true;
}

// Every input storage: its checksum now.
struct Checksums {
  std::vector<std::pair<const std::vector<unsigned char>*, uint64_t>> sums;
  void add(const Strided& s) { sums.emplace_back(s.storage.get(), checksum(*s.storage)); }
  void verify(const char* when) const {
    for (const auto& e : sums) {
      if (checksum(*e.first) != e.second) fail(std::string("an input was written (") + when + ")");
    }
  }
};

double accumulation_tolerance(DType d, double depth, bool backward) {
  return 4.0 * (backward ? 2.0 : 1.0) * std::ceil(std::log2(std::max(depth, 2.0))) * epsilon(d);
}

// The backward's arguments built from a forward's results.
struct BackwardCall {
  TensorView grad_y, grad_hy, grad_cy;
  TensorView saved[7];  // i, j, f, o, h, c, tanhc
  bool bidirectional, has_biases, batch_first, train;
};

void run_case(const Case& c) {
  using lstmop::TensorList;
  Checksums sums;
  for (const Strided& s : c.owned) sums.add(s);
  lstmop::set_num_threads(1);

  // ---- forward ---------------------------------------------------------------------------
  auto forward = [&](bool train) {
    return lstmop::lstm_forward(c.input, c.hx, c.params, c.has_biases, c.num_layers, c.dropout,
                                train, c.bidirectional, c.batch_first, c.batch_sizes);
  };
  const auto fwd = attempt<lstmop::ForwardResult>("lstm_forward", [&] { return forward(c.train); });
  const auto ref = attempt<lstmop::ForwardResult>("reference::lstm_forward", [&] {
    return lstmop::reference::lstm_forward(c.input, c.hx, c.params, c.has_biases, c.num_layers,
                                           c.dropout, c.train, c.bidirectional, c.batch_first,
                                           c.batch_sizes);
  });
  expect_same_outcome("lstm_forward and reference::lstm_forward", fwd, ref);
  report("forward", fwd);
  const auto shapes = attempt<lstmop::ForwardShapes>("lstm_forward_shapes", [&] {
    return lstmop::lstm_forward_shapes(c.input, c.hx, c.params, c.has_biases, c.num_layers,
                                       c.dropout, c.train, c.bidirectional, c.batch_first,
                                       c.batch_sizes);
  });
  if (!shapes.ok()) {
    expect_same_outcome("lstm_forward and lstm_forward_shapes", fwd, shapes);
  } else if (!fwd.ok() && fwd.argument != "batch_sizes") {
    fail("lstm_forward_shapes accepted what lstm_forward refused: " + fwd.error);
  }

  if (shapes.ok()) {
    // The _out form into sentinel buffers.
    const DType dt = c.input.dtype;
    const std::vector<std::vector<int64_t>> list = forward_shape_list(*shapes.value);
    std::vector<lstmop::Tensor> bufs;
    for (const auto& s : list) bufs.push_back(sentinel(dt, s));
    lstmop::ForwardOutputs out{bufs[0], bufs[1], bufs[2], bufs[3], bufs[4],
                               bufs[5], bufs[6], bufs[7], bufs[8], bufs[9]};
    const bool alias = c.corruption == Corruption::kOutputAliasesInput && fwd.ok() &&
                       bufs[1].numel() > 0 && c.input.defined && c.input.numel() > 0;
    if (alias) {
      const TensorView& over = c.hx.empty() ? c.input : c.hx[0];
      out.hy = TensorView(over.data, dt, list[1]);
    }
    const auto outcome = attempt<int>("lstm_forward_out", [&] {
      lstmop::lstm_forward_out(out, c.input, c.hx, c.params, c.has_biases, c.num_layers,
                               c.dropout, c.train, c.bidirectional, c.batch_first, c.batch_sizes);
      return 0;
    });
    if (alias) {
      if (outcome.ok() || outcome.argument != "out.hy") {
        fail("lstm_forward_out accepted an output over an input's memory: " + outcome.error);
      }
      for (std::size_t k = 0; k < bufs.size(); ++k) {
        if (k != 1 && !all_sentinel(bufs[k])) fail("a refused lstm_forward_out wrote an output");
      }
    } else {
      expect_same_outcome("lstm_forward and lstm_forward_out", fwd, outcome);
      const Named got = fwd.ok() ? forward_named(*fwd.value) : Named{};
      for (std::size_t k = 0; k < bufs.size(); ++k) {
        if (fwd.ok()) {
          expect_bitwise("lstm_forward_out " + got[k].first, bufs[k], got[k].second);
        } else if (!all_sentinel(bufs[k])) {
          fail("a refused lstm_forward_out wrote an output");
        }
      }
    }
  }
  {
    // The _into form: its callback called once, with the shape function's shapes, only for
    // arguments lstm_forward accepts; the same outcome and bits.
    std::vector<lstmop::Tensor> bufs;
    int calls = 0;
    const auto outcome = attempt<int>("lstm_forward_into", [&] {
      lstmop::lstm_forward_into(
          [&](const lstmop::ForwardShapes& s) {
            ++calls;
            for (const auto& shape : forward_shape_list(s)) {
              bufs.push_back(sentinel(c.input.dtype, shape));
            }
            return lstmop::ForwardOutputs{bufs[0], bufs[1], bufs[2], bufs[3], bufs[4],
                                          bufs[5], bufs[6], bufs[7], bufs[8], bufs[9]};
          },
          c.input, c.hx, c.params, c.has_biases, c.num_layers, c.dropout, c.train,
          c.bidirectional, c.batch_first, c.batch_sizes);
      return 0;
    });
    expect_same_outcome("lstm_forward and lstm_forward_into", fwd, outcome);
    if (calls != (fwd.ok() ? 1 : 0)) {
      fail("lstm_forward_into called its allocator " + std::to_string(calls) + " times");
    }
    if (fwd.ok()) {
      const Named got = forward_named(*fwd.value);
      for (std::size_t k = 0; k < bufs.size(); ++k) {
        if (shapes.ok() && bufs[k].sizes() != forward_shape_list(*shapes.value)[k]) {
          fail("lstm_forward_into: not the shape function's shape");
        }
        expect_bitwise("lstm_forward_into " + got[k].first, bufs[k], got[k].second);
      }
    }
  }
  sums.verify("forward");
  if (!fwd.ok()) return;

  // Results vs the reference.
  const Named got = forward_named(*fwd.value), want = forward_named(*ref.value);
  const std::vector<std::vector<int64_t>> list = forward_shape_list(*shapes.value);
  // With projections h sums H more products (w_hr m): the depth counts them.
  const double K = static_cast<double>(std::max(c.I, c.D() * c.R()) + c.R() + 2 +
                                       (c.P > 0 ? c.H : 0));
  const double fdepth = K * static_cast<double>(c.T * c.L);
  const double ftol = low_precision(c.dtype) ? static_cast<double>(c.L) * epsilon(c.dtype)
                                             : accumulation_tolerance(c.dtype, fdepth, false);
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (got[k].second.sizes != list[k]) fail(got[k].first + ": not the shape function's shape");
    if (got[k].second.dtype != c.input.dtype) fail(got[k].first + ": not the input's dtype");
    if (c.special_values) {
      expect_special_consistent(got[k].first, got[k].second, want[k].second, c.P > 0);
    } else {
      expect_close(got[k].first, got[k].second, want[k].second, ftol);
    }
  }
  if (c.check_two_threads) {
    lstmop::set_num_threads(2);
    const lstmop::ForwardResult two = forward(c.train);
    lstmop::set_num_threads(1);
    const Named t = forward_named(two);
    for (std::size_t k = 0; k < got.size(); ++k) {
      expect_bitwise("2 threads: " + got[k].first, t[k].second, got[k].second);
    }
  }

  // ---- backward --------------------------------------------------------------------------
  // The saved tensors: of a train=True forward (this one, or the same call with
  // train=True after a train=False forward), or, as a corruption, of a
  // train=False forward.
  const int detail = c.corruption_detail;
  std::optional<lstmop::ForwardResult> other;
  const lstmop::ForwardResult* saved_from = &*fwd.value;
  const bool want_train = c.corruption != Corruption::kSavedFromEval;
  if (want_train != c.train) {
    // The other train flag may make the call invalid (dropout > 0 with L > 1
    // is refused with train=True): then there is no backward to try.
    auto o = attempt<lstmop::ForwardResult>("lstm_forward (saved tensors)",
                                            [&] { return forward(want_train); });
    if (!o.ok()) return;
    other = std::move(o.value);
    saved_from = &*other;
  }
  std::vector<Strided> owned;
  BackwardCall b;
  const Named saved_named = forward_named(*saved_from);
  for (int k = 0; k < 7; ++k) {
    const TensorView& v = saved_named[3 + k].second;
    owned.push_back(relayout(v, layout_from_code(c.saved_layout_code, v.sizes.size(), false)));
    b.saved[k] = owned.back().view;
  }
  if (c.corruption == Corruption::kSavedShape) {
    std::vector<int64_t> s = b.saved[detail % 7].sizes;
    if (s.size() == 4) s[1] = s[1] > 1 ? s[1] - 1 : s[1] + 1;
    owned.push_back(make_random_tensor(c.dtype, s, 0, c.value_seed + 77, 0.5));
    b.saved[detail % 7] = owned.back().view;
  }
  const std::vector<int64_t> grad_shapes[3] = {list[0], list[1], list[2]};
  TensorView* grads[3] = {&b.grad_y, &b.grad_hy, &b.grad_cy};
  for (int k = 0; k < 3; ++k) {
    if (!c.grad_defined[k]) continue;
    std::vector<int64_t> s = grad_shapes[k];
    DType dt = c.dtype;
    if (c.corruption == Corruption::kGradShape && detail % 3 == k) s[(detail / 3) % s.size()] += 1;
    if (c.corruption == Corruption::kGradDtype && detail % 3 == k) {
      dt = c.dtype == DType::Float32 ? DType::Float64 : DType::Float32;
    }
    owned.push_back(make_random_tensor(dt, s, c.grad_layout_code, c.value_seed + 100 + k, 1.0));
    *grads[k] = owned.back().view;
  }
  b.bidirectional = c.bidirectional;
  b.has_biases = c.has_biases;
  b.batch_first = c.batch_first;
  b.train = c.corruption != Corruption::kBackwardTrainFalse;
  if (c.corruption == Corruption::kBackwardFlag) {
    bool* flags[] = {&b.bidirectional, &b.has_biases, &b.batch_first};
    *flags[detail % 3] = !*flags[detail % 3];
  }
  for (const Strided& s : owned) sums.add(s);

  const TensorView* s = b.saved;
  auto backward = [&] {
    return lstmop::lstm_backward(b.grad_y, b.grad_hy, b.grad_cy, c.input, c.hx, c.params, s[0],
                                 s[1], s[2], s[3], s[4], s[5], s[6], b.has_biases, c.num_layers,
                                 c.dropout, b.train, b.bidirectional, b.batch_first,
                                 c.batch_sizes);
  };
  const auto bwd = attempt<lstmop::BackwardResult>("lstm_backward", backward);
  const auto rbwd = attempt<lstmop::BackwardResult>("reference::lstm_backward", [&] {
    return lstmop::reference::lstm_backward(
        b.grad_y, b.grad_hy, b.grad_cy, c.input, c.hx, c.params, s[0], s[1], s[2], s[3], s[4],
        s[5], s[6], b.has_biases, c.num_layers, c.dropout, b.train, b.bidirectional,
        b.batch_first, c.batch_sizes);
  });
  expect_same_outcome("lstm_backward and reference::lstm_backward", bwd, rbwd);
  report("backward", bwd);
  const auto bshapes = attempt<lstmop::BackwardShapes>("lstm_backward_shapes", [&] {
    return lstmop::lstm_backward_shapes(b.grad_y, b.grad_hy, b.grad_cy, c.input, c.hx, c.params,
                                        s[0], s[1], s[2], s[3], s[4], s[5], s[6], b.has_biases,
                                        c.num_layers, c.dropout, b.train, b.bidirectional,
                                        b.batch_first, c.batch_sizes);
  });
  if (!bshapes.ok()) {
    expect_same_outcome("lstm_backward and lstm_backward_shapes", bwd, bshapes);
  } else if (!bwd.ok() && bwd.argument != "batch_sizes") {
    fail("lstm_backward_shapes accepted what lstm_backward refused: " + bwd.error);
  }
  if (bshapes.ok()) {
    const lstmop::BackwardShapes& bs = *bshapes.value;
    std::vector<lstmop::Tensor> bufs{sentinel(c.dtype, bs.dx), sentinel(c.dtype, bs.dh0),
                                     sentinel(c.dtype, bs.dc0)};
    for (const auto& p : bs.dparams) bufs.push_back(sentinel(c.dtype, p));
    lstmop::BackwardOutputs out;
    out.dx = bufs[0];
    out.dh0 = bufs[1];
    out.dc0 = bufs[2];
    for (std::size_t k = 3; k < bufs.size(); ++k) out.dparams.push_back(bufs[k]);
    const auto outcome = attempt<int>("lstm_backward_out", [&] {
      lstmop::lstm_backward_out(out, b.grad_y, b.grad_hy, b.grad_cy, c.input, c.hx, c.params,
                                s[0], s[1], s[2], s[3], s[4], s[5], s[6], b.has_biases,
                                c.num_layers, c.dropout, b.train, b.bidirectional, b.batch_first,
                                c.batch_sizes);
      return 0;
    });
    expect_same_outcome("lstm_backward and lstm_backward_out", bwd, outcome);
    const Named g = bwd.ok() ? backward_named(*bwd.value) : Named{};
    for (std::size_t k = 0; k < bufs.size(); ++k) {
      if (bwd.ok()) {
        expect_bitwise("lstm_backward_out " + g[k].first, bufs[k], g[k].second);
      } else if (!all_sentinel(bufs[k])) {
        fail("a refused lstm_backward_out wrote an output");
      }
    }
  }
  sums.verify("backward");
  if (!bwd.ok()) return;

  const Named g = backward_named(*bwd.value), rg = backward_named(*rbwd.value);
  if (g.size() != rg.size() || g.size() != 3 + c.params.size()) fail("backward result count");
  const double btol = low_precision(c.dtype)
                          ? 4 * epsilon(c.dtype)
                          : accumulation_tolerance(c.dtype, fdepth * static_cast<double>(c.B), true);
  for (std::size_t k = 0; k < g.size(); ++k) {
    if (g[k].second.dtype != c.dtype) fail(g[k].first + ": not the input's dtype");
    if (!c.special_values) expect_close(g[k].first, g[k].second, rg[k].second, btol);
  }
  if (c.check_two_threads) {
    lstmop::set_num_threads(2);
    const lstmop::BackwardResult two = backward();
    lstmop::set_num_threads(1);
    const Named t = backward_named(two);
    for (std::size_t k = 0; k < g.size(); ++k) {
      expect_bitwise("2 threads: " + g[k].first, t[k].second, g[k].second);
    }
  }
  sums.verify("end");
}

}  // namespace
}  // namespace lstmfuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const lstmfuzz::Case c = lstmfuzz::decode_case(data, size);
  lstmfuzz::g_case = &c;
  lstmfuzz::run_case(c);
  lstmfuzz::g_case = nullptr;
  return 0;
}
