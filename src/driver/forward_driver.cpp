// The production forward driver.
//
// Rows of every workspace are compact (sequence_rows.h). R is the width of h:
// P with projections, else H. Per call:
//   1. gather the input into x (N, I) in the compute type;
//   2. per layer and direction (directions possibly on two threads):
//      gather the slot's weights w_ih (4H, I_l), w_hh (4H, R) and
//      bias = b_ih + b_hh (4H) (and w_hr (P, H)); set the state from hx;
//      float compute (float32, float16, bfloat16): pack both weights for the
//      fused step (kernels/step_forward.h); in the projection form (small
//      batches, lstm_plan.h) first gates (N, 4H) = x_l * w_ih^T in two fixed
//      row halves; then per step t (forward 0..T-1, reverse T-1..0), rows
//      n = step_batch[t], one fused step: the step's products, activations,
//      c/h update, saved tensors and layer output, reading h from one of two
//      (B, R) buffers and writing the other;
//      double: gates = x_l * w_ih^T, then per step gates[t] += h * w_hh^T and
//      the cell pass (kernels/cell_pass.h);
//      projections: the step (or cell pass) writes m = o * tanh(c) (rows, H)
//      instead of h, and right after it, while m is in cache, one product
//      h (rows, P) = m * w_hr^T (float: on w_hr packed once per call,
//      kernels/recurrent_product.h) writes h into the layer output, the
//      next step's h buffer and the saved h (16-bit: m and h rounded to the
//      dtype, the operands the products take);
//      hy, cy <- the final states; saved tensors at positions past each
//      sequence's end;
//   3. scatter the last layer's output into `output` (0 in invalid rows).
// Copies are skipped where the caller's tensor already has the layout a step
// reads or writes (sequence_rows.h): the input read in place as x (step 1),
// the output written in place by the last layer (step 3), float weights with
// unit column stride packed or multiplied straight from the caller's memory;
// a bfloat16 call on bfloat16 products likewise reads the input's bits and
// writes the last layer's bits in place.
// bfloat16 with AVX512-BF16 in the projection form: layer 0's input product
// multiplies the input's and w_ih's bfloat16 values directly (gemm_bf16_nt:
// the products are exact, accumulation in float, ~2x the float GEMM's rate)
// when the plan makes it a candidate (large enough to pay for oneDNN's
// primitive lookup) and both operands pass bf16_operands_normal (no
// subnormals for the instruction to flush).
// bfloat16 products in the matmul form (CPUs with AMX tiles: ForwardPlan::
// bf16_matmul_step): gates = x_l w_ih^T on the bits (gemm_bf16), then per
// step gates[t] += h w_hh^T on oneDNN's matmul (gemm/bf16_matmul_step.h),
// the cell pass, h rounded to bfloat16.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "common/element_access.h"
#include "common/half_convert.h"
#include "common/float_environment.h"
#include "common/workspace.h"
#include "driver/drivers.h"
#include "driver/sequence_rows.h"
#include "driver/threads.h"
#include "driver/unit_balance.h"
#include "gemm/bf16_matmul_step.h"
#include "gemm/gemm.h"
#include "kernels/cell_pass.h"
#include "kernels/cpu_features.h"
#include "kernels/recurrent_product.h"
#include "kernels/recurrent_rows.h"
#include "kernels/step_forward.h"
#include "kernels/recurrent_product_bf16.h"
#include "kernels/step_forward_amx.h"
#include "kernels/step_forward_bf16.h"
#include "plan/bidirectional_threads.h"
#include "plan/lstm_plan.h"

namespace lstmop {
namespace detail {
namespace {

// Per-direction scratch.
template <class Acc>
struct DirectionWorkspace {
  // float: w_ih (4H, I_l), w_hh (4H, R) as stored (packed into `step`, and
  // w_ih read transposed by the projection form's GEMM); double: w_ih^T,
  // w_hh^T.
  Workspace<Acc> gates, w_ih, w_hh, bias, bias_tmp, c_state;
  // The weights the slot's products read: the caller's when they are of the
  // compute type with unit column stride (read in place), else w_ih / w_hh
  // (float; double keeps its transposed copies); ld: their row strides.
  const Acc* w_ih_rows = nullptr;
  const Acc* w_hh_rows = nullptr;
  int64_t ld_ih = 0, ld_hh = 0;
  // float: h[n % 2] is step n's input h (B, R), h[(n + 1) % 2] its output
  // (both start as hx's h); double: h[0] is the hidden state.
  Workspace<Acc> h[2];
  ForwardStepWeights step;  // float: w_ih and w_hh packed for the fused step
  // step_input: one step's rows of the layer-0 input (B, I), one buffer per
  // part of split mode (each part gathers its own copy).
  Workspace<Acc> x_step[2];
  // Projections: w_hr (P, H) as stored; one step's m = o * tanh(c) (B, H);
  // float: w_hr^T (H, P) packed for h = m * w_hr^T.
  Workspace<Acc> w_hr, cell_output;
  RecurrentProduct projection;
  // bf16_products: the steps' h operands (as h), and the weights packed for them.
  Workspace<uint16_t> h_bits[2];
  Bf16StepWeights bf16_step;
  // The matmul form: the weights' bits (w_ih (4H, I_l) for the layer's input
  // product, w_hh (4H, H) packed into `matmul` for the steps' products).
  Workspace<uint16_t> w_ih_bits, w_hh_bits;
  Bf16MatmulStep matmul;
  // ... its steps on lstmop's AMX tiles (step_forward_amx.h): w_hh packed
  // for them, and the steps' h operands (B, amx_k_padded(H)), zero past H;
  // w_ih packed for them where the step takes its input product too.
  Workspace<uint16_t> amx_w_hh, amx_h_bits[2], amx_w_ih;
};

// A layer's input and output, the float values and (bf16_products) the
// products' bfloat16 operands: (valid rows, I_l) and (valid rows, D*H).
template <class Acc>
struct Layer {
  const Acc* x;
  Acc* y;
  const uint16_t* x_bits;
  uint16_t* y_bits;
};

template <class Acc, class Storage>
class ForwardDriver {
  static constexpr bool kFloat = std::is_same_v<Acc, float>;

 public:
  ForwardDriver(const LstmProblem& p, const TensorView& input, const TensorList& hx,
                const TensorList& params, const ForwardOutputs& out)
      : p_(p), plan_(plan_forward(p)), input_(input), hx_(hx), params_(params), out_(out) {
    const ThreadPlan& t = plan_.threads;
    // The input read and the last layer's output written in place when they
    // already lie as compact rows of the compute type (sequence_rows.h).
    // A bfloat16 call on bfloat16 products likewise reads the input's bits
    // and writes the last layer's bits in place.
    if (!bits_only()) {
      input_in_place_ = compact_rows_in_place<Acc>(p, input, p.I);
      output_in_place_ = compact_rows_in_place<Acc>(p, out.output, p.D * p.R);
      // The fused step reading layer 0's input from a copy: gathered step by
      // step into a (B, I) buffer that stays in cache, not all at once.
      step_input_ = kFloat && input_in_place_ == nullptr && plan_.step_concatenated &&
                    !plan_.bf16_products;
      if (step_input_ && !p.packed_rows) input_layout_ = p.sequence_layout(input);
    } else {
      input_bits_in_place_ = static_cast<const uint16_t*>(
          compact_rows_in_place_of(p, input, p.I, DType::BFloat16));
      output_bits_in_place_ = static_cast<uint16_t*>(
          compact_rows_in_place_of(p, out.output, p.D * p.H, DType::BFloat16));
    }
    arena_.add(x0_, "the input (valid rows, input_size)",
               input_in_place_ != nullptr || step_input_ ? 1 : plan_.input);
    for (int64_t k = 0; k < plan_.layer_outputs; ++k) {
      // Layers 0..L-2 alternate between y_[0] and y_[1]; the last one's
      // output goes into y_[(L-1) % 2] unless written in place.
      const bool used = output_in_place_ == nullptr || k < p.L - 1;
      arena_.add(y_[k], "a layer's output (valid rows, D*R)", used ? plan_.layer_output : 1);
    }
    if (plan_.bf16_products) {
      arena_.add(x0_bits_, "the input's bfloat16 values (valid rows, input_size)",
                 input_bits_in_place_ != nullptr ? 1 : plan_.input_bits);
      for (int64_t k = 0; k < plan_.layer_outputs; ++k) {
        const bool used = output_bits_in_place_ == nullptr || k < p.L - 1;
        arena_.add(y_bits_[k], "a layer's output's bfloat16 values (valid rows, D*H)",
                   used ? plan_.layer_output_bits : 1);
      }
    }
    const int64_t max_in = std::max(p.I, p.D * p.R);
    if (amx_form_) amx_form_ = matmul_form_ && amx_step_supported(p.H);
    if (matmul_form_ && !amx_form_) {
      const std::vector<int64_t> rows = distinct_step_batches(p);
      for (int64_t k = 0; k < t.direction_workspaces && matmul_form_; ++k) {
        matmul_form_ = !rows.empty() && dir_[k].matmul.prepare(p.H, 4 * p.H, Transpose::Yes,
                                                               rows, p.H, 4 * p.H, true);
      }
    }
    for (int64_t k = 0; k < t.direction_workspaces; ++k) {
      DirectionWorkspace<Acc>& w = dir_[k];
      if (plan_.gates > 0) arena_.add(w.gates, "the gates (valid rows, 4H)", plan_.gates);
      arena_.add(w.w_ih, "w_ih (4H, input_size)", plan_.w_ih);
      arena_.add(w.w_hh, "w_hh (4H, R)", plan_.w_hh);
      arena_.add(w.bias, "the bias (4H)", plan_.bias);
      arena_.add(w.bias_tmp, "the bias (4H)", plan_.bias);
      arena_.add(w.c_state, "the cell state (B, H)", plan_.state);
      for (Workspace<Acc>& h : w.h) arena_.add(h, "the hidden state (B, R)", plan_.hidden_state);
      for (Workspace<Acc>& x : w.x_step) {
        arena_.add(x, "one step's input (B, input_size)", step_input_ ? p.B * p.I : 1);
      }
      if (p.projections()) {
        arena_.add(w.w_hr, "w_hr (P, H)", plan_.w_hr);
        arena_.add(w.cell_output, "the cell's output m = o * tanh(c) (B, H)",
                   plan_.cell_output);
        if constexpr (kFloat) w.projection.allocate(arena_, p.H, p.P);
      }
      if (plan_.bf16_products) {  // never with projections (lstm_plan.h): R = H
        for (Workspace<uint16_t>& h : w.h_bits) {
          arena_.add(h, "the hidden state's bfloat16 values (B, H)", plan_.state_bits);
        }
        if (matmul_form_) {
          arena_.add(w.w_ih_bits, "w_ih's bfloat16 values (4H, input_size)", plan_.w_ih_bits);
          arena_.add(w.w_hh_bits, "w_hh's bfloat16 values (4H, H)", plan_.w_hh_bits);
          const int64_t kp = amx_k_padded(p.H);
          arena_.add(w.amx_w_hh, "w_hh packed for AMX tiles",
                     amx_form_ ? amx_packed_size(p.H) : 1);
          for (Workspace<uint16_t>& h : w.amx_h_bits) {
            arena_.add(h, "the hidden state's bfloat16 values for AMX tiles (B, H padded to 32)",
                       amx_form_ ? p.B * kp : 1);
          }
          bool input_on_tiles = false;
          for (int64_t slot = 0; slot < p.slots; ++slot) {
            input_on_tiles = input_on_tiles || amx_input_on_tiles(p.slot_input_size[slot]);
          }
          arena_.add(w.amx_w_ih, "w_ih packed for AMX tiles",
                     amx_form_ && input_on_tiles ? amx_packed_size(p.H, max_in) : 1);
        } else if (bf16_projection()) {
          arena_.add(w.w_ih_bits, "w_ih's bfloat16 values (4H, input_size)", plan_.w_ih_bits);
          w.bf16_step.allocate(arena_, p.H, 0, p.H);
        } else {
          w.bf16_step.allocate(arena_, p.H, max_in, p.H);
        }
      } else if (kFloat && !plan_.unpacked_steps) {
        // Room for the widest layer input; each slot packs its own sizes.
        const bool input_rows = plan_.step_concatenated || plan_.step_chained;
        w.step.allocate(arena_, plan_.step_isa, p.H, input_rows ? max_in : 0, p.R);
      }
    }
    arena_.commit();
  }

  void run() {
    const Acc* x0 = input_in_place_;
    const uint16_t* x0_bits = x0_bits_.data();
    if (input_bits_in_place_ != nullptr) {
      x0_bits = input_bits_in_place_;
    } else if (bits_only()) {
      gather_input_bits();
    } else if (x0 == nullptr && !step_input_) {
      in_step_halves(p_, plan_.threads.row_half_threads, [&](int64_t t0, int64_t t1) {
        gather_valid_rows<Acc>(p_, input_, p_.I, x0_.data(), t0, t1);
      });
      x0 = x0_.data();
    }
    if (plan_.bf16_products && !bits_only()) {
      // The products' operands: the input's values rounded to bfloat16 (float32 calls).
      if constexpr (kFloat) floats_to_bfloat16s(x0, x0_bits_.data(), p_.valid_rows() * p_.I);
    }
    const bool parallel = plan_.threads.measure_directions && plan_.threads.direction_threads == 2;
    int64_t direction_cpu[2] = {0, 0};
    for (int64_t l = 0; l < p_.L; ++l) {
      const bool last = l == p_.L - 1;
      Acc* y = last && output_in_place_ != nullptr ? output_in_place_ : y_[l % 2].data();
      uint16_t* y_bits = last && output_bits_in_place_ != nullptr ? output_bits_in_place_
                                                                  : y_bits_[l % 2].data();
      const Layer<Acc> layer{l == 0 ? x0 : y_[(l - 1) % 2].data(), y,
                        l == 0 ? x0_bits : y_bits_[(l - 1) % 2].data(), y_bits};
      run_tasks(p_.D, plan_.threads.direction_threads, [&](int64_t dir) {
        // Directions in parallel: each thread's CPU time for
        // bidirectional_threads.h (distinct elements, read after the join).
        const int64_t from = parallel ? thread_cpu_ns() : 0;
        run_direction(l, dir, layer);
        if (parallel) direction_cpu[dir] += thread_cpu_ns() - from;
      });
    }
    if (parallel) {
      BidirectionalThreads::record_parallel(direction_cpu[0], direction_cpu[1]);
    } else if (p_.D == 2 && plan_.threads.threading == Threading::SplitUnits) {
      BidirectionalThreads::record_split(UnitBalance::last_boundary(p_.H), p_.H,
                                         plan_.threads.units[0].end);
    }
    if (bits_only()) {
      if (output_bits_in_place_ == nullptr) scatter_output_bits(y_bits_[(p_.L - 1) % 2].data());
    } else if (output_in_place_ == nullptr) {
      in_step_halves(p_, plan_.threads.row_half_threads, [&](int64_t t0, int64_t t1) {
        scatter_valid_rows<Acc>(p_, y_[(p_.L - 1) % 2].data(), p_.D * p_.R, out_.output, t0, t1);
      });
    }
    if (!p_.train) {
      // h, c are hy (D*L, B, R), cy (D*L, B, H).
      const auto bytes = [&](int64_t width) {
        return static_cast<std::size_t>(p_.slots * p_.B * width) * sizeof(Storage);
      };
      std::copy_n(static_cast<const unsigned char*>(out_.hy.data), bytes(p_.R),
                  static_cast<unsigned char*>(out_.h.data));
      std::copy_n(static_cast<const unsigned char*>(out_.cy.data), bytes(p_.H),
                  static_cast<unsigned char*>(out_.c.data));
    }
  }

 private:
  // The fused bfloat16 step in its projection form (small batches: the plan's
  // choice; where the matmul form was planned but could not be prepared, the
  // fused step runs concatenated).
  bool bf16_projection() const {
    return plan_.bf16_products && !plan_.bf16_matmul_step && !plan_.step_concatenated;
  }

  // A bfloat16 call on bfloat16 products (never with projections: R = H)
  // keeps every operand and layer output as bits (exactly its values): no
  // float copy of the input, the weights or the layer outputs.
  bool bits_only() const {
    return std::is_same_v<Storage, BFloat16> && plan_.bf16_products;
  }

  // x0_bits (N, I) <- the input's bits at the valid rows (a bfloat16 call).
  void gather_input_bits() {
    const SequenceLayout l = p_.sequence_layout(input_);
    const uint16_t* in = static_cast<const uint16_t*>(input_.data);
    for (int64_t t = 0; t < p_.T; ++t) {
      uint16_t* dst = x0_bits_.data() + p_.step_offset[t] * p_.I;
      for (int64_t b = 0; b < p_.step_batch[t]; ++b) {
        const uint16_t* src = in + p_.row_offset(input_, l, t, b);
        for (int64_t k = 0; k < p_.I; ++k) dst[b * p_.I + k] = src[k * l.f_stride];
      }
    }
  }

  // output (a bfloat16 call, contiguous) <- the last layer's bits, zeros in invalid rows.
  void scatter_output_bits(const uint16_t* y) const {
    const SequenceLayout l = p_.sequence_layout(out_.output);
    const int64_t DH = p_.D * p_.H;
    uint16_t* out = static_cast<uint16_t*>(out_.output.data);
    for (int64_t t = 0; t < p_.T; ++t) {
      // packed_rows: the valid rows only.
      for (int64_t b = 0; b < (p_.packed_rows ? p_.step_batch[t] : p_.B); ++b) {
        uint16_t* dst = out + p_.row_offset(out_.output, l, t, b);
        const bool valid = b < p_.step_batch[t];
        const uint16_t* src = y + (p_.step_offset[t] + b) * DH;
        for (int64_t k = 0; k < DH; ++k) dst[k * l.f_stride] = valid ? src[k] : uint16_t{0};
      }
    }
  }

  // Saved-tensor rows [slot, t, 0 .. ) of the outputs (contiguous (D*L, T, B, H);
  // h (D*L, T, B, R)).
  StepSaved<Storage> saved_at(int64_t s, int64_t t) const {
    const int64_t e = ((s * p_.T + t) * p_.B) * p_.H;
    StepSaved<Storage> v;
    v.i = static_cast<Storage*>(out_.i.data) + e;
    v.j = static_cast<Storage*>(out_.j.data) + e;
    v.f = static_cast<Storage*>(out_.f.data) + e;
    v.o = static_cast<Storage*>(out_.o.data) + e;
    v.h = static_cast<Storage*>(out_.h.data) + ((s * p_.T + t) * p_.B) * p_.R;
    v.c = static_cast<Storage*>(out_.c.data) + e;
    v.tanhc = static_cast<Storage*>(out_.tanhc.data) + e;
    return v;
  }

  // Rows from `first` on: e_cell = first * H elements into the H-wide tensors,
  // e_hidden = first * R into h.
  static StepSaved<Storage> offset_rows(StepSaved<Storage> v, int64_t e_cell, int64_t e_hidden) {
    v.i += e_cell, v.j += e_cell, v.f += e_cell, v.o += e_cell, v.c += e_cell;
    v.tanhc += e_cell;
    v.h += e_hidden;
    return v;
  }

  void load_weights(int64_t s, DirectionWorkspace<Acc>& w) const {
    const int64_t G = 4 * p_.H, in_size = p_.slot_input_size[s];
    const int64_t base = s * p_.params_per_slot;
    const TensorView& w_ih = params_[base];
    const TensorView& w_hh = params_[base + 1];
    if constexpr (kFloat) {
      if (!weights_as_bits(s)) {
        w.w_ih_rows = weight_rows<Acc>(w_ih, G, in_size, w.w_ih.data(), &w.ld_ih);
        w.w_hh_rows = weight_rows<Acc>(w_hh, G, p_.R, w.w_hh.data(), &w.ld_hh);
      }
    } else {
      // Transposed: element (k, g) of w^T is w[g, k].
      gather_matrix<Acc>(w_ih, 0, in_size, w_ih.stride(1), G, w_ih.stride(0), w.w_ih.data(), G);
      gather_matrix<Acc>(w_hh, 0, p_.R, w_hh.stride(1), G, w_hh.stride(0), w.w_hh.data(), G);
    }
    if (p_.projections()) {
      gather_weight<Acc>(params_[p_.w_hr_index(s)], p_.P, p_.H, w.w_hr.data());
      if constexpr (kFloat) w.projection.set_b_from_rows(w.w_hr.data(), p_.H);
    }
    Acc* bias = w.bias.data();
    if (p_.has_biases) {
      const TensorView& b_ih = params_[base + 2];
      const TensorView& b_hh = params_[base + 3];
      gather_matrix<Acc>(b_ih, 0, 1, 0, G, b_ih.stride(0), bias, G);
      gather_matrix<Acc>(b_hh, 0, 1, 0, G, b_hh.stride(0), w.bias_tmp.data(), G);
      for (int64_t g = 0; g < G; ++g) bias[g] += w.bias_tmp.data()[g];
    } else {
      std::fill(bias, bias + G, Acc(0));
    }
  }

  // A bfloat16 call's weights packed straight from their bits (rows with unit
  // column stride).
  bool weights_as_bits(int64_t s) const {
    const int64_t base = s * p_.params_per_slot;
    return bits_only() && params_[base].stride(1) == 1 && params_[base + 1].stride(1) == 1;
  }

  // h[0] (and for float h[1]) (B, R) and c_state (B, H) <- hx of slot s
  // (zeros without hx).
  void load_state(int64_t s, DirectionWorkspace<Acc>& w) const {
    const TensorView* h0 = p_.has_hx ? &hx_[0] : nullptr;
    const TensorView* c0 = p_.has_hx ? &hx_[1] : nullptr;
    gather_slot_rows<Acc>(h0, s, 0, p_.B, p_.R, w.h[0].data(), 0, p_.R);
    gather_slot_rows<Acc>(c0, s, 0, p_.B, p_.H, w.c_state.data(), 0, p_.H);
    if constexpr (kFloat) std::copy_n(w.h[0].data(), p_.B * p_.R, w.h[1].data());
  }

  // Saved positions (t, b >= step_batch[t]) get the carried state: rows b of
  // h_carried (B, R) and c_state (the final state for the forward direction,
  // hx's for the reverse one before its loop).
  void fill_invalid(int64_t s, const Acc* h_carried, const DirectionWorkspace<Acc>& w) const {
    for (int64_t t = 0; t < p_.T; ++t) {
      const int64_t first = p_.step_batch[t];
      if (first == p_.B) continue;
      const int64_t e = first * p_.H, e_hidden = first * p_.R;
      StepSaved<Storage> saved = offset_rows(saved_at(s, t), e, e_hidden);
      if (p_.projections()) {
        // h is R wide: written here, the cell-wide tensors by the pass.
        for (int64_t k = 0; k < (p_.B - first) * p_.R; ++k) {
          saved.h[k] = StoreAs<Storage>::from(h_carried[e_hidden + k]);
        }
        saved.h = nullptr;
      }
      cell_pass_fill_invalid<Acc, Storage>(p_.B - first, p_.H, h_carried + e_hidden,
                                           w.c_state.data() + e, saved);
    }
  }

  // Projections, after step t's cell: h (rows, P) = m (rows, H) * w_hr^T into
  // h_state (rows, P), right after the step while m is in cache (float: on
  // the packed w_hr; 16-bit: rounded to the dtype, the value the call stores
  // and the next products take); then into the layer output (ld D*P) and,
  // when training, the saved h.
  // Columns [c0, c1) of h only (split mode's parts: c0 a multiple of 16;
  // every column gets the bits of the whole product's).
  void project_step(int64_t rows, DirectionWorkspace<Acc>& w, Acc* h_state, Acc* layer_out,
                    Storage* saved_h, int64_t c0 = 0, int64_t c1 = -1) const {
    const int64_t P = p_.P, H = p_.H, DP = p_.D * P;
    if (c1 < 0) c1 = P;
    if constexpr (kFloat) {
      for (int64_t r = 0; r < rows; ++r) std::fill(h_state + r * P + c0, h_state + r * P + c1, 0.0f);
      w.projection.accumulate_columns(rows, w.cell_output.data(), H, h_state, P, c0, c1);
      round_as_stored(rows, c0, c1, h_state, P);
    } else {
      gemm(Transpose::No, Transpose::Yes, rows, P, H, Acc(1), w.cell_output.data(), H,
           w.w_hr.data(), H, Acc(0), h_state, P);
    }
    for (int64_t r = 0; r < rows; ++r) {
      std::copy(h_state + r * P + c0, h_state + r * P + c1, layer_out + r * DP + c0);
    }
    if (saved_h != nullptr) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = c0; k < c1; ++k) {
          saved_h[r * P + k] = StoreAs<Storage>::from(h_state[r * P + k]);
        }
      }
    }
  }

  // gates (N, 4H) = x_l (N, I_l) * w_ih^T for one of the plan's two fixed
  // halves of the rows (the same calls whatever the thread count, hence the
  // same bits).
  void project_half(int half, int64_t in_size, const Acc* x, DirectionWorkspace<Acc>& w) const {
    const int64_t G = 4 * p_.H;
    const RowHalf part = plan_.threads.row_halves[half];
    const int64_t r0 = part.first, rows = part.count;
    if constexpr (kFloat) {
      gemm(Transpose::No, Transpose::Yes, rows, G, in_size, Acc(1), x + r0 * in_size, in_size,
           w.w_ih_rows, w.ld_ih, Acc(0), w.gates.data() + r0 * G, G);
    } else {
      gemm(Transpose::No, Transpose::No, rows, G, in_size, Acc(1), x + r0 * in_size, in_size,
           w.w_ih.data(), G, Acc(0), w.gates.data() + r0 * G, G);
    }
  }

  // float: the time loop of the fused step for hidden-unit parts [p0, p1) of
  // the plan (all units, or split mode's halves; on two threads the
  // balance's ranges, unit_balance.h). Step n reads h[n % 2] and writes
  // h[(n + 1) % 2], so the parts of one step never read what another part of
  // it writes; with two threads (one part each) the barrier orders step n's
  // writes before step n + 1's reads (with projections a second one orders
  // every unit's m before the parts' columns of h). Rows a step does not
  // reach keep their value in both buffers (hx's until the reverse direction
  // reaches them). Every element's bits are the same whatever the parts.
  void step_loop(int64_t s, int64_t dir, int p0, int p1, PairBarrier* barrier,
                 UnitBalance* balance, DirectionWorkspace<Acc>& w, const Acc* x, Acc* y) const {
    if constexpr (kFloat) {
      const int64_t G = 4 * p_.H, DR = p_.D * p_.R, in_size = p_.slot_input_size[s];
      const bool projections = p_.projections();
      UnitBalance::Local local = balance != nullptr ? balance->start() : UnitBalance::Local{};
      for (int64_t n = 0; n < p_.T; ++n) {
        int64_t busy_from = balance != nullptr ? UnitBalance::now() : 0;
        const int64_t t = dir == 0 ? n : p_.T - 1 - n;
        const int64_t off = p_.step_offset[t];
        ForwardStepArgs a;
        a.rows = p_.step_batch[t];
        if (plan_.step_concatenated && x == nullptr) {  // step_input_, layer 0
          Acc* rows = w.x_step[p0].data();
          gather_step_rows<Acc>(p_, input_, input_layout_, t, p_.I, rows);
          a.x = rows;
          a.ld_x = p_.I;
        } else if (plan_.step_concatenated) {
          a.x = x + off * in_size;
          a.ld_x = in_size;
        } else {
          a.gx = w.gates.data() + off * G;
          a.gx_chained = plan_.step_chained;
        }
        a.h_prev = w.h[n % 2].data();
        a.ld_h = p_.R;
        a.k_chunk = kernels::kernel_choice().step_k_chunk;
        a.bias = w.bias.data();
        a.stream_saved = plan_.stream_saved;
        a.alone = barrier == nullptr;
        a.c_state = w.c_state.data();
        Acc* layer_out = y + off * DR + dir * p_.R;
        if (projections) {  // the step's output is m (rows, H); h is its projection
          a.h_out = w.cell_output.data();
          a.ld_out = p_.H;
        } else {
          a.h_out = layer_out;
          a.ld_out = DR;
          a.h_next = w.h[(n + 1) % 2].data();
        }
        const StepSaved<Storage> saved = p_.train ? saved_at(s, t) : StepSaved<Storage>{};
        StepSaved<Storage> cell_saved = saved;
        if (projections) cell_saved.h = nullptr;
        for (int part = p0; part < p1; ++part) {
          step_units(balance, local, part, &a.u_begin, &a.u_end);
          step_forward<Storage>(w.step, a, p_.train ? &cell_saved : nullptr);
        }
        int64_t busy = 0;
        if (projections) {
          Acc* h_state = w.h[(n + 1) % 2].data();
          if (barrier == nullptr) {  // one thread: all of h
            project_step(a.rows, w, h_state, layer_out, saved.h);
          } else {
            // Two threads: every unit's m written before either part
            // projects its columns of h (the part's time around the wait).
            busy = UnitBalance::now() - busy_from;
            barrier->wait();
            busy_from = UnitBalance::now();
            const UnitRange c = plan_.threads.proj_columns[p0];
            project_step(a.rows, w, h_state, layer_out, saved.h, c.begin, c.end);
          }
        }
        end_step(barrier, balance, local, p0, n, busy_from - busy);
      }
      if (balance != nullptr) balance->finish(local, p0);
    } else {
      (void)s, (void)dir, (void)p0, (void)p1, (void)barrier, (void)balance, (void)w, (void)x,
          (void)y;
    }
  }

  // A step's units for `part`: split mode's balanced boundary on two threads
  // (unit_balance.h), else the plan's.
  void step_units(const UnitBalance* balance, const UnitBalance::Local& local, int part,
                  int64_t* begin, int64_t* end) const {
    if (balance != nullptr) {
      balance->units(local, part, begin, end);
      return;
    }
    *begin = plan_.threads.units[part].begin;
    *end = plan_.threads.units[part].end;
  }

  // After a step's work: its time for the balance, the barrier, the balance's move.
  static void end_step(PairBarrier* barrier, UnitBalance* balance, UnitBalance::Local& local,
                       int part, int64_t n, int64_t busy_from) {
    if (balance != nullptr) {
      UnitBalance::record(local, UnitBalance::now() - busy_from);
      balance->publish(local, part, n);
    }
    if (barrier != nullptr) barrier->wait();
    if (balance != nullptr) balance->update(local, part, n);
  }

  // bf16_products: the fused step on bfloat16 dot products
  // (step_forward_bf16.h), parts and buffers as in step_loop.
  void bf16_step_loop(int64_t s, int64_t dir, int p0, int p1, PairBarrier* barrier,
                      UnitBalance* balance, DirectionWorkspace<Acc>& w,
                      const Layer<Acc>& layer) const {
    if constexpr (std::is_same_v<Storage, BFloat16> || std::is_same_v<Storage, float>) {
      const int64_t DH = p_.D * p_.H, in_size = p_.slot_input_size[s];
      UnitBalance::Local local = balance != nullptr ? balance->start() : UnitBalance::Local{};
      for (int64_t n = 0; n < p_.T; ++n) {
        const int64_t busy_from = balance != nullptr ? UnitBalance::now() : 0;
        const int64_t t = dir == 0 ? n : p_.T - 1 - n;
        const int64_t off = p_.step_offset[t];
        Bf16StepArgs a;
        a.rows = p_.step_batch[t];
        if (bf16_projection()) {
          a.gx = w.gates.data() + off * 4 * p_.H;
        } else {
          a.x = layer.x_bits + off * in_size;
          a.ld_x = in_size;
        }
        a.h_prev = w.h_bits[n % 2].data();
        a.ld_h = p_.H;
        a.bias = w.bias.data();
        a.c_state = w.c_state.data();
        a.h_out_bits = layer.y_bits + off * DH + dir * p_.H;
        a.ld_out_bits = DH;
        a.h_out = bits_only() ? nullptr : layer.y + off * DH + dir * p_.H;
        a.ld_out = DH;
        a.h_next = w.h_bits[(n + 1) % 2].data();
        a.alone = barrier == nullptr;
        const StepSaved<Storage> saved = p_.train ? saved_at(s, t) : StepSaved<Storage>{};
        for (int part = p0; part < p1; ++part) {
          step_units(balance, local, part, &a.u_begin, &a.u_end);
          step_forward_bf16<Storage>(w.bf16_step, a, p_.train ? &saved : nullptr);
        }
        end_step(barrier, balance, local, p0, n, busy_from);
      }
      if (balance != nullptr) balance->finish(local, p0);
    } else {
      (void)s, (void)dir, (void)p0, (void)p1, (void)barrier, (void)balance, (void)w,
          (void)layer;
    }
  }

  void run_bf16_direction(int64_t s, int64_t dir, int64_t in_size, DirectionWorkspace<Acc>& w,
                          const Layer<Acc>& layer) {
    if (matmul_form_) {
      run_matmul_direction(s, dir, in_size, w, layer);
      return;
    }
    // The packed weights of units [u0, u1) (split mode: each part its own,
    // the only ones its steps read).
    const auto pack_units = [&](int64_t u0, int64_t u1) {
      if (weights_as_bits(s)) {
        const TensorView& w_ih = params_[s * p_.params_per_slot];
        const TensorView& w_hh = params_[s * p_.params_per_slot + 1];
        w.bf16_step.pack_bits_units(static_cast<const uint16_t*>(w_ih.data), w_ih.stride(0),
                                    static_cast<const uint16_t*>(w_hh.data), w_hh.stride(0), u0,
                                    u1);
      } else {
        w.bf16_step.pack_units(w.w_ih_rows, w.ld_ih, w.w_hh_rows, w.ld_hh, u0, u1);
      }
    };
    if (bf16_projection()) {
      w.bf16_step.set_k_input(0);
      bf16_input_product(s, in_size, w, layer);
    } else {
      w.bf16_step.set_k_input(in_size);
    }
    const int64_t n = p_.B * p_.H;
    floats_to_bfloat16s(w.h[0].data(), w.h_bits[0].data(), n);
    std::copy_n(w.h_bits[0].data(), n, w.h_bits[1].data());
    UnitBalance balance(p_.H, plan_.threads.units[0].end);
    if (plan_.threads.threading == Threading::SplitUnits && run_pair([&](int part) {
          pack_units(plan_.threads.units[part].begin, plan_.threads.units[part].end);
          barrier_.wait();  // every unit packed before any step (the balance moves units)
          bf16_step_loop(s, dir, part, part + 1, &barrier_, &balance, w, layer);
        })) {
      return;
    }
    pack_units(0, p_.H);
    bf16_step_loop(s, dir, 0, plan_.threads.parts, nullptr, nullptr, w, layer);
  }

  // gates (N, 4H) = x_l w_ih^T on the bfloat16 values (gemm_bf16: the matmul
  // form, and the fused bfloat16 step's projection form), in the plan's two
  // fixed row halves (the same calls, hence bits, whatever the thread count),
  // on two threads where the directions leave one free.
  // Slot s's w_ih (4H, in_size) as bfloat16 bits: a bfloat16 call's
  // parameter as stored, else its values rounded into w.w_ih_bits; *ld its
  // row stride.
  const uint16_t* w_ih_bits_of(int64_t s, int64_t in_size, DirectionWorkspace<Acc>& w,
                               int64_t* ld) const {
    if (weights_as_bits(s)) {
      const TensorView& w_ih_param = params_[s * p_.params_per_slot];
      *ld = w_ih_param.stride(0);
      return static_cast<const uint16_t*>(w_ih_param.data);
    }
    if constexpr (kFloat) {
      round_rows_to_bfloat16_bits(w.w_ih_rows, 4 * p_.H, w.ld_ih, in_size, w.w_ih_bits.data());
    }
    *ld = in_size;
    return w.w_ih_bits.data();
  }

  void bf16_input_product(int64_t s, int64_t in_size, DirectionWorkspace<Acc>& w,
                          const Layer<Acc>& layer) {
    if constexpr (kFloat) {
      const int64_t G = 4 * p_.H;
      int64_t ld_ih = 0;
      const uint16_t* w_ih = w_ih_bits_of(s, in_size, w, &ld_ih);
      const ThreadPlan& tp = plan_.threads;
      run_tasks(2, tp.direction_threads > 1 ? 1 : tp.row_half_threads, [&](int64_t part) {
        const RowHalf half = tp.row_halves[part];
        if (half.count == 0) return;
        gemm_bf16_or_float(Transpose::No, Transpose::Yes, half.count, G, in_size,
                           layer.x_bits + half.first * in_size, in_size, w_ih, ld_ih, 0.0f,
                           w.gates.data() + half.first * G, G);
      });
    } else {
      (void)s, (void)in_size, (void)w, (void)layer;
    }
  }

  // The matmul form (ForwardPlan::bf16_matmul_step): gates (N, 4H) = x_l
  // w_ih^T on the bfloat16 values (gemm_bf16), then per step the recurrent
  // product h w_hh^T added to the step's rows of gates on oneDNN's matmul,
  // and the cell pass; h is rounded to bfloat16 after it (the
  // next step's operand and the layer output's bits; a bfloat16 call's h and
  // saved h are that value, a float32 call keeps the float h, as the fused
  // step does). One part: the plan never splits the units here.
  void run_matmul_direction(int64_t s, int64_t dir, int64_t in_size, DirectionWorkspace<Acc>& w,
                            const Layer<Acc>& layer) {
    if constexpr (kFloat) {
      const int64_t G = 4 * p_.H, H = p_.H, DH = p_.D * H;
      const int64_t base = s * p_.params_per_slot;
      if (weights_as_bits(s)) {
        copy_bits_rows(static_cast<const uint16_t*>(params_[base + 1].data), G,
                       params_[base + 1].stride(0), H, 1, w.w_hh_bits.data());
      } else {
        round_rows_to_bfloat16_bits(w.w_hh_rows, G, w.ld_hh, H, w.w_hh_bits.data());
      }
      if (amx_form_) {
        // The step's input product on the tiles too (amx_input_on_tiles),
        // else the layer's product on oneDNN's matmul.
        const bool input_on_tiles = amx_input_on_tiles(in_size);
        if (input_on_tiles) {
          int64_t ld_ih = 0;
          const uint16_t* w_ih = w_ih_bits_of(s, in_size, w, &ld_ih);
          amx_pack_gates(H, in_size, w_ih, ld_ih, w.amx_w_ih.data());
        } else {
          bf16_input_product(s, in_size, w, layer);
        }
        run_amx_steps(s, dir, input_on_tiles ? in_size : 0, w, layer);
        return;
      }
      w.matmul.set_b(w.w_hh_bits.data());
      bf16_input_product(s, in_size, w, layer);
      const int64_t n_state = p_.B * H;
      for (int64_t e = 0; e < n_state; ++e) {
        w.h_bits[0].data()[e] = float_to_bfloat16(w.h[0].data()[e]);
      }
      std::copy_n(w.h_bits[0].data(), n_state, w.h_bits[1].data());
      float* h = w.h[1].data();  // the step's float h (rows, H)
      for (int64_t n = 0; n < p_.T; ++n) {
        const int64_t t = dir == 0 ? n : p_.T - 1 - n;
        const int64_t rows = p_.step_batch[t];
        if (rows == 0) continue;
        const int64_t off = p_.step_offset[t];
        float* gates = w.gates.data() + off * G;
        w.matmul.multiply(rows, w.h_bits[n % 2].data(), gates);
        const StepSaved<Storage> saved = p_.train ? saved_at(s, t) : StepSaved<Storage>{};
        float* out = bits_only() ? h : layer.y + off * DH + dir * H;
        cell_pass_forward<float, Storage>(rows, H, 0, H, gates, w.bias.data(),
                                          w.c_state.data(), h, out, bits_only() ? H : DH,
                                          p_.train ? &saved : nullptr);
        uint16_t* next = w.h_bits[(n + 1) % 2].data();
        round_to_bfloat16_bits(h, rows * H, next);
        for (int64_t r = 0; r < rows; ++r) {
          std::copy_n(next + r * H, H, layer.y_bits + (off + r) * DH + dir * H);
        }
      }
    } else {
      (void)s, (void)dir, (void)in_size, (void)w, (void)layer;
    }
  }

  // The step's input product on the tiles too (amx_form_): where the input's
  // rows are whole k blocks and either the batch fills two pairs of row blocks
  // (kAmxInputOnTilesMinRows) or both weights stay in L2
  // (kAmxInputOnTilesMaxBytes), the latter in training only at the sizes
  // whose steps two threads split (kAmxSplitTrainingMinDhWork): below them a
  // second thread would wait through the steps, which the layer's product on
  // oneDNN's matmul keeps busy. (The rule reads the shape alone: the input
  // product's two forms sum in different orders, and the bits may not depend
  // on the thread count.) Intel Xeon, training against the layer's product,
  // 1 / 2 threads: T=50 B=32 I=H=256 (2^23) 0.93x / 0.91x; below 2^23 T=200
  // B=8 I=H=128 0.95x / 1.04x, T=100 B=16 I=H=256 1.00x / 1.08x.
  bool amx_input_on_tiles(int64_t in_size) const {
    const int64_t packed_bytes =
        (in_size + p_.H) * 4 * p_.H * static_cast<int64_t>(sizeof(uint16_t));
    return in_size % 32 == 0 &&
           (p_.B >= kAmxInputOnTilesMinRows ||
            (packed_bytes <= kAmxInputOnTilesMaxBytes &&
             (!p_.train || amx_dh_work(p_) >= kAmxSplitTrainingMinDhWork)));
  }

  // The matmul form's steps on AMX tiles (amx_form_): per block of at most
  // 16 rows and 16 units the recurrent product into the step's gates, then at
  // once, while those gates are in L1, the cell pass of the block and its h
  // rounded to bfloat16 (the next step's operand); the same values as the
  // oneDNN steps (the cell pass is per element), sums in the tiles' order.
  void run_amx_steps(int64_t s, int64_t dir, int64_t input_on_tiles, DirectionWorkspace<Acc>& w,
                     const Layer<Acc>& layer) {
    if constexpr (kFloat) {
      const int64_t G = 4 * p_.H, H = p_.H, DH = p_.D * H, kp = amx_k_padded(H);
      amx_pack_w_hh(H, w.w_hh_bits.data(), H, w.amx_w_hh.data());
      for (Workspace<uint16_t>& bits : w.amx_h_bits) {
        std::fill_n(bits.data(), p_.B * kp, uint16_t{0});
      }
      for (int64_t r = 0; r < p_.B; ++r) {
        for (int64_t k = 0; k < H; ++k) {
          w.amx_h_bits[0].data()[r * kp + k] = float_to_bfloat16(w.h[0].data()[r * H + k]);
        }
      }
      // Rows a step does not reach keep the initial state (variable length:
      // the reverse direction's sequences join at their last step).
      std::copy_n(w.amx_h_bits[0].data(), p_.B * kp, w.amx_h_bits[1].data());
      float* h = w.h[1].data();  // the step's float h (rows, H)
      struct Block {
        const ForwardDriver* self;
        DirectionWorkspace<Acc>* w;
        float* gates;
        float* h;
        float* out;
        int64_t ld_out;
        const StepSaved<Storage>* saved;
        uint16_t* next;
        uint16_t* y_bits;  // the step's rows of the layer output's bits (row stride D*H)
      };
      const auto done = [](void* ctx, int64_t r0, int64_t block_rows, int64_t u0) {
        const Block& b = *static_cast<const Block*>(ctx);
        const int64_t H = b.self->p_.H, kp = amx_k_padded(H);
        StepSaved<Storage> part;
        const StepSaved<Storage>* saved = nullptr;
        if (b.saved != nullptr) {
          const auto at = [&](Storage* v) { return v == nullptr ? v : v + r0 * H; };
          part = {at(b.saved->i), at(b.saved->j), at(b.saved->f), at(b.saved->o),
                  at(b.saved->h), at(b.saved->c), at(b.saved->tanhc)};
          saved = &part;
        }
        cell_pass_forward<float, Storage>(block_rows, H, u0, u0 + 16, b.gates + r0 * 4 * H,
                                          b.w->bias.data(), b.w->c_state.data() + r0 * H,
                                          b.h + r0 * H, b.out + r0 * b.ld_out, b.ld_out, saved);
        const int64_t DH = b.self->p_.D * H;
        for (int64_t r = r0; r < r0 + block_rows; ++r) {
          round_to_bfloat16_bits(b.h + r * H + u0, 16, b.next + r * kp + u0);
          std::memcpy(b.y_bits + r * DH + u0, b.next + r * kp + u0, 16 * sizeof(uint16_t));
        }
      };
      // Units [u0, u1) of every step; in split mode each part its own, the
      // parts meeting after each step (the next one reads all of h).
      const auto steps = [&](int64_t u0, int64_t u1, PairBarrier* barrier) {
        for (int64_t n = 0; n < p_.T; ++n) {
          const int64_t t = dir == 0 ? n : p_.T - 1 - n;
          const int64_t rows = p_.step_batch[t];
          if (rows == 0) continue;
          const int64_t off = p_.step_offset[t];
          const StepSaved<Storage> saved = p_.train ? saved_at(s, t) : StepSaved<Storage>{};
          uint16_t* next = w.amx_h_bits[(n + 1) % 2].data();
          // With the input on the tiles the step's gates are written, not
          // read: one step's rows at the buffer's start, which stay in cache.
          Block b{this, &w, w.gates.data() + (input_on_tiles > 0 ? 0 : off * G), h,
                  bits_only() ? h : layer.y + off * DH + dir * H, bits_only() ? H : DH,
                  p_.train ? &saved : nullptr, next, layer.y_bits + off * DH + dir * H};
          const AmxInput x{input_on_tiles, w.amx_w_ih.data(),
                           layer.x_bits + off * input_on_tiles, input_on_tiles};
          amx_step_forward_input(rows, H, input_on_tiles > 0 ? &x : nullptr, w.amx_w_hh.data(),
                                 w.amx_h_bits[n % 2].data(), kp, b.gates, done, &b, u0, u1);
          if (barrier != nullptr) barrier->wait();
        }
      };
      const ThreadPlan& tp = plan_.threads;
      if (tp.threading == Threading::SplitUnits && run_pair([&](int part) {
            steps(tp.units[part].begin, tp.units[part].end, &barrier_);
          })) {
        return;
      }
      steps(0, H, nullptr);
    } else {
      (void)s, (void)dir, (void)w, (void)layer;
    }
  }

  // double: gates[t] += h * w_hh^T, then the cell pass (and with
  // projections h = m * w_hr^T), per step.
  void time_loop_double(int64_t s, int64_t dir, DirectionWorkspace<Acc>& w, Acc* y) const {
    const int64_t G = 4 * p_.H, R = p_.R, DR = p_.D * p_.R;
    for (int64_t n = 0; n < p_.T; ++n) {
      const int64_t t = dir == 0 ? n : p_.T - 1 - n;
      const int64_t rows = p_.step_batch[t];
      const int64_t off = p_.step_offset[t];
      Acc* gates = w.gates.data() + off * G;
      gemm(Transpose::No, Transpose::No, rows, G, R, Acc(1), w.h[0].data(), R, w.w_hh.data(), G,
           Acc(1), gates, G);
      cell_step(s, t, rows, gates, w, y + off * DR + dir * R);
    }
  }

  // A step's cell pass on its gates (rows, 4H) into h and the layer output
  // (row stride D*R), and with projections h = m * w_hr^T (m in
  // cell_output); the saved tensors of step t when training.
  // 16-bit storage: h (or with projections m) as the call stores it, the
  // value the next products multiply (the next step's, the next layer's,
  // w_hr's): rounded after the pass.
  void cell_step(int64_t s, int64_t t, int64_t rows, Acc* gates, DirectionWorkspace<Acc>& w,
                 Acc* layer_out) const {
    const int64_t H = p_.H, DR = p_.D * p_.R;
    const StepSaved<Storage> saved = p_.train ? saved_at(s, t) : StepSaved<Storage>{};
    if (!p_.projections()) {
      cell_pass_forward<Acc, Storage>(rows, H, 0, H, gates, w.bias.data(), w.c_state.data(),
                                      w.h[0].data(), layer_out, DR, p_.train ? &saved : nullptr);
      round_as_stored(rows, 0, H, w.h[0].data(), H);
      round_as_stored(rows, 0, H, layer_out, DR);
      return;
    }
    StepSaved<Storage> cell_saved = saved;
    cell_saved.h = nullptr;
    Acc* m = w.cell_output.data();  // m (rows, H) as the pass's h and output
    cell_pass_forward<Acc, Storage>(rows, H, 0, H, gates, w.bias.data(), w.c_state.data(), m, m,
                                    H, p_.train ? &cell_saved : nullptr);
    round_as_stored(rows, 0, H, m, H);
    project_step(rows, w, w.h[0].data(), layer_out, saved.h);
  }

  // Columns [begin, end) of v (rows, .) row stride ld <- their values
  // rounded to Storage (16-bit storage; nothing for float and double).
  static void round_as_stored(int64_t rows, int64_t begin, int64_t end, Acc* v, int64_t ld) {
    if constexpr (kFloat && !std::is_same_v<Storage, float>) {
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t k = begin; k < end; ++k) {
          Acc& e = v[r * ld + k];
          e = static_cast<float>(StoreAs<Storage>::from(e));
        }
      }
    } else {
      (void)rows, (void)begin, (void)end, (void)v, (void)ld;
    }
  }

  // float, unpacked steps (ForwardPlan::unpacked_steps: one step, or a
  // sequence of a few rows): gates = x_l * w_ih^T (project_half, per fixed
  // row half), then per step + h * w_hh^T (without hx h0 is zero: no product
  // at the first step), both on the weights as stored, and the cell pass
  // (with projections h = m * w_hr^T), as time_loop_double does. Steps of up
  // to kUnpackedRowsMax rows take recurrent_rows_product (each w_hh row read
  // once for all rows) and, without projections, run in parts of the hidden
  // units (on two threads in lockstep where there are; the same bits, as
  // split mode); larger ones (T = 1 only) dnnl_sgemm per fixed row half.
  void unpacked_steps(int64_t s, int64_t dir, int64_t in_size, const Acc* x,
                      DirectionWorkspace<Acc>& w, Acc* y) {
    if constexpr (kFloat) {
      const ThreadPlan& tp = plan_.threads;
      const int threads = tp.direction_threads > 1 ? 1 : tp.row_half_threads;
      run_tasks(2, threads, [&](int64_t part) {
        project_half(static_cast<int>(part), in_size, x, w);
      });
      if (p_.B > kUnpackedRowsMax || p_.projections()) {
        whole_steps(s, dir, threads, w, y);
        return;
      }
      // Two parts of the units (a multiple of 16 apart).
      const int64_t split = std::min(p_.H, (p_.H / 2 + 15) / 16 * 16);
      const UnitRange parts[2] = {{0, split}, {split, p_.H}};
      if (threads == 2 && run_pair([&](int part) {
            unit_steps(s, dir, parts + part, parts + part + 1, &barrier_, w, y);
          })) {
        return;
      }
      unit_steps(s, dir, parts, parts + 2, nullptr, w, y);
    } else {
      (void)s, (void)dir, (void)in_size, (void)x, (void)w, (void)y;
    }
  }

  // Unpacked steps of a few rows without projections, for the unit parts
  // [first, last) (one thread's, or both on one): step n reads h[n % 2] and
  // writes h[(n + 1) % 2] (rows a step does not reach keep their value in
  // both), every gate row of its units from recurrent_rows_product, then the
  // cell pass over its units; with two threads the barrier orders a step's
  // writes before the next step's reads.
  void unit_steps(int64_t s, int64_t dir, const UnitRange* first, const UnitRange* last,
                  PairBarrier* barrier, DirectionWorkspace<Acc>& w, Acc* y) const {
    if constexpr (kFloat) {
      const int64_t H = p_.H, G = 4 * H, R = p_.R, DR = p_.D * R;
      for (int64_t n = 0; n < p_.T; ++n) {
        const int64_t t = dir == 0 ? n : p_.T - 1 - n;
        const int64_t rows = p_.step_batch[t], off = p_.step_offset[t];
        Acc* gates = w.gates.data() + off * G;
        const Acc* h_prev = w.h[n % 2].data();
        Acc* h_next = w.h[(n + 1) % 2].data();
        Acc* layer_out = y + off * DR + dir * R;
        const StepSaved<Storage> saved = p_.train ? saved_at(s, t) : StepSaved<Storage>{};
        for (const UnitRange* u = first; u != last; ++u) {
          if (u->begin >= u->end) continue;
          if (n > 0 || p_.has_hx) {
            for (int64_t q = 0; q < 4; ++q) {
              recurrent_rows_product(plan_.step_isa, rows, q * H + u->begin, q * H + u->end, R,
                                     h_prev, R, w.w_hh_rows, w.ld_hh, gates, G);
            }
          }
          cell_pass_forward<Acc, Storage>(rows, H, u->begin, u->end, gates, w.bias.data(),
                                          w.c_state.data(), h_next, layer_out, DR,
                                          p_.train ? &saved : nullptr);
          round_as_stored(rows, u->begin, u->end, h_next, H);
          round_as_stored(rows, u->begin, u->end, layer_out, DR);
        }
        if (barrier != nullptr) barrier->wait();
      }
    } else {
      (void)s, (void)dir, (void)first, (void)last, (void)barrier, (void)w, (void)y;
    }
  }

  // Unpacked steps, whole: every step's product (recurrent_rows_product for
  // a few rows, else dnnl_sgemm per fixed row half, the halves on two
  // threads where there are), then cell_step on h[0].
  void whole_steps(int64_t s, int64_t dir, int threads, DirectionWorkspace<Acc>& w,
                   Acc* y) const {
    if constexpr (kFloat) {
      const int64_t G = 4 * p_.H, R = p_.R, DR = p_.D * R;
      for (int64_t n = 0; n < p_.T; ++n) {
        const int64_t t = dir == 0 ? n : p_.T - 1 - n;
        const int64_t rows = p_.step_batch[t], off = p_.step_offset[t];
        Acc* gates = w.gates.data() + off * G;
        if ((n > 0 || p_.has_hx) && rows <= kUnpackedRowsMax) {
          recurrent_rows_product(plan_.step_isa, rows, 0, G, R, w.h[0].data(), R, w.w_hh_rows,
                                 w.ld_hh, gates, G);
        } else if (n > 0 || p_.has_hx) {
          run_tasks(2, threads, [&](int64_t part) {
            const RowHalf half = row_half(rows, static_cast<int>(part));
            if (half.count == 0) return;
            gemm(Transpose::No, Transpose::Yes, half.count, G, R, 1.0f,
                 w.h[0].data() + half.first * R, R, w.w_hh_rows, w.ld_hh, 1.0f,
                 gates + half.first * G, G);
          });
        }
        cell_step(s, t, rows, gates, w, y + off * DR + dir * R);
      }
    } else {
      (void)s, (void)dir, (void)threads, (void)w, (void)y;
    }
  }

  // float: packs the step's weights, projects (projection form) or runs the
  // chains over the input (chained form) and runs the step loop: in split
  // mode the two unit parts on two threads in lockstep (on this one, one
  // after the other, when no second thread can be started).
  void run_float_direction(int64_t s, int64_t dir, int64_t in_size, const Acc* x,
                           DirectionWorkspace<Acc>& w, Acc* y) {
    if (plan_.unpacked_steps) {
      unpacked_steps(s, dir, in_size, x, w, y);
      return;
    }
    const bool concatenated = plan_.step_concatenated, chained = plan_.step_chained;
    w.step.set_k_input(concatenated || chained ? in_size : 0, chained);
    if (chained) {  // never split mode (lstm_plan.h); x the layer's compact rows
      w.step.pack_units(w.w_ih_rows, w.ld_ih, w.w_hh_rows, w.ld_hh, 0, p_.H);
      if constexpr (kFloat) {
        step_input_chains(w.step, x, in_size, p_.step_batch.data(), p_.T, w.bias.data(),
                          w.gates.data(), 0, p_.H, kernels::kernel_choice().step_k_chunk);
      }
      step_loop(s, dir, 0, plan_.threads.parts, nullptr, nullptr, w, x, y);
      return;
    }
    if (plan_.threads.threading == Threading::SplitUnits) {
      // Each part packs the weights of its own units (the only ones its steps read).
      UnitBalance balance(p_.H, plan_.threads.units[0].end);
      const bool paired = run_pair([&](int part) {
        const UnitRange units = plan_.threads.units[part];
        w.step.pack_units(w.w_ih_rows, w.ld_ih, w.w_hh_rows, w.ld_hh, units.begin, units.end);
        // (the packed weights of every unit before any step, whichever part
        // the balance then gives it)
        barrier_.wait();
        if (!concatenated) project_half(part, in_size, x, w);
        if (!concatenated) barrier_.wait();
        step_loop(s, dir, part, part + 1, &barrier_, &balance, w, x, y);
      });
      if (paired) return;
    }
    w.step.pack_units(w.w_ih_rows, w.ld_ih, w.w_hh_rows, w.ld_hh, 0, p_.H);
    if (!concatenated) {
      project_half(0, in_size, x, w);
      project_half(1, in_size, x, w);
    }
    step_loop(s, dir, 0, plan_.threads.parts, nullptr, nullptr, w, x, y);
  }

  // dst (B, R) <- each sequence's final h: the layer output at its last step
  // (forward: len_b - 1; reverse: 0).
  void final_hidden(int64_t dir, const Acc* y, Acc* dst) const {
    const int64_t R = p_.R, DR = p_.D * R;
    for (int64_t b = 0; b < p_.B; ++b) {
      const int64_t t = dir == 0 ? p_.sequence_length(b) - 1 : 0;
      std::copy_n(y + (p_.step_offset[t] + b) * DR + dir * R, R, dst + b * R);
    }
  }

  // final_hidden from the layer output's bits, widened.
  void final_hidden_bits(int64_t dir, const uint16_t* y, Acc* dst) const {
    const int64_t DH = p_.D * p_.H;
    for (int64_t b = 0; b < p_.B; ++b) {
      const int64_t t = dir == 0 ? p_.sequence_length(b) - 1 : 0;
      const uint16_t* src = y + (p_.step_offset[t] + b) * DH + dir * p_.H;
      for (int64_t k = 0; k < p_.H; ++k) dst[b * p_.H + k] = bfloat16_to_float(src[k]);
    }
  }

  void run_direction(int64_t l, int64_t dir, const Layer<Acc>& layer) {
    const Acc* x = layer.x;
    Acc* y = layer.y;
    const ThreadPlan& t = plan_.threads;
    DirectionWorkspace<Acc>& w = dir_[t.direction_workspaces > 1 ? dir : 0];
    const int64_t s = l * p_.D + dir;
    const int64_t in_size = p_.slot_input_size[s];
    load_weights(s, w);
    load_state(s, w);
    if (p_.train && dir == 1 && p_.variable_length) fill_invalid(s, w.h[0].data(), w);
    if constexpr (kFloat) {
      if (plan_.bf16_products) {
        run_bf16_direction(s, dir, in_size, w, layer);
      } else {
        run_float_direction(s, dir, in_size, x, w, y);
      }
      if (bits_only()) {
        final_hidden_bits(dir, layer.y_bits, w.h[0].data());
      } else {
        final_hidden(dir, y, w.h[0].data());
      }
    } else {
      project_half(0, in_size, x, w);
      project_half(1, in_size, x, w);
      time_loop_double(s, dir, w, y);
    }
    scatter_slot<Acc>(p_, w.h[0].data(), p_.R, out_.hy, s);
    scatter_slot<Acc>(p_, w.c_state.data(), p_.H, out_.cy, s);
    if (p_.train && dir == 0 && p_.variable_length) fill_invalid(s, w.h[0].data(), w);
  }

  const LstmProblem& p_;
  const ForwardPlan plan_;
  const TensorView& input_;
  const TensorList& hx_;
  const TensorList& params_;
  const ForwardOutputs& out_;
  PairBarrier barrier_;
  // The bfloat16 products in the matmul form (the plan's, unless oneDNN
  // could not ready its products: then the fused step).
  bool matmul_form_ = plan_.bf16_matmul_step;
  // ... on lstmop's AMX tiles (kernel_choice().bf16_amx_step, the shape
  // amx_step_supported).
  bool amx_form_ = plan_.bf16_matmul_step && kernels::kernel_choice().bf16_amx_step;
  WorkspaceArena arena_;
  Workspace<Acc> x0_;
  Workspace<Acc> y_[2];
  const Acc* input_in_place_ = nullptr;  // the input's data, read as x0 (compact rows)
  bool step_input_ = false;  // layer 0 reads DirectionWorkspace::x_step, x0 is null
  SequenceLayout input_layout_;  // the input's (unless packed_rows)
  Acc* output_in_place_ = nullptr;       // the output's data, the last layer's y
  Workspace<uint16_t> x0_bits_, y_bits_[2];  // bf16_products: the products' operands
  const uint16_t* input_bits_in_place_ = nullptr;  // bits_only: the input's bits, read as x0_bits
  uint16_t* output_bits_in_place_ = nullptr;       // bits_only: the output's, the last layer's bits
  DirectionWorkspace<Acc> dir_[2];
};

}  // namespace

void run_lstm_forward(const LstmProblem& problem, const TensorView& input, const TensorList& hx,
                      const TensorList& params, const ForwardOutputs& out) {
  const ControlWordScope environment(call_control_word(flushes_subnormals(problem.dtype)));
  switch (problem.dtype) {
    case DType::Float32:
      ForwardDriver<float, float>(problem, input, hx, params, out).run();
      break;
    case DType::Float64:
      ForwardDriver<double, double>(problem, input, hx, params, out).run();
      break;
    case DType::Float16:
      ForwardDriver<float, Half>(problem, input, hx, params, out).run();
      break;
    case DType::BFloat16:
      ForwardDriver<float, BFloat16>(problem, input, hx, params, out).run();
      break;
    case DType::Int64: break;  // rejected by validation
  }
}

}  // namespace detail
}  // namespace lstmop
