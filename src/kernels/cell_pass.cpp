// The fused element-wise LSTM step passes (scalar loops; see lstm_cell.h).
#include "kernels/cell_pass.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "common/element_access.h"
#include "kernels/cell_pass_avx2.h"
#include "kernels/cell_pass_avx512.h"

namespace lstmop {
namespace detail {
namespace {

template <class Acc>
inline Acc sigmoid(Acc x) {
  return Acc(1) / (Acc(1) + std::exp(-x));
}

}  // namespace

template <class Acc, class S>
void lstm_cell_forward_scalar(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                              const Acc* gates, const Acc* bias, Acc* c_state, Acc* h_state,
                              Acc* layer_out, int64_t ld_out, const StepSaved<S>* saved) {
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
        saved->i[e] = StoreAs<S>::from(gi);
        saved->j[e] = StoreAs<S>::from(gj);
        saved->f[e] = StoreAs<S>::from(gf);
        saved->o[e] = StoreAs<S>::from(go);
        saved->c[e] = StoreAs<S>::from(cn);
        saved->tanhc[e] = StoreAs<S>::from(tc);
        saved->h[e] = StoreAs<S>::from(hn);
      }
    }
  }
}

// float: the AVX-512 pass (lstm_cell_avx512.cpp) on a CPU with AVX-512 F/BW
// (1.6x the AVX2 pass's speed on a Zen 4 core: 2.3 vs 3.7 ns a hidden unit),
// else the AVX2 pass (lstm_cell_avx2.cpp, the same bits) on one with AVX2+FMA;
// else the scalar loop above (std::exp / std::tanh).
template <class Acc, class S>
void lstm_cell_forward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end, const Acc* gates,
                       const Acc* bias, Acc* c_state, Acc* h_state, Acc* layer_out,
                       int64_t ld_out, const StepSaved<S>* saved) {
  if constexpr (std::is_same_v<Acc, float>) {
    if (cpu_has_avx512_cell()) {
      lstm_cell_forward_avx512<S>(rows, H, u_begin, u_end, gates, bias, c_state, h_state,
                                  layer_out, ld_out, saved);
      return;
    }
    if (cpu_has_avx2_fma()) {
      lstm_cell_forward_avx2<S>(rows, H, u_begin, u_end, gates, bias, c_state, h_state,
                                layer_out, ld_out, saved);
      return;
    }
  }
  lstm_cell_forward_scalar<Acc, S>(rows, H, u_begin, u_end, gates, bias, c_state, h_state,
                                   layer_out, ld_out, saved);
}

template <class Acc, class S>
void lstm_cell_fill_invalid(int64_t rows, int64_t H, const Acc* h_carried, const Acc* c_carried,
                            const StepSaved<S>& saved) {
  for (int64_t e = 0; e < rows * H; ++e) {
    saved.i[e] = S{};
    saved.j[e] = S{};
    saved.f[e] = S{};
    saved.o[e] = S{};
    saved.h[e] = StoreAs<S>::from(h_carried[e]);
    saved.c[e] = StoreAs<S>::from(c_carried[e]);
  }
  // tanh(c) with the function the step pass used, so the carried tanhc has
  // the bits of the last valid step's.
  constexpr int64_t kChunk = 256;
  Acc tanh_c[kChunk];
  for (int64_t e0 = 0; e0 < rows * H; e0 += kChunk) {
    const int64_t n = std::min(kChunk, rows * H - e0);
    bool vector_done = false;
    if constexpr (std::is_same_v<Acc, float>) {
      if (cpu_has_avx512_cell()) {
        tanh_avx512(n, c_carried + e0, tanh_c);
        vector_done = true;
      } else if (cpu_has_avx2_fma()) {
        tanh_avx2(n, c_carried + e0, tanh_c);
        vector_done = true;
      }
    }
    if (!vector_done) {
      for (int64_t e = 0; e < n; ++e) tanh_c[e] = std::tanh(c_carried[e0 + e]);
    }
    for (int64_t e = 0; e < n; ++e) saved.tanhc[e0 + e] = StoreAs<S>::from(tanh_c[e]);
  }
}

template <class Acc>
void lstm_cell_backward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end, const Acc* i,
                        const Acc* j, const Acc* f, const Acc* o, const Acc* tanhc,
                        const Acc* c_prev, const Acc* d_out, int64_t ld_out,
                        const Acc* dh_state, Acc* dc_state, Acc* d_gates) {
  if constexpr (std::is_same_v<Acc, float>) {
    // AVX2 also on AVX-512 CPUs: the AVX-512 body of this memory-bound pass
    // measured no faster on a Zen 4 core (0.75-1.1x), and both give the same bits.
    if (cpu_has_avx2_fma()) {
      lstm_cell_backward_avx2(rows, H, u_begin, u_end, i, j, f, o, tanhc, c_prev, d_out, ld_out,
                              dh_state, dc_state, d_gates);
      return;
    }
  }
  const int64_t G = 4 * H;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t e0 = r * H;
    const Acc* dy = d_out + r * ld_out;
    Acc* dg = d_gates + r * G;
    for (int64_t k = u_begin; k < u_end; ++k) {
      const int64_t e = e0 + k;
      const Acc gi = i[e], gj = j[e], gf = f[e], go = o[e], tc = tanhc[e];
      const Acc dh = dh_state[e] + dy[k];
      const Acc dc = dc_state[e] + dh * go * (Acc(1) - tc * tc);
      dg[k] = dc * gj * gi * (Acc(1) - gi);
      dg[H + k] = dc * c_prev[e] * gf * (Acc(1) - gf);
      dg[2 * H + k] = dc * gi * (Acc(1) - gj * gj);
      dg[3 * H + k] = dh * tc * go * (Acc(1) - go);
      dc_state[e] = dc * gf;
    }
  }
}

// The shipped (compute, storage) pairs.
template void lstm_cell_forward<float, float>(int64_t, int64_t, int64_t, int64_t, const float*, const float*, float*,
                                              float*, float*, int64_t, const StepSaved<float>*);
template void lstm_cell_forward<float, Half>(int64_t, int64_t, int64_t, int64_t, const float*, const float*, float*,
                                             float*, float*, int64_t, const StepSaved<Half>*);
template void lstm_cell_forward<float, BFloat16>(int64_t, int64_t, int64_t, int64_t, const float*, const float*,
                                                 float*, float*, float*, int64_t,
                                                 const StepSaved<BFloat16>*);
template void lstm_cell_forward<double, double>(int64_t, int64_t, int64_t, int64_t, const double*, const double*,
                                                double*, double*, double*, int64_t,
                                                const StepSaved<double>*);
template void lstm_cell_fill_invalid<float, float>(int64_t, int64_t, const float*, const float*,
                                                   const StepSaved<float>&);
template void lstm_cell_fill_invalid<float, Half>(int64_t, int64_t, const float*, const float*,
                                                  const StepSaved<Half>&);
template void lstm_cell_fill_invalid<float, BFloat16>(int64_t, int64_t, const float*, const float*,
                                                      const StepSaved<BFloat16>&);
template void lstm_cell_fill_invalid<double, double>(int64_t, int64_t, const double*,
                                                     const double*, const StepSaved<double>&);
template void lstm_cell_backward<float>(int64_t, int64_t, int64_t, int64_t, const float*, const float*, const float*,
                                        const float*, const float*, const float*, const float*,
                                        int64_t, const float*, float*, float*);
template void lstm_cell_backward<double>(int64_t, int64_t, int64_t, int64_t, const double*, const double*,
                                         const double*, const double*, const double*,
                                         const double*, const double*, int64_t, const double*,
                                         double*, double*);

}  // namespace detail
}  // namespace lstmop
