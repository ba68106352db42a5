// Element types, half-precision conversions, views and owning tensors.
#include "lstmop/tensor.h"

#include <limits>
#include <new>
#include <sstream>

#include "lstmop/error.h"
#include "common/tensor_alloc.h"

namespace lstmop {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Float16: return 2;
    case DType::BFloat16: return 2;
    case DType::Int64: return 8;
  }
  throw Error("dtype", "dtype must be one of float32, float64, float16, bfloat16, int64, got code " +
                           std::to_string(static_cast<int32_t>(dtype)));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int64: return "int64";
  }
  return "unknown dtype";
}

// ---------------------------------------------------------------------------
// float16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
// ---------------------------------------------------------------------------

uint16_t float_to_half(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs_bits = x & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {
    if (abs_bits > 0x7f800000u) {
      // NaN: keep it a (quiet) NaN, keep the upper payload bits.
      return static_cast<uint16_t>(sign | 0x7e00u | ((abs_bits >> 13) & 0x3ffu));
    }
    return static_cast<uint16_t>(sign | 0x7c00u);  // +-Inf
  }
  // 65520 is halfway between 65504 (largest half, odd mantissa) and 65536:
  // ties to even round up, so everything from 65520 on becomes Inf.
  if (abs_bits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const uint32_t exponent = abs_bits >> 23;  // biased float exponent
  if (abs_bits >= 0x38800000u) {
    // Normal half (>= 2^-14): rebias the exponent, round 13 mantissa bits away.
    const uint32_t mantissa = abs_bits & 0x7fffffu;
    uint32_t h = ((exponent - 112u) << 10) | (mantissa >> 13);
    const uint32_t rest = mantissa & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry moves into the exponent
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal half: value = m * 2^-24 with m < 1024. Below 2^-25 everything
  // rounds to zero (2^-25 itself is a tie and goes to the even 0).
  if (exponent < 102u) return sign;
  const uint32_t mantissa = (abs_bits & 0x7fffffu) | 0x800000u;  // value = mantissa * 2^(e-150)
  const uint32_t shift = 126u - exponent;                         // 14..24
  uint32_t h = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (h & 1u))) ++h;  // 0x400 is the smallest normal
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t x;
  if (exponent == 0x1fu) {
    x = sign | 0x7f800000u | (mantissa << 13);  // Inf, or NaN (mantissa != 0 stays != 0)
  } else if (exponent == 0) {
    if (mantissa == 0) {
      x = sign;
    } else {
      // Subnormal: value = mantissa * 2^-24; normalise for float.
      uint32_t e = 113;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --e;
      }
      x = sign | (e << 23) | ((mantissa & 0x3ffu) << 13);
    }
  } else {
    x = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

// ---------------------------------------------------------------------------
// bfloat16: the upper 16 bits of a float32.
// ---------------------------------------------------------------------------

Half::Half(float value) : bits(float_to_half(value)) {}
Half::operator float() const { return half_to_float(bits); }
BFloat16::BFloat16(float value) : bits(float_to_bfloat16(value)) {}
BFloat16::operator float() const { return bfloat16_to_float(bits); }

// ---------------------------------------------------------------------------
// Views
// ---------------------------------------------------------------------------

TensorView::TensorView(void* data_, DType dtype_, std::vector<int64_t> sizes_,
                       std::vector<int64_t> strides_)
    : data(data_), dtype(dtype_), sizes(std::move(sizes_)), strides(std::move(strides_)),
      defined(true) {
  if (sizes.size() != strides.size()) {
    throw Error("strides", "strides must have one entry per dimension (" +
                               std::to_string(sizes.size()) + " for sizes " + shape_string(sizes) +
                               "), got " + std::to_string(strides.size()) + " " +
                               shape_string(strides));
  }
}

TensorView::TensorView(void* data_, DType dtype_, std::vector<int64_t> sizes_)
    : data(data_), dtype(dtype_), sizes(std::move(sizes_)), defined(true) {
  strides = contiguous_strides(sizes);
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

bool TensorView::is_contiguous() const {
  if (strides.size() != sizes.size()) return false;
  for (int64_t s : sizes) {
    if (s == 0) return true;  // nothing to address
  }
  int64_t expected = 1;
  for (std::size_t k = sizes.size(); k-- > 0;) {
    if (sizes[k] == 1) continue;
    if (strides[k] != expected) return false;
    expected *= sizes[k];
  }
  return true;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (std::size_t k = sizes.size(); k-- > 0;) {
    strides[k] = running;
    // Saturated where the product leaves int64 (no element lies that far: such sizes describe
    // an empty tensor, or one every size check refuses).
    if (__builtin_mul_overflow(running, sizes[k] > 0 ? sizes[k] : 1, &running)) {
      running = std::numeric_limits<int64_t>::max();
    }
  }
  return strides;
}

std::string shape_string(const std::vector<int64_t>& sizes) {
  std::string s = "[";
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    if (k) s += ", ";
    s += std::to_string(sizes[k]);
  }
  s += "]";
  return s;
}

// ---------------------------------------------------------------------------
// Owning tensors
// ---------------------------------------------------------------------------

namespace detail {

std::string allocation_size_problem(DType dtype, const std::vector<int64_t>& sizes,
                                    std::size_t* bytes) {
  const std::string what = "of shape " + shape_string(sizes) + " (" + dtype_name(dtype) + ")";
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) return what + " must have non-negative sizes, got " + std::to_string(s);
    if (__builtin_mul_overflow(n, s, &n)) return what + ": its element count overflows int64";
  }
  int64_t b = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(dtype)), &b)) {
    return what + ": its byte size overflows int64";
  }
  *bytes = static_cast<std::size_t>(b);
  return {};
}

}  // namespace detail

namespace {

constexpr std::size_t kStorageAlignment = 64;  // one cache line / one AVX-512 vector

struct AlignedDelete {
  void operator()(unsigned char* p) const {
    ::operator delete[](p, std::align_val_t(kStorageAlignment));
  }
};

}  // namespace

Tensor Tensor::empty(DType dtype, const std::vector<int64_t>& sizes) {
  std::size_t bytes = 0;
  const std::string problem = detail::allocation_size_problem(dtype, sizes, &bytes);
  if (!problem.empty()) throw Error("tensor", "tensor " + problem);
  try {
    // At least one cache line, so even an empty tensor has a valid data pointer.
    const std::size_t alloc_bytes = bytes > 0 ? bytes : kStorageAlignment;
    auto* p = static_cast<unsigned char*>(
        ::operator new[](alloc_bytes, std::align_val_t(kStorageAlignment), std::nothrow));
    if (p == nullptr) throw std::bad_alloc();
    Tensor t;
    t.storage_ = std::shared_ptr<unsigned char[]>(p, AlignedDelete());
    t.view_ = TensorView(p, dtype, sizes);
    return t;
  } catch (const std::bad_alloc&) {
    throw Error("tensor", "tensor of shape " + shape_string(sizes) + " (" + dtype_name(dtype) +
                              "): allocating " + std::to_string(bytes) + " bytes failed");
  }
}

Tensor Tensor::zeros(DType dtype, const std::vector<int64_t>& sizes) {
  Tensor t = empty(dtype, sizes);
  const int64_t n = t.numel();
  if (n > 0) std::memset(t.view_.data, 0, static_cast<std::size_t>(n) * dtype_size(dtype));
  return t;
}

namespace detail {

Tensor allocate(const std::string& name, DType dtype, const std::vector<int64_t>& sizes,
                bool zero) {
  std::size_t bytes = 0;
  const std::string problem = allocation_size_problem(dtype, sizes, &bytes);
  if (!problem.empty()) throw Error(name, name + " " + problem);
  try {
    return zero ? Tensor::zeros(dtype, sizes) : Tensor::empty(dtype, sizes);
  } catch (const Error&) {
    throw Error(name, name + " of shape " + shape_string(sizes) + " (" + dtype_name(dtype) +
                          "): allocating " + std::to_string(bytes) + " bytes failed");
  }
}

}  // namespace detail
}  // namespace lstmop
