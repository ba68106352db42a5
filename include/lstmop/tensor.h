// lstmop: strided tensor views and owning tensors (no torch dependency).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace lstmop {

// Element types the operators accept. Int64 is used only for batch_sizes.
enum class DType : int32_t { Float32 = 0, Float64 = 1, Float16 = 2, BFloat16 = 3, Int64 = 4 };

// Bytes per element.
std::size_t dtype_size(DType dtype);
// "float32", "float64", "float16", "bfloat16", "int64".
const char* dtype_name(DType dtype);

// IEEE binary16, stored as bits. Conversions round to nearest even.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float value);
  explicit operator float() const;
};

// bfloat16 (the upper half of a float32), stored as bits. Conversion from
// float rounds to nearest even; NaN stays NaN.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value);
  explicit operator float() const;
};

float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
// Inline: the production path converts every element of bfloat16 tensors.
inline float bfloat16_to_float(uint16_t bits) {
  const uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}
inline uint16_t float_to_bfloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN, sign and payload kept
  }
  // Round to nearest even on the 16 dropped bits; overflow correctly becomes Inf.
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

// A non-owning view of strided memory: dtype, sizes, strides (in elements, any
// value including 0 and negative is allowed for inputs) and a data pointer.
//
// A default-constructed view is *undefined* (defined == false): it stands for
// an absent optional tensor (e.g. an undefined gradient, or batch_sizes=None).
// A defined view may have data == nullptr when it describes a shape only
// (e.g. a meta tensor given to the shape functions).
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  bool defined = false;

  TensorView() = default;
  // Strided view.
  TensorView(void* data, DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides);
  // Contiguous (row-major) view.
  TensorView(void* data, DType dtype, std::vector<int64_t> sizes);

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  // Product of sizes (1 for a 0-d view). Only meaningful for defined views.
  int64_t numel() const;
  int64_t size(int64_t d) const { return sizes.at(static_cast<std::size_t>(d)); }
  int64_t stride(int64_t d) const { return strides.at(static_cast<std::size_t>(d)); }
  // True if the strides are the row-major strides of sizes (size-1 dims ignored).
  bool is_contiguous() const;
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data);
  }
};

// Row-major strides of sizes (sizes 0 counted as 1; a stride past int64's range is
// INT64_MAX: no element lies there).
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);
// "[2, 3, 4]".
std::string shape_string(const std::vector<int64_t>& sizes);

// An owning, contiguous tensor. Copying shares the storage (like torch).
class Tensor {
 public:
  Tensor() = default;
  // Uninitialised storage. Throws lstmop::Error if the byte size overflows or
  // the allocation fails.
  static Tensor empty(DType dtype, const std::vector<int64_t>& sizes);
  static Tensor zeros(DType dtype, const std::vector<int64_t>& sizes);

  bool defined() const { return view_.defined; }
  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }  // NOLINT: implicit by design
  DType dtype() const { return view_.dtype; }
  const std::vector<int64_t>& sizes() const { return view_.sizes; }
  int64_t size(int64_t d) const { return view_.size(d); }
  int64_t dim() const { return view_.dim(); }
  int64_t numel() const { return view_.numel(); }
  template <class T>
  T* data() const {
    return static_cast<T*>(view_.data);
  }

 private:
  std::shared_ptr<unsigned char[]> storage_;
  TensorView view_;
};

}  // namespace lstmop
