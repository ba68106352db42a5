// Internal: the matrix product the layer drivers are written against.
//
//   C (m, n) = alpha * op(A) (m, k) * op(B) (k, n) + beta * C
//
// All matrices row-major; lda, ldb, ldc are row strides in elements.
// op(A) = A when ta == Transpose::No (A stored (m, k)), A^T when Yes (A stored
// (k, m)); likewise op(B) (B stored (k, n), or (n, k) when transposed).
// beta == 0 means C is only written (whatever it held, NaN included).
// C must not overlap A or B. m, n or k may be 0 (k == 0: C = beta * C).
//
// Determinism: every element of C is accumulated in the compute type over
// p = 0..k-1 in increasing order, starting from beta * C, whatever the sizes
// or blocking; a replacement must keep results bitwise reproducible run to
// run and independent of the thread count.
#pragma once

#include <cstdint>

namespace lstmop {
namespace detail {

enum class Transpose { No, Yes };

void gemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

void gemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc);

}  // namespace detail
}  // namespace lstmop
