// Internal: the per-step product of the time loops with a weight that stays
// the same for the whole call,
//
//   C (m, n) += A (m, k) * B (k, n)
//   forward:  gates[t] (rows, 4H) += h (rows, H) * w_hh^T (H, 4H)
//   backward: dh (rows, H) = d_gates[t] (rows, 4H) * w_hh (4H, H)   (C zeroed first)
//
// m is the batch of one step (1..B, shrinking with variable length), small
// next to k and n. dnnl_sgemm repacks B on every call, which for m <= 64
// costs as much as the product itself; here B is packed once per call into
// 16-column panels (recurrent_product_isa.h) and every step runs register
// tiles on them: the body kernel_choice() picks (AVX-512, AVX2 + FMA, or the
// generic std::fma loop).
// Numerics: each C element is one fma chain over k in order, whatever m, the
// tile or the ISA body, so results do not depend on the step's batch or on
// any column split.
#pragma once

#include <cstdint>

#include "common/workspace.h"
#include "kernels/cpu_features.h"

namespace lstmop {
namespace detail {

class RecurrentProduct {
 public:
  // Declares the packed buffer for a (k, n) B in the call's arena (before it
  // commits).
  void allocate(WorkspaceArena& arena, int64_t k, int64_t n);
  // Packs B (k, n), row stride ldb.
  void set_b(const float* b, int64_t ldb);
  // Packs only B's columns [n0, n1) (n0 a multiple of 16): the panels
  // accumulate_columns over them reads (threads may pack disjoint ranges).
  void set_b_columns(const float* b, int64_t ldb, int64_t n0, int64_t n1);
  // Packs B = W^T from W (n, k), row stride ldw (the PyTorch weight layout).
  void set_b_from_rows(const float* w, int64_t ldw);
  // C (m, n) += A (m, k) * B; lda, ldc row strides; m may be 0. Runs the
  // body of kernel_choice().recurrent_product; all give the same bits.
  void accumulate(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc) const;
  // The same with the body of `isa`, which the CPU must support (tests).
  void accumulate(kernels::Isa isa, int64_t m, const float* a, int64_t lda, float* c,
                  int64_t ldc) const;
  // C[:, n0:n1) += A * B[:, n0:n1) (n0 a multiple of 16; c points at C's
  // column 0): the bits of those columns in accumulate.
  void accumulate_columns(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc,
                          int64_t n0, int64_t n1) const;
  void accumulate_columns(kernels::Isa isa, int64_t m, const float* a, int64_t lda, float* c,
                          int64_t ldc, int64_t n0, int64_t n1) const;

 private:
  int64_t k_ = 0, n_ = 0;
  Workspace<float> packed_;
};

}  // namespace detail
}  // namespace lstmop
