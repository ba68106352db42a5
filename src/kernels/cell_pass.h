// Internal: the fused element-wise passes of one LSTM step, run right after
// the step's recurrent product (forward) or before its dh product (backward).
// Each dispatches to the body kernel_choice() picks (cell_pass_isa.h).
//
// Acc is the compute type (float for float32/float16/bfloat16, double for
// float64); Storage is the type of the saved tensors (float, double, Half,
// BFloat16). Gate blocks along 4H are in PyTorch order i, f, g, o.
#pragma once

#include <cstdint>

namespace lstmop {
namespace detail {

// Where one step's saved activations go: rows (sequences) of [slot, t] in the
// (D*L, T, B, H) saved tensors, each (rows, H) with row stride H. h may be
// null: with projections the saved h is (rows, P), the projection of the
// cell's output, and the driver writes it.
template <class Storage>
struct StepSaved {
  Storage* i = nullptr;
  Storage* j = nullptr;
  Storage* f = nullptr;
  Storage* o = nullptr;
  Storage* h = nullptr;
  Storage* c = nullptr;
  Storage* tanhc = nullptr;
};

// For r < rows, u_begin <= k < u_end (a range of the hidden units; 0, H for
// all), with a = gates[r, :] + bias (pre-activations of the
// step, input and recurrent products already summed):
//   i, f, o = sigmoid(a_i, a_f, a_o); j = tanh(a_g)
//   c_state[r, k] = f * c_state[r, k] + i * j;  h_state[r, k] = o * tanh(c_state)
//   layer_out[r * ld_out + k] = h_state[r, k]
// and, when saved != nullptr, writes i, j, f, o, h, c, tanhc of the step.
// gates (rows, 4H) row stride 4H; bias (4H); states (rows, H) row stride H.
template <class Acc, class Storage>
void cell_pass_forward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end, const Acc* gates,
                       const Acc* bias, Acc* c_state, Acc* h_state, Acc* layer_out,
                       int64_t ld_out, const StepSaved<Storage>* saved);

// Saved tensors at positions a sequence does not reach (rows of the step past
// its batch size): 0 in i, j, f, o; the carried state in h, c; tanh(c) in
// tanhc, with the forward pass's tanh (so the bits of the last valid step's).
// h_carried, c_carried: (rows, H) row stride H (h_carried unread when saved.h
// is null).
template <class Acc, class Storage>
void cell_pass_fill_invalid(int64_t rows, int64_t H, const Acc* h_carried, const Acc* c_carried,
                            const StepSaved<Storage>& saved);

// One step of the backward, for r < rows, u_begin <= k < u_end:
//   dh = dh_state[r, k] + d_out[r * ld_out + k]
//   dc = dc_state[r, k] + dh * o * (1 - tanhc^2)
//   d_gates[r, :] = (dc * j * i(1-i), dc * c_prev * f(1-f), dc * i * (1-j^2), dh * tanhc * o(1-o))
//   dc_state[r, k] = dc * f
// i, j, f, o, tanhc, c_prev: (rows, H) row stride H; d_gates (rows, 4H).
// Every element's value is the same whichever unit range computes it.
// dh_state is only read: the caller overwrites it with d_gates * w_hh.
template <class Acc>
void cell_pass_backward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end, const Acc* i,
                        const Acc* j, const Acc* f, const Acc* o, const Acc* tanhc,
                        const Acc* c_prev, const Acc* d_out, int64_t ld_out,
                        const Acc* dh_state, Acc* dc_state, Acc* d_gates);
// cell_pass_backward<float> on bfloat16 saved tensors (bits, rows of H, read
// widened): the same bits as on float copies of them, without the copies.
void cell_pass_backward_bf16(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                             const uint16_t* i, const uint16_t* j, const uint16_t* f,
                             const uint16_t* o, const uint16_t* tanhc, const uint16_t* c_prev,
                             const float* d_out, int64_t ld_out, const float* dh_state,
                             float* dc_state, float* d_gates);

}  // namespace detail
}  // namespace lstmop
