// The production forward driver.
//
// Rows of every workspace are *compact*: step t's valid sequences
// b < step_batch[t] occupy rows step_offset[t] + b, so padding of
// variable-length input is never computed. Per call:
//   1. gather the input into x (N, I) in the compute type;
//   2. per layer and direction (directions possibly on two threads):
//      gather the slot's weights, w_ih (4H, I_l), w_hh (4H, H) (float: as
//      stored, w_hh then packed once for the step product; double:
//      transposed), and bias = b_ih + b_hh (4H); set the state from hx;
//      gates (N, 4H) = x_l * w_ih^T             (one GEMM for all steps)
//      per step t (forward 0..T-1, reverse T-1..0), rows n = step_batch[t]:
//        gates[t] += h_state[:n] * w_hh^T        (recurrent_product.h)
//        cell_pass_forward                        (activations, c/h update,
//                                                  saved tensors, layer output)
//      hy, cy <- state; saved tensors at positions past each sequence's end;
//   3. scatter the last layer's output into `output` (0 in invalid rows).
// bfloat16 with AVX512-BF16: layer 0's input projection multiplies the
// input's and w_ih's bfloat16 values directly (gemm_bf16_nt: the products are
// exact, accumulation in float, ~2x the float GEMM's rate) when the product is
// large enough to pay for oneDNN's primitive lookup and both operands pass
// bf16_operands_normal (no subnormals for the instruction to flush). Deeper
// layers read float layer outputs and use the float GEMM.
#include <algorithm>
#include <type_traits>

#include "common/element_access.h"
#include "gemm/gemm.h"
#include "kernels/cell_pass.h"
#include "driver/drivers.h"
#include "kernels/recurrent_product.h"
#include "driver/threads.h"
#include "common/workspace.h"

namespace lstmop {
namespace detail {
namespace {

// Per-direction scratch.
template <class Acc>
struct DirectionWorkspace {
  // float: w_ih (4H, I_l), w_hh (4H, H) as stored (the GEMMs read them
  // transposed, no strided transposing gather); double: w_ih^T, w_hh^T.
  Workspace<Acc> gates, w_ih, w_hh, bias, bias_tmp, h_state, c_state;
  RecurrentProduct recurrent;  // float: w_hh^T packed for the per-step product
  // Split mode (float, one direction, two threads): hx's h, read by step 0
  // while the parts write h_state; per part and gate block, w_hh^T's columns
  // of the part's hidden units, packed.
  Workspace<Acc> h_init;
  RecurrentProduct part_recurrent[2][4];
};

// Multiply-adds in one half of layer 0's projection from which the bfloat16
// GEMM is used: below, oneDNN's ~40 us primitive lookup costs more than the
// faster product saves.
constexpr double kBf16ProjectionMinMacs = 4194304.0;  // 2^22

template <class Acc, class S>
class ForwardDriver {
  static constexpr bool kRowMajorWeights = std::is_same_v<Acc, float>;

 public:
  ForwardDriver(const LstmDims& d, const TensorView& input, const TensorList& hx,
                const TensorList& params, const ForwardOutputs& out)
      : d_(d), input_(input), hx_(hx), params_(params), out_(out) {
    const int64_t N = d.valid_rows(), G = 4 * d.H, DH = d.D * d.H;
    const int64_t max_in = std::max(d.I, DH);
    arena_.add(x0_, "the input (valid rows, input_size)", N * d.I);
    for (int64_t k = 0; k < std::min<int64_t>(d.L, 2); ++k) {
      arena_.add(y_[k], "a layer's output (valid rows, D*H)", N * DH);
    }
    const int threads = get_num_threads();
    parallel_ = threads >= 2 && d.D == 2;
    if constexpr (std::is_same_v<Acc, float>) {
      split_ = threads >= 2 && d.D == 1 && worth_splitting(d);
    }
    u_split_ = split_units(d.H);
    if constexpr (std::is_same_v<S, BFloat16>) {
      const double half_macs = static_cast<double>(row_half(N, 0).count) * G * d.I;
      bf16_candidate_ = half_macs >= kBf16ProjectionMinMacs && bf16_gemm_available();
      if (bf16_candidate_) {
        arena_.add(x0_bits_, "the input's bfloat16 values (valid rows, input_size)", N * d.I);
        for (int64_t k = 0; k < d.D; ++k) {
          arena_.add(w_ih0_bits_[k], "layer 0's w_ih bfloat16 values (4H, input_size)", G * d.I);
        }
      }
    }
    for (int64_t k = 0; k < (parallel_ ? d.D : 1); ++k) {
      DirectionWorkspace<Acc>& w = dir_[k];
      arena_.add(w.gates, "the gates (valid rows, 4H)", N * G);
      arena_.add(w.w_ih, "w_ih (4H, input_size)", max_in * G);
      arena_.add(w.w_hh, "w_hh (4H, H)", d.H * G);
      arena_.add(w.bias, "the bias (4H)", G);
      arena_.add(w.bias_tmp, "the bias (4H)", G);
      arena_.add(w.h_state, "the hidden state (B, H)", d.B * d.H);
      arena_.add(w.c_state, "the cell state (B, H)", d.B * d.H);
      if constexpr (std::is_same_v<Acc, float>) {
        if (!split_) w.recurrent.allocate(arena_, d.H, G);
        if (split_) {
          arena_.add(w.h_init, "the initial hidden state (B, H)", d.B * d.H);
          for (int p = 0; p < 2; ++p) {
            for (int g = 0; g < 4; ++g) {
              w.part_recurrent[p][g].allocate(arena_, d.H, unit_end(p) - unit_begin(p));
            }
          }
        }
      }
    }
    arena_.commit();
  }

  void run() {
    // The float input also on the bfloat16 path: the fallback should
    // gemm_bf16_nt not run (skipping this gather measured no faster, S6).
    gather_input();
    if (bf16_candidate_) bf16_projection_ = gather_bf16_operands();
    for (int64_t l = 0; l < d_.L; ++l) {
      const Acc* x = l == 0 ? x0_.data() : y_[(l - 1) % 2].data();
      Acc* y = y_[l % 2].data();
      run_tasks(d_.D, parallel_ ? d_.D : 1, [&](int64_t dir) { run_direction(l, dir, x, y); });
    }
    write_output(y_[(d_.L - 1) % 2].data());
    if (!d_.train) {
      // h, c are hy, cy (S, B, H).
      const std::size_t bytes = static_cast<std::size_t>(d_.S * d_.B * d_.H) * sizeof(S);
      std::copy_n(static_cast<const unsigned char*>(out_.hy.data), bytes,
                  static_cast<unsigned char*>(out_.h.data));
      std::copy_n(static_cast<const unsigned char*>(out_.cy.data), bytes,
                  static_cast<unsigned char*>(out_.c.data));
    }
  }

 private:
  void gather_input() {
    const SequenceLayout l = d_.sequence_layout(input_);
    for (int64_t t = 0; t < d_.T; ++t) {
      gather_matrix<Acc>(input_, t * l.t_stride, d_.step_batch[t], l.b_stride, d_.I, l.f_stride,
                         x0_.data() + d_.step_offset[t] * d_.I, d_.I);
    }
  }

  // Layer 0's projection operands as bfloat16 bits (contiguous): the input's
  // valid rows and each direction's w_ih. False if either has a value the
  // bfloat16 GEMM would flush (bf16_operands_normal).
  bool gather_bf16_operands() {
    const auto bits_of = [](const TensorView& v) { return static_cast<const uint16_t*>(v.data); };
    const SequenceLayout l = d_.sequence_layout(input_);
    const uint16_t* in = bits_of(input_);
    for (int64_t t = 0; t < d_.T; ++t) {
      uint16_t* dst = x0_bits_.data() + d_.step_offset[t] * d_.I;
      for (int64_t b = 0; b < d_.step_batch[t]; ++b) {
        const uint16_t* src = in + t * l.t_stride + b * l.b_stride;
        for (int64_t k = 0; k < d_.I; ++k) dst[b * d_.I + k] = src[k * l.f_stride];
      }
    }
    if (!bf16_operands_normal(x0_bits_.data(), d_.valid_rows(), d_.I, d_.I)) return false;
    const int64_t G = 4 * d_.H;
    for (int64_t dir = 0; dir < d_.D; ++dir) {
      const TensorView& w_ih = params_[dir * d_.params_per_slot];
      const uint16_t* w = bits_of(w_ih);
      uint16_t* dst = w_ih0_bits_[dir].data();
      for (int64_t g = 0; g < G; ++g) {
        for (int64_t k = 0; k < d_.I; ++k) dst[g * d_.I + k] = w[g * w_ih.stride(0) + k * w_ih.stride(1)];
      }
      if (!bf16_operands_normal(dst, G, d_.I, d_.I)) return false;
    }
    return true;
  }

  // Saved-tensor rows [slot, t, 0 .. ) of the outputs (contiguous (S, T, B, H)).
  StepSaved<S> saved_at(int64_t s, int64_t t) const {
    const int64_t e = ((s * d_.T + t) * d_.B) * d_.H;
    StepSaved<S> p;
    p.i = static_cast<S*>(out_.i.data) + e;
    p.j = static_cast<S*>(out_.j.data) + e;
    p.f = static_cast<S*>(out_.f.data) + e;
    p.o = static_cast<S*>(out_.o.data) + e;
    p.h = static_cast<S*>(out_.h.data) + e;
    p.c = static_cast<S*>(out_.c.data) + e;
    p.tanhc = static_cast<S*>(out_.tanhc.data) + e;
    return p;
  }

  static StepSaved<S> offset_rows(StepSaved<S> p, int64_t e) {
    p.i += e, p.j += e, p.f += e, p.o += e, p.h += e, p.c += e, p.tanhc += e;
    return p;
  }

  void load_weights(int64_t s, DirectionWorkspace<Acc>& w) const {
    const int64_t G = 4 * d_.H, in_size = d_.slot_input_size[s];
    const int64_t base = s * d_.params_per_slot;
    const TensorView& w_ih = params_[base];
    const TensorView& w_hh = params_[base + 1];
    if constexpr (kRowMajorWeights) {
      gather_matrix<Acc>(w_ih, 0, G, w_ih.stride(0), in_size, w_ih.stride(1), w.w_ih.data(),
                         in_size);
      gather_matrix<Acc>(w_hh, 0, G, w_hh.stride(0), d_.H, w_hh.stride(1), w.w_hh.data(), d_.H);
    } else {
      // Transposed: element (k, g) of w^T is w[g, k].
      gather_matrix<Acc>(w_ih, 0, in_size, w_ih.stride(1), G, w_ih.stride(0), w.w_ih.data(), G);
      gather_matrix<Acc>(w_hh, 0, d_.H, w_hh.stride(1), G, w_hh.stride(0), w.w_hh.data(), G);
    }
    Acc* bias = w.bias.data();
    if (d_.has_biases) {
      const TensorView& b_ih = params_[base + 2];
      const TensorView& b_hh = params_[base + 3];
      gather_matrix<Acc>(b_ih, 0, 1, 0, G, b_ih.stride(0), bias, G);
      gather_matrix<Acc>(b_hh, 0, 1, 0, G, b_hh.stride(0), w.bias_tmp.data(), G);
      for (int64_t g = 0; g < G; ++g) bias[g] += w.bias_tmp.data()[g];
    } else {
      std::fill(bias, bias + G, Acc(0));
    }
  }

  void load_state(int64_t s, DirectionWorkspace<Acc>& w) const {
    const int64_t n = d_.B * d_.H;
    if (d_.has_hx) {
      const TensorView& h0 = hx_[0];
      const TensorView& c0 = hx_[1];
      gather_matrix<Acc>(h0, s * h0.stride(0), d_.B, h0.stride(1), d_.H, h0.stride(2),
                         w.h_state.data(), d_.H);
      gather_matrix<Acc>(c0, s * c0.stride(0), d_.B, c0.stride(1), d_.H, c0.stride(2),
                         w.c_state.data(), d_.H);
    } else {
      std::fill(w.h_state.data(), w.h_state.data() + n, Acc(0));
      std::fill(w.c_state.data(), w.c_state.data() + n, Acc(0));
    }
  }

  // Saved positions (t, b >= step_batch[t]) get the carried state, which is
  // the current content of the state rows b (the final state for the forward
  // direction, hx's for the reverse one before its loop).
  void fill_invalid(int64_t s, const DirectionWorkspace<Acc>& w) const {
    for (int64_t t = 0; t < d_.T; ++t) {
      const int64_t first = d_.step_batch[t];
      if (first == d_.B) continue;
      const int64_t e = first * d_.H;
      cell_pass_fill_invalid<Acc, S>(d_.B - first, d_.H, w.h_state.data() + e,
                                     w.c_state.data() + e, offset_rows(saved_at(s, t), e));
    }
  }

  int64_t unit_begin(int p) const { return p == 0 ? 0 : u_split_; }
  int64_t unit_end(int p) const { return p == 0 ? u_split_ : d_.H; }

  // gates (N, 4H) = x_l (N, I_l) * w_ih^T for one of two fixed halves of the
  // rows (the same calls whatever the thread count, hence the same bits).
  void project_half(int half, int64_t s, int64_t in_size, const Acc* x,
                    DirectionWorkspace<Acc>& w) const {
    const int64_t G = 4 * d_.H;
    const RowHalf part = row_half(d_.valid_rows(), half);
    const int64_t r0 = part.first, rows = part.count;
    if constexpr (std::is_same_v<S, BFloat16>) {
      // Layer 0 (slot s == direction); if the bfloat16 GEMM cannot run, the float one below.
      if (bf16_projection_ && s < d_.D &&
          gemm_bf16_nt(rows, G, in_size, x0_bits_.data() + r0 * in_size, in_size,
                       w_ih0_bits_[s].data(), in_size, w.gates.data() + r0 * G, G)) {
        return;
      }
    }
    if constexpr (kRowMajorWeights) {
      gemm(Transpose::No, Transpose::Yes, rows, G, in_size, Acc(1), x + r0 * in_size, in_size,
           w.w_ih.data(), in_size, Acc(0), w.gates.data() + r0 * G, G);
    } else {
      gemm(Transpose::No, Transpose::No, rows, G, in_size, Acc(1), x + r0 * in_size, in_size,
           w.w_ih.data(), G, Acc(0), w.gates.data() + r0 * G, G);
    }
  }

  // The time loop over all hidden units: the product with the whole packed
  // w_hh^T reading h_state, then the cell pass.
  void time_loop(int64_t s, int64_t dir, DirectionWorkspace<Acc>& w, Acc* y) const {
    const int64_t G = 4 * d_.H, H = d_.H, DH = d_.D * d_.H;
    for (int64_t n = 0; n < d_.T; ++n) {
      const int64_t t = dir == 0 ? n : d_.T - 1 - n;
      const int64_t rows = d_.step_batch[t];
      const int64_t off = d_.step_offset[t];
      Acc* gates = w.gates.data() + off * G;
      // (rows, 4H) += (rows, H) * (H, 4H)
      if constexpr (std::is_same_v<Acc, float>) {
        w.recurrent.accumulate(rows, w.h_state.data(), H, gates, G);
      } else {
        gemm(Transpose::No, Transpose::No, rows, G, H, Acc(1), w.h_state.data(), H,
             w.w_hh.data(), G, Acc(1), gates, G);
      }
      const StepSaved<S> saved = d_.train ? saved_at(s, t) : StepSaved<S>{};
      cell_pass_forward<Acc, S>(rows, H, 0, H, gates, w.bias.data(), w.c_state.data(),
                                w.h_state.data(), y + off * DH + dir * H, DH,
                                d_.train ? &saved : nullptr);
    }
  }

  // Split mode's time loop (forward direction, D = 1) for parts [p0, p1):
  // each part computes the gate columns and the cell pass of its hidden units.
  // A step reads the previous step's h from the layer output y (h_init at
  // step 0), never from h_state, which the parts update in place; with two
  // threads (one part each) the barrier orders step t's writes before step
  // t+1's reads. Every element gets the bits of time_loop: the same fma
  // chain over k from the same C, the same cell arithmetic.
  void split_time_loop(int64_t s, int p0, int p1, PairBarrier* barrier,
                       DirectionWorkspace<Acc>& w, Acc* y) {
    if constexpr (std::is_same_v<Acc, float>) {
      const int64_t G = 4 * d_.H, H = d_.H, DH = d_.D * d_.H;
      for (int64_t t = 0; t < d_.T; ++t) {
        const int64_t rows = d_.step_batch[t];
        const int64_t off = d_.step_offset[t];
        const Acc* h_prev = t == 0 ? w.h_init.data() : y + d_.step_offset[t - 1] * DH;
        const int64_t ld_prev = t == 0 ? H : DH;
        Acc* gates = w.gates.data() + off * G;
        const StepSaved<S> saved = d_.train ? saved_at(s, t) : StepSaved<S>{};
        for (int p = p0; p < p1; ++p) {
          const int64_t u0 = unit_begin(p), u1 = unit_end(p);
          for (int g = 0; g < 4; ++g) {
            w.part_recurrent[p][g].accumulate(rows, h_prev, ld_prev, gates + g * H + u0, G);
          }
          cell_pass_forward<Acc, S>(rows, H, u0, u1, gates, w.bias.data(), w.c_state.data(),
                                    w.h_state.data(), y + off * DH, DH,
                                    d_.train ? &saved : nullptr);
        }
        if (barrier != nullptr) barrier->wait();
      }
    } else {
      (void)s, (void)p0, (void)p1, (void)barrier, (void)w, (void)y;
    }
  }

  void run_direction(int64_t l, int64_t dir, const Acc* x, Acc* y) {
    DirectionWorkspace<Acc>& w = dir_[parallel_ ? dir : 0];
    const int64_t s = l * d_.D + dir;
    const int64_t H = d_.H;
    const int64_t in_size = d_.slot_input_size[s];
    load_weights(s, w);
    load_state(s, w);
    if (d_.train && dir == 1 && d_.packed) fill_invalid(s, w);

    bool done = false;
    if constexpr (std::is_same_v<Acc, float>) {
      if (split_) {
        for (int p = 0; p < 2; ++p) {
          for (int g = 0; g < 4; ++g) {
            w.part_recurrent[p][g].set_b_from_rows(w.w_hh.data() + (g * H + unit_begin(p)) * H,
                                                   H);
          }
        }
        std::copy_n(w.h_state.data(), d_.B * H, w.h_init.data());
        done = run_pair([&](int p) {
          project_half(p, s, in_size, x, w);
          barrier_.wait();
          split_time_loop(s, p, p + 1, &barrier_, w, y);
        });
        if (!done) {  // no second thread: the same work on this one
          project_half(0, s, in_size, x, w);
          project_half(1, s, in_size, x, w);
          split_time_loop(s, 0, 2, nullptr, w, y);
          done = true;
        }
      } else {
        w.recurrent.set_b_from_rows(w.w_hh.data(), H);
      }
    }
    if (!done) {
      project_half(0, s, in_size, x, w);
      project_half(1, s, in_size, x, w);
      time_loop(s, dir, w, y);
    }
    const TensorView& hy = out_.hy;
    const TensorView& cy = out_.cy;
    scatter_matrix<Acc>(w.h_state.data(), H, d_.B, H, hy, s * d_.B * H, H, 1);
    scatter_matrix<Acc>(w.c_state.data(), H, d_.B, H, cy, s * d_.B * H, H, 1);
    if (d_.train && dir == 0 && d_.packed) fill_invalid(s, w);
  }

  void write_output(const Acc* y) const {
    const TensorView& output = out_.output;
    const SequenceLayout l = d_.sequence_layout(output);
    const int64_t DH = d_.D * d_.H;
    for (int64_t t = 0; t < d_.T; ++t) {
      const int64_t rows = d_.step_batch[t];
      scatter_matrix<Acc>(y + d_.step_offset[t] * DH, DH, rows, DH, output, t * l.t_stride,
                          l.b_stride, l.f_stride);
      if (rows < d_.B) {
        zero_matrix(output, t * l.t_stride + rows * l.b_stride, d_.B - rows, l.b_stride, DH,
                    l.f_stride);
      }
    }
  }

  const LstmDims& d_;
  const TensorView& input_;
  const TensorList& hx_;
  const TensorList& params_;
  const ForwardOutputs& out_;
  bool parallel_ = false;
  bool split_ = false;
  bool bf16_candidate_ = false;   // bfloat16, AVX512-BF16, layer 0's projection large enough
  bool bf16_projection_ = false;  // ... and its operands all normal: gemm_bf16_nt
  int64_t u_split_ = 0;
  PairBarrier barrier_;
  WorkspaceArena arena_;
  Workspace<Acc> x0_;
  Workspace<Acc> y_[2];
  Workspace<uint16_t> x0_bits_, w_ih0_bits_[2];
  DirectionWorkspace<Acc> dir_[2];
};

}  // namespace

void run_lstm_forward(const LstmDims& dims, const TensorView& input, const TensorList& hx,
                      const TensorList& params, const ForwardOutputs& out) {
  switch (dims.dtype) {
    case DType::Float32: ForwardDriver<float, float>(dims, input, hx, params, out).run(); break;
    case DType::Float64: ForwardDriver<double, double>(dims, input, hx, params, out).run(); break;
    case DType::Float16: ForwardDriver<float, Half>(dims, input, hx, params, out).run(); break;
    case DType::BFloat16:
      ForwardDriver<float, BFloat16>(dims, input, hx, params, out).run();
      break;
    case DType::Int64: break;  // rejected by validation
  }
}

}  // namespace detail
}  // namespace lstmop
