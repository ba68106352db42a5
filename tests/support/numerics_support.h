// Helpers of the numerics suites: NaN-aware comparisons, NaN masks, and the
// batch index of each element of a result (to say which sequence it belongs to).
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "lstm_test_support.h"

namespace lstmtest {

// Like close_to (|a - e| <= tol * max(1, max finite |e|)), but NaN must face
// NaN and an infinity the same infinity.
inline ::testing::AssertionResult close_to_with_specials(const TensorView& actual,
                                                         const TensorView& expected, double tol) {
  if (actual.sizes != expected.sizes) {
    return ::testing::AssertionFailure() << "shape " << lstmop::shape_string(actual.sizes)
                                         << " != " << lstmop::shape_string(expected.sizes);
  }
  const std::vector<double> a = to_doubles(actual), e = to_doubles(expected);
  double scale = 1.0;
  for (double v : e) {
    if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
  }
  for (std::size_t k = 0; k < a.size(); ++k) {
    const bool ok = std::isnan(e[k])   ? std::isnan(a[k])
                    : std::isinf(e[k]) ? a[k] == e[k]
                                       : std::isfinite(a[k]) &&
                                             std::fabs(a[k] - e[k]) <= tol * scale;
    if (!ok) {
      return ::testing::AssertionFailure()
             << "element " << k << ": " << a[k] << " vs expected " << e[k] << " (tol " << tol
             << " * " << scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::vector<bool> nan_mask(const TensorView& v) {
  std::vector<bool> m;
  for (double x : to_doubles(v)) m.push_back(std::isnan(x));
  return m;
}

inline ::testing::AssertionResult has_no_nan(const TensorView& v) {
  const std::vector<double> x = to_doubles(v);
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (std::isnan(x[k])) return ::testing::AssertionFailure() << "NaN at element " << k;
  }
  return ::testing::AssertionSuccess();
}

// Bit patterns of the values (as doubles: exact and injective for every
// non-NaN value of every floating dtype, -0 included).
inline std::vector<uint64_t> value_bits(const TensorView& v) {
  std::vector<uint64_t> out;
  for (double x : to_doubles(v)) {
    uint64_t b;
    std::memcpy(&b, &x, sizeof b);
    out.push_back(b);
  }
  return out;
}

// Batch index of flat (row-major) element k of a tensor whose batch axis is
// `axis` (for a packed (T*B, F) tensor: axis 0 with rows t*B + b, pass
// packed_batch = B).
inline int64_t batch_of(const std::vector<int64_t>& sizes, int64_t k, int axis,
                        int64_t packed_batch = 0) {
  std::vector<int64_t> index(sizes.size());
  for (std::size_t d = sizes.size(); d-- > 0;) {
    index[d] = k % sizes[d];
    k /= sizes[d];
  }
  if (packed_batch > 0) return index[0] % packed_batch;
  return index[static_cast<std::size_t>(axis)];
}

}  // namespace lstmtest
