// The production backward driver (backpropagation through time and layers).
//
// Rows are compact (sequence_rows.h). R is the width of h: P with
// projections, else H. Per call:
//   1. d_out (N, D*R) <- grad_y (0 if undefined);
//   2. per layer, top to bottom: x_l (N, I_l) <- the input (layer 0) or the
//      lower layer's saved h of both directions; then per direction
//      (directions possibly on two threads):
//        w_ih (or w_ih^T), w_hh (4H, R) (and w_hr (P, H)); h_prev
//        (N, R) <- the h each row's step started from (saved h of the
//        neighbouring step, or h0); dh (B, R), dc (B, H) <- grad_hy, grad_cy;
//        per step, in the reverse of the forward's order, rows n = step_batch[t]:
//          projections: dh_total[t] (n, P) = dh_state + d_out[t] (kept for
//            dw_hr), dm (n, H) = dh_total[t] * w_hr, the cell's output gradient
//          cell_pass_backward  -> d_gates[t] (n, 4H), dc_state
//          db += column sums of d_gates[t]   (so db_ih = db_hh sums every row:
//            per column the steps in this loop's order, rows in order)
//          dh_state[:n] = d_gates[t] * w_hh           (recurrent_product.h;
//            bfloat16 products: recurrent_product_bf16.h, or in the matmul
//            form oneDNN's matmul, gemm/bf16_matmul_step.h)
//        dh0, dc0 <- state;
//        dw_ih = d_gates^T x_l, dw_hh = d_gates^T h_prev  (the plan's
//          weight_gradients_tn: one TN GEMM each; otherwise a GEMM each per
//          chunk of 1024 rows, operands transposed first: the NT form)
//        projections: dw_hr (P, H) = dh_total^T m, one TN GEMM over all rows,
//          m = o * tanhc (N, H) from the saved tensors;
//      d_in (N, I_l) = sum over directions of d_gates * w_ih (the next d_out);
//   3. scatter layer 0's d_in into dx (0 in invalid rows).
// Copies are skipped where the caller's tensor already has the layout a step
// reads (sequence_rows.h): grad_y as d_out, the input as layer 0's x_l, dx as
// layer 0's d_in (written in place), weights of the compute type with unit
// column stride, and the saved tensors (c_prev included) of the compute type
// with contiguous rows. The values are the same either way.
#include <algorithm>
#include <type_traits>

#include "common/element_access.h"
#include "common/float_environment.h"
#include "common/workspace.h"
#include "driver/drivers.h"
#include "driver/sequence_rows.h"
#include "driver/threads.h"
#include "driver/unit_balance.h"
#include "gemm/bf16_matmul_step.h"
#include "gemm/gemm.h"
#include "gemm/transpose.h"
#include "kernels/cell_pass.h"
#include "kernels/cpu_features.h"
#include "kernels/recurrent_product.h"
#include "kernels/recurrent_product_bf16.h"
#include "kernels/step_forward_amx.h"
#include "plan/lstm_plan.h"

namespace lstmop {
namespace detail {
namespace {

enum SavedIndex { kI, kJ, kF, kO, kTanhc, kCPrev, kSavedCount };

template <class Acc>
struct DirectionWorkspace {
  Workspace<Acc> d_gates, w_ih, w_hh, h_prev, dh_state, dc_state, dw_ih, dw_hh, db;
  // Where the weight gradients are computed: the caller's dparams of this
  // slot written in place (matrix_in_place), else dw_ih / dw_hh, scattered
  // into them after the products.
  Acc* dw_ih_out = nullptr;
  Acc* dw_hh_out = nullptr;
  // The weights the products read: the caller's when of the compute type
  // with unit column stride (sequence_rows.h: weight_rows), else copies.
  // w_ih_rows (4H, I_l) as stored, for the NN d_in product (TN weight
  // gradients; the NT form reads w_ih's transposed copy); w_hh_rows (4H, R).
  const Acc* w_ih_rows = nullptr;
  const Acc* w_hh_rows = nullptr;
  int64_t ld_ih = 0, ld_hh = 0;
  // Projections (lstm_plan.h): w_hr (P, H); dh_total (N, P); m (N, H); dw_hr
  // (P, H); one step's dm (B, H); a zero row (H).
  Workspace<Acc> w_hr, dh_total, cell_output, dw_hr, cell_output_gradient, zero_row;
  RecurrentProduct output_projection;  // float: w_hr (P, H) packed for dm = dh * w_hr
  // One chunk of rows of d_gates, x_l and h_prev, transposed (the dW products).
  Workspace<Acc> d_gates_t, x_t, h_prev_t;
  // TN path: each half's weight gradient computed transposed, where the plan
  // takes that form (BackwardPlan::dw_t).
  Workspace<Acc> dw_t;
  Workspace<Acc> step[kSavedCount];   // one step's i, j, f, o, tanhc, c_prev (B, H)
  // float: w_hh (4H, R) packed for the dh product (split mode: each part
  // packs its units' columns, and takes any range of them step by step).
  RecurrentProduct recurrent;
  // bf16_products: d_gates, h_prev and w_ih as bfloat16 bits; w_hh packed.
  Workspace<uint16_t> d_gates_bits, h_prev_bits, w_ih_bits;
  // d_gates' bits transposed (4H, valid rows), the weight gradients' left
  // operand as stored where d_gates_transposed() (weight_grads).
  Workspace<uint16_t> d_gates_bits_t;
  Bf16RecurrentProduct bf16_recurrent;
  // The matmul form (BackwardPlan::bf16_matmul_step): w_hh's bits (4H, H),
  // packed into `matmul` for the dh product.
  Workspace<uint16_t> w_hh_bits;
  Bf16MatmulStep matmul;
  // ... its dh on lstmop's AMX tiles (step_forward_amx.h): w_hh packed for it.
  Workspace<uint16_t> amx_w_hh;
};

template <class Acc>
class BackwardDriver {
  static constexpr bool kFloat = std::is_same_v<Acc, float>;

 public:
  BackwardDriver(const LstmProblem& p, const BackwardInputs& g, const TensorView& input,
                 const TensorList& hx, const TensorList& params, const BackwardOutputs& out)
      : p_(p), plan_(plan_backward(p)), g_(g), input_(input), hx_(hx), params_(params),
        out_(out) {
    const ThreadPlan& t = plan_.threads;
    // Compact rows of the compute type read or written in place
    // (sequence_rows.h): the input (layer 0's x), grad_y (the top layer's
    // d_out) and dx (layer 0's d_in).
    input_in_place_ = compact_rows_in_place<Acc>(p, input, p.I);
    if (g.grad_y->defined) grad_y_in_place_ = compact_rows_in_place<Acc>(p, *g.grad_y, p.D * p.R);
    dx_in_place_ = compact_rows_in_place<Acc>(p, out.dx, p.I);
    arena_.add(x_, "a layer's input (valid rows, input_size)", plan_.layer_rows);
    arena_.add(d_out_, "the gradient of a layer's output (valid rows, D*R)", plan_.layer_rows);
    arena_.add(d_in_, "the gradient of a layer's input (valid rows, input_size)",
               plan_.layer_rows);
    if (amx_form_) amx_form_ = matmul_form_ && amx_step_supported(p.H);
    if (matmul_form_ && !amx_form_) {
      const std::vector<int64_t> rows = distinct_step_batches(p);
      for (int64_t k = 0; k < t.direction_workspaces && matmul_form_; ++k) {
        matmul_form_ = dir_[k].matmul.prepare(4 * p.H, p.H, Transpose::No, rows, 4 * p.H, p.H,
                                              false);
      }
    }
    for (int64_t k = 0; k < p.D; ++k) {
      DirectionWorkspace<Acc>& w = dir_[k];
      // With the directions in parallel, d_gates and w_ih of both meet in the
      // d_in GEMMs; one after the other, each direction adds its share of d_in
      // when it is done and the second reuses the first's d_gates.
      if (k < t.direction_workspaces) {
        arena_.add(w.d_gates, "the gate gradients (valid rows, 4H)", plan_.d_gates);
        if (plan_.bf16_products) {
          arena_.add(w.d_gates_bits, "the gate gradients' bfloat16 values (valid rows, 4H)",
                     plan_.d_gates_bits);
          arena_.add(w.d_gates_bits_t,
                     "the gate gradients' bfloat16 values, transposed (4H, valid rows)",
                     d_gates_transposed() ? plan_.d_gates_bits : 1);
        }
      }
      arena_.add(w.w_ih, "w_ih (4H, input_size), or w_ih^T", plan_.w_ih);
      if (plan_.bf16_products) {
        arena_.add(w.w_ih_bits, "w_ih's bfloat16 values (4H, input_size)", plan_.w_ih_bits);
      }
      if (k >= t.direction_workspaces) continue;
      arena_.add(w.w_hh, "w_hh (4H, R)", plan_.w_hh);
      if (plan_.bf16_products) {  // never with projections (lstm_plan.h): R = H
        if (matmul_form_) {
          arena_.add(w.w_hh_bits, "w_hh's bfloat16 values (4H, H)", plan_.w_hh_bits);
          arena_.add(w.amx_w_hh, "w_hh packed for AMX tiles",
                     amx_form_ ? amx_dh_packed_size(p.H) : 1);
        } else {
          w.bf16_recurrent.allocate(arena_, 4 * p.H, p.H);
        }
        arena_.add(w.h_prev_bits, "the previous hidden states' bfloat16 values (valid rows, H)",
                   plan_.h_prev_bits);
      } else if (kFloat && !plan_.single_step) {
        w.recurrent.allocate(arena_, 4 * p.H, p.R);
      }
      arena_.add(w.h_prev, "the previous hidden states (valid rows, R)", plan_.h_prev);
      arena_.add(w.dh_state, "dh (B, R)", plan_.state);
      arena_.add(w.dc_state, "dc (B, H)", plan_.state);
      arena_.add(w.dw_ih, "dw_ih (4H, input_size)", plan_.dw_ih);
      arena_.add(w.dw_hh, "dw_hh (4H, R)", plan_.dw_hh);
      arena_.add(w.db, "db (4H)", plan_.db);
      if (p.projections()) {
        arena_.add(w.w_hr, "w_hr (P, H)", plan_.w_hr);
        arena_.add(w.dh_total, "the gradients of h (valid rows, P)", plan_.dh_total);
        arena_.add(w.cell_output, "the cell outputs m = o * tanhc (valid rows, H)",
                   plan_.cell_output);
        arena_.add(w.dw_hr, "dw_hr (P, H)", plan_.dw_hr);
        arena_.add(w.cell_output_gradient, "dm (B, H)", plan_.cell_output_gradient);
        arena_.add(w.zero_row, "a zero row (H)", plan_.zero_row);
        if constexpr (kFloat) w.output_projection.allocate(arena_, p.P, p.H);
      }
      if (plan_.dw_t > 0) {
        arena_.add(w.dw_t, "the weight gradients' halves, transposed (2, columns, 2H + pad)",
                   plan_.dw_t);
      }
      if (!plan_.weight_gradients_tn) {
        arena_.add(w.d_gates_t, "a chunk of the gate gradients, transposed (4H, rows)",
                   plan_.d_gates_t);
        arena_.add(w.x_t, "a chunk of a layer's input, transposed (input_size, rows)",
                   plan_.x_t);
        arena_.add(w.h_prev_t, "a chunk of the previous hidden states, transposed (R, rows)",
                   plan_.h_prev_t);
      }
      for (Workspace<Acc>& b : w.step) {
        arena_.add(b, "one step's saved tensors (B, H)", plan_.state);
      }
    }
    if (plan_.bf16_products) {
      arena_.add(x_bits_, "a layer's input's bfloat16 values (valid rows, input_size)",
                 plan_.layer_input_bits);
    }
    arena_.commit();
    if (p.D == 2 && t.direction_workspaces == 1) {
      dir_[1].d_gates = dir_[0].d_gates;
      dir_[1].d_gates_bits = dir_[0].d_gates_bits;
      dir_[1].d_gates_bits_t = dir_[0].d_gates_bits_t;
    }
  }

  void run() {
    const int64_t DR = p_.D * p_.R;
    d_out_rows_ = grad_y_in_place_;
    if (d_out_rows_ == nullptr) {
      if (g_.grad_y->defined) {
        in_step_halves(p_, plan_.threads.row_half_threads, [&](int64_t t0, int64_t t1) {
          gather_valid_rows<Acc>(p_, *g_.grad_y, DR, d_out_.data(), t0, t1);
        });
      } else {
        std::fill(d_out_.data(), d_out_.data() + p_.valid_rows() * DR, Acc(0));
      }
      d_out_rows_ = d_out_.data();
    }
    for (int64_t l = p_.L - 1; l >= 0; --l) {
      const int64_t in_size = p_.slot_input_size[l * p_.D];
      d_in_rows_ = l == 0 && dx_in_place_ != nullptr ? dx_in_place_ : d_in_.data();
      load_layer_input(l);
      if (plan_.threads.threading == Threading::DirectionsInParallel) {
        run_tasks(p_.D, plan_.threads.direction_threads,
                  [&](int64_t dir) { run_direction(l, dir); });
        for (int64_t dir = 0; dir < p_.D; ++dir) add_input_gradient(in_size, dir);
      } else {
        for (int64_t dir = 0; dir < p_.D; ++dir) {
          run_direction(l, dir);
          add_input_gradient(in_size, dir);
        }
      }
      std::swap(d_in_, d_out_);  // d_out_ now holds the gradient of layer l-1's output
      d_out_rows_ = d_out_.data();
    }
    if (dx_in_place_ == nullptr) {
      in_step_halves(p_, plan_.threads.row_half_threads, [&](int64_t t0, int64_t t1) {
        scatter_valid_rows<Acc>(p_, d_out_.data(), p_.I, out_.dx, t0, t1);
      });
    }
  }

 private:
  // x_ (N, I_l): the input for layer 0, else the lower layer's saved h (its
  // output); bf16_products: its bfloat16 values too.
  void load_layer_input(int64_t l) {
    if constexpr (kFloat) {
      // A bfloat16 input lying as compact rows: the products read its bits
      // (no float copy; x_ is read only to make x_bits_ in this mode).
      x_bits_rows_ = x_bits_.data();
      if (plan_.bf16_products && l == 0) {
        const void* bits = compact_rows_in_place_of(p_, input_, p_.I, DType::BFloat16);
        if (bits != nullptr) {
          x_bits_rows_ = static_cast<const uint16_t*>(bits);
          x_rows_ = nullptr;
          return;
        }
      }
    }
    x_rows_ = l == 0 ? input_in_place_ : nullptr;
    if (x_rows_ == nullptr) {
      gather_layer_input(l);
      x_rows_ = x_.data();
    }
    if constexpr (kFloat) {
      if (plan_.bf16_products) {
        const int64_t in_size = p_.slot_input_size[l * p_.D];
        round_to_bfloat16_bits(x_rows_, p_.valid_rows() * in_size, x_bits_.data());
      }
    }
  }

  void gather_layer_input(int64_t l) {
    if (l == 0) {
      gather_valid_rows<Acc>(p_, input_, p_.I, x_.data());
      return;
    }
    const TensorView& h = *g_.h;
    const int64_t R = p_.R, DR = p_.D * R;
    for (int64_t dir = 0; dir < p_.D; ++dir) {
      const int64_t s = (l - 1) * p_.D + dir;
      for (int64_t t = 0; t < p_.T; ++t) {
        gather_matrix<Acc>(h, s * h.stride(0) + t * h.stride(1), p_.step_batch[t], h.stride(2),
                           R, h.stride(3), x_.data() + p_.step_offset[t] * DR + dir * R, DR);
      }
    }
  }

  void load_weights(int64_t s, DirectionWorkspace<Acc>& wi, DirectionWorkspace<Acc>& w) const {
    const int64_t G = 4 * p_.H, in_size = p_.slot_input_size[s];
    const TensorView& w_ih = params_[s * p_.params_per_slot];
    const TensorView& w_hh = params_[s * p_.params_per_slot + 1];
    // bfloat16 products of a bfloat16 weight: run_direction copies its bits;
    // the float rows (and their transpose) are not read.
    if (kFloat && plan_.bf16_products && w_ih.dtype == DType::BFloat16) {
      wi.w_ih_rows = nullptr;
      wi.ld_ih = in_size;
    } else {
      load_input_weight(w_ih, G, in_size, wi, w);
    }
    // The same in the matmul form for a bfloat16 w_hh (its bits copied too).
    if (kFloat && plan_.bf16_products && matmul_form_ && w_hh.dtype == DType::BFloat16) {
      w.w_hh_rows = nullptr;
      w.ld_hh = p_.R;
    } else {
      w.w_hh_rows = weight_rows<Acc>(w_hh, G, p_.R, w.w_hh.data(), &w.ld_hh);
    }
    if (p_.projections()) {
      gather_weight<Acc>(params_[p_.w_hr_index(s)], p_.P, p_.H, w.w_hr.data());
    }
  }

  void load_input_weight(const TensorView& w_ih, int64_t G, int64_t in_size,
                         DirectionWorkspace<Acc>& wi, DirectionWorkspace<Acc>& w) const {
    // w_ih (4H, in_size) as stored (in place, or gathered).
    Acc* w_ih_copy = plan_.weight_gradients_tn ? wi.w_ih.data() : w.dw_ih.data();
    wi.w_ih_rows = weight_rows<Acc>(w_ih, G, in_size, w_ih_copy, &wi.ld_ih);
    if (!plan_.weight_gradients_tn) {
      // w_ih^T (in_size, 4H) for the NT d_in product: w_ih as stored (in place,
      // or gathered into dw_ih, free until the weight gradients), transposed
      // (a strided gather is several times slower).
      transpose(G, in_size, wi.w_ih_rows, wi.ld_ih, wi.w_ih.data(), G + kTransposePad);
    }
  }

  // Projections, step t: dh_total[t] (rows, P) = dh_state + the layer
  // output's gradient (columns [c0, c1)), kept for dw_hr.
  void step_output_gradient(int64_t dir, int64_t t, DirectionWorkspace<Acc>& w, int64_t c0,
                            int64_t c1) const {
    const int64_t P = p_.P, DP = p_.D * P;
    const int64_t rows = p_.step_batch[t], off = p_.step_offset[t];
    Acc* dh_total = w.dh_total.data() + off * P;
    const Acc* dh_state = w.dh_state.data();
    const Acc* d_out = d_out_rows_ + off * DP + dir * P;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = c0; k < c1; ++k) {
        dh_total[r * P + k] = dh_state[r * P + k] + d_out[r * DP + k];
      }
    }
  }

  // Projections, step t: dm (rows, H) = dh_total[t] * w_hr, the gradient of
  // the cell's output m = o * tanh(c), which the cell pass takes (units
  // [u0, u1); every column the bits of the whole product's).
  void step_cell_output_gradient(int64_t t, DirectionWorkspace<Acc>& w, int64_t u0,
                                 int64_t u1) const {
    const int64_t P = p_.P, H = p_.H;
    const int64_t rows = p_.step_batch[t], off = p_.step_offset[t];
    const Acc* dh_total = w.dh_total.data() + off * P;
    Acc* dm = w.cell_output_gradient.data();
    if constexpr (kFloat) {
      for (int64_t r = 0; r < rows; ++r) std::fill(dm + r * H + u0, dm + r * H + u1, 0.0f);
      w.output_projection.accumulate_columns(rows, dh_total, P, dm, H, u0, u1);
    } else {
      (void)u0, (void)u1;
      gemm(Transpose::No, Transpose::No, rows, H, P, Acc(1), dh_total, P, w.w_hr.data(), H, Acc(0),
           dm, H);
    }
  }

  // Step t's loads and cell pass for the hidden units [u0, u1): d_gates[t]'s
  // columns of those units and their dc state.
  void step_cell(int64_t s, int64_t dir, int64_t t, int64_t u0, int64_t u1,
                 DirectionWorkspace<Acc>& own, DirectionWorkspace<Acc>& w) const {
    const int64_t H = p_.H, G = 4 * H, R = p_.R, DR = p_.D * R;
    const int64_t rows = p_.step_batch[t];
    const int64_t off = p_.step_offset[t];
    const TensorView* c0 = p_.has_hx ? &hx_[1] : nullptr;
    const TensorView* saved_views[] = {g_.i, g_.j, g_.f, g_.o, g_.tanhc};
    const TensorView& c = *g_.c;
    int64_t prev = 0;
    // c_prev lies in the saved c when the previous step had every row of this one.
    const int64_t from_prev = rows_from_previous_step(p_, dir, t, &prev);
    const bool c_prev_saved = from_prev > 0 && from_prev == rows;
    // The cell's output gradient is dh_state + d_out; with projections dm,
    // which then stands in dh_state's place next to a zero d_out row (ld 0).
    const Acc* d_out = d_out_rows_ + off * DR + dir * R;
    int64_t ld_out = DR;
    const Acc* dh = w.dh_state.data();
    if (p_.projections()) {  // dm: the time loop's step_cell_output_gradient
      dh = w.cell_output_gradient.data();
      d_out = w.zero_row.data();
      ld_out = 0;
    }
    const auto rows_of_h = [&](const TensorView& v, DType dtype) {
      return v.dtype == dtype && v.stride(3) == 1 && v.stride(2) == H;
    };
    bool read_bits = false;
    if constexpr (kFloat) {
      // bfloat16 saved tensors (c_prev's too) with rows of H contiguous
      // values: the pass reads their bits, widened (the same values as the
      // copies below, without them).
      read_bits = c_prev_saved && rows_of_h(c, DType::BFloat16);
      for (int k = 0; k < kCPrev; ++k) {
        read_bits = read_bits && rows_of_h(*saved_views[k], DType::BFloat16);
      }
    }
    if (read_bits) {
      if constexpr (kFloat) {
        const uint16_t* b[kSavedCount];
        for (int k = 0; k < kCPrev; ++k) {
          const TensorView& v = *saved_views[k];
          b[k] = static_cast<const uint16_t*>(v.data) + s * v.stride(0) + t * v.stride(1);
        }
        b[kCPrev] = static_cast<const uint16_t*>(c.data) + s * c.stride(0) + prev * c.stride(1);
        cell_pass_backward_bf16(rows, H, u0, u1, b[kI], b[kJ], b[kF], b[kO], b[kTanhc],
                                b[kCPrev], d_out, ld_out, dh, w.dc_state.data(),
                                own.d_gates.data() + off * G);
      }
    } else {
      // A saved tensor already in the compute type with rows of H contiguous
      // floats is read in place; any other is converted into the step buffer
      // (the part's columns only).
      const Acc* in[kSavedCount];
      for (int k = 0; k < kCPrev; ++k) {
        const TensorView& v = *saved_views[k];
        if (rows_of_h(v, compute_dtype<Acc>())) {
          in[k] = static_cast<const Acc*>(v.data) + s * v.stride(0) + t * v.stride(1);
        } else {
          gather_saved_rows<Acc>(v, s, t, 0, rows, H, w.step[k].data(), u0, u1);
          in[k] = w.step[k].data();
        }
      }
      // c_prev: the saved c of the previous step, read in place like the
      // others when that step had every row of this one; else gathered (with
      // c0's rows).
      if (c_prev_saved && rows_of_h(c, compute_dtype<Acc>())) {
        in[kCPrev] = static_cast<const Acc*>(c.data) + s * c.stride(0) + prev * c.stride(1);
      } else {
        gather_previous_state<Acc>(p_, c, c0, s, dir, t, H, w.step[kCPrev].data(), u0, u1);
        in[kCPrev] = w.step[kCPrev].data();
      }
      cell_pass_backward<Acc>(rows, H, u0, u1, in[kI], in[kJ], in[kF], in[kO], in[kTanhc],
                              in[kCPrev], d_out, ld_out, dh, w.dc_state.data(),
                              own.d_gates.data() + off * G);
    }
    if (p_.has_biases) {
      // db += the step's d_gates rows (the part's columns), while they are in
      // cache: per column the steps in the loop's order, rows in order.
      Acc* db = w.db.data();
      for (int64_t r = 0; r < rows; ++r) {
        const Acc* row = own.d_gates.data() + (off + r) * G;
        for (int64_t q = 0; q < 4; ++q) {
          for (int64_t k = q * H + u0; k < q * H + u1; ++k) db[k] += row[k];
        }
      }
    }
    if constexpr (kFloat) {
      if (plan_.bf16_products) {
        // The part's columns of each gate block, rounded for the products.
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t q = 0; q < 4; ++q) {
            const int64_t e = (off + r) * G + q * H + u0;
            round_to_bfloat16_bits(own.d_gates.data() + e, u1 - u0, own.d_gates_bits.data() + e);
          }
        }
      }
    }
  }

  // dh_state[:rows, u0:u1) = d_gates[t] (rows, 4H) * w_hh[:, u0:u1) (rows, R):
  // split mode's parts their columns (dh_columns: their units, or with
  // projections their columns of h), otherwise [0, R).
  void step_dh(int64_t t, int64_t u0, int64_t u1, DirectionWorkspace<Acc>& own,
               DirectionWorkspace<Acc>& w) const {
    const int64_t R = p_.R, G = 4 * p_.H;
    const int64_t rows = p_.step_batch[t];
    const Acc* d_gates = own.d_gates.data() + p_.step_offset[t] * G;
    if constexpr (kFloat) {
      if (plan_.bf16_products) {
        const uint16_t* a = own.d_gates_bits.data() + p_.step_offset[t] * G;
        if (amx_form_) {  // the part's columns (split mode), else all
          if (rows > 0) amx_dh(rows, p_.H, w.amx_w_hh.data(), a, w.dh_state.data(), u0, u1);
        } else if (matmul_form_) {
          if (rows > 0) w.matmul.multiply(rows, a, w.dh_state.data());
        } else {
          w.bf16_recurrent.multiply(rows, a, G, w.dh_state.data(), R, u0, u1);
        }
        return;
      }
    }
    if constexpr (kFloat) {
      if (!plan_.single_step) {
        for (int64_t r = 0; r < rows; ++r) {
          std::fill(w.dh_state.data() + r * R + u0, w.dh_state.data() + r * R + u1, 0.0f);
        }
        w.recurrent.accumulate_columns(rows, d_gates, G, w.dh_state.data(), R, u0, u1);
        return;
      }
    }
    // double, and a single step (one part: all R columns)
    (void)u0, (void)u1;
    gemm(Transpose::No, Transpose::No, rows, R, G, Acc(1), d_gates, G, w.w_hh_rows, w.ld_hh,
         Acc(0), w.dh_state.data(), R);
  }

  // The time loop. One thread (barrier null): per step every part's cell
  // pass on the plan's units, then every part's dh columns (one part: all R).
  // Two threads (part p0 here): per step the part's cell pass, the barrier
  // (each step's dh product reads the d_gates columns of both parts), its dh
  // columns; a part's next cell pass reads only its own dh and dc columns,
  // and writes other rows of d_gates, so one barrier per step suffices. The
  // balance (unit_balance.h) moves the boundary at barriers only: a step's
  // dh product and the next step's cell pass take the same units, whose dc
  // (written by the previous owner) the barrier orders; the time between two
  // barriers (a dh product and a cell pass) is what it measures.
  void time_loop(int64_t s, int64_t dir, int p0, int p1, PairBarrier* barrier,
                 UnitBalance* balance, DirectionWorkspace<Acc>& own,
                 DirectionWorkspace<Acc>& w) const {
    const auto step_at = [&](int64_t n) { return dir == 0 ? p_.T - 1 - n : n; };
    const bool projections = p_.projections();
    if (barrier == nullptr) {
      for (int64_t n = 0; n < p_.T; ++n) {
        const int64_t t = step_at(n);
        if (projections) {
          step_output_gradient(dir, t, w, 0, p_.P);
          step_cell_output_gradient(t, w, 0, p_.H);
        }
        for (int part = p0; part < p1; ++part) {
          step_cell(s, dir, t, plan_.threads.units[part].begin, plan_.threads.units[part].end,
                    own, w);
        }
        for (int part = p0; part < p1; ++part) {
          const UnitRange c = dh_columns(part);
          step_dh(t, c.begin, c.end, own, w);
        }
      }
      return;
    }
    if (projections) {
      projection_time_loop(s, dir, p0, barrier, balance, own, w);
      return;
    }
    const int part = p0;
    UnitBalance::Local local = balance->start();
    int64_t u0 = 0, u1 = 0;
    for (int64_t n = 0; n < p_.T; ++n) {
      const int64_t busy_from = UnitBalance::now();
      balance->units(local, part, &u0, &u1);
      if (n > 0) step_dh(step_at(n - 1), u0, u1, own, w);
      step_cell(s, dir, step_at(n), u0, u1, own, w);
      UnitBalance::record(local, UnitBalance::now() - busy_from);
      balance->publish(local, part, n);
      barrier->wait();
      balance->update(local, part, n);
    }
    balance->units(local, part, &u0, &u1);
    step_dh(step_at(p_.T - 1), u0, u1, own, w);
    balance->finish(local, part);
  }

  // The bfloat16 weight gradients with d_gates^T transposed in memory: the
  // AMX form, up to kAmxWeightGradTransposedMaxValues values of d_gates.
  bool d_gates_transposed() const {
    return amx_form_ && p_.valid_rows() * 4 * p_.H <= kAmxWeightGradTransposedMaxValues;
  }

  // The columns of dh (R wide) a part's dh product writes: split mode's
  // units (R = H), with projections its columns of h (R = P); one part: all.
  UnitRange dh_columns(int part) const {
    if (plan_.threads.threading != Threading::SplitUnits) return UnitRange{0, p_.R};
    return p_.projections() ? plan_.threads.proj_columns[part] : plan_.threads.units[part];
  }

  // Split mode with projections, part `part` of two threads: two barriers a
  // step. The cell phase (dm, then the cell pass, on the part's units, which
  // the balance moves) reads every column of the step's dh_total; the dh
  // phase (the part's columns of dh, then of the next step's dh_total) reads
  // every column of the step's d_gates.
  void projection_time_loop(int64_t s, int64_t dir, int part, PairBarrier* barrier,
                            UnitBalance* balance, DirectionWorkspace<Acc>& own,
                            DirectionWorkspace<Acc>& w) const {
    const auto step_at = [&](int64_t n) { return dir == 0 ? p_.T - 1 - n : n; };
    const UnitRange c = dh_columns(part);
    UnitBalance::Local local = balance->start();
    int64_t u0 = 0, u1 = 0;
    step_output_gradient(dir, step_at(0), w, c.begin, c.end);
    barrier->wait();
    for (int64_t n = 0; n < p_.T; ++n) {
      const int64_t t = step_at(n);
      int64_t busy_from = UnitBalance::now();
      balance->units(local, part, &u0, &u1);
      step_cell_output_gradient(t, w, u0, u1);
      step_cell(s, dir, t, u0, u1, own, w);
      const int64_t busy = UnitBalance::now() - busy_from;
      barrier->wait();
      busy_from = UnitBalance::now();
      step_dh(t, c.begin, c.end, own, w);
      if (n + 1 < p_.T) step_output_gradient(dir, step_at(n + 1), w, c.begin, c.end);
      UnitBalance::record(local, busy + UnitBalance::now() - busy_from);
      balance->publish(local, part, n);
      barrier->wait();
      balance->update(local, part, n);
    }
    balance->finish(local, part);
  }

  // dw_ih (4H, I_l) = d_gates^T x_l and dw_hh (4H, H) = d_gates^T h_prev, the
  // 4H rows of the results in two fixed halves (the same calls whatever the
  // thread count). Parts [p0, p1) of {0, 1}: half p of the rows of d_gates^T
  // and of the products.
  // TN (plan_.weight_gradients_tn): one product each over all N rows.
  // Otherwise over chunks of kWeightGradChunk rows in order, each operand
  // transposed first (transpose.h): part 0 transposes x_l, part 1 h_prev;
  // with two threads a barrier between the transposes and the products, and
  // before the next chunk's transposes.
  void weight_grads(int64_t in_size, int p0, int p1, PairBarrier* barrier,
                    DirectionWorkspace<Acc>& own, DirectionWorkspace<Acc>& w) const {
    const int64_t R = p_.R, G = 4 * p_.H, N = p_.valid_rows(), half = G / 2;
    if constexpr (kFloat) {
      if (plan_.bf16_products) {
        for (int part = p0; part < p1; ++part) {
          // d_gates^T: the part's half of the rounded d_gates transposed in
          // memory first where d_gates_transposed() (the same values as
          // d_gates_bits), else read as stored.
          const bool transposed = d_gates_transposed();
          if (transposed) {
            transpose_to_bfloat16_bits(N, half, own.d_gates.data() + part * half, G,
                                       own.d_gates_bits_t.data() + part * half * N, N);
          }
          const Transpose ta = transposed ? Transpose::No : Transpose::Yes;
          const uint16_t* a = transposed ? own.d_gates_bits_t.data() + part * half * N
                                         : own.d_gates_bits.data() + part * half;
          const int64_t lda = transposed ? N : G;
          gemm_bf16_or_float(ta, Transpose::No, half, in_size, N, a, lda, x_bits_rows_, in_size,
                             0.0f, w.dw_ih_out + part * half * in_size, in_size);
          gemm_bf16_or_float(ta, Transpose::No, half, R, N, a, lda, w.h_prev_bits.data(), R,
                             0.0f, w.dw_hh_out + part * half * R, R);
        }
        return;
      }
    }
    if (plan_.weight_gradients_tn) {
      for (int part = p0; part < p1; ++part) {
        const Acc* a = own.d_gates.data() + part * half;
        Acc* scratch = plan_.dw_t > 0 ? w.dw_t.data() + part * plan_.dw_t_part : nullptr;
        weight_gradient_tn(half, in_size, N, a, G, x_rows_, w.dw_ih_out + part * half * in_size,
                           scratch);
        weight_gradient_tn(half, R, N, a, G, w.h_prev.data(), w.dw_hh_out + part * half * R,
                           scratch);
      }
      return;
    }
    if (N == 0) {  // an empty batch: no chunk to sum, zero gradients
      for (int part = p0; part < p1; ++part) {
        std::fill_n(w.dw_ih_out + part * half * in_size, half * in_size, Acc(0));
        std::fill_n(w.dw_hh_out + part * half * R, half * R, Acc(0));
      }
      return;
    }
    for (int64_t r0 = 0; r0 < N; r0 += kWeightGradChunk) {
      const int64_t rows = std::min(kWeightGradChunk, N - r0);
      const int64_t ld = transposed_stride(rows);
      const Acc beta = r0 == 0 ? Acc(0) : Acc(1);
      if (r0 > 0 && barrier != nullptr) barrier->wait();
      for (int part = p0; part < p1; ++part) {
        transpose(rows, half, own.d_gates.data() + r0 * G + part * half, G,
                  w.d_gates_t.data() + part * half * ld, ld);
        if (part == 0) {
          transpose(rows, in_size, x_rows_ + r0 * in_size, in_size, w.x_t.data(), ld);
        } else {
          transpose(rows, R, w.h_prev.data() + r0 * R, R, w.h_prev_t.data(), ld);
        }
      }
      if (barrier != nullptr) barrier->wait();
      for (int part = p0; part < p1; ++part) {
        const Acc* a = w.d_gates_t.data() + part * half * ld;
        gemm(Transpose::No, Transpose::Yes, half, in_size, rows, Acc(1), a, ld, w.x_t.data(),
             ld, beta, w.dw_ih_out + part * half * in_size, in_size);
        gemm(Transpose::No, Transpose::Yes, half, R, rows, Acc(1), a, ld, w.h_prev_t.data(),
             ld, beta, w.dw_hh_out + part * half * R, R);
      }
    }
  }

  // dw (rows, cols) = a^T b over the N rows of a (N, rows; row stride lda)
  // and b (N, cols): one TN product, or where the plan takes that form
  // (weight_gradient_result_transposed) dw^T = b^T a into scratch, then
  // copied transposed into dw.
  void weight_gradient_tn(int64_t rows, int64_t cols, int64_t N, const Acc* a, int64_t lda,
                          const Acc* b, Acc* dw, Acc* scratch) const {
    if (scratch != nullptr && weight_gradient_result_transposed(rows, cols, N)) {
      const int64_t ld = plan_.dw_t_ld;
      gemm(Transpose::Yes, Transpose::No, cols, rows, N, Acc(1), b, cols, a, lda, Acc(0), scratch,
           ld);
      transpose(cols, rows, scratch, ld, dw, cols);
    } else {
      gemm(Transpose::Yes, Transpose::No, rows, cols, N, Acc(1), a, lda, b, cols, Acc(0), dw,
           cols);
    }
  }

  // Projections, after the time loop: dw_hr (P, H) = dh_total^T (P, N) *
  // m (N, H), one TN product over all rows, m = o * tanhc from the saved
  // tensors (in the compute type).
  void projection_weight_gradient(int64_t s, DirectionWorkspace<Acc>& w) const {
    const int64_t H = p_.H, P = p_.P, N = p_.valid_rows();
    Acc* m = w.cell_output.data();
    Acc* tanhc = w.step[kTanhc].data();  // one step's tanhc (rows, H)
    for (int64_t t = 0; t < p_.T; ++t) {
      const int64_t rows = p_.step_batch[t];
      Acc* m_t = m + p_.step_offset[t] * H;
      gather_saved_rows<Acc>(*g_.o, s, t, 0, rows, H, m_t, 0, H);
      gather_saved_rows<Acc>(*g_.tanhc, s, t, 0, rows, H, tanhc, 0, H);
      for (int64_t e = 0; e < rows * H; ++e) m_t[e] *= tanhc[e];
    }
    if (N == 0) {  // an empty batch: no rows to sum, a zero gradient
      std::fill_n(w.dw_hr.data(), P * H, Acc(0));
      return;
    }
    gemm(Transpose::Yes, Transpose::No, P, H, N, Acc(1), w.dh_total.data(), P, m, H, Acc(0),
         w.dw_hr.data(), H);
  }

  void run_direction(int64_t l, int64_t dir) {
    const ThreadPlan& t = plan_.threads;
    const bool split = t.threading == Threading::SplitUnits;
    DirectionWorkspace<Acc>& own = dir_[dir];  // d_gates, w_ih
    DirectionWorkspace<Acc>& w = dir_[t.direction_workspaces > 1 ? dir : 0];  // the rest
    const int64_t s = l * p_.D + dir;
    const int64_t H = p_.H, R = p_.R, G = 4 * H, N = p_.valid_rows();
    const int64_t in_size = p_.slot_input_size[s];
    const TensorView* h0 = p_.has_hx ? &hx_[0] : nullptr;
    load_weights(s, own, w);
    if constexpr (kFloat) {
      if (plan_.bf16_products) {
        if (matmul_form_) {
          if (w.w_hh_rows == nullptr) {  // a bfloat16 w_hh: its bits as they are
            const TensorView& v = params_[s * p_.params_per_slot + 1];
            copy_bits_rows(static_cast<const uint16_t*>(v.data), G, v.stride(0), H, v.stride(1),
                           w.w_hh_bits.data());
          } else {
            round_rows_to_bfloat16_bits(w.w_hh_rows, G, w.ld_hh, H, w.w_hh_bits.data());
          }
          if (amx_form_) {
            amx_pack_w_hh_for_dh(H, w.w_hh_bits.data(), H, w.amx_w_hh.data());
          } else {
            w.matmul.set_b(w.w_hh_bits.data());
          }
        } else {
          w.bf16_recurrent.set_b(w.w_hh_rows, w.ld_hh);
        }
        if (own.w_ih_rows == nullptr) {  // a bfloat16 w_ih: its bits as they are
          const TensorView& v = params_[s * p_.params_per_slot];
          copy_bits_rows(static_cast<const uint16_t*>(v.data), G, v.stride(0), in_size,
                         v.stride(1), own.w_ih_bits.data());
        } else {
          round_rows_to_bfloat16_bits(own.w_ih_rows, G, own.ld_ih, in_size,
                                      own.w_ih_bits.data());
        }
      } else if (split) {
        // (each part packs its own units' columns: prepare_part below)
      } else if (!plan_.single_step) {
        w.recurrent.set_b(w.w_hh_rows, w.ld_hh);
      }
      if (p_.projections()) w.output_projection.set_b(w.w_hr.data(), H);
    }
    if (p_.projections()) std::fill(w.zero_row.data(), w.zero_row.data() + H, Acc(0));
    // bfloat16 products on a bfloat16 call's saved h (and hx): the bits as
    // they are, no float copy (h_prev is read only to make its bits then).
    const bool h_prev_bits_only = kFloat && plan_.bf16_products &&
                                  g_.h->dtype == DType::BFloat16 &&
                                  (h0 == nullptr || !h0->defined || h0->dtype == DType::BFloat16);
    if constexpr (kFloat) {
      if (h_prev_bits_only) {
        for (int64_t step = 0; step < p_.T; ++step) {
          gather_previous_state_bits(p_, *g_.h, h0, s, dir, step, R,
                                     w.h_prev_bits.data() + p_.step_offset[step] * R);
        }
      }
    }
    // h_prev (N, R), the rows of every step (read by the weight gradients
    // after the time loop); float products in split mode gather it in the
    // parts (prepare_part), halves of the steps.
    const bool float_split = split && !(kFloat && plan_.bf16_products);
    const auto gather_h_prev = [&](int64_t step0, int64_t step1) {
      for (int64_t step = step0; step < step1; ++step) {
        gather_previous_state<Acc>(p_, *g_.h, h0, s, dir, step, R,
                                   w.h_prev.data() + p_.step_offset[step] * R, 0, R);
      }
    };
    if (!h_prev_bits_only && !float_split) {
      gather_h_prev(0, p_.T);
      if constexpr (kFloat) {
        if (plan_.bf16_products) {
          round_to_bfloat16_bits(w.h_prev.data(), N * R, w.h_prev_bits.data());
        }
      }
    }
    gather_slot_rows<Acc>(g_.grad_hy, s, 0, p_.B, R, w.dh_state.data(), 0, R);
    std::fill_n(w.db.data(), G, Acc(0));
    gather_slot_rows<Acc>(g_.grad_cy, s, 0, p_.B, H, w.dc_state.data(), 0, H);

    // Split mode's float products: part `part`'s packed w_hh columns and half
    // of h_prev's steps (the time loop's barriers order both before any read
    // by the other part).
    const auto prepare_part = [&](int part) {
      if constexpr (kFloat) {
        if (float_split) {
          const UnitRange c = dh_columns(part);
          w.recurrent.set_b_columns(w.w_hh_rows, w.ld_hh, c.begin, c.end);
        }
      }
      if (float_split) gather_h_prev(part * (p_.T / 2), part == 0 ? p_.T / 2 : p_.T);
    };
    const int64_t base = s * p_.params_per_slot;
    Acc* const dw_ih_in_place = matrix_in_place<Acc>(out_.dparams[base], G, in_size);
    Acc* const dw_hh_in_place = matrix_in_place<Acc>(out_.dparams[base + 1], G, R);
    w.dw_ih_out = dw_ih_in_place != nullptr ? dw_ih_in_place : w.dw_ih.data();
    w.dw_hh_out = dw_hh_in_place != nullptr ? dw_hh_in_place : w.dw_hh.data();
    UnitBalance balance(p_.H, t.units[0].end);
    // Half `part` of the 4H rows of dw_ih and dw_hh into the outputs (where
    // not computed in place), by the part that computed them.
    const auto scatter_weight_gradients = [&](int part) {
      const int64_t half = G / 2, first = part * half;
      if (dw_ih_in_place == nullptr) {
        scatter_matrix<Acc>(w.dw_ih.data() + first * in_size, in_size, half, in_size,
                            out_.dparams[base], first * in_size, in_size, 1);
      }
      if (dw_hh_in_place == nullptr) {
        scatter_matrix<Acc>(w.dw_hh.data() + first * R, R, half, R, out_.dparams[base + 1],
                            first * R, R, 1);
      }
    };
    const bool paired = split && run_pair([&](int part) {
      prepare_part(part);
      time_loop(s, dir, part, part + 1, &barrier_, &balance, own, w);
      weight_grads(in_size, part, part + 1, &barrier_, own, w);
      scatter_weight_gradients(part);
    });
    if (!paired) {
      if (split) {
        prepare_part(0);
        prepare_part(1);
      }
      time_loop(s, dir, 0, t.parts, nullptr, nullptr, own, w);
      // A single step's weight gradients are most of its work: their two
      // halves on two threads where there are (the same calls either way).
      const bool pair_halves = plan_.single_step && t.direction_threads == 1 &&
                               t.row_half_threads == 2 && run_pair([&](int part) {
                                 weight_grads(in_size, part, part + 1, &barrier_, own, w);
                                 scatter_weight_gradients(part);
                               });
      if (!pair_halves) {
        weight_grads(in_size, 0, 2, nullptr, own, w);
        scatter_weight_gradients(0);
        scatter_weight_gradients(1);
      }
    }
    scatter_slot<Acc>(p_, w.dh_state.data(), R, out_.dh0, s);
    scatter_slot<Acc>(p_, w.dc_state.data(), H, out_.dc0, s);
    if (p_.projections()) {
      projection_weight_gradient(s, w);
      scatter_matrix<Acc>(w.dw_hr.data(), H, p_.P, H, out_.dparams[p_.w_hr_index(s)], 0, H, 1);
    }
    if (p_.has_biases) {  // db: the column sums of d_gates, summed in the time loop
      const Acc* db = w.db.data();
      scatter_matrix<Acc>(db, G, 1, G, out_.dparams[base + 2], 0, G, 1);
      scatter_matrix<Acc>(db, G, 1, G, out_.dparams[base + 3], 0, G, 1);
    }
  }

  // d_in (N, I_l) (+)= d_gates_dir (N, 4H) * w_ih_dir (4H, I_l): direction 0
  // writes, direction 1 adds, so d_in = sum over directions in order. w_ih as
  // stored (NN) with TN weight gradients, else held transposed (NT, the
  // faster form there, transpose.h). The plan's two fixed halves of the rows
  // (whatever the thread count, so the same calls and bits), on two threads
  // when there are.
  void add_input_gradient(int64_t in_size, int64_t dir) {
    const int64_t G = 4 * p_.H;
    run_tasks(2, plan_.threads.row_half_threads, [&](int64_t part) {
      const RowHalf h = plan_.threads.row_halves[part];
      const int64_t r0 = h.first, rows = h.count;
      if constexpr (kFloat) {
        if (plan_.bf16_products) {
          gemm_bf16_or_float(Transpose::No, Transpose::No, rows, in_size, G,
                             dir_[dir].d_gates_bits.data() + r0 * G, G,
                             dir_[dir].w_ih_bits.data(), in_size, dir == 0 ? 0.0f : 1.0f,
                             d_in_rows_ + r0 * in_size, in_size);
          return;
        }
      }
      if (plan_.weight_gradients_tn) {
        gemm(Transpose::No, Transpose::No, rows, in_size, G, Acc(1),
             dir_[dir].d_gates.data() + r0 * G, G, dir_[dir].w_ih_rows, dir_[dir].ld_ih,
             dir == 0 ? Acc(0) : Acc(1), d_in_rows_ + r0 * in_size, in_size);
        return;
      }
      gemm(Transpose::No, Transpose::Yes, rows, in_size, G, Acc(1),
           dir_[dir].d_gates.data() + r0 * G, G, dir_[dir].w_ih.data(), G + kTransposePad,
           dir == 0 ? Acc(0) : Acc(1), d_in_rows_ + r0 * in_size, in_size);
    });
  }

  const LstmProblem& p_;
  const BackwardPlan plan_;
  const BackwardInputs& g_;
  const TensorView& input_;
  const TensorList& hx_;
  const TensorList& params_;
  const BackwardOutputs& out_;
  mutable PairBarrier barrier_;
  // The bfloat16 products' dh product on oneDNN's matmul (the plan's, unless
  // oneDNN could not ready it: then Bf16RecurrentProduct).
  bool matmul_form_ = plan_.bf16_matmul_step;
  // ... on lstmop's AMX tiles (kernel_choice().bf16_amx_step, the shape
  // amx_step_supported).
  bool amx_form_ = plan_.bf16_matmul_step && kernels::kernel_choice().bf16_amx_step;
  WorkspaceArena arena_;
  Workspace<Acc> x_, d_out_, d_in_;
  // Where the current layer reads x and d_out and writes d_in: the
  // workspaces above, or the caller's tensors in place (the constructor).
  const Acc* x_rows_ = nullptr;
  const Acc* d_out_rows_ = nullptr;
  Acc* d_in_rows_ = nullptr;
  const Acc* input_in_place_ = nullptr;
  const Acc* grad_y_in_place_ = nullptr;
  Acc* dx_in_place_ = nullptr;
  Workspace<uint16_t> x_bits_;  // bf16_products: x_'s bfloat16 values
  const uint16_t* x_bits_rows_ = nullptr;  // x_bits_, or a bfloat16 input's bits in place
  DirectionWorkspace<Acc> dir_[2];
};

}  // namespace

void run_lstm_backward(const LstmProblem& problem, const BackwardInputs& saved,
                       const TensorView& input, const TensorList& hx, const TensorList& params,
                       const BackwardOutputs& out) {
  const ControlWordScope environment(call_control_word(flushes_subnormals(problem.dtype)));
  switch (problem.dtype) {
    case DType::Float64:
      BackwardDriver<double>(problem, saved, input, hx, params, out).run();
      break;
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      // float16 / bfloat16 are widened when gathered and rounded when stored.
      BackwardDriver<float>(problem, saved, input, hx, params, out).run();
      break;
    case DType::Int64: break;  // rejected by validation
  }
}

}  // namespace detail
}  // namespace lstmop
