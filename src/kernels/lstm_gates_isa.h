// lstmop kernels, internal: the per-ISA bodies of lstm_gates.h. Like
// recurrent_gemm_isa.h, no standard library here (the implementing files
// are compiled with -mavx2 / -mavx512f).
#pragma once

#include "lstm_gates.h"

namespace lstmop {
namespace kernels {

void lstm_gates_forward_avx2(const GateForward& args);
void lstm_gates_backward_avx2(const GateBackward& args);
void lstm_gates_forward_avx512(const GateForward& args);
void lstm_gates_backward_avx512(const GateBackward& args);

}  // namespace kernels
}  // namespace lstmop
