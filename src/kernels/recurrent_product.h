// Internal: the per-step product of the time loops with a weight that stays
// the same for the whole call,
//
//   C (m, n) += A (m, k) * B (k, n)
//   forward:  gates[t] (rows, 4H) += h (rows, H) * w_hh^T (H, 4H)
//   backward: dh (rows, H) = d_gates[t] (rows, 4H) * w_hh (4H, H)   (C zeroed first)
//
// m is the batch of one step (1..B, shrinking with variable length), small
// next to k and n. dnnl_sgemm repacks B on every call, which for m <= 64
// costs as much as the product itself; here B is packed once per call
// (set_b) into src/kernels/recurrent_gemm.h's panel layout and every step
// runs that packed micro-kernel (AVX-512 / AVX2+FMA / scalar by CPU:
// recurrent_product_avx512.cpp, recurrent_product.cpp, src/kernels' scalar body).
// Numerics (recurrent_gemm.h): each C element is one fma chain over k in
// order, whatever m, the tile or the ISA body, so results do not depend on
// the step's batch or on any column split.
// Without src/kernels (LSTMOP_HAVE_PACKED_RECURRENT_GEMM undefined) the
// product is gemm() of gemm.h on the unpacked copy of B.
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"
#include "common/workspace.h"

namespace lstmop {
namespace detail {

class RecurrentProduct {
 public:
  // Declares the packed buffer for a (k, n) B in the call's arena (before it
  // commits).
  void allocate(WorkspaceArena& arena, int64_t k, int64_t n);
  // Packs B (k, n), row stride ldb. b must stay valid only during the call
  // when the packed kernel is available; else it is used by accumulate().
  void set_b(const float* b, int64_t ldb);
  // Packs B = W^T from W (n, k), row stride ldw (the PyTorch weight layout).
  void set_b_from_rows(const float* w, int64_t ldw);
  // C (m, n) += A (m, k) * B; lda, ldc row strides. Runs the tiles of
  // kernels::best_isa() (AVX-512, AVX2 + FMA or scalar; LSTMOP_KERNEL_ISA
  // caps it); all give the same bits.
  void accumulate(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc) const;
  // The same with the tiles of `isa`, which the CPU must support (tests).
  void accumulate(kernels::Isa isa, int64_t m, const float* a, int64_t lda, float* c,
                  int64_t ldc) const;

 private:
  int64_t k_ = 0, n_ = 0;
  Workspace<float> packed_;
  const float* b_ = nullptr;
  int64_t ldb_ = 0;
  bool b_is_rows_ = false;
};

}  // namespace detail
}  // namespace lstmop
