// The portable body of the per-step product (recurrent_product_isa.h): the
// fma chain the vector bodies reproduce bit for bit.
#include <cmath>

#include "kernels/recurrent_product_isa.h"

namespace lstmop {
namespace detail {

void recurrent_product_generic(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                               const float* packed, float* c, int64_t ldc) {
  constexpr int64_t P = kRecurrentPanel;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float* b = packed + (j / P) * P * k + j % P;
      float acc = c[i * ldc + j];
      for (int64_t kk = 0; kk < k; ++kk) acc = std::fma(a[i * lda + kk], b[kk * P], acc);
      c[i * ldc + j] = acc;
    }
  }
}

}  // namespace detail
}  // namespace lstmop
