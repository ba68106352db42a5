// Internal: the forward cell pass of lstm_cell.h for float compute in AVX-512
// (16 floats a vector), chosen at run time on a CPU with AVX-512 F and BW
// unless LSTMOP_KERNEL_ISA caps the kernels below avx512 (lstm_cell.cpp). The
// same body as lstm_cell_avx2.h's (lstm_cell_simd.h), lane for lane the same
// operations: the same bits for every element. (The backward pass stays AVX2:
// its AVX-512 form measured no faster.)
#pragma once

#include <cstdint>

#include "kernels/cell_pass.h"

namespace lstmop {
namespace detail {

bool cpu_has_avx512_cell();

template <class S>
void lstm_cell_forward_avx512(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                              const float* gates, const float* bias, float* c_state,
                              float* h_state, float* layer_out, int64_t ld_out,
                              const StepSaved<S>* saved);

// tanh of n floats (the carried tanhc of lstm_cell_fill_invalid: the same
// bits as the forward pass's).
void tanh_avx512(int64_t n, const float* x, float* y);

}  // namespace detail
}  // namespace lstmop
