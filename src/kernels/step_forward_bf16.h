// Internal: the fused forward step on bfloat16 dot-product units (AVX512-BF16
// vdpbf16ps), for bfloat16 calls and for float32 calls with
// fp32_precision "bf16" (CONTRACT.md, "The 16-bit dtypes"). The step of
// step_forward.h in its concatenated form, with every product's operands
// bfloat16 values:
//
//   acc = bias; acc += x[r, k] w_ih[., k] (k < K0); acc += h_prev[r, k] w_hh[., k] (k < K1)
//
// or in its projection form (small batches, K0 = 0): acc = gx (x w_ih^T of the
// step's rows, one product for the layer); acc += h_prev[r, k] w_hh[., k]; acc += bias.
//
// two products at a time (vdpbf16ps: each product of two bfloat16 values is
// exact in float32, the two added to the float32 accumulator), then the cell
// of step_forward.h in float32. The stored h: for bfloat16 calls h rounded to
// bfloat16 (what the next step multiplies, written as bits to h_out_bits,
// h_next and the saved h); for float32 calls the float32 h (h_out, saved h)
// and its bfloat16 rounding as the next products' operand (h_out_bits,
// h_next). The instruction reads subnormal operands as zero and flushes
// subnormal results: the callers use it only where the call flushes
// subnormals anyway (float_environment.h).
#pragma once

#include <cstdint>

#include "common/workspace.h"
#include "kernels/cell_pass.h"
#include "lstmop/tensor.h"

namespace lstmop {
namespace detail {

// w_ih (4H, K0) and w_hh (4H, K1) rounded to bfloat16 and packed once per
// call: per group of 16 hidden units ceil(K0/2) + ceil(K1/2) rows, one per k
// pair, each the four gates (i, f, g, o) side by side, a gate 16 lanes x 2
// bfloat16 (the pairs k, k+1 of one unit next to each other, what vdpbf16ps
// multiplies); a missing partner (odd K) and lanes past H are zero.
class Bf16StepWeights {
 public:
  void allocate(WorkspaceArena& arena, int64_t H, int64_t max_k_input, int64_t k_hidden);
  // float values rounded to nearest even (exact for bfloat16 calls' weights).
  void pack(const float* w_ih, int64_t ld_ih, const float* w_hh, int64_t ld_hh, int64_t k_input) {
    set_k_input(k_input);
    pack_units(w_ih, ld_ih, w_hh, ld_hh, 0, H_);
  }
  // The same from bfloat16 bits (bfloat16 calls), row strides in elements.
  void pack_bits(const uint16_t* w_ih, int64_t ld_ih, const uint16_t* w_hh, int64_t ld_hh,
                 int64_t k_input) {
    set_k_input(k_input);
    pack_bits_units(w_ih, ld_ih, w_hh, ld_hh, 0, H_);
  }
  // In parts, for split mode's threads: set_k_input first (one thread), then
  // each part's units [u_begin, u_end) (u_begin a multiple of 16): the groups
  // a step over those units reads, and no other.
  void set_k_input(int64_t k_input) { k_input_ = k_input; }
  void pack_units(const float* w_ih, int64_t ld_ih, const float* w_hh, int64_t ld_hh,
                  int64_t u_begin, int64_t u_end);
  void pack_bits_units(const uint16_t* w_ih, int64_t ld_ih, const uint16_t* w_hh, int64_t ld_hh,
                       int64_t u_begin, int64_t u_end);

  int64_t hidden() const { return H_; }
  int64_t k_input() const { return k_input_; }
  int64_t k_hidden() const { return k_hidden_; }
  const uint16_t* data() const { return packed_.data(); }

 private:
  int64_t H_ = 0, k_input_ = 0, k_hidden_ = 0;
  Workspace<uint16_t> packed_;
};

struct Bf16StepArgs {
  int64_t rows = 0;
  int64_t u_begin = 0, u_end = 0;      // u_begin a multiple of 16
  const uint16_t* x = nullptr;         // (rows, K0) bfloat16 bits, row stride ld_x
  int64_t ld_x = 0;
  // Projection form (K0 = 0): the step's rows of x w_ih^T (rows, 4H), row
  // stride 4H, computed before the layer on the same bfloat16 values; the
  // accumulators start from it and the bias is added after the products.
  const float* gx = nullptr;
  const uint16_t* h_prev = nullptr;    // (rows, K1) bfloat16 bits, row stride ld_h
  int64_t ld_h = 0;
  const float* bias = nullptr;         // (4H)
  float* c_state = nullptr;            // (rows, H) row stride H, updated in place
  uint16_t* h_out_bits = nullptr;      // (rows, .) row stride ld_out_bits: h as bfloat16
  int64_t ld_out_bits = 0;
  float* h_out = nullptr;              // float32 calls: (rows, .) row stride ld_out, or null
  int64_t ld_out = 0;
  uint16_t* h_next = nullptr;          // (rows, H) row stride H: the next step's operand
  // False in split mode's steps on two threads (next_block_share: no prefetch).
  bool alone = true;
};

// Storage: BFloat16 (bfloat16 calls) or float (float32 calls). Only where
// kernel_choice().bf16_step.
template <class Storage>
void step_forward_bf16(const Bf16StepWeights& w, const Bf16StepArgs& args,
                       const StepSaved<Storage>* saved);

}  // namespace detail
}  // namespace lstmop
