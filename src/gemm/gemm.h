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

// True where gemm()'s float TN form (A read transposed) runs the backward's
// weight-gradient shapes at its full rate: dnnl_sgemm's AVX-512 kernels do;
// its AVX2 ones ran them at half the NT rate (Zen 3), so there the drivers
// transpose the operands first. kernel_choice() (cpu_features.h) decides it.
bool gemm_tn_at_full_rate();

// bfloat16 operands, float accumulation:
//
//   C (m, n) = op(A) (m, k) * op(B) (k, n) + beta * C,  beta 0 or 1
//
// A, B bfloat16 bits, row-major with row strides lda, ldb (op as in gemm());
// C float. The product of two bfloat16 values is exact in float, so this
// computes what gemm() computes on the widened values, in another summation
// order: oneDNN's brgemm matmul with vdpbf16ps at about twice gemm's rate
// where the CPU has AVX512-BF16, on one OpenMP thread like gemm. C's bits
// depend on the sizes and strides only. That instruction reads subnormal
// inputs as zero and flushes subnormal results: callers use it where the call
// flushes subnormals (float_environment.h), or on operands for which
// bf16_operands_normal() holds.
// At an odd k, an operand whose row stride exceeds its row is copied dense
// first (oneDNN 2.6 gave NaN there for a row of op(A) holding an infinity).
// gemm_bf16 returns false where it cannot run (kernel_choice() says no: no
// AVX512-BF16, or LSTMOP_KERNEL_ISA below avx512; oneDNN refusing the shape,
// out of memory), C unchanged; gemm_bf16_or_float then computes C with gemm()
// on the widened operands instead (same values, other sums).
bool bf16_gemm_available();
// gemm_bf16 calls that ran, in this process (tests: which path a call took).
int64_t bf16_gemm_runs();
bool gemm_bf16(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k, const uint16_t* a,
               int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm_bf16_or_float(Transpose ta, Transpose tb, int64_t m, int64_t n, int64_t k,
                        const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb,
                        float beta, float* c, int64_t ldc);
// C (m, n) = A (m, k) * B^T, B stored (n, k).
inline bool gemm_bf16_nt(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda,
                         const uint16_t* b, int64_t ldb, float* c, int64_t ldc) {
  return gemm_bf16(Transpose::No, Transpose::Yes, m, n, k, a, lda, b, ldb, 0.0f, c, ldc);
}

// True if every element of the (rows, cols) bfloat16 bits (row stride ld) is
// zero, infinite, NaN or of magnitude >= 2^-60: the product of two such values
// is zero or a normal float (>= 2^-120), so flushing subnormals changes only
// sums that cancel to below 2^-126.
bool bf16_operands_normal(const uint16_t* v, int64_t rows, int64_t cols, int64_t ld);

}  // namespace detail
}  // namespace lstmop
