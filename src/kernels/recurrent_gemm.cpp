// lstmop kernels: packing, the scalar body and the ISA dispatch of the packed
// recurrent product (recurrent_gemm.h).
#include "recurrent_gemm.h"

#include <cmath>
#include <cstring>

namespace lstmop {
namespace kernels {

int64_t packed_b_size(int64_t k, int64_t n) {
  return (n + kPanelWidth - 1) / kPanelWidth * kPanelWidth * k;
}

void pack_b_from_rows(const float* w, int64_t ldw, int64_t k, int64_t n,
                      const int64_t* column_order, float* packed) {
  const int64_t panels = (n + kPanelWidth - 1) / kPanelWidth;
  for (int64_t p = 0; p < panels; ++p) {
    float* panel = packed + p * kPanelWidth * k;
    for (int64_t lane = 0; lane < kPanelWidth; ++lane) {
      const int64_t j = p * kPanelWidth + lane;
      if (j >= n) {
        for (int64_t kk = 0; kk < k; ++kk) panel[kk * kPanelWidth + lane] = 0.0f;
        continue;
      }
      const float* row = w + (column_order ? column_order[j] : j) * ldw;
      for (int64_t kk = 0; kk < k; ++kk) panel[kk * kPanelWidth + lane] = row[kk];
    }
  }
}

std::vector<int64_t> gate_interleaved_columns(int64_t hidden, int64_t group) {
  std::vector<int64_t> order;
  order.reserve(static_cast<std::size_t>(4 * hidden));
  for (int64_t u0 = 0; u0 < hidden; u0 += group) {
    const int64_t u1 = u0 + group < hidden ? u0 + group : hidden;
    for (int64_t gate = 0; gate < 4; ++gate)
      for (int64_t u = u0; u < u1; ++u) order.push_back(gate * hidden + u);
  }
  return order;
}

void gemm_packed_accumulate_scalar(int64_t m, int64_t k, const float* a, int64_t lda,
                                   const float* packed_b, int64_t n_begin, int64_t n_end,
                                   float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = n_begin; j < n_end; ++j) {
      const float* b = packed_b + (j / kPanelWidth) * kPanelWidth * k + j % kPanelWidth;
      float acc = c[i * ldc + j];
      for (int64_t kk = 0; kk < k; ++kk) acc = std::fma(a[i * lda + kk], b[kk * kPanelWidth], acc);
      c[i * ldc + j] = acc;
    }
  }
}

void gemm_packed_accumulate(Isa isa, int64_t m, int64_t k, const float* a, int64_t lda,
                            const float* packed_b, int64_t n_begin, int64_t n_end, float* c,
                            int64_t ldc) {
  if (m <= 0 || n_end <= n_begin) return;
  switch (isa) {
    case Isa::Avx512:
      gemm_packed_accumulate_avx512(m, k, a, lda, packed_b, n_begin, n_end, c, ldc);
      return;
    case Isa::Avx2:
      gemm_packed_accumulate_avx2(m, k, a, lda, packed_b, n_begin, n_end, c, ldc);
      return;
    case Isa::Scalar:
      break;
  }
  gemm_packed_accumulate_scalar(m, k, a, lda, packed_b, n_begin, n_end, c, ldc);
}

}  // namespace kernels
}  // namespace lstmop
