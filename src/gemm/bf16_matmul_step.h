// Internal: the per-step recurrent products of the bfloat16 products
// (ForwardPlan::bf16_products) on oneDNN's matmul primitive, for CPUs whose
// matrix units oneDNN drives and lstmop's own kernels do not (AMX tiles:
// kernel_choice().bf16_matmul_step):
//
//   C (m, n) = A (m, k) * B (k, n)     A, B bfloat16 bits, C float
//
// forward  gates (rows, 4H) += h (rows, H) * w_hh^T   (B stored (n, k): w_hh)
// backward dh (rows, H) = d_gates (rows, 4H) * w_hh     (B stored (k, n): w_hh)
//
// The oneDNN objects of a call are made before the call writes anything
// (prepare: one primitive per row count the steps take, w_hh's packed
// layout, the scratchpad), from a process-wide cache, so a step runs only
// the product: set_b reorders the slot's B into the packed layout once, then
// multiply executes the primitive of the step's row count on the caller's
// buffers. Each product of two bfloat16 values is exact in float32 and the
// sums are float32 in oneDNN's order, which depends on the sizes only (one
// OpenMP thread, like gemm_bf16). The units read subnormal operands as zero
// and flush subnormal results: used only where the call flushes subnormals.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "gemm/gemm.h"

namespace lstmop {
namespace detail {

class Bf16MatmulStep {
 public:
  Bf16MatmulStep();
  ~Bf16MatmulStep();
  Bf16MatmulStep(const Bf16MatmulStep&) = delete;
  Bf16MatmulStep& operator=(const Bf16MatmulStep&) = delete;

  // Readies the products for every row count in row_counts (each >= 1): B
  // (k, n) stored as (k, n) rows (tb No) or (n, k) rows (tb Yes), contiguous
  // (row stride n, respectively k); A's rows lda apart, C's ldc apart;
  // accumulate: C += A * B instead of C = A * B. False where oneDNN refuses
  // a shape or memory runs out: then nothing is usable.
  bool prepare(int64_t k, int64_t n, Transpose tb, const std::vector<int64_t>& row_counts,
               int64_t lda, int64_t ldc, bool accumulate);
  // B's bits, stored as prepare said, into the packed layout (per slot).
  void set_b(const uint16_t* b);
  // C (m, n) (+)= A (m, k) * B for a row count m given to prepare.
  void multiply(int64_t m, const uint16_t* a, float* c) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The number of Bf16MatmulStep products run in this process (tests: which
// path a call took).
int64_t bf16_matmul_step_runs();

}  // namespace detail
}  // namespace lstmop
