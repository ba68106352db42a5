// lstmop kernels, internal: the per-ISA bodies of gemm_packed_accumulate
// (recurrent_gemm.h has the contract). This header includes nothing from the
// standard library on purpose: the files that implement these are compiled
// with -mavx2 / -mavx512f, and inline library code instantiated there could
// be merged into callers that run on CPUs without those instructions.
#pragma once

#include <cstdint>

namespace lstmop {
namespace kernels {

void gemm_packed_accumulate_scalar(int64_t m, int64_t k, const float* a, int64_t lda,
                                   const float* packed_b, int64_t n_begin, int64_t n_end,
                                   float* c, int64_t ldc);
void gemm_packed_accumulate_avx2(int64_t m, int64_t k, const float* a, int64_t lda,
                                 const float* packed_b, int64_t n_begin, int64_t n_end, float* c,
                                 int64_t ldc);
void gemm_packed_accumulate_avx512(int64_t m, int64_t k, const float* a, int64_t lda,
                                   const float* packed_b, int64_t n_begin, int64_t n_end,
                                   float* c, int64_t ldc);

}  // namespace kernels
}  // namespace lstmop
