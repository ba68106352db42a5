#include "fuzz_tensor.h"

#include <cstring>

namespace lstmfuzz {

Layout contiguous_layout(std::size_t dims) {
  Layout l;
  for (std::size_t d = dims; d-- > 0;) l.order.push_back(static_cast<int>(d));
  l.padded.assign(dims, false);
  l.negative.assign(dims, false);
  l.zero.assign(dims, false);
  return l;
}

int64_t offset_of_flat(const TensorView& v, int64_t flat) {
  int64_t off = 0;
  for (std::size_t d = v.sizes.size(); d-- > 0;) {
    const int64_t n = v.sizes[d];
    off += (flat % n) * v.strides[d];
    flat /= n;
  }
  return off;
}

double load(const TensorView& v, int64_t offset) {
  const unsigned char* base = static_cast<const unsigned char*>(v.data);
  switch (v.dtype) {
    case DType::Float32: {
      float x;
      std::memcpy(&x, base + offset * 4, 4);
      return x;
    }
    case DType::Float64: {
      double x;
      std::memcpy(&x, base + offset * 8, 8);
      return x;
    }
    case DType::Float16:
    case DType::BFloat16: {
      uint16_t bits;
      std::memcpy(&bits, base + offset * 2, 2);
      return v.dtype == DType::Float16 ? lstmop::half_to_float(bits)
                                       : lstmop::bfloat16_to_float(bits);
    }
    case DType::Int64: {
      int64_t x;
      std::memcpy(&x, base + offset * 8, 8);
      return static_cast<double>(x);
    }
  }
  return 0.0;
}

void store(const TensorView& v, int64_t offset, double value) {
  unsigned char* base = static_cast<unsigned char*>(v.data);
  switch (v.dtype) {
    case DType::Float32: {
      const float x = static_cast<float>(value);
      std::memcpy(base + offset * 4, &x, 4);
      break;
    }
    case DType::Float64:
      std::memcpy(base + offset * 8, &value, 8);
      break;
    case DType::Float16:
    case DType::BFloat16: {
      const float f = static_cast<float>(value);
      const uint16_t bits =
          v.dtype == DType::Float16 ? lstmop::float_to_half(f) : lstmop::float_to_bfloat16(f);
      std::memcpy(base + offset * 2, &bits, 2);
      break;
    }
    case DType::Int64: {
      const int64_t x = static_cast<int64_t>(value);
      std::memcpy(base + offset * 8, &x, 8);
      break;
    }
  }
}

std::vector<double> values_of(const TensorView& v) {
  const int64_t n = v.numel();
  std::vector<double> out(static_cast<std::size_t>(n));
  for (int64_t k = 0; k < n; ++k) out[k] = load(v, offset_of_flat(v, k));
  return out;
}

Strided make_strided(DType dtype, const std::vector<int64_t>& sizes, const Layout& layout,
                     const std::vector<double>& values) {
  const std::size_t n = sizes.size();
  std::vector<int64_t> strides(n, 0);
  int64_t running = 1;
  for (int d : layout.order) {
    const bool zero = layout.zero[d] || sizes[d] <= 1;
    strides[d] = layout.zero[d] ? 0 : running;
    if (!zero) running *= sizes[d];
    if (layout.padded[d]) running += 1;
  }
  // Negative dims: start at the far end of their run.
  int64_t start = 0;
  for (std::size_t d = 0; d < n; ++d) {
    if (layout.negative[d] && strides[d] != 0) {
      start += strides[d] * (sizes[d] - 1);
      strides[d] = -strides[d];
    }
  }
  const int64_t es = static_cast<int64_t>(lstmop::dtype_size(dtype));
  Strided s;
  // One spare element on each side, so padding and sign mistakes read 0x7f bytes.
  s.storage = std::make_shared<std::vector<unsigned char>>(
      static_cast<std::size_t>((running + 2) * es), static_cast<unsigned char>(0x7f));
  s.view = TensorView(s.storage->data() + (start + 1) * es, dtype, sizes, strides);
  int64_t numel = 1;
  for (int64_t x : sizes) numel *= x;
  for (int64_t k = 0; k < numel; ++k) store(s.view, offset_of_flat(s.view, k), values[k]);
  return s;
}

Strided relayout(const TensorView& v, const Layout& layout) {
  return make_strided(v.dtype, v.sizes, layout, values_of(v));
}

uint64_t checksum(const std::vector<unsigned char>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char b : bytes) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace lstmfuzz
