// lstmop kernels: the scalar body and the ISA dispatch of the fused gates.
#include "lstm_gates.h"

#include <sleef.h>

#include <cmath>

#include "lstm_gates_body.h"
#include "lstm_gates_isa.h"

namespace lstmop {
namespace kernels {
namespace {

// One unit at a time; SLEEF's scalar 1-ulp exp and tanh, like the vector
// bodies (glibc's tanhf measures 1.7 ulp on the test sweep).
struct Scalar {
  static constexpr int kLanes = 1;
  using reg = float;
  static reg load(const float* p, int /*valid*/) { return *p; }
  static void store(float* p, reg x, int /*valid*/) { *p = x; }
  static reg set1(float x) { return x; }
  static reg add(reg a, reg b) { return a + b; }
  static reg sub(reg a, reg b) { return a - b; }
  static reg mul(reg a, reg b) { return a * b; }
  static reg div(reg a, reg b) { return a / b; }
  static reg fma(reg a, reg b, reg c) { return std::fma(a, b, c); }
  static reg exp(reg x) { return Sleef_expf_u10(x); }
  static reg tanh(reg x) { return Sleef_tanhf_u10(x); }
};

}  // namespace

void lstm_gates_forward(Isa isa, const GateForward& args) {
  switch (isa) {
    case Isa::Avx512: lstm_gates_forward_avx512(args); return;
    case Isa::Avx2: lstm_gates_forward_avx2(args); return;
    case Isa::Scalar: break;
  }
  gates_forward<Scalar>(args);
}

void lstm_gates_backward(Isa isa, const GateBackward& args) {
  switch (isa) {
    case Isa::Avx512: lstm_gates_backward_avx512(args); return;
    case Isa::Avx2: lstm_gates_backward_avx2(args); return;
    case Isa::Scalar: break;
  }
  gates_backward<Scalar>(args);
}

}  // namespace kernels
}  // namespace lstmop
