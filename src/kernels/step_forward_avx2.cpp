// The fused forward step's AVX2 + FMA: tiles of up to 3 rows x 8 hidden units (12 ymm accumulators) (step_forward_simd.h). Called only where
// kernel_choice() picked this ISA (the weights were packed for it).
#include "kernels/isa_target.h"
#include "kernels/simd_avx2.h"
#include "kernels/step_forward_isa.h"

#define LSTMOP_CELL_TARGET LSTMOP_TARGET_AVX2

namespace lstmop {
namespace detail {
using simd::Avx2;
}  // namespace detail
}  // namespace lstmop

#include "kernels/step_forward_simd.h"

namespace lstmop {
namespace detail {

template <class Storage>
void step_forward_avx2(const ForwardStepWeights& w, const ForwardStepArgs& args,
                       const StepSaved<Storage>* saved) {
  step_simd::step<Avx2, Storage>(w, args, saved);
}

void step_input_chains_avx2(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                             const int64_t* step_rows, int64_t steps, const float* bias,
                             float* gx, int64_t u_begin, int64_t u_end, int64_t k_chunk) {
  step_simd::input_chains<Avx2>(w, x, ld_x, step_rows, steps, bias, gx, u_begin, u_end, k_chunk);
}

template void step_forward_avx2<float>(const ForwardStepWeights&, const ForwardStepArgs&,
                                        const StepSaved<float>*);
template void step_forward_avx2<Half>(const ForwardStepWeights&, const ForwardStepArgs&,
                                       const StepSaved<Half>*);
template void step_forward_avx2<BFloat16>(const ForwardStepWeights&, const ForwardStepArgs&,
                                           const StepSaved<BFloat16>*);

}  // namespace detail
}  // namespace lstmop
