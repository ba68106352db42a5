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

template <class Storage>
void step_forward_generic(const ForwardStepWeights& w, const ForwardStepArgs& args,
                          const StepSaved<Storage>* saved);
template <class Storage>
void step_forward_avx2(const ForwardStepWeights& w, const ForwardStepArgs& args,
                       const StepSaved<Storage>* saved);
template <class Storage>
void step_forward_avx512(const ForwardStepWeights& w, const ForwardStepArgs& args,
                         const StepSaved<Storage>* saved);

}  // namespace detail
}  // namespace lstmop
