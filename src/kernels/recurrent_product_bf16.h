// Internal: the backward's per-step product on bfloat16 dot-product units
// (AVX512-BF16 vdpbf16ps), for bfloat16 calls and float32 calls with
// fp32_precision "bf16" (CONTRACT.md: the gradients entering the backward's
// products may be rounded to the dtype, as oneDNN and PyTorch do):
//
//   C (m, columns [n0, n1)) = A (m, k) * B (k, n)
//   dh (rows, H) = d_gates[t] (rows, 4H, rounded to bfloat16) * w_hh (4H, H)
//
// B is rounded to bfloat16 and packed once per call: panels of 16 columns,
// each ceil(k/2) rows of 16 columns x 2 bfloat16 (the pair k, k+1 of a
// column side by side), zeros past k and n. Each C element is the float32
// sum, in k-pair order, of exact products. Only where
// kernel_choice().bf16_step.
#pragma once

#include <cstdint>

#include "common/workspace.h"

namespace lstmop {
namespace detail {

class Bf16RecurrentProduct {
 public:
  void allocate(WorkspaceArena& arena, int64_t k, int64_t n);
  // Packs B (k, n) float, row stride ldb.
  void set_b(const float* b, int64_t ldb);
  // C[:, n0:n1) = A * B[:, n0:n1); A (m, k) bfloat16 bits, row stride lda; c
  // points at C's column 0, row stride ldc; n0 a multiple of 16.
  void multiply(int64_t m, const uint16_t* a, int64_t lda, float* c, int64_t ldc, int64_t n0,
                int64_t n1) const;

 private:
  int64_t k_ = 0, n_ = 0;
  Workspace<uint16_t> packed_;
};

// dst[e] = bfloat16 bits of src[e], nearest even, e < n (vcvtneps2bf16).
void round_to_bfloat16_bits(const float* src, int64_t n, uint16_t* dst);
// The same for a (rows, cols) matrix of row stride ld into contiguous rows.
void round_rows_to_bfloat16_bits(const float* src, int64_t rows, int64_t ld, int64_t cols,
                                 uint16_t* dst);
// dst[c * ldd + r] = the bfloat16 bits of src[r * lds + c] (the same rounding),
// r < rows, c < cols: a (rows, cols) block stored transposed.
void transpose_to_bfloat16_bits(int64_t rows, int64_t cols, const float* src, int64_t lds,
                                uint16_t* dst, int64_t ldd);

}  // namespace detail
}  // namespace lstmop
