// The fused forward step's AVX-512: tiles of up to 6 rows x 16 hidden units (24 zmm accumulators) (step_forward_simd.h). Called only where
// kernel_choice() picked this ISA (the weights were packed for it).
#include "kernels/isa_target.h"
#include "kernels/simd_avx512.h"
#include "kernels/step_forward_isa.h"

#define LSTMOP_CELL_TARGET LSTMOP_TARGET_AVX512

namespace lstmop {
namespace detail {
using simd::Avx512;
}  // namespace detail
}  // namespace lstmop

#include "kernels/step_forward_simd.h"

namespace lstmop {
namespace detail {

template <class Storage>
void step_forward_avx512(const ForwardStepWeights& w, const ForwardStepArgs& args,
                       const StepSaved<Storage>* saved) {
  step_simd::step<Avx512, Storage>(w, args, saved);
}

template void step_forward_avx512<float>(const ForwardStepWeights&, const ForwardStepArgs&,
                                        const StepSaved<float>*);
template void step_forward_avx512<Half>(const ForwardStepWeights&, const ForwardStepArgs&,
                                       const StepSaved<Half>*);
template void step_forward_avx512<BFloat16>(const ForwardStepWeights&, const ForwardStepArgs&,
                                           const StepSaved<BFloat16>*);

}  // namespace detail
}  // namespace lstmop
