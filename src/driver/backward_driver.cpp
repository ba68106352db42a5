// The production backward driver (backpropagation through time and layers).
//
// Rows are compact as in the forward (lstm_forward.cpp). Per call:
//   1. d_out (N, D*H) <- grad_y (0 if undefined);
//   2. per layer, top to bottom: x_l (N, I_l) <- the input (layer 0) or the
//      lower layer's saved h of both directions; then per direction
//      (directions possibly on two threads):
//        gather w_ih^T (I_l, 4H), w_hh (4H, H); h_prev (N, H) <- the h each
//        row's step started from (saved h of the neighbouring step, or h0);
//        dh, dc state (B, H) <- grad_hy, grad_cy;
//        per step, in the reverse of the forward's order, rows n = step_batch[t]:
//          cell_pass_backward  -> d_gates[t] (n, 4H), dc_state
//          dh_state[:n] = d_gates[t] * w_hh           (dh GEMM)
//        dh0, dc0 <- state;
//        dw_ih = d_gates^T x_l, dw_hh = d_gates^T h_prev  (float where
//          gemm_tn_at_full_rate(): one TN GEMM each; otherwise a GEMM each
//          per chunk of 1024 rows, operands transposed first: the NT form)
//        db_ih = db_hh = column sums of d_gates;
//      d_in (N, I_l) = sum over directions of d_gates * w_ih (the next d_out);
//   3. scatter layer 0's d_in into dx (0 in invalid rows).
#include <algorithm>
#include <type_traits>

#include "common/element_access.h"
#include "gemm/gemm.h"
#include "kernels/cell_pass.h"
#include "driver/drivers.h"
#include "kernels/recurrent_product.h"
#include "driver/threads.h"
#include "gemm/transpose.h"
#include "common/workspace.h"

namespace lstmop {
namespace detail {
namespace {

enum SavedIndex { kI, kJ, kF, kO, kTanhc, kCPrev, kSavedCount };

// Rows of d_gates per weight-gradient product: bounds the transposed copies
// (4H x 1024 floats) while K stays large enough for full GEMM speed. Fixed,
// so the sums' order never depends on the thread count.
constexpr int64_t kWeightGradChunk = 1024;

// Row stride of a transposed chunk of `rows` columns: a multiple of 16 floats
// but never of 1024, so the transpose's 32 destination rows do not all fall
// into the same L1 set (a 4 KiB stride made the copy several times slower).
constexpr int64_t kPad = 16;
constexpr int64_t transposed_stride(int64_t rows) { return (rows + 15) / 16 * 16 + kPad; }

template <class Acc>
constexpr DType dtype_of() {
  return std::is_same_v<Acc, float> ? DType::Float32 : DType::Float64;
}

template <class Acc>
struct DirectionWorkspace {
  Workspace<Acc> d_gates, w_ih, w_hh, h_prev, dh_state, dc_state, dw_ih, dw_hh, db;
  // One chunk of rows of d_gates, x_l and h_prev, transposed (the dW products).
  Workspace<Acc> d_gates_t, x_t, h_prev_t;
  Workspace<Acc> step[kSavedCount];  // one step's i, j, f, o, tanhc, c_prev (B, H)
  RecurrentProduct recurrent;         // float: w_hh (4H, H) packed for the dh product
  RecurrentProduct part_recurrent[2]; // split mode: w_hh's columns of each part's units
};

template <class Acc>
class BackwardDriver {
 public:
  BackwardDriver(const LstmDims& d, const BackwardInputs& g, const TensorView& input,
                 const TensorList& hx, const TensorList& params, const BackwardOutputs& out)
      : d_(d), g_(g), input_(input), hx_(hx), params_(params), out_(out) {
    const int64_t N = d.valid_rows(), G = 4 * d.H, DH = d.D * d.H;
    const int64_t max_in = std::max(d.I, DH);
    arena_.add(x_, "a layer's input (valid rows, input_size)", N * max_in);
    arena_.add(d_out_, "the gradient of a layer's output (valid rows, D*H)", N * max_in);
    arena_.add(d_in_, "the gradient of a layer's input (valid rows, input_size)", N * max_in);
    const int threads = get_num_threads();
    parallel_ = threads >= 2 && d.D == 2;
    if constexpr (std::is_same_v<Acc, float>) {
      split_ = threads >= 2 && d.D == 1 && worth_splitting(d);
    }
    u_split_ = split_units(d.H);
    if constexpr (std::is_same_v<Acc, float>) direct_ = gemm_tn_at_full_rate();
    for (int64_t k = 0; k < d.D; ++k) {
      DirectionWorkspace<Acc>& w = dir_[k];
      // With the directions in parallel, d_gates and w_ih of both meet in the
      // d_in GEMMs; one after the other, each direction adds its share of d_in
      // when it is done and the second reuses the first's d_gates.
      if (k == 0 || parallel_) {
        arena_.add(w.d_gates, "the gate gradients (valid rows, 4H)", N * G);
      }
      arena_.add(w.w_ih, "w_ih (4H, input_size), or w_ih^T", (G + kPad) * max_in);
      if (k > 0 && !parallel_) continue;
      arena_.add(w.w_hh, "w_hh (4H, H)", G * d.H);
      if constexpr (std::is_same_v<Acc, float>) {
        if (!split_) w.recurrent.allocate(arena_, G, d.H);
        if (split_) {
          for (int p = 0; p < 2; ++p) {
            w.part_recurrent[p].allocate(arena_, G, unit_end(p) - unit_begin(p));
          }
        }
      }
      arena_.add(w.h_prev, "the previous hidden states (valid rows, H)", N * d.H);
      arena_.add(w.dh_state, "dh (B, H)", d.B * d.H);
      arena_.add(w.dc_state, "dc (B, H)", d.B * d.H);
      arena_.add(w.dw_ih, "dw_ih (4H, input_size)", G * max_in);
      arena_.add(w.dw_hh, "dw_hh (4H, H)", G * d.H);
      arena_.add(w.db, "db (4H)", G);
      if (direct_) {
        for (Workspace<Acc>& b : w.step) arena_.add(b, "one step's saved tensors (B, H)", d.B * d.H);
        continue;
      }
      const int64_t chunk = transposed_stride(std::min(N, kWeightGradChunk));
      arena_.add(w.d_gates_t, "a chunk of the gate gradients, transposed (4H, rows)", G * chunk);
      arena_.add(w.x_t, "a chunk of a layer's input, transposed (input_size, rows)",
                 max_in * chunk);
      arena_.add(w.h_prev_t, "a chunk of the previous hidden states, transposed (H, rows)",
                 d.H * chunk);
      for (Workspace<Acc>& b : w.step) arena_.add(b, "one step's saved tensors (B, H)", d.B * d.H);
    }
    arena_.commit();
    if (d.D == 2 && !parallel_) dir_[1].d_gates = dir_[0].d_gates;
  }

  void run() {
    const int64_t DH = d_.D * d_.H;
    if (g_.grad_y->defined) {
      gather_sequence(*g_.grad_y, DH, d_out_.data());
    } else {
      std::fill(d_out_.data(), d_out_.data() + d_.valid_rows() * DH, Acc(0));
    }
    for (int64_t l = d_.L - 1; l >= 0; --l) {
      const int64_t in_size = d_.slot_input_size[l * d_.D];
      load_layer_input(l);
      if (parallel_) {
        run_tasks(d_.D, d_.D, [&](int64_t dir) { run_direction(l, dir); });
        for (int64_t dir = 0; dir < d_.D; ++dir) add_input_gradient(in_size, dir);
      } else {
        for (int64_t dir = 0; dir < d_.D; ++dir) {
          run_direction(l, dir);
          add_input_gradient(in_size, dir);
        }
      }
      std::swap(d_in_, d_out_);  // d_out_ now holds the gradient of layer l-1's output
    }
    write_dx(d_out_.data());
  }

 private:
  // dst (N, F) <- the valid rows of a sequence tensor in the input/output format.
  void gather_sequence(const TensorView& v, int64_t features, Acc* dst) const {
    const SequenceLayout l = d_.sequence_layout(v);
    for (int64_t t = 0; t < d_.T; ++t) {
      gather_matrix<Acc>(v, t * l.t_stride, d_.step_batch[t], l.b_stride, features, l.f_stride,
                         dst + d_.step_offset[t] * features, features);
    }
  }

  // x_ (N, I_l): the input for layer 0, else the lower layer's saved h (its output).
  void load_layer_input(int64_t l) {
    if (l == 0) {
      gather_sequence(input_, d_.I, x_.data());
      return;
    }
    const TensorView& h = *g_.h;
    const int64_t DH = d_.D * d_.H;
    for (int64_t dir = 0; dir < d_.D; ++dir) {
      const int64_t s = (l - 1) * d_.D + dir;
      for (int64_t t = 0; t < d_.T; ++t) {
        gather_matrix<Acc>(h, s * h.stride(0) + t * h.stride(1), d_.step_batch[t], h.stride(2),
                           d_.H, h.stride(3), x_.data() + d_.step_offset[t] * DH + dir * d_.H, DH);
      }
    }
  }

  // Columns [u0, u1) of rows x H of slot s in a (S, B, H) view (hx entries,
  // grad_hy, grad_cy), or zeros, into dst (rows, H) row stride H.
  void load_slot_rows(const TensorView* v, int64_t s, int64_t first, int64_t rows, Acc* dst,
                      int64_t u0, int64_t u1) const {
    if (v == nullptr || !v->defined) {
      for (int64_t r = 0; r < rows; ++r) std::fill(dst + r * d_.H + u0, dst + r * d_.H + u1, Acc(0));
      return;
    }
    gather_matrix<Acc>(*v, s * v->stride(0) + first * v->stride(1) + u0 * v->stride(2), rows,
                       v->stride(1), u1 - u0, v->stride(2), dst + u0, d_.H);
  }
  void load_slot_rows(const TensorView* v, int64_t s, int64_t first, int64_t rows,
                      Acc* dst) const {
    load_slot_rows(v, s, first, rows, dst, 0, d_.H);
  }

  // Columns [u0, u1) of rows x H at [s, t, first:] of a saved (S, T, B, H) view.
  static void load_saved_rows(const TensorView& v, int64_t s, int64_t t, int64_t first,
                              int64_t rows, int64_t H, Acc* dst, int64_t u0, int64_t u1) {
    gather_matrix<Acc>(v, s * v.stride(0) + t * v.stride(1) + first * v.stride(2) +
                              u0 * v.stride(3),
                       rows, v.stride(2), u1 - u0, v.stride(3), dst + u0, H);
  }

  // Step t of a direction started from step `prev` for rows b with b <
  // step_batch[prev] (prev inside [0, T)), from hx otherwise.
  int64_t previous_step(int64_t dir, int64_t t) const { return dir == 0 ? t - 1 : t + 1; }
  int64_t rows_from_saved(int64_t dir, int64_t t) const {
    const int64_t prev = previous_step(dir, t);
    if (prev < 0 || prev >= d_.T) return 0;
    return std::min(d_.step_batch[prev], d_.step_batch[t]);
  }

  // Columns [u0, u1) of the h or c the step started from, rows
  // 0..step_batch[t]-1, into dst (rows, H).
  void load_previous(const TensorView& saved, const TensorView* initial, int64_t s, int64_t dir,
                     int64_t t, Acc* dst, int64_t u0, int64_t u1) const {
    const int64_t rows = d_.step_batch[t];
    const int64_t from_saved = rows_from_saved(dir, t);
    if (from_saved > 0) {
      load_saved_rows(saved, s, previous_step(dir, t), 0, from_saved, d_.H, dst, u0, u1);
    }
    if (rows > from_saved) {
      load_slot_rows(initial, s, from_saved, rows - from_saved, dst + from_saved * d_.H, u0, u1);
    }
  }

  void load_weights(int64_t s, DirectionWorkspace<Acc>& wi, DirectionWorkspace<Acc>& w) const {
    const int64_t G = 4 * d_.H, in_size = d_.slot_input_size[s];
    const TensorView& w_ih = params_[s * d_.params_per_slot];
    const TensorView& w_hh = params_[s * d_.params_per_slot + 1];
    if (direct_) {  // w_ih (4H, in_size) as stored: d_in is an NN product
      gather_matrix<Acc>(w_ih, 0, G, w_ih.stride(0), in_size, w_ih.stride(1), wi.w_ih.data(),
                         in_size);
    } else {
      // w_ih^T (in_size, 4H): w_ih gathered as stored into dw_ih (free until the
      // weight gradients), then transposed (a strided gather is several times slower).
      gather_matrix<Acc>(w_ih, 0, G, w_ih.stride(0), in_size, w_ih.stride(1), w.dw_ih.data(),
                         in_size);
      transpose(G, in_size, w.dw_ih.data(), in_size, wi.w_ih.data(), G + kPad);
    }
    gather_matrix<Acc>(w_hh, 0, G, w_hh.stride(0), d_.H, w_hh.stride(1), w.w_hh.data(), d_.H);
  }

  // Hidden units of part p: all of them, or in split mode two halves (the
  // first a multiple of 16 units).
  int64_t unit_begin(int p) const { return split_ && p == 1 ? u_split_ : 0; }
  int64_t unit_end(int p) const { return split_ && p == 0 ? u_split_ : d_.H; }

  // Step t's loads and cell pass for the hidden units of part p: d_gates[t]'s
  // columns of those units and their dc state.
  void step_cell(int64_t s, int64_t dir, int64_t t, int p, DirectionWorkspace<Acc>& own,
                 DirectionWorkspace<Acc>& w) const {
    const int64_t H = d_.H, G = 4 * H, DH = d_.D * H;
    const int64_t u0 = unit_begin(p), u1 = unit_end(p);
    const int64_t rows = d_.step_batch[t];
    const int64_t off = d_.step_offset[t];
    const TensorView* c0 = d_.has_hx ? &hx_[1] : nullptr;
    const TensorView* saved_views[] = {g_.i, g_.j, g_.f, g_.o, g_.tanhc};
    // A saved tensor already in the compute type with rows of H contiguous
    // floats is read in place; any other is converted into the step buffer
    // (the part's columns only).
    const Acc* in[kSavedCount];
    for (int k = 0; k < kCPrev; ++k) {
      const TensorView& v = *saved_views[k];
      if (v.dtype == dtype_of<Acc>() && v.stride(3) == 1 && v.stride(2) == H) {
        in[k] = static_cast<const Acc*>(v.data) + s * v.stride(0) + t * v.stride(1);
      } else {
        load_saved_rows(v, s, t, 0, rows, H, w.step[k].data(), u0, u1);
        in[k] = w.step[k].data();
      }
    }
    load_previous(*g_.c, c0, s, dir, t, w.step[kCPrev].data(), u0, u1);
    in[kCPrev] = w.step[kCPrev].data();
    cell_pass_backward<Acc>(rows, H, u0, u1, in[kI], in[kJ], in[kF], in[kO], in[kTanhc],
                            in[kCPrev], d_out_.data() + off * DH + dir * H, DH,
                            w.dh_state.data(), w.dc_state.data(), own.d_gates.data() + off * G);
  }

  // dh_state[:rows, units of p] = d_gates[t] (rows, 4H) * w_hh[:, units of p].
  void step_dh(int64_t t, int p, DirectionWorkspace<Acc>& own, DirectionWorkspace<Acc>& w) const {
    const int64_t H = d_.H, G = 4 * H;
    const int64_t u0 = unit_begin(p), u1 = unit_end(p);
    const int64_t rows = d_.step_batch[t];
    const Acc* d_gates = own.d_gates.data() + d_.step_offset[t] * G;
    if constexpr (std::is_same_v<Acc, float>) {
      for (int64_t r = 0; r < rows; ++r) {
        std::fill(w.dh_state.data() + r * H + u0, w.dh_state.data() + r * H + u1, 0.0f);
      }
      const RecurrentProduct& product = split_ ? w.part_recurrent[p] : w.recurrent;
      product.accumulate(rows, d_gates, G, w.dh_state.data() + u0, H);
    } else {
      (void)u0, (void)u1;
      gemm(Transpose::No, Transpose::No, rows, H, G, Acc(1), d_gates, G, w.w_hh.data(), H,
           Acc(0), w.dh_state.data(), H);
    }
  }

  // The time loop for parts [p0, p1): per step every part's cell pass, then
  // (after the barrier, with two threads: each step's dh product reads the
  // d_gates columns of both parts) every part's dh columns. A part's next
  // cell pass reads only its own dh and dc columns, and writes other rows of
  // d_gates, so one barrier per step suffices.
  void time_loop(int64_t s, int64_t dir, int p0, int p1, PairBarrier* barrier,
                 DirectionWorkspace<Acc>& own, DirectionWorkspace<Acc>& w) const {
    for (int64_t n = 0; n < d_.T; ++n) {
      const int64_t t = dir == 0 ? d_.T - 1 - n : n;
      for (int p = p0; p < p1; ++p) step_cell(s, dir, t, p, own, w);
      if (barrier != nullptr) barrier->wait();
      for (int p = p0; p < p1; ++p) step_dh(t, p, own, w);
    }
  }

  // dw_ih (4H, I_l) = d_gates^T x_l and dw_hh (4H, H) = d_gates^T h_prev over
  // chunks of kWeightGradChunk rows in order, each operand transposed first
  // (transpose.h), the 4H rows of the results in two fixed halves (the same
  // calls whatever the thread count). Parts [p0, p1) of {0, 1}: half p of
  // the rows of d_gates^T and of the products; part 0 transposes x_l, part 1
  // h_prev; with two threads a barrier between the transposes and the
  // products, and before the next chunk's transposes.
  void weight_grads(int64_t in_size, int p0, int p1, PairBarrier* barrier,
                    DirectionWorkspace<Acc>& own, DirectionWorkspace<Acc>& w) const {
    const int64_t H = d_.H, G = 4 * H, N = d_.valid_rows(), half = G / 2;
    if (direct_) {
      // One TN product each over all N rows (K = N), half p of 4H per part.
      for (int p = p0; p < p1; ++p) {
        const Acc* a = own.d_gates.data() + p * half;
        gemm(Transpose::Yes, Transpose::No, half, in_size, N, Acc(1), a, G, x_.data(), in_size,
             Acc(0), w.dw_ih.data() + p * half * in_size, in_size);
        gemm(Transpose::Yes, Transpose::No, half, H, N, Acc(1), a, G, w.h_prev.data(), H,
             Acc(0), w.dw_hh.data() + p * half * H, H);
      }
      return;
    }
    for (int64_t r0 = 0; r0 < N; r0 += kWeightGradChunk) {
      const int64_t rows = std::min(kWeightGradChunk, N - r0);
      const int64_t ld = transposed_stride(rows);
      const Acc beta = r0 == 0 ? Acc(0) : Acc(1);
      if (r0 > 0 && barrier != nullptr) barrier->wait();
      for (int p = p0; p < p1; ++p) {
        transpose(rows, half, own.d_gates.data() + r0 * G + p * half, G,
                  w.d_gates_t.data() + p * half * ld, ld);
        if (p == 0) {
          transpose(rows, in_size, x_.data() + r0 * in_size, in_size, w.x_t.data(), ld);
        } else {
          transpose(rows, H, w.h_prev.data() + r0 * H, H, w.h_prev_t.data(), ld);
        }
      }
      if (barrier != nullptr) barrier->wait();
      for (int p = p0; p < p1; ++p) {
        const Acc* a = w.d_gates_t.data() + p * half * ld;
        gemm(Transpose::No, Transpose::Yes, half, in_size, rows, Acc(1), a, ld, w.x_t.data(),
             ld, beta, w.dw_ih.data() + p * half * in_size, in_size);
        gemm(Transpose::No, Transpose::Yes, half, H, rows, Acc(1), a, ld, w.h_prev_t.data(),
             ld, beta, w.dw_hh.data() + p * half * H, H);
      }
    }
  }

  void run_direction(int64_t l, int64_t dir) {
    DirectionWorkspace<Acc>& own = dir_[dir];          // d_gates, w_ih
    DirectionWorkspace<Acc>& w = dir_[parallel_ ? dir : 0];  // the rest
    const int64_t s = l * d_.D + dir;
    const int64_t H = d_.H, G = 4 * H, N = d_.valid_rows();
    const int64_t in_size = d_.slot_input_size[s];
    const TensorView* h0 = d_.has_hx ? &hx_[0] : nullptr;
    load_weights(s, own, w);
    if constexpr (std::is_same_v<Acc, float>) {
      if (split_) {
        for (int p = 0; p < 2; ++p) w.part_recurrent[p].set_b(w.w_hh.data() + unit_begin(p), H);
      } else {
        w.recurrent.set_b(w.w_hh.data(), H);
      }
    }
    for (int64_t t = 0; t < d_.T; ++t) {
      load_previous(*g_.h, h0, s, dir, t, w.h_prev.data() + d_.step_offset[t] * H, 0, H);
    }
    load_slot_rows(g_.grad_hy, s, 0, d_.B, w.dh_state.data());
    load_slot_rows(g_.grad_cy, s, 0, d_.B, w.dc_state.data());

    const bool paired = split_ && run_pair([&](int p) {
      time_loop(s, dir, p, p + 1, &barrier_, own, w);
      weight_grads(in_size, p, p + 1, &barrier_, own, w);
    });
    if (!paired) {
      time_loop(s, dir, 0, split_ ? 2 : 1, nullptr, own, w);
      weight_grads(in_size, 0, 2, nullptr, own, w);
    }
    scatter_matrix<Acc>(w.dh_state.data(), H, d_.B, H, out_.dh0, s * d_.B * H, H, 1);
    scatter_matrix<Acc>(w.dc_state.data(), H, d_.B, H, out_.dc0, s * d_.B * H, H, 1);
    const int64_t base = s * d_.params_per_slot;
    scatter_matrix<Acc>(w.dw_ih.data(), in_size, G, in_size, out_.dparams[base], 0, in_size, 1);
    scatter_matrix<Acc>(w.dw_hh.data(), H, G, H, out_.dparams[base + 1], 0, H, 1);
    if (d_.has_biases) {
      // Column sums of d_gates, rows in order.
      Acc* db = w.db.data();
      std::fill(db, db + G, Acc(0));
      for (int64_t r = 0; r < N; ++r) {
        const Acc* row = own.d_gates.data() + r * G;
        for (int64_t g = 0; g < G; ++g) db[g] += row[g];
      }
      scatter_matrix<Acc>(db, G, 1, G, out_.dparams[base + 2], 0, G, 1);
      scatter_matrix<Acc>(db, G, 1, G, out_.dparams[base + 3], 0, G, 1);
    }
  }

  // d_in (N, I_l) (+)= d_gates_dir (N, 4H) * w_ih_dir (4H, I_l): direction 0
  // writes, direction 1 adds, so d_in = sum over directions in order; w_ih is
  // held transposed (the NT form is the faster one, transpose.h). Two fixed
  // halves of the rows (whatever the thread count, so the same calls and
  // bits), on two threads when there are.
  void add_input_gradient(int64_t in_size, int64_t dir) {
    const int64_t G = 4 * d_.H;
    run_tasks(2, get_num_threads() >= 2 ? 2 : 1, [&](int64_t part) {
      const RowHalf h = row_half(d_.valid_rows(), part);
      const int64_t r0 = h.first, rows = h.count;
      if (direct_) {
        gemm(Transpose::No, Transpose::No, rows, in_size, G, Acc(1),
             dir_[dir].d_gates.data() + r0 * G, G, dir_[dir].w_ih.data(), in_size,
             dir == 0 ? Acc(0) : Acc(1), d_in_.data() + r0 * in_size, in_size);
        return;
      }
      gemm(Transpose::No, Transpose::Yes, rows, in_size, G, Acc(1),
           dir_[dir].d_gates.data() + r0 * G, G, dir_[dir].w_ih.data(), G + kPad,
           dir == 0 ? Acc(0) : Acc(1), d_in_.data() + r0 * in_size, in_size);
    });
  }

  void write_dx(const Acc* d_in) const {
    const TensorView& dx = out_.dx;
    const SequenceLayout l = d_.sequence_layout(dx);
    for (int64_t t = 0; t < d_.T; ++t) {
      const int64_t rows = d_.step_batch[t];
      scatter_matrix<Acc>(d_in + d_.step_offset[t] * d_.I, d_.I, rows, d_.I, dx, t * l.t_stride,
                          l.b_stride, l.f_stride);
      if (rows < d_.B) {
        zero_matrix(dx, t * l.t_stride + rows * l.b_stride, d_.B - rows, l.b_stride, d_.I,
                    l.f_stride);
      }
    }
  }

  const LstmDims& d_;
  const BackwardInputs& g_;
  const TensorView& input_;
  const TensorList& hx_;
  const TensorList& params_;
  const BackwardOutputs& out_;
  bool parallel_ = false;
  bool split_ = false;
  // float where gemm_tn_at_full_rate(): weight gradients as TN and d_in as NN
  // products on the operands as they are (no transposed copies).
  bool direct_ = false;
  int64_t u_split_ = 0;
  mutable PairBarrier barrier_;
  WorkspaceArena arena_;
  Workspace<Acc> x_, d_out_, d_in_;
  DirectionWorkspace<Acc> dir_[2];
};

}  // namespace

void run_lstm_backward(const LstmDims& dims, const BackwardInputs& saved, const TensorView& input,
                       const TensorList& hx, const TensorList& params,
                       const BackwardOutputs& out) {
  switch (dims.dtype) {
    case DType::Float64:
      BackwardDriver<double>(dims, saved, input, hx, params, out).run();
      break;
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      // float16 / bfloat16 are widened when gathered and rounded when stored.
      BackwardDriver<float>(dims, saved, input, hx, params, out).run();
      break;
    case DType::Int64: break;  // rejected by validation
  }
}

}  // namespace detail
}  // namespace lstmop
