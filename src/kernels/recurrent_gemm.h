// lstmop kernels: the recurrent step product with a pre-packed weight.
//
//   C (m, n) += A (m, k) * B (k, n)       e.g. gates (B, 4H) += h_prev (B, H) * w_hh^T (H, 4H)
//
// for small m (the batch of one time step) and a B that is packed once per
// call and then reused by every step. Packed layout: B's columns in panels of
// kPanelWidth; panel p holds columns [16p, 16p + 16) as k rows of 16
// contiguous floats (16p*k + kk*16 + lane), the last panel zero-padded. The
// packer can reorder columns (gate_interleaved_columns: the 4 gates of every
// 16 hidden units side by side, so a thread that owns a column range owns
// whole hidden units and can run the gate math right after its product).
//
// Numerics: every C element is one fused multiply-add chain c = fma(a[kk],
// b[kk], c), kk = 0..k-1 in increasing order, starting from C's value; the
// scalar (std::fma), AVX2 and AVX-512 paths give the same bits whatever the
// tile sizes, the column range or the number of rows. So splitting columns
// over threads, or shrinking m from step to step (variable length), never
// changes a result.
#pragma once

#include <cstdint>
#include <vector>

#include "cpu_isa.h"
#include "recurrent_gemm_isa.h"

namespace lstmop {
namespace kernels {

constexpr int64_t kPanelWidth = 16;

// Floats the packed form of a (k, n) B occupies.
int64_t packed_b_size(int64_t k, int64_t n);

// Packs B = W^T from W (n, k) row-major with row stride ldw (the PyTorch
// weight layout, e.g. w_hh (4H, H)): packed column j is W's row
// column_order[j] (column_order == nullptr: row j).
void pack_b_from_rows(const float* w, int64_t ldw, int64_t k, int64_t n,
                      const int64_t* column_order, float* packed);

// The column order that puts, for every group of `group` hidden units, the
// i, f, g, o columns of those units side by side: for hidden = 32, group = 16:
// [i0..i15 f0..f15 g0..g15 o0..o15 i16..i31 ...]. hidden % group may be
// non-zero (the last group is shorter). Returns 4 * hidden entries.
std::vector<int64_t> gate_interleaved_columns(int64_t hidden, int64_t group);

// C[:, n_begin:n_end) += A * B[:, n_begin:n_end), columns of the packed B.
// n_begin must be a multiple of kPanelWidth; c points at C's column 0 (ldc
// its row stride); a (m, k) has row stride lda. m may be 0. isa must be
// supported (isa_supported), e.g. best_isa().
void gemm_packed_accumulate(Isa isa, int64_t m, int64_t k, const float* a, int64_t lda,
                            const float* packed_b, int64_t n_begin, int64_t n_end, float* c,
                            int64_t ldc);

}  // namespace kernels
}  // namespace lstmop
