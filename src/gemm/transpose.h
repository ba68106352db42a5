// Internal: out-of-place matrix transpose for the drivers' big products.
//
//   dst (cols, rows), row stride ldd  <-  src (rows, cols)^T, row stride lds
//
// dnnl_sgemm here runs the backward's weight gradients about twice as fast
// with both operands transposed in memory (NT) as in the TN form that reads
// d_gates as stored (gemm_study, bench/); the copy costs a few percent of the
// product. Square tiles keep both sides' cache lines in use.
#pragma once

#include <algorithm>
#include <cstdint>

namespace lstmop {
namespace detail {

// float: 8 x 8 register blocks in AVX2 where kernel_choice().transpose is
// AVX2 (transpose.cpp), else the generic loop below; the same values either way.
void transpose(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
               int64_t ldd);

template <class T>
void transpose(int64_t rows, int64_t cols, const T* src, int64_t lds, T* dst, int64_t ldd) {
  constexpr int64_t kTile = 16;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    const int64_t r1 = std::min(rows, r0 + kTile);
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t c1 = std::min(cols, c0 + kTile);
      for (int64_t c = c0; c < c1; ++c) {
        T* out = dst + c * ldd;
        for (int64_t r = r0; r < r1; ++r) out[r] = src[r * lds + c];
      }
    }
  }
}

}  // namespace detail
}  // namespace lstmop
