// float: oneDNN's dnnl_sgemm (row-major). By the performance issue's figures
// it runs at 220-245 GFLOP/s on one core of the AVX-512 machine kind against
// ~120 for OpenBLAS; on the AVX2 development machine both reach 60-75 (FMA
// peak ~87), with dnnl's TN form at half its NT rate for the weight
// gradients' shapes (so the drivers transpose and call NT; docs/performance.md,
// bench/gemm_study). The plain loops below run ~20. oneDNN here is built on OpenMP;
// every call runs with one OpenMP thread (see OneOpenMpThread) so its
// blocking, hence every bit of C, does not depend on lstmop's or the caller's
// thread settings; lstmop's own parallelism is in the drivers.
//
// double: a plain, cache-blocked GEMM: rows of C are updated with scaled rows
// of op(B) (an axpy the compiler vectorises along n), four rows of C at a time
// so each row of B loaded serves four updates. Blocking over n and k keeps the
// B block in cache; k blocks run in increasing order, so every C element sums
// its k products in order 0..k-1.
#include "gemm/gemm.h"

#include <dnnl.h>

#include <algorithm>
#include <cstdlib>

#include "gemm/one_openmp_thread.h"
#include "kernels/cpu_features.h"

namespace lstmop {
namespace detail {
namespace {

constexpr int64_t kBlockN = 512;  // columns of C per block (2 KiB of floats per row)
constexpr int64_t kBlockK = 128;  // rows of op(B) per block
constexpr int64_t kRowsPerPass = 4;

template <class T>
void scale_c(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      std::fill(row, row + n, T(0));
    } else if (beta != T(1)) {
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

// op(B) rows are contiguous along n (B not transposed).
template <class T>
void gemm_b_rows(bool trans_a, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
                 const T* b, int64_t ldb, T* c, int64_t ldc) {
  auto a_at = [&](int64_t i, int64_t p) { return trans_a ? a[p * lda + i] : a[i * lda + p]; };
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    const int64_t nb = std::min(kBlockN, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kBlockK) {
      const int64_t p1 = std::min(k, p0 + kBlockK);
      int64_t i = 0;
      for (; i + kRowsPerPass <= m; i += kRowsPerPass) {
        T* __restrict c0 = c + i * ldc + j0;
        T* __restrict c1 = c0 + ldc;
        T* __restrict c2 = c1 + ldc;
        T* __restrict c3 = c2 + ldc;
        for (int64_t p = p0; p < p1; ++p) {
          const T a0 = alpha * a_at(i, p), a1 = alpha * a_at(i + 1, p);
          const T a2 = alpha * a_at(i + 2, p), a3 = alpha * a_at(i + 3, p);
          const T* __restrict brow = b + p * ldb + j0;
          for (int64_t j = 0; j < nb; ++j) {
            const T bv = brow[j];
            c0[j] += a0 * bv;
            c1[j] += a1 * bv;
            c2[j] += a2 * bv;
            c3[j] += a3 * bv;
          }
        }
      }
      for (; i < m; ++i) {
        T* __restrict c0 = c + i * ldc + j0;
        for (int64_t p = p0; p < p1; ++p) {
          const T a0 = alpha * a_at(i, p);
          const T* __restrict brow = b + p * ldb + j0;
          for (int64_t j = 0; j < nb; ++j) c0[j] += a0 * brow[j];
        }
      }
    }
  }
}

// op(B) = B^T with B stored (n, k): each C element is a dot product of two
// contiguous rows (not used on the drivers' hot paths).
template <class T>
void gemm_b_transposed(bool trans_a, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                       int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T sum = c[i * ldc + j];
      const T* brow = b + j * ldb;
      for (int64_t p = 0; p < k; ++p) {
        sum += (alpha * (trans_a ? a[p * lda + i] : a[i * lda + p])) * brow[p];
      }
      c[i * ldc + j] = sum;
    }
  }
}

template <class T>
void gemm_impl(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  scale_c(m, n, beta, c, ldc);
  if (k <= 0 || alpha == T(0)) return;
  const bool trans_a = ta == Transpose::Yes;
  if (tb == Transpose::No) {
    gemm_b_rows(trans_a, m, n, k, alpha, a, lda, b, ldb, c, ldc);
  } else {
    gemm_b_transposed(trans_a, m, n, k, alpha, a, lda, b, ldb, c, ldc);
  }
}

}  // namespace

void gemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  OneOpenMpThread one_thread;
  const dnnl_status_t status =
      dnnl_sgemm(ta == Transpose::Yes ? 'T' : 'N', tb == Transpose::Yes ? 'T' : 'N', m, n, k,
                 alpha, a, lda, b, ldb, beta, c, ldc);
  // Only invalid arguments fail; the drivers pass consistent, validated sizes.
  if (status != dnnl_success) std::abort();
}

bool gemm_tn_at_full_rate() { return kernels::kernel_choice().gemm_tn_at_full_rate; }

void gemm(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc) {
  gemm_impl<double>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace detail
}  // namespace lstmop
