// Internal: the bodies of step_forward (step_forward.h), one per ISA of
// cpu_features.h; step_forward.cpp calls the one the weights were packed for.
#pragma once

#include "kernels/step_forward.h"

namespace lstmop {
namespace detail {

// Unit-group width of each body's packed layout.
constexpr int64_t kStepWidthAvx512 = 16;
constexpr int64_t kStepWidthAvx2 = 8;
constexpr int64_t kStepWidthGeneric = 16;

// Rows 0 .. count of 16 lanes: panel[k * panel_ld + lane] =
// w[(first_row + lane) * ld + k] for lane < units, 0 for the others
// (16 x 16 blocks transposed in registers; units <= 16).
void pack_panel_rows_avx512(const float* w, int64_t ld, int64_t first_row, int64_t units,
                            int64_t count, int64_t panel_ld, float* panel);

template <class Storage>
void step_forward_generic(const ForwardStepWeights& w, const ForwardStepArgs& args,
                          const StepSaved<Storage>* saved);
template <class Storage>
void step_forward_avx2(const ForwardStepWeights& w, const ForwardStepArgs& args,
                       const StepSaved<Storage>* saved);
template <class Storage>
void step_forward_avx512(const ForwardStepWeights& w, const ForwardStepArgs& args,
                         const StepSaved<Storage>* saved);

// step_input_chains' bodies.
void step_input_chains_generic(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                               const int64_t* step_rows, int64_t steps, const float* bias,
                               float* gx, int64_t u_begin, int64_t u_end);
void step_input_chains_avx2(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                            const int64_t* step_rows, int64_t steps, const float* bias,
                            float* gx, int64_t u_begin, int64_t u_end, int64_t k_chunk);
void step_input_chains_avx512(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                              const int64_t* step_rows, int64_t steps, const float* bias,
                              float* gx, int64_t u_begin, int64_t u_end);

}  // namespace detail
}  // namespace lstmop
