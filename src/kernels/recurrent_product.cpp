// RecurrentProduct (recurrent_product.h): packing, and the dispatch to the
// ISA bodies of recurrent_product_isa.h.
#include "kernels/recurrent_product.h"

#include <algorithm>
#include <cstring>

#include "kernels/recurrent_product_isa.h"

namespace lstmop {
namespace detail {
namespace {

constexpr int64_t kPanel = kRecurrentPanel;

// Floats the packed form of a (k, n) B occupies: whole panels.
int64_t packed_size(int64_t k, int64_t n) { return (n + kPanel - 1) / kPanel * kPanel * k; }

}  // namespace

void RecurrentProduct::allocate(WorkspaceArena& arena, int64_t k, int64_t n) {
  k_ = k;
  n_ = n;
  arena.add(packed_, "the packed recurrent weight", packed_size(k, n));
}

void RecurrentProduct::set_b(const float* b, int64_t ldb) { set_b_columns(b, ldb, 0, n_); }

void RecurrentProduct::set_b_columns(const float* b, int64_t ldb, int64_t n0, int64_t n1) {
  // Panel p: columns [16p, 16p + 16) as k rows of 16 floats, zero-padded.
  // Row by row: a full panel's 16 floats are one contiguous copy (a per-lane
  // loop with its bounds test took 1.1% of S3 training on Zen 5).
  float* packed = packed_.data();
  n1 = std::min(n1, n_);
  const int64_t full = n0 + (n1 - n0) / kPanel * kPanel, rest = n1 - full;
  for (int64_t kk = 0; kk < k_; ++kk) {
    const float* row = b + kk * ldb;
    for (int64_t j0 = n0; j0 < full; j0 += kPanel) {
      std::memcpy(packed + j0 * k_ + kk * kPanel, row + j0, kPanel * sizeof(float));
    }
    if (rest > 0) {
      float* dst = packed + full * k_ + kk * kPanel;
      std::memcpy(dst, row + full, static_cast<std::size_t>(rest) * sizeof(float));
      std::fill(dst + rest, dst + kPanel, 0.0f);
    }
  }
}

void RecurrentProduct::set_b_from_rows(const float* w, int64_t ldw) {
  // Packed column j is W's row j.
  float* packed = packed_.data();
  for (int64_t j0 = 0; j0 < n_; j0 += kPanel) {
    float* panel = packed + j0 * k_;
    for (int64_t lane = 0; lane < kPanel; ++lane) {
      const int64_t j = j0 + lane;
      if (j >= n_) {
        for (int64_t kk = 0; kk < k_; ++kk) panel[kk * kPanel + lane] = 0.0f;
        continue;
      }
      const float* row = w + j * ldw;
      for (int64_t kk = 0; kk < k_; ++kk) panel[kk * kPanel + lane] = row[kk];
    }
  }
}

void RecurrentProduct::accumulate(int64_t m, const float* a, int64_t lda, float* c,
                                  int64_t ldc) const {
  accumulate_columns(kernels::kernel_choice().recurrent_product, m, a, lda, c, ldc, 0, n_);
}

void RecurrentProduct::accumulate(kernels::Isa isa, int64_t m, const float* a, int64_t lda,
                                  float* c, int64_t ldc) const {
  accumulate_columns(isa, m, a, lda, c, ldc, 0, n_);
}

void RecurrentProduct::accumulate_columns(int64_t m, const float* a, int64_t lda, float* c,
                                          int64_t ldc, int64_t n0, int64_t n1) const {
  accumulate_columns(kernels::kernel_choice().recurrent_product, m, a, lda, c, ldc, n0, n1);
}

void RecurrentProduct::accumulate_columns(kernels::Isa isa, int64_t m, const float* a,
                                          int64_t lda, float* c, int64_t ldc, int64_t n0,
                                          int64_t n1) const {
  n1 = std::min(n1, n_);
  if (m <= 0 || n0 >= n1) return;
  // Panels from n0 on (n0 a multiple of the panel width): the same B of n1 - n0 columns.
  const float* packed = packed_.data() + n0 * k_;
  float* c0 = c + n0;
  const int64_t n = n1 - n0;
  switch (isa) {
    case kernels::Isa::Avx512:
      recurrent_product_avx512(m, k_, n, a, lda, packed, c0, ldc);
      return;
    case kernels::Isa::Avx2:
      recurrent_product_avx2(m, k_, n, a, lda, packed, c0, ldc);
      return;
    case kernels::Isa::Scalar:
      break;
  }
  recurrent_product_generic(m, k_, n, a, lda, packed, c0, ldc);
}

}  // namespace detail
}  // namespace lstmop
