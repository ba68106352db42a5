// The per-step product of recurrent_product.h.
#include "recurrent_product.h"

#include "gemm.h"
#ifdef LSTMOP_HAVE_PACKED_RECURRENT_GEMM
#include "kernels/recurrent_gemm.h"
#endif

namespace lstmop {
namespace detail {

#ifdef LSTMOP_HAVE_PACKED_RECURRENT_GEMM

void RecurrentProduct::allocate(int64_t k, int64_t n) {
  k_ = k;
  n_ = n;
  packed_.allocate("the packed recurrent weight", kernels::packed_b_size(k, n));
}

void RecurrentProduct::set_b(const float* b, int64_t ldb) {
  // Panel p: columns [16p, 16p + 16) as k rows of 16 floats, zero-padded.
  constexpr int64_t P = kernels::kPanelWidth;
  float* packed = packed_.data();
  for (int64_t j0 = 0; j0 < n_; j0 += P) {
    float* panel = packed + j0 * k_;
    for (int64_t kk = 0; kk < k_; ++kk) {
      const float* row = b + kk * ldb;
      for (int64_t lane = 0; lane < P; ++lane) {
        panel[kk * P + lane] = j0 + lane < n_ ? row[j0 + lane] : 0.0f;
      }
    }
  }
}

void RecurrentProduct::accumulate(int64_t m, const float* a, int64_t lda, float* c,
                                  int64_t ldc) const {
  static const kernels::Isa isa = kernels::best_isa();
  kernels::gemm_packed_accumulate(isa, m, k_, a, lda, packed_.data(), 0, n_, c, ldc);
}

#else

void RecurrentProduct::allocate(int64_t k, int64_t n) {
  k_ = k;
  n_ = n;
}

void RecurrentProduct::set_b(const float* b, int64_t ldb) {
  b_ = b;
  ldb_ = ldb;
}

void RecurrentProduct::accumulate(int64_t m, const float* a, int64_t lda, float* c,
                                  int64_t ldc) const {
  gemm(Transpose::No, Transpose::No, m, n_, k_, 1.0f, a, lda, b_, ldb_, 1.0f, c, ldc);
}

#endif

}  // namespace detail
}  // namespace lstmop
