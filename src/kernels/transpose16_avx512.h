// Internal: a 16 x 16 transpose of 32-bit elements in AVX-512 registers,
// shared by the weight packings of the fused steps (step_forward_avx512.cpp:
// float panels; step_forward_bf16.cpp: pairs of bfloat16 values as one 32-bit
// element). Callable only where AVX-512 runs.
#pragma once

#include <immintrin.h>

#include "kernels/isa_target.h"

namespace lstmop {
namespace detail {

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


}  // namespace detail
}  // namespace lstmop
