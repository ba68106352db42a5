// lstmop kernels: the packed recurrent product, AVX-512 F (compiled with
// -mavx512f; called only when isa_supported(Isa::Avx512)).
// One zmm per 16-column panel row; tiles of up to 8 rows, at most 24 zmm
// accumulators (8 panels = 128 columns for a batch of one).
#include <immintrin.h>

#include "recurrent_gemm_isa.h"
#include "recurrent_gemm_tiles.h"

namespace lstmop {
namespace kernels {
namespace {

struct Avx512 {
  static constexpr int kLanes = 16;
  static constexpr int kAccumulators = 24;
  static constexpr int kMaxRows = 8;
  static constexpr int kGroupPanels = 8;
  using reg = __m512;
  static __mmask16 mask(int valid) { return static_cast<__mmask16>((1u << valid) - 1u); }
  static reg load(const float* p, int valid) {
    if (valid == kLanes) return _mm512_loadu_ps(p);
    return _mm512_maskz_loadu_ps(mask(valid), p);
  }
  static void store(float* p, reg x, int valid) {
    if (valid == kLanes) _mm512_storeu_ps(p, x);
    else _mm512_mask_storeu_ps(p, mask(valid), x);
  }
  static reg loadu_full(const float* p) { return _mm512_loadu_ps(p); }
  static reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
};

}  // namespace

void gemm_packed_accumulate_avx512(int64_t m, int64_t k, const float* a, int64_t lda,
                                   const float* packed_b, int64_t n_begin, int64_t n_end,
                                   float* c, int64_t ldc) {
  gemm_packed_tiles<Avx512>(m, k, a, lda, packed_b, n_begin, n_end, c, ldc);
}

}  // namespace kernels
}  // namespace lstmop
