// The argument-check helpers of check_support.h.
#include "api/check_support.h"

#include "api/checks.h"

#include <sstream>

namespace lstmop {
namespace detail {

void fail(const std::string& name, const std::string& rest) {
  throw Error(name.substr(0, name.find(" (")), name + " " + rest);
}

bool is_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 ||
         d == DType::BFloat16;
}

bool mul_ok(int64_t a, int64_t b, int64_t* r) { return !__builtin_mul_overflow(a, b, r); }

std::string number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string with_dims(const std::vector<int64_t>& sizes) {
  return std::to_string(sizes.size()) + "-D " + shape_string(sizes);
}

void check_view(const std::string& name, const TensorView& v, const char* what_if_undefined) {
  if (!v.defined) fail(name, std::string("must be a defined tensor") + what_if_undefined +
                                 ", got an undefined one");
  if (v.strides.size() != v.sizes.size()) {
    fail(name, "must have one stride per dimension (" + std::to_string(v.sizes.size()) +
                   " for sizes " + shape_string(v.sizes) + "), got " +
                   std::to_string(v.strides.size()) + " strides " + shape_string(v.strides));
  }
  int64_t n = 1;
  for (int64_t s : v.sizes) {
    if (s < 0) fail(name, "must have non-negative sizes, got " + shape_string(v.sizes));
    if (!mul_ok(n, s, &n)) {
      fail(name, "must have fewer than 2^63 elements, got sizes " + shape_string(v.sizes));
    }
  }
  if (n == 0) return;
  // Largest |offset| reachable through the strides, in bytes, must fit int64.
  int64_t extent = 0;
  for (std::size_t k = 0; k < v.sizes.size(); ++k) {
    const int64_t st = v.strides[k];
    int64_t span = 0;
    if (st == INT64_MIN || !mul_ok(st < 0 ? -st : st, v.sizes[k] - 1, &span) ||
        __builtin_add_overflow(extent, span, &extent)) {
      fail(name, "must address less than 2^63 elements, got sizes " + shape_string(v.sizes) +
                     " with strides " + shape_string(v.strides));
    }
  }
  int64_t bytes = 0;
  if (is_floating(v.dtype) || v.dtype == DType::Int64) {
    if (!mul_ok(extent + 1, static_cast<int64_t>(dtype_size(v.dtype)), &bytes)) {
      fail(name, "must address less than 2^63 bytes, got sizes " + shape_string(v.sizes) +
                     " with strides " + shape_string(v.strides));
    }
  }
}

void check_data(const std::string& name, const TensorView& v, bool read_values) {
  if (read_values && v.data == nullptr && v.numel() > 0) {
    fail(name, "must have data, got data == nullptr for " + std::to_string(v.numel()) +
                   " elements " + shape_string(v.sizes));
  }
}

void check_dtype(const std::string& name, const TensorView& v, DType expected) {
  if (v.dtype != expected) {
    fail(name, std::string("must have the input's dtype ") + dtype_name(expected) + ", got " +
                   dtype_name(v.dtype));
  }
}

void check_shape(const std::string& name, const TensorView& v, const std::vector<int64_t>& expected,
                 const std::string& meaning) {
  if (v.sizes != expected) {
    fail(name, "must be " + shape_string(expected) + meaning + ", got " + shape_string(v.sizes));
  }
}

void check_input_tensor(const std::string& name, const TensorView& v, const LstmProblem& dims,
                        const std::vector<int64_t>& expected, const std::string& meaning,
                        bool read_values, const char* what_if_undefined) {
  check_view(name, v, what_if_undefined);
  check_dtype(name, v, dims.dtype);
  check_shape(name, v, expected, meaning);
  check_data(name, v, read_values);
}

namespace {

// Entry p of a slot of per_slot entries: [w_ih, w_hh, (b_ih, b_hh,) (w_hr)];
// an odd count means projections, whose w_hr is the slot's last entry.
const char* param_kind(int64_t p, int64_t per_slot) {
  static const char* const kinds[] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
  if (per_slot % 2 == 1 && p == per_slot - 1) return "weight_hr";
  return kinds[p];
}

}  // namespace

std::string param_label(const LstmProblem& dims, int64_t index) {
  const int64_t slot = index / dims.params_per_slot;
  const int64_t p = index % dims.params_per_slot;
  return "params[" + std::to_string(index) + "] (" + param_kind(p, dims.params_per_slot) +
         ", layer " + std::to_string(slot / dims.D) + ", " +
         (slot % dims.D == 0 ? "forward" : "reverse") + ")";
}
}  // namespace detail
}  // namespace lstmop
