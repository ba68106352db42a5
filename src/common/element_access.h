// Internal: reading and writing tensor elements of any supported dtype through
// strides, converting to and from the compute type (float or double).
//
// Offsets and strides are in elements. The dtype switch happens once per call
// of the matrix helpers, never per element.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/half_convert.h"
#include "lstmop/tensor.h"

namespace lstmop {
namespace detail {

// Storage <-> compute conversions. Narrowing stores round to nearest even.
template <class Acc>
inline Acc to_acc(float v) { return static_cast<Acc>(v); }
template <class Acc>
inline Acc to_acc(double v) { return static_cast<Acc>(v); }
template <class Acc>
inline Acc to_acc(Half v) { return static_cast<Acc>(half_to_float(v.bits)); }
template <class Acc>
inline Acc to_acc(BFloat16 v) { return static_cast<Acc>(bfloat16_to_float(v.bits)); }

template <class S>
struct StoreAs;
template <>
struct StoreAs<float> {
  static float from(float v) { return v; }
  static float from(double v) { return static_cast<float>(v); }
};
template <>
struct StoreAs<double> {
  static double from(float v) { return v; }
  static double from(double v) { return v; }
};
template <>
struct StoreAs<Half> {
  static Half from(float v) {
    Half h;
    h.bits = float_to_half(v);
    return h;
  }
  static Half from(double v) { return from(static_cast<float>(v)); }
};
template <>
struct StoreAs<BFloat16> {
  static BFloat16 from(float v) {
    BFloat16 h;
    h.bits = float_to_bfloat16(v);
    return h;
  }
  static BFloat16 from(double v) { return from(static_cast<float>(v)); }
};

// Calls fn(S{}) with S the storage type of a floating dtype.
template <class Fn>
inline void dispatch_floating(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: fn(float{}); return;
    case DType::Float64: fn(double{}); return;
    case DType::Float16: fn(Half{}); return;
    case DType::BFloat16: fn(BFloat16{}); return;
    case DType::Int64: break;
  }
}

// Contiguous runs converted by a vector body where there is one (float16 and
// bfloat16 <-> float: half_convert.h, the same bits as element by element); false where
// the caller converts element by element.
template <class From, class To>
inline bool convert_run(const From*, To*, int64_t) {
  return false;
}
inline bool convert_run(const Half* src, float* dst, int64_t n) {
  halves_to_floats(reinterpret_cast<const uint16_t*>(src), dst, n);
  return true;
}
inline bool convert_run(const float* src, Half* dst, int64_t n) {
  floats_to_halves(src, reinterpret_cast<uint16_t*>(dst), n);
  return true;
}
inline bool convert_run(const BFloat16* src, float* dst, int64_t n) {
  bfloat16s_to_floats(reinterpret_cast<const uint16_t*>(src), dst, n);
  return true;
}
inline bool convert_run(const float* src, BFloat16* dst, int64_t n) {
  floats_to_bfloat16s(src, reinterpret_cast<uint16_t*>(dst), n);
  return true;
}

// One element of a floating view, widened to double (the reference's reads).
inline double load_double(const TensorView& v, int64_t offset) {
  switch (v.dtype) {
    case DType::Float32: return static_cast<const float*>(v.data)[offset];
    case DType::Float64: return static_cast<const double*>(v.data)[offset];
    case DType::Float16: return half_to_float(static_cast<const uint16_t*>(v.data)[offset]);
    case DType::BFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(v.data)[offset]);
    case DType::Int64: return static_cast<double>(static_cast<const int64_t*>(v.data)[offset]);
  }
  return 0.0;
}

// dst[r * ld + k] = v[offset + r * row_stride + k * col_stride] for r < rows, k < cols.
template <class Acc>
void gather_matrix(const TensorView& v, int64_t offset, int64_t rows, int64_t row_stride,
                   int64_t cols, int64_t col_stride, Acc* dst, int64_t ld) {
  dispatch_floating(v.dtype, [&](auto tag) {
    using S = decltype(tag);
    const S* base = static_cast<const S*>(v.data) + offset;
    for (int64_t r = 0; r < rows; ++r) {
      const S* src = base + r * row_stride;
      Acc* out = dst + r * ld;
      if (col_stride == 1 && convert_run(src, out, cols)) continue;
      if (col_stride == 1) {
        for (int64_t k = 0; k < cols; ++k) out[k] = to_acc<Acc>(src[k]);
      } else {
        for (int64_t k = 0; k < cols; ++k) out[k] = to_acc<Acc>(src[k * col_stride]);
      }
    }
  });
}

// v[offset + r * row_stride + k * col_stride] = src[r * ld + k], converted to v's dtype.
template <class Acc>
void scatter_matrix(const Acc* src, int64_t ld, int64_t rows, int64_t cols, const TensorView& v,
                    int64_t offset, int64_t row_stride, int64_t col_stride) {
  dispatch_floating(v.dtype, [&](auto tag) {
    using S = decltype(tag);
    S* base = static_cast<S*>(v.data) + offset;
    for (int64_t r = 0; r < rows; ++r) {
      S* out = base + r * row_stride;
      const Acc* in = src + r * ld;
      if (col_stride == 1 && convert_run(in, out, cols)) continue;
      for (int64_t k = 0; k < cols; ++k) out[k * col_stride] = StoreAs<S>::from(in[k]);
    }
  });
}

// v[offset + r * row_stride + k * col_stride] = 0 (in v's dtype: all-zero bits).
inline void zero_matrix(const TensorView& v, int64_t offset, int64_t rows, int64_t row_stride,
                        int64_t cols, int64_t col_stride) {
  dispatch_floating(v.dtype, [&](auto tag) {
    using S = decltype(tag);
    S* base = static_cast<S*>(v.data) + offset;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < cols; ++k) base[r * row_stride + k * col_stride] = S{};
    }
  });
}

}  // namespace detail
}  // namespace lstmop
