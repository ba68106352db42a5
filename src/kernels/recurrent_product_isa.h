// Internal: the bodies of RecurrentProduct::accumulate (recurrent_product.h),
// one per ISA of cpu_features.h:
//
//   C (m, n) += A (m, k) * B (k, n),  B packed: its columns in panels of
//   kRecurrentPanel, panel p holding columns [16p, 16p + 16) as k rows of 16
//   contiguous floats (16p*k + kk*16 + lane), the last panel zero-padded.
//
// Each gives every C element the same bits: one fma chain
// c = fma(a[kk], b[kk], c), kk = 0..k-1 in order, starting from C's value.
// A (m, k) row stride lda, C (m, n) row stride ldc; m >= 1.
#pragma once

#include <cstdint>

namespace lstmop {
namespace detail {

constexpr int64_t kRecurrentPanel = 16;

// Portable: a std::fma loop (recurrent_product_generic.cpp).
void recurrent_product_generic(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                               const float* packed, float* c, int64_t ldc);

// AVX2 + FMA register tiles (recurrent_product_avx2.cpp).
void recurrent_product_avx2(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                            const float* packed, float* c, int64_t ldc);

// AVX-512 register tiles (recurrent_product_avx512.cpp).
void recurrent_product_avx512(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                              const float* packed, float* c, int64_t ldc);

}  // namespace detail
}  // namespace lstmop
