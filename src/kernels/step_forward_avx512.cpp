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

namespace {

// r[0..15] (16 rows of 16 floats) transposed in registers: afterwards r[j]
// holds column j. Pairs of rows interleaved, then pairs of pairs (each
// 128-bit lane of u[4g + c] is column 4L + c of rows 4g..4g+3), then the
// lanes gathered across registers.
LSTMOP_TARGET_AVX512 inline void transpose16(__m512 (&r)[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int g = 0; g < 4; ++g) {
    const __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
    u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 v = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
    const __m512 w = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    const __m512 w2 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
    r[c] = _mm512_shuffle_f32x4(v, v2, 0x88);
    r[4 + c] = _mm512_shuffle_f32x4(w, w2, 0x88);
    r[8 + c] = _mm512_shuffle_f32x4(v, v2, 0xDD);
    r[12 + c] = _mm512_shuffle_f32x4(w, w2, 0xDD);
  }
}

}  // namespace

// Blocks of 16 columns of the group's rows loaded as rows (contiguous reads;
// rows past `units` zero), transposed in registers and stored as 16 panel rows.
LSTMOP_TARGET_AVX512 void pack_panel_rows_avx512(const float* w, int64_t ld, int64_t first_row,
                                                 int64_t units, int64_t count,
                                                 int64_t panel_ld, float* panel) {
  const float* base = w + first_row * ld;
  for (int64_t k0 = 0; k0 < count; k0 += 16) {
    const int64_t n = count - k0 < 16 ? count - k0 : 16;
    const __mmask16 columns = static_cast<__mmask16>((1u << n) - 1u);
    __m512 r[16];
    for (int64_t lane = 0; lane < 16; ++lane) {
      r[lane] = lane < units ? _mm512_maskz_loadu_ps(columns, base + lane * ld + k0)
                             : _mm512_setzero_ps();
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
