// The fused forward step's generic body (step_forward.h): the same fma chains
// per element as the vector bodies (std::fma, in the same order), the generic
// cell arithmetic (std::exp, std::tanh). Runs on any CPU, and where
// LSTMOP_KERNEL_ISA=scalar caps the kernels.
#include <cmath>

#include "common/element_access.h"
#include "kernels/step_forward_isa.h"

namespace lstmop {
namespace detail {
namespace {

inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

template <class Storage>
void step_forward_generic(const ForwardStepWeights& w, const ForwardStepArgs& s,
                          const StepSaved<Storage>* saved) {
  constexpr int64_t W = kStepWidthGeneric;
  const int64_t H = w.hidden(), K0 = w.k_input(), K1 = w.k_hidden();
  constexpr int64_t kRow = 4 * W;  // one k: the four gates' W lanes
  const bool chained = s.gx_chained;
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int64_t u = s.u_begin; u < s.u_end; ++u) {
      // The input's rows (none in the projection forms) and h's rows of the
      // unit's group: interleaved, or the chained form's hidden part.
      const float* block = chained ? w.hidden_part(u / W) + u % W
                                   : w.data() + (u / W) * (K0 + K1) * kRow + u % W;
      const float* hidden = chained ? block : block + K0 * kRow;
      float a[4];
      for (int q = 0; q < 4; ++q) {
        const float* p = block + q * W;
        float acc = s.gx != nullptr ? s.gx[r * 4 * H + q * H + u] : s.bias[q * H + u];
        if (!chained) {
          for (int64_t k = 0; k < K0; ++k) acc = std::fma(s.x[r * s.ld_x + k], p[k * kRow], acc);
        }
        for (int64_t k = 0; k < K1; ++k) {
          acc = std::fma(s.h_prev[r * s.ld_h + k], hidden[q * W + k * kRow], acc);
        }
        a[q] = s.gx != nullptr && !chained ? acc + s.bias[q * H + u] : acc;
      }
      const float gi = sigmoid(a[0]);
      const float gf = sigmoid(a[1]);
      const float gj = std::tanh(a[2]);
      const float go = sigmoid(a[3]);
      float& c = s.c_state[r * H + u];
      const float cn = gf * c + gi * gj;
      const float tc = std::tanh(cn);
      // h as stored: float16 / bfloat16 round it (the value the next step multiplies).
      const float hn = static_cast<float>(StoreAs<Storage>::from(go * tc));
      c = cn;
      s.h_out[r * s.ld_out + u] = hn;
      if (s.h_next != nullptr) s.h_next[r * H + u] = hn;
      if (saved != nullptr) {
        const int64_t e = r * H + u;
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

void step_input_chains_generic(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                               const int64_t* step_rows, int64_t steps, const float* bias,
                               float* gx, int64_t u_begin, int64_t u_end) {
  constexpr int64_t W = kStepWidthGeneric;
  constexpr int64_t kRow = 4 * W;
  const int64_t H = w.hidden(), K0 = w.k_input();
  int64_t rows = 0;
  for (int64_t t = 0; t < steps; ++t) rows += step_rows[t] > 0 ? step_rows[t] : 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t u = u_begin; u < u_end; ++u) {
      const float* block = w.input_part(u / W) + u % W;
      for (int q = 0; q < 4; ++q) {
        const float* p = block + q * W;
        float acc = bias[q * H + u];
        for (int64_t k = 0; k < K0; ++k) acc = std::fma(x[r * ld_x + k], p[k * kRow], acc);
        gx[r * 4 * H + q * H + u] = acc;
      }
    }
  }
}

template void step_forward_generic<float>(const ForwardStepWeights&, const ForwardStepArgs&,
                                          const StepSaved<float>*);
template void step_forward_generic<Half>(const ForwardStepWeights&, const ForwardStepArgs&,
                                         const StepSaved<Half>*);
template void step_forward_generic<BFloat16>(const ForwardStepWeights&, const ForwardStepArgs&,
                                             const StepSaved<BFloat16>*);

}  // namespace detail
}  // namespace lstmop
