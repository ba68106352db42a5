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

void RecurrentProduct::set_b(const float* b, int64_t ldb) {
  // Panel p: columns [16p, 16p + 16) as k rows of 16 floats, zero-padded.
  // Row by row: a full panel's 16 floats are one contiguous copy (a per-lane
  // loop with its bounds test took 1.1% of S3 training on Zen 5).
  float* packed = packed_.data();
  const int64_t full = n_ / kPanel * kPanel, rest = n_ - full;
  for (int64_t kk = 0; kk < k_; ++kk) {
    const float* row = b + kk * ldb;
    for (int64_t j0 = 0; j0 < full; j0 += kPanel) {
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
  accumulate(kernels::kernel_choice().recurrent_product, m, a, lda, c, ldc);
}

void RecurrentProduct::accumulate(kernels::Isa isa, int64_t m, const float* a, int64_t lda,
                                  float* c, int64_t ldc) const {
  if (m <= 0) return;
  switch (isa) {
    case kernels::Isa::Avx512:
      recurrent_product_avx512(m, k_, n_, a, lda, packed_.data(), c, ldc);
      return;
    case kernels::Isa::Avx2:
      recurrent_product_avx2(m, k_, n_, a, lda, packed_.data(), c, ldc);
      return;
    case kernels::Isa::Scalar:
      break;
  }
  recurrent_product_generic(m, k_, n_, a, lda, packed_.data(), c, ldc);
}

}  // namespace detail
}  // namespace lstmop
