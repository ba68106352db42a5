// The cell passes of cell_pass.h: float runs the body kernel_choice() picks
// (forward: AVX-512, 1.6x the AVX2 body's speed on a Zen 4 core, 2.3 vs 3.7 ns
// a hidden unit; backward: kernel_choice().cell_backward), double the generic
// loops.
#include "kernels/cell_pass.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "common/element_access.h"
#include "kernels/cell_pass_isa.h"
#include "kernels/cpu_features.h"

namespace lstmop {
namespace detail {

template <class Acc, class Storage>
void cell_pass_forward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end, const Acc* gates,
                       const Acc* bias, Acc* c_state, Acc* h_state, Acc* layer_out,
                       int64_t ld_out, const StepSaved<Storage>* saved) {
  if constexpr (std::is_same_v<Acc, float>) {
    switch (kernels::kernel_choice().cell_forward) {
      case kernels::Isa::Avx512:
        cell_pass_forward_avx512<Storage>(rows, H, u_begin, u_end, gates, bias, c_state, h_state,
                                          layer_out, ld_out, saved);
        return;
      case kernels::Isa::Avx2:
        cell_pass_forward_avx2<Storage>(rows, H, u_begin, u_end, gates, bias, c_state, h_state,
                                        layer_out, ld_out, saved);
        return;
      case kernels::Isa::Scalar:
        break;
    }
  }
  cell_pass_forward_generic<Acc, Storage>(rows, H, u_begin, u_end, gates, bias, c_state, h_state,
                                          layer_out, ld_out, saved);
}

namespace {

// dst[e] = StoreAs<Storage>::from(src[e]) for e < n; bfloat16 through a
// branch-free form of float_to_bfloat16 (tensor.h: the same bits, NaN quieted
// with sign and payload kept), which the compiler vectorizes (B4's shape,
// bfloat16 training: this fill took 2.6% of a call element by element).
template <class Acc, class Storage>
void store_run(const Acc* src, int64_t n, Storage* dst) {
  if constexpr (std::is_same_v<Acc, float> && std::is_same_v<Storage, BFloat16>) {
    for (int64_t e = 0; e < n; ++e) {
      uint32_t x;
      std::memcpy(&x, src + e, sizeof x);
      const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
      const uint32_t quiet_nan = (x >> 16) | 0x0040u;
      dst[e].bits = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
    }
  } else {
    for (int64_t e = 0; e < n; ++e) dst[e] = StoreAs<Storage>::from(src[e]);
  }
}

}  // namespace

template <class Acc, class Storage>
void cell_pass_fill_invalid(int64_t rows, int64_t H, const Acc* h_carried, const Acc* c_carried,
                            const StepSaved<Storage>& saved) {
  const int64_t n = rows * H;
  std::fill_n(saved.i, n, Storage{});
  std::fill_n(saved.j, n, Storage{});
  std::fill_n(saved.f, n, Storage{});
  std::fill_n(saved.o, n, Storage{});
  if (saved.h != nullptr) store_run(h_carried, n, saved.h);
  store_run(c_carried, n, saved.c);
  // tanh(c) with the function the forward pass used, so the carried tanhc has
  // the bits of the last valid step's.
  constexpr int64_t kChunk = 256;
  Acc tanh_c[kChunk];
  for (int64_t e0 = 0; e0 < rows * H; e0 += kChunk) {
    const int64_t n = std::min(kChunk, rows * H - e0);
    if constexpr (std::is_same_v<Acc, float>) {
      switch (kernels::kernel_choice().cell_forward) {
        case kernels::Isa::Avx512: tanh_avx512(n, c_carried + e0, tanh_c); break;
        case kernels::Isa::Avx2: tanh_avx2(n, c_carried + e0, tanh_c); break;
        case kernels::Isa::Scalar: tanh_generic<Acc>(n, c_carried + e0, tanh_c); break;
      }
    } else {
      tanh_generic<Acc>(n, c_carried + e0, tanh_c);
    }
    store_run(static_cast<const Acc*>(tanh_c), n, saved.tanhc + e0);
  }
}

// The backward body kernel_choice().cell_backward names, of one signature
// (float saved tensors or bfloat16 bits).
template <class Body>
Body backward_body(Body avx512, Body avx2, Body generic) {
  switch (kernels::kernel_choice().cell_backward) {
    case kernels::Isa::Avx512: return avx512;
    case kernels::Isa::Avx2: return avx2;
    case kernels::Isa::Scalar: break;
  }
  return generic;
}

template <class Acc>
void cell_pass_backward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end, const Acc* i,
                        const Acc* j, const Acc* f, const Acc* o, const Acc* tanhc,
                        const Acc* c_prev, const Acc* d_out, int64_t ld_out,
                        const Acc* dh_state, Acc* dc_state, Acc* d_gates) {
  auto body = &cell_pass_backward_generic<Acc, Acc>;
  if constexpr (std::is_same_v<Acc, float>) {
    body = backward_body(&cell_pass_backward_avx512, &cell_pass_backward_avx2, body);
  }
  body(rows, H, u_begin, u_end, i, j, f, o, tanhc, c_prev, d_out, ld_out, dh_state, dc_state,
       d_gates);
}

void cell_pass_backward_bf16(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                             const uint16_t* i, const uint16_t* j, const uint16_t* f,
                             const uint16_t* o, const uint16_t* tanhc, const uint16_t* c_prev,
                             const float* d_out, int64_t ld_out, const float* dh_state,
                             float* dc_state, float* d_gates) {
  const auto body = backward_body(&cell_pass_backward_bf16_avx512, &cell_pass_backward_bf16_avx2,
                                  &cell_pass_backward_generic<float, uint16_t>);
  body(rows, H, u_begin, u_end, i, j, f, o, tanhc, c_prev, d_out, ld_out, dh_state, dc_state,
       d_gates);
}

// The shipped (compute, storage) pairs.
template void cell_pass_forward<float, float>(int64_t, int64_t, int64_t, int64_t, const float*,
                                              const float*, float*, float*, float*, int64_t,
                                              const StepSaved<float>*);
template void cell_pass_forward<float, Half>(int64_t, int64_t, int64_t, int64_t, const float*,
                                             const float*, float*, float*, float*, int64_t,
                                             const StepSaved<Half>*);
template void cell_pass_forward<float, BFloat16>(int64_t, int64_t, int64_t, int64_t,
                                                 const float*, const float*, float*, float*,
                                                 float*, int64_t, const StepSaved<BFloat16>*);
template void cell_pass_forward<double, double>(int64_t, int64_t, int64_t, int64_t,
                                                const double*, const double*, double*, double*,
                                                double*, int64_t, const StepSaved<double>*);
template void cell_pass_fill_invalid<float, float>(int64_t, int64_t, const float*, const float*,
                                                   const StepSaved<float>&);
template void cell_pass_fill_invalid<float, Half>(int64_t, int64_t, const float*, const float*,
                                                  const StepSaved<Half>&);
template void cell_pass_fill_invalid<float, BFloat16>(int64_t, int64_t, const float*,
                                                      const float*, const StepSaved<BFloat16>&);
template void cell_pass_fill_invalid<double, double>(int64_t, int64_t, const double*,
                                                     const double*, const StepSaved<double>&);
template void cell_pass_backward<float>(int64_t, int64_t, int64_t, int64_t, const float*,
                                        const float*, const float*, const float*, const float*,
                                        const float*, const float*, int64_t, const float*, float*,
                                        float*);
template void cell_pass_backward<double>(int64_t, int64_t, int64_t, int64_t, const double*,
                                         const double*, const double*, const double*,
                                         const double*, const double*, const double*, int64_t,
                                         const double*, double*, double*);

}  // namespace detail
}  // namespace lstmop
