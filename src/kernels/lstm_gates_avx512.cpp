// lstmop kernels: the fused gates, AVX-512 F, 16 units a vector; exp and
// tanh from SLEEF (Sleef_expf16_u10avx512f, Sleef_tanhf16_u10avx512f).
#include <immintrin.h>
#include <sleef.h>

#include "lstm_gates_body.h"
#include "lstm_gates_isa.h"

namespace lstmop {
namespace kernels {
namespace {

struct Avx512 {
  static constexpr int kLanes = 16;
  using reg = __m512;
  static __mmask16 mask(int valid) { return static_cast<__mmask16>((1u << valid) - 1u); }
  static reg load(const float* p, int valid) {
    return valid == kLanes ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mask(valid), p);
  }
  static void store(float* p, reg x, int valid) {
    if (valid == kLanes) _mm512_storeu_ps(p, x);
    else _mm512_mask_storeu_ps(p, mask(valid), x);
  }
  static reg set1(float x) { return _mm512_set1_ps(x); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static reg exp(reg x) { return Sleef_expf16_u10avx512f(x); }
  static reg tanh(reg x) { return Sleef_tanhf16_u10avx512f(x); }
};

}  // namespace

void lstm_gates_forward_avx512(const GateForward& args) { gates_forward<Avx512>(args); }
void lstm_gates_backward_avx512(const GateBackward& args) { gates_backward<Avx512>(args); }

}  // namespace kernels
}  // namespace lstmop
