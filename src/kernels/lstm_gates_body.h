// lstmop kernels, internal: the fused gate loops written once over a vector
// type V (lstm_gates.cpp: scalar, lstm_gates_avx2.cpp, lstm_gates_avx512.cpp).
//
// V provides: kLanes; using reg; load(p, valid) (masked lanes read as 0),
// store(p, x, valid), set1(x), add, sub, mul, div, fma(a, b, c) = a*b + c
// fused, exp, tanh.
#pragma once

#include <cstdint>

#include "lstm_gates.h"

namespace lstmop {
namespace kernels {
namespace {

template <class V>
typename V::reg sigmoid(typename V::reg x) {
  const typename V::reg one = V::set1(1.0f);
  return V::div(one, V::add(one, V::exp(V::sub(V::set1(0.0f), x))));
}

// a + b, or a alone when there is no bias (so -0 stays -0).
template <class V>
typename V::reg pre_activation(const float* a, const float* b, int64_t u, int valid) {
  const typename V::reg x = V::load(a + u, valid);
  return b ? V::add(x, V::load(b + u, valid)) : x;
}

template <class V>
void store_if(float* p, int64_t u, typename V::reg x, int valid) {
  if (p) V::store(p + u, x, valid);
}

template <class V>
void gates_forward(const GateForward& g) {
  for (int64_t u = 0; u < g.n; u += V::kLanes) {
    const int valid = static_cast<int>(g.n - u < V::kLanes ? g.n - u : V::kLanes);
    const auto i = sigmoid<V>(pre_activation<V>(g.a_i, g.b_i, u, valid));
    const auto f = sigmoid<V>(pre_activation<V>(g.a_f, g.b_f, u, valid));
    const auto j = V::tanh(pre_activation<V>(g.a_g, g.b_g, u, valid));
    const auto o = sigmoid<V>(pre_activation<V>(g.a_o, g.b_o, u, valid));
    const auto c = V::fma(f, V::load(g.c_prev + u, valid), V::mul(i, j));
    const auto tc = V::tanh(c);
    V::store(g.c + u, c, valid);
    V::store(g.h + u, V::mul(o, tc), valid);
    store_if<V>(g.i, u, i, valid);
    store_if<V>(g.j, u, j, valid);
    store_if<V>(g.f, u, f, valid);
    store_if<V>(g.o, u, o, valid);
    store_if<V>(g.tanhc, u, tc, valid);
  }
}

template <class V>
void gates_backward(const GateBackward& g) {
  const auto one = V::set1(1.0f);
  for (int64_t u = 0; u < g.n; u += V::kLanes) {
    const int valid = static_cast<int>(g.n - u < V::kLanes ? g.n - u : V::kLanes);
    auto dh = V::load(g.dh_a + u, valid);
    if (g.dh_b) dh = V::add(dh, V::load(g.dh_b + u, valid));
    const auto i = V::load(g.i + u, valid), j = V::load(g.j + u, valid);
    const auto f = V::load(g.f + u, valid), o = V::load(g.o + u, valid);
    const auto tc = V::load(g.tanhc + u, valid);
    auto dc = V::mul(V::mul(dh, o), V::sub(one, V::mul(tc, tc)));
    if (g.dc_next) dc = V::add(V::load(g.dc_next + u, valid), dc);
    const auto cp = V::load(g.c_prev + u, valid);
    V::store(g.da_o + u, V::mul(V::mul(dh, tc), V::mul(o, V::sub(one, o))), valid);
    V::store(g.da_i + u, V::mul(V::mul(dc, j), V::mul(i, V::sub(one, i))), valid);
    V::store(g.da_g + u, V::mul(V::mul(dc, i), V::sub(one, V::mul(j, j))), valid);
    V::store(g.da_f + u, V::mul(V::mul(dc, cp), V::mul(f, V::sub(one, f))), valid);
    V::store(g.dc_prev + u, V::mul(dc, f), valid);
  }
}

}  // namespace
}  // namespace kernels
}  // namespace lstmop
