// lstmop kernels: the fused gates, AVX2 + FMA, 8 units a vector; exp and
// tanh from SLEEF (Sleef_expf8_u10avx2, Sleef_tanhf8_u10avx2: 1.0-ulp).
#include <immintrin.h>
#include <sleef.h>

#include "lstm_gates_body.h"
#include "lstm_gates_isa.h"

namespace lstmop {
namespace kernels {
namespace {

struct Avx2 {
  static constexpr int kLanes = 8;
  using reg = __m256;
  static __m256i mask(int valid) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static reg load(const float* p, int valid) {
    return valid == kLanes ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(valid));
  }
  static void store(float* p, reg x, int valid) {
    if (valid == kLanes) _mm256_storeu_ps(p, x);
    else _mm256_maskstore_ps(p, mask(valid), x);
  }
  static reg set1(float x) { return _mm256_set1_ps(x); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static reg exp(reg x) { return Sleef_expf8_u10avx2(x); }
  static reg tanh(reg x) { return Sleef_tanhf8_u10avx2(x); }
};

}  // namespace

void lstm_gates_forward_avx2(const GateForward& args) { gates_forward<Avx2>(args); }
void lstm_gates_backward_avx2(const GateBackward& args) { gates_backward<Avx2>(args); }

}  // namespace kernels
}  // namespace lstmop
