// Internal: the recurrent product of a few rows on w_hh as stored, for the
// unpacked steps of short sequences and small batches (lstm_plan.h,
// ForwardPlan::single_step): out[r, n] += sum_k h[r, k] w[n, k] for r < rows
// and n in [n_begin, n_end), w (N, K) row-major with row stride ld_w.
//
// Each w row is read once per call for all rows (up to 4 at a time), 16 (8
// with AVX2) consecutive k a vector: nothing is packed, so a call costs the
// stream of w's rows and its FMAs. Every out element is one sum in a fixed
// order (lane-wise chains over k, then the lanes summed in a fixed tree, then
// added to out), the same whatever [n_begin, n_end) a call covers: threads
// may split n anywhere and give the same bits. isa picks the body (the
// driver: kernel_choice().step_forward); the generic body gives the AVX-512
// body's bits (16 lanes), the AVX2 one (8 lanes) others.
#pragma once

#include <cstdint>

#include "kernels/cpu_features.h"

namespace lstmop {
namespace detail {

void recurrent_rows_product(kernels::Isa isa, int64_t rows, int64_t n_begin, int64_t n_end,
                            int64_t K, const float* h, int64_t ld_h, const float* w,
                            int64_t ld_w, float* out, int64_t ld_out);

}  // namespace detail
}  // namespace lstmop
