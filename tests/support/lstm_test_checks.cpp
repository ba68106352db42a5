// The tolerances and comparisons of lstm_test_support.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "lstm_test_support.h"

namespace lstmtest {

// ---------------------------------------------------------------------------
// Tolerances and comparisons
// ---------------------------------------------------------------------------

double epsilon(DType dtype) {
  switch (dtype) {
    case DType::Float32: return std::ldexp(1.0, -23);
    case DType::Float64: return std::ldexp(1.0, -52);
    case DType::Float16: return std::ldexp(1.0, -10);
    case DType::BFloat16: return std::ldexp(1.0, -7);
    case DType::Int64: return 0.0;
  }
  return 0.0;
}

void expect_low_precision_near_reference(const LstmProblem& p, uint64_t grad_seed) {
  const DType dtype = p.cfg.dtype;
  const LstmProblem p64 = converted_problem(p, DType::Float64);  // exactly the same values
  const LstmGrads g = make_grads(p, grad_seed);
  const LstmGrads g64 = converted_grads(g, DType::Float64);

  const ForwardResult fwd = run_forward(p);
  const ForwardResult ref = run_reference_forward(p64);
  const double fwd_tol = static_cast<double>(p.cfg.L) * epsilon(dtype);
  const NamedViews a = forward_outputs(fwd), b = forward_outputs(ref);
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].second.dtype, dtype) << a[k].first;
    EXPECT_TRUE(close_to(a[k].second, b[k].second, fwd_tol)) << a[k].first;
  }
  const BackwardResult bwd = run_backward(p, g, fwd);
  const BackwardResult ref_bwd = run_reference_backward(p64, g64, ref);
  const double bwd_tol = 4 * epsilon(dtype);
  const NamedViews ga = backward_outputs(bwd), gb = backward_outputs(ref_bwd);
  ASSERT_EQ(ga.size(), gb.size());
  for (std::size_t k = 0; k < ga.size(); ++k) {
    EXPECT_EQ(ga[k].second.dtype, dtype) << ga[k].first;
    EXPECT_TRUE(close_to(ga[k].second, gb[k].second, bwd_tol)) << ga[k].first;
  }
}

void expect_near_reference(const LstmConfig& cfg, uint64_t seed) {
  SCOPED_TRACE(cfg.name());
  const LstmProblem p = make_problem(cfg, seed);
  const ForwardResult prod = run_forward(p);
  const ForwardResult ref = run_reference_forward(p);
  const double fwd_tol = accumulation_tolerance(cfg.dtype, forward_depth(cfg), false);
  const NamedViews prod_out = forward_outputs(prod), ref_out = forward_outputs(ref);
  for (std::size_t k = 0; k < prod_out.size(); ++k) {
    EXPECT_EQ(prod_out[k].second.dtype, cfg.dtype) << prod_out[k].first;
    EXPECT_EQ(ref_out[k].second.dtype, DType::Float64) << ref_out[k].first;
    EXPECT_TRUE(close_to(prod_out[k].second, ref_out[k].second, fwd_tol)) << prod_out[k].first;
  }
  if (!cfg.train) return;  // the backward needs a train=True forward

  const LstmGrads g = make_grads(p, seed + 1);
  const BackwardResult prod_b = run_backward(p, g, prod);
  const BackwardResult ref_b = run_reference_backward(p, g, prod);
  const double bwd_tol = accumulation_tolerance(cfg.dtype, backward_depth(cfg), true);
  const NamedViews prod_g = backward_outputs(prod_b), ref_g = backward_outputs(ref_b);
  ASSERT_EQ(prod_g.size(), 3 + p.params.size());
  ASSERT_EQ(ref_g.size(), prod_g.size());
  for (std::size_t k = 0; k < prod_g.size(); ++k) {
    EXPECT_EQ(prod_g[k].second.dtype, cfg.dtype) << prod_g[k].first;
    EXPECT_TRUE(close_to(prod_g[k].second, ref_g[k].second, bwd_tol)) << prod_g[k].first;
  }
}

double accumulation_tolerance(DType dtype, double depth, bool backward) {
  return 4.0 * (backward ? 2.0 : 1.0) * std::ceil(std::log2(std::max(depth, 2.0))) *
         epsilon(dtype);
}

double forward_depth(const LstmConfig& c) {
  const double K = static_cast<double>(std::max(c.I, c.D() * c.R()) + c.R() + 2 +
                                      (c.P > 0 ? c.H : 0));
  return K * static_cast<double>(c.T * c.L);
}

double backward_depth(const LstmConfig& c) {
  return forward_depth(c) * static_cast<double>(c.B);
}

namespace {
std::string index_string(const std::vector<int64_t>& sizes, int64_t flat) {
  std::vector<int64_t> index(sizes.size(), 0);
  for (std::size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] > 0) {
      index[d] = flat % sizes[d];
      flat /= sizes[d];
    }
  }
  return lstmop::shape_string(index);
}

::testing::AssertionResult same_shape(const TensorView& a, const TensorView& e) {
  if (!a.defined || !e.defined) {
    return ::testing::AssertionFailure()
           << "undefined tensor (actual defined=" << a.defined << ", expected defined="
           << e.defined << ")";
  }
  if (a.sizes != e.sizes) {
    return ::testing::AssertionFailure() << "shape " << lstmop::shape_string(a.sizes)
                                         << " != expected " << lstmop::shape_string(e.sizes);
  }
  return ::testing::AssertionSuccess();
}
}  // namespace

double max_abs(const TensorView& v) {
  double m = 0.0;
  for (double x : to_doubles(v)) m = std::max(m, std::fabs(x));
  return m;
}

::testing::AssertionResult close_to(const TensorView& actual, const TensorView& expected,
                                    double tol) {
  ::testing::AssertionResult shape = same_shape(actual, expected);
  if (!shape) return shape;
  const std::vector<double> a = to_doubles(actual), e = to_doubles(expected);
  double scale = 1.0;
  for (double x : e) scale = std::max(scale, std::fabs(x));
  const double bound = tol * scale;
  double worst = 0.0;
  int64_t worst_at = -1, bad = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double err = std::fabs(a[k] - e[k]);
    if (!(err <= bound)) {  // also catches NaN
      ++bad;
      if (worst_at < 0 || !(err <= worst)) {
        worst = err;
        worst_at = static_cast<int64_t>(k);
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << a.size() << " elements differ by more than " << bound
         << " (tol " << tol << " * scale " << scale << "); worst at "
         << index_string(actual.sizes, worst_at) << ": actual " << a[worst_at] << ", expected "
         << e[worst_at] << ", error " << worst << " = " << worst / scale << " * scale";
}

::testing::AssertionResult all_close(const TensorView& actual, const TensorView& expected,
                                     double atol, double rtol) {
  ::testing::AssertionResult shape = same_shape(actual, expected);
  if (!shape) return shape;
  const std::vector<double> a = to_doubles(actual), e = to_doubles(expected);
  int64_t bad = 0, first = -1;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (!(std::fabs(a[k] - e[k]) <= atol + rtol * std::fabs(e[k]))) {
      if (first < 0) first = static_cast<int64_t>(k);
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << a.size() << " elements differ by more than atol " << atol
         << " + rtol " << rtol << " * |expected|; first at "
         << index_string(actual.sizes, first) << ": actual " << a[first] << ", expected "
         << e[first];
}

::testing::AssertionResult bitwise_equal(const TensorView& actual, const TensorView& expected) {
  ::testing::AssertionResult shape = same_shape(actual, expected);
  if (!shape) return shape;
  if (actual.dtype != expected.dtype) {
    return ::testing::AssertionFailure() << "dtype " << lstmop::dtype_name(actual.dtype)
                                         << " != expected " << lstmop::dtype_name(expected.dtype);
  }
  const std::vector<unsigned char> a = to_bytes(actual), e = to_bytes(expected);
  const std::size_t es = lstmop::dtype_size(actual.dtype);
  for (std::size_t k = 0; k < a.size(); k += es) {
    if (std::memcmp(&a[k], &e[k], es) != 0) {
      const int64_t flat = static_cast<int64_t>(k / es);
      std::vector<double> av = to_doubles(actual), ev = to_doubles(expected);
      return ::testing::AssertionFailure()
             << "bits differ at " << index_string(actual.sizes, flat) << ": actual "
             << av[flat] << ", expected " << ev[flat];
    }
  }
  return ::testing::AssertionSuccess();
}

void expect_bitwise_same(const AllResults& a, const AllResults& b, bool train) {
  const NamedViews fa = forward_outputs(a.fwd), fb = forward_outputs(b.fwd);
  ASSERT_EQ(fa.size(), fb.size());
  for (std::size_t k = 0; k < fa.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(fa[k].second, fb[k].second)) << fa[k].first;
  }
  if (!train) return;
  const NamedViews ga = backward_outputs(a.bwd), gb = backward_outputs(b.bwd);
  ASSERT_EQ(ga.size(), gb.size());
  for (std::size_t k = 0; k < ga.size(); ++k) {
    EXPECT_TRUE(bitwise_equal(ga[k].second, gb[k].second)) << ga[k].first;
  }
}

::testing::AssertionResult values_equal(const TensorView& actual, const TensorView& expected) {
  return all_close(actual, expected, 0.0, 0.0);
}

void Snapshot::add(const std::string& name, const TensorView& v) {
  if (!v.defined || v.data == nullptr) return;
  views_.emplace_back(name, v);
  bytes_.push_back(to_bytes(v));
}

void Snapshot::add_problem(const LstmProblem& p) {
  add("input", p.input);
  for (std::size_t k = 0; k < p.hx.size(); ++k) add("hx[" + std::to_string(k) + "]", p.hx[k]);
  for (std::size_t k = 0; k < p.params.size(); ++k) {
    add("params[" + std::to_string(k) + "]", p.params[k]);
  }
  if (p.batch_sizes.defined()) add("batch_sizes", p.batch_sizes);
}

::testing::AssertionResult Snapshot::unchanged() const {
  ::testing::AssertionResult r = ::testing::AssertionSuccess();
  bool ok = true;
  for (std::size_t k = 0; k < views_.size(); ++k) {
    if (to_bytes(views_[k].second) != bytes_[k]) {
      if (ok) r = ::testing::AssertionFailure();
      ok = false;
      r << views_[k].first << " was written; ";
    }
  }
  return r;
}

}  // namespace lstmtest
