// lstmop kernels: the packed recurrent product, AVX2 + FMA (compiled with
// -mavx2 -mfma; called only when isa_supported(Isa::Avx2)).
// Tiles of up to 6 rows x 16 columns (12 ymm accumulators), or 1 row x 64
// columns for a batch of one: enough independent fma chains to cover the
// fma latency (4 cycles x 2 pipes).
#include <immintrin.h>

#include "recurrent_gemm_isa.h"
#include "recurrent_gemm_tiles.h"

namespace lstmop {
namespace kernels {
namespace {

struct Avx2 {
  static constexpr int kLanes = 8;
  static constexpr int kAccumulators = 12;
  static constexpr int kMaxRows = 6;
  static constexpr int kGroupPanels = 4;
  using reg = __m256;
  static __m256i mask(int valid) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static reg load(const float* p, int valid) {
    if (valid == kLanes) return _mm256_loadu_ps(p);
    if (valid == 0) return _mm256_setzero_ps();
    return _mm256_maskload_ps(p, mask(valid));
  }
  static void store(float* p, reg x, int valid) {
    if (valid == kLanes) _mm256_storeu_ps(p, x);
    else if (valid > 0) _mm256_maskstore_ps(p, mask(valid), x);
  }
  static reg loadu_full(const float* p) { return _mm256_loadu_ps(p); }
  static reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
};

}  // namespace

void gemm_packed_accumulate_avx2(int64_t m, int64_t k, const float* a, int64_t lda,
                                 const float* packed_b, int64_t n_begin, int64_t n_end, float* c,
                                 int64_t ldc) {
  gemm_packed_tiles<Avx2>(m, k, a, lda, packed_b, n_begin, n_end, c, ldc);
}

}  // namespace kernels
}  // namespace lstmop
