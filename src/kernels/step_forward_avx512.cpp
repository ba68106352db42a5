// The fused forward step's AVX-512: tiles of up to 6 rows x 16 hidden units (24 zmm accumulators) (step_forward_simd.h). Called only where
// kernel_choice() picked this ISA (the weights were packed for it).
#include <immintrin.h>

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

LSTMOP_TARGET_AVX512 void pack_panel_rows_avx512(const float* w, int64_t ld, int64_t first_row,
                                                 int64_t units, int64_t count, float* panel) {
  const __mmask16 valid = static_cast<__mmask16>((1u << units) - 1u);
  const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(static_cast<int>(ld)));
  const float* base = w + first_row * ld;
  for (int64_t k = 0; k < count; ++k) {
    _mm512_storeu_ps(panel + k * 16,
                     _mm512_mask_i32gather_ps(_mm512_setzero_ps(), valid, rows, base + k, 4));
  }
}

template void step_forward_avx512<float>(const ForwardStepWeights&, const ForwardStepArgs&,
                                        const StepSaved<float>*);
template void step_forward_avx512<Half>(const ForwardStepWeights&, const ForwardStepArgs&,
                                       const StepSaved<Half>*);
template void step_forward_avx512<BFloat16>(const ForwardStepWeights&, const ForwardStepArgs&,
                                           const StepSaved<BFloat16>*);

}  // namespace detail
}  // namespace lstmop
