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
// Determinism: results are bitwise reproducible run to run for the same
// sizes and independent of lstmop's thread count and the caller's OpenMP
// settings (float: dnnl_sgemm always on one OpenMP thread; double: each
// element summed over p = 0..k-1 in order). The order of the k products of
// the float path is oneDNN's, so C's bits may depend on m, n, k and on the
// alignment of the operands: callers keep those fixed for given input sizes.
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
