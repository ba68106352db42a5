// The fused forward step's AVX-512: tiles of up to 6 rows x 16 hidden units (24 zmm accumulators) (step_forward_simd.h). Called only where
// kernel_choice() picked this ISA (the weights were packed for it).
#include <immintrin.h>

#include "kernels/isa_target.h"
#include "kernels/simd_avx512.h"
#include "kernels/step_forward_isa.h"
#include "kernels/transpose16_avx512.h"

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

void step_input_chains_avx512(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                             const int64_t* step_rows, int64_t steps, const float* bias,
                             float* gx, int64_t u_begin, int64_t u_end) {
  step_simd::input_chains<Avx512>(w, x, ld_x, step_rows, steps, bias, gx, u_begin, u_end);
}

// Blocks of 16 columns of the group's rows loaded as rows (contiguous reads;
// rows past `units` zero), transposed in registers and stored as 16 panel rows.
// Each row's line kPackAhead floats on is prefetched: the hardware's
// prefetchers did not follow the 16 rows read side by side (Zen 5, runner,
// T=5 B=8 I=H=512 inference, 8 MiB packed: 1.20-1.35x the whole call; 32 to
// 96 floats ahead within noise of each other).
constexpr int64_t kPackAhead = 64;

LSTMOP_TARGET_AVX512 void pack_panel_rows_avx512(const float* w, int64_t ld, int64_t first_row,
                                                 int64_t units, int64_t count,
                                                 int64_t panel_ld, float* panel) {
  const float* base = w + first_row * ld;
  for (int64_t k0 = 0; k0 < count; k0 += 16) {
    const int64_t n = count - k0 < 16 ? count - k0 : 16;
    const __mmask16 columns = static_cast<__mmask16>((1u << n) - 1u);
    __m512 r[16];
    for (int64_t lane = 0; lane < 16; ++lane) {
      if (lane >= units) {
        r[lane] = _mm512_setzero_ps();
        continue;
      }
      // (a hint: no fault past the row's end)
      _mm_prefetch(reinterpret_cast<const char*>(base + lane * ld + k0 + kPackAhead), _MM_HINT_T0);
      r[lane] = _mm512_maskz_loadu_ps(columns, base + lane * ld + k0);
    }
    transpose16(r);
    for (int64_t j = 0; j < n; ++j) _mm512_storeu_ps(panel + (k0 + j) * panel_ld, r[j]);
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
