// The generic bodies of the cell passes (cell_pass_isa.h): scalar loops in the
// compute type with std::exp / std::tanh.
#include <cmath>

#include "common/element_access.h"
#include "kernels/cell_pass_isa.h"

namespace lstmop {
namespace detail {
namespace {

template <class Acc>
inline Acc sigmoid(Acc x) {
  return Acc(1) / (Acc(1) + std::exp(-x));
}

}  // namespace

template <class Acc, class Storage>
void cell_pass_forward_generic(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                               const Acc* gates, const Acc* bias, Acc* c_state, Acc* h_state,
                               Acc* layer_out, int64_t ld_out, const StepSaved<Storage>* saved) {
  const int64_t G = 4 * H;
  for (int64_t r = 0; r < rows; ++r) {
    const Acc* a = gates + r * G;
    Acc* c = c_state + r * H;
    Acc* h = h_state + r * H;
    Acc* out = layer_out + r * ld_out;
    for (int64_t k = u_begin; k < u_end; ++k) {
      const Acc gi = sigmoid(a[k] + bias[k]);
      const Acc gf = sigmoid(a[H + k] + bias[H + k]);
      const Acc gj = std::tanh(a[2 * H + k] + bias[2 * H + k]);
      const Acc go = sigmoid(a[3 * H + k] + bias[3 * H + k]);
      const Acc cn = gf * c[k] + gi * gj;
      const Acc tc = std::tanh(cn);
      const Acc hn = go * tc;
      c[k] = cn;
      h[k] = hn;
      out[k] = hn;
      if (saved != nullptr) {
        const int64_t e = r * H + k;
        saved->i[e] = StoreAs<Storage>::from(gi);
        saved->j[e] = StoreAs<Storage>::from(gj);
        saved->f[e] = StoreAs<Storage>::from(gf);
        saved->o[e] = StoreAs<Storage>::from(go);
        saved->c[e] = StoreAs<Storage>::from(cn);
        saved->tanhc[e] = StoreAs<Storage>::from(tc);
        if (saved->h != nullptr) saved->h[e] = StoreAs<Storage>::from(hn);
      }
    }
  }
}

template <class Acc>
inline Acc saved_value(Acc v) { return v; }
template <class Acc>
inline Acc saved_value(uint16_t bits) { return static_cast<Acc>(bfloat16_to_float(bits)); }

template <class Acc, class S>
void cell_pass_backward_generic(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                const S* i, const S* j, const S* f, const S* o,
                                const S* tanhc, const S* c_prev, const Acc* d_out,
                                int64_t ld_out, const Acc* dh_state, Acc* dc_state,
                                Acc* d_gates) {
  const int64_t G = 4 * H;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t e0 = r * H;
    const Acc* dy = d_out + r * ld_out;
    Acc* dg = d_gates + r * G;
    for (int64_t k = u_begin; k < u_end; ++k) {
      const int64_t e = e0 + k;
      const Acc gi = saved_value<Acc>(i[e]), gj = saved_value<Acc>(j[e]);
      const Acc gf = saved_value<Acc>(f[e]), go = saved_value<Acc>(o[e]);
      const Acc tc = saved_value<Acc>(tanhc[e]);
      const Acc dh = dh_state[e] + dy[k];
      const Acc dc = dc_state[e] + dh * go * (Acc(1) - tc * tc);
      dg[k] = dc * gj * gi * (Acc(1) - gi);
      dg[H + k] = dc * saved_value<Acc>(c_prev[e]) * gf * (Acc(1) - gf);
      dg[2 * H + k] = dc * gi * (Acc(1) - gj * gj);
      dg[3 * H + k] = dh * tc * go * (Acc(1) - go);
      dc_state[e] = dc * gf;
    }
  }
}

template <class Acc>
void tanh_generic(int64_t n, const Acc* x, Acc* y) {
  for (int64_t e = 0; e < n; ++e) y[e] = std::tanh(x[e]);
}

// The shipped (compute, storage) pairs.
template void cell_pass_forward_generic<float, float>(int64_t, int64_t, int64_t, int64_t,
                                                      const float*, const float*, float*, float*,
                                                      float*, int64_t, const StepSaved<float>*);
template void cell_pass_forward_generic<float, Half>(int64_t, int64_t, int64_t, int64_t,
                                                     const float*, const float*, float*, float*,
                                                     float*, int64_t, const StepSaved<Half>*);
template void cell_pass_forward_generic<float, BFloat16>(int64_t, int64_t, int64_t, int64_t,
                                                         const float*, const float*, float*,
                                                         float*, float*, int64_t,
                                                         const StepSaved<BFloat16>*);
template void cell_pass_forward_generic<double, double>(int64_t, int64_t, int64_t, int64_t,
                                                        const double*, const double*, double*,
                                                        double*, double*, int64_t,
                                                        const StepSaved<double>*);
template void cell_pass_backward_generic<float>(int64_t, int64_t, int64_t, int64_t, const float*,
                                                const float*, const float*, const float*,
                                                const float*, const float*, const float*,
                                                int64_t, const float*, float*, float*);
template void cell_pass_backward_generic<float>(int64_t, int64_t, int64_t, int64_t,
                                                const uint16_t*, const uint16_t*,
                                                const uint16_t*, const uint16_t*,
                                                const uint16_t*, const uint16_t*, const float*,
                                                int64_t, const float*, float*, float*);
template void cell_pass_backward_generic<double>(int64_t, int64_t, int64_t, int64_t,
                                                 const double*, const double*, const double*,
                                                 const double*, const double*, const double*,
                                                 const double*, int64_t, const double*, double*,
                                                 double*);
template void tanh_generic<float>(int64_t, const float*, float*);
template void tanh_generic<double>(int64_t, const double*, double*);

}  // namespace detail
}  // namespace lstmop
