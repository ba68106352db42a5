// Internal: the ISA bodies of RecurrentProduct::accumulate (recurrent_product.h)
//
//   C (m, n) += A (m, k) * B (k, n),  B packed in src/kernels/recurrent_gemm.h's panels
//
// Each gives every C element the same bits: one fma chain over k in order.
#pragma once

#include <cstdint>

namespace lstmop {
namespace detail {

// AVX2 + FMA register tiles (recurrent_product.cpp); needs cpu_has_avx2_fma().
void packed_accumulate_avx2(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                            const float* packed, float* c, int64_t ldc);

// AVX-512 F register tiles (recurrent_product_avx512.cpp); needs
// kernels::isa_supported(kernels::Isa::Avx512).
void packed_accumulate_avx512(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                              const float* packed, float* c, int64_t ldc);

}  // namespace detail
}  // namespace lstmop
