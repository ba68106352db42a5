// The reference backward: backpropagation through time and layers as plain
// loops in double, sequence by sequence, from the saved tensors of a
// train=True forward (nothing is recomputed but the products with weights).
// With projections the gradient of h_t (R = P features) reaches the cell as
// dm = w_hr^T dh (H features), m = o * tanhc from the saved tensors, and
// dw_hr = sum over rows of dh m^T.
#include <algorithm>
#include <vector>

#include "lstmop/reference.h"
#include "reference/reference_common.h"
#include "common/float_environment.h"
#include "common/tensor_alloc.h"

namespace lstmop {
namespace reference {

BackwardResult lstm_backward(const TensorView& grad_y, const TensorView& grad_hy,
                             const TensorView& grad_cy, const TensorView& input,
                             const TensorList& hx, const TensorList& params, const TensorView& i,
                             const TensorView& j, const TensorView& f, const TensorView& o,
                             const TensorView& h, const TensorView& c, const TensorView& tanhc,
                             bool has_biases, int64_t num_layers, double dropout, bool train,
                             bool bidirectional, bool batch_first, const TensorView& batch_sizes) {
  return lstmop::detail::translate_bad_alloc([&]() {
    // IEEE double, subnormals included, whatever the caller's environment.
    const lstmop::detail::ControlWordScope environment(lstmop::detail::call_control_word(false));
    using lstmop::detail::allocate;
    const lstmop::detail::BackwardInputs saved{&grad_y, &grad_hy, &grad_cy, &i, &j,
                                               &f,      &o,       &h,       &c, &tanhc};
    const lstmop::detail::LstmProblem d = lstmop::detail::check_backward_args(
        saved, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first, batch_sizes, true);
    const BackwardShapes shapes = lstmop::detail::backward_shapes(d, input, params);
    const DType f64 = DType::Float64;
    BackwardResult r;
    r.dx = allocate("dx", f64, shapes.dx, true);
    r.dhx.push_back(allocate("dh0", f64, shapes.dh0, true));
    r.dhx.push_back(allocate("dc0", f64, shapes.dc0, true));
    for (std::size_t k = 0; k < params.size(); ++k) {
      r.dparams.push_back(allocate("dparams[" + std::to_string(k) + "]", f64, shapes.dparams[k], true));
    }

    const int64_t T = d.T, B = d.B, H = d.H, R = d.R, D = d.D, G = 4 * H;
    using detail::at3;
    using detail::at4;

    // Gradient w.r.t. the current layer's output, (T, B, D*R); starts as grad_y.
    std::vector<double> d_out(static_cast<std::size_t>(T * B * D * R), 0.0);
    if (grad_y.defined) {
      const lstmop::detail::SequenceLayout gl = d.sequence_layout(grad_y);
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t b = 0; b < d.step_batch[t]; ++b) {
          for (int64_t k = 0; k < D * R; ++k) {
            d_out[(t * B + b) * D * R + k] = lstmop::detail::load_double(
                grad_y, t * gl.t_stride + b * gl.b_stride + k * gl.f_stride);
          }
        }
      }
    }
    const lstmop::detail::SequenceLayout in_layout = d.sequence_layout(input);

    std::vector<double> dh(R), dc(H), da(G), x, h_prev(R), c_prev(H), dh_prev(R);
    std::vector<double> dh_t(R), dm(H);
    for (int64_t l = d.L - 1; l >= 0; --l) {
      const int64_t in_size = l == 0 ? d.I : D * R;
      std::vector<double> d_in(static_cast<std::size_t>(T * B * in_size), 0.0);
      x.assign(static_cast<std::size_t>(in_size), 0.0);
      // Layer input at (t, b): the op's input for layer 0, else the lower
      // layer's saved h of both directions.
      auto read_x = [&](int64_t t, int64_t b) {
        for (int64_t k = 0; k < in_size; ++k) {
          x[k] = l == 0 ? lstmop::detail::load_double(input, t * in_layout.t_stride +
                                                                 b * in_layout.b_stride +
                                                                 k * in_layout.f_stride)
                        : at4(h, (l - 1) * D + k / R, t, b, k % R);
        }
      };
      for (int64_t dir = 0; dir < D; ++dir) {
        const int64_t s = l * D + dir;
        const detail::SlotWeights w = detail::read_slot(d, params, s);
        std::vector<double> dw_ih(static_cast<std::size_t>(G * in_size), 0.0);
        std::vector<double> dw_hh(static_cast<std::size_t>(G * R), 0.0);
        std::vector<double> dw_hr(static_cast<std::size_t>(d.P * H), 0.0);
        std::vector<double> db(static_cast<std::size_t>(G), 0.0);
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = d.sequence_length(b);
          for (int64_t k = 0; k < R; ++k) dh[k] = grad_hy.defined ? at3(grad_hy, s, b, k) : 0.0;
          for (int64_t k = 0; k < H; ++k) dc[k] = grad_cy.defined ? at3(grad_cy, s, b, k) : 0.0;
          // Steps in the reverse of the order the forward ran them.
          for (int64_t n = 0; n < len; ++n) {
            const int64_t t = dir == 0 ? len - 1 - n : n;
            const int64_t prev = dir == 0 ? t - 1 : t + 1;
            const bool from_hx = dir == 0 ? prev < 0 : prev >= len;
            for (int64_t k = 0; k < R; ++k) {
              h_prev[k] = from_hx ? (d.has_hx ? at3(hx[0], s, b, k) : 0.0) : at4(h, s, prev, b, k);
            }
            for (int64_t k = 0; k < H; ++k) {
              c_prev[k] = from_hx ? (d.has_hx ? at3(hx[1], s, b, k) : 0.0) : at4(c, s, prev, b, k);
            }
            read_x(t, b);
            // dh_t: the gradient of the step's h (R); dm: of m = o * tanhc (H).
            for (int64_t k = 0; k < R; ++k) {
              dh_t[k] = dh[k] + d_out[(t * B + b) * D * R + dir * R + k];
            }
            if (d.projections()) {
              std::fill(dm.begin(), dm.end(), 0.0);
              for (int64_t k = 0; k < R; ++k) {
                for (int64_t u = 0; u < H; ++u) {
                  const double m = at4(o, s, t, b, u) * at4(tanhc, s, t, b, u);
                  dm[u] += w.w_hr[k * H + u] * dh_t[k];
                  dw_hr[k * H + u] += dh_t[k] * m;
                }
              }
            } else {
              dm = dh_t;
            }
            for (int64_t k = 0; k < H; ++k) {
              const double gi = at4(i, s, t, b, k), gf = at4(f, s, t, b, k);
              const double gj = at4(j, s, t, b, k), go = at4(o, s, t, b, k);
              const double tc = at4(tanhc, s, t, b, k);
              const double dc_t = dc[k] + dm[k] * go * (1.0 - tc * tc);
              da[k] = dc_t * gj * gi * (1.0 - gi);               // d a_i
              da[H + k] = dc_t * c_prev[k] * gf * (1.0 - gf);    // d a_f
              da[2 * H + k] = dc_t * gi * (1.0 - gj * gj);       // d a_g
              da[3 * H + k] = dm[k] * tc * go * (1.0 - go);      // d a_o
              dc[k] = dc_t * gf;
            }
            std::fill(dh_prev.begin(), dh_prev.end(), 0.0);
            double* dx_row = d_in.data() + (t * B + b) * in_size;  // in_size may be 0
            for (int64_t g = 0; g < G; ++g) {
              db[g] += da[g];
              for (int64_t k = 0; k < in_size; ++k) {
                dw_ih[g * in_size + k] += da[g] * x[k];
                dx_row[k] += w.w_ih[g * in_size + k] * da[g];
              }
              for (int64_t k = 0; k < R; ++k) {
                dw_hh[g * R + k] += da[g] * h_prev[k];
                dh_prev[k] += w.w_hh[g * R + k] * da[g];
              }
            }
            dh = dh_prev;
          }
          for (int64_t k = 0; k < R; ++k) r.dhx[0].data<double>()[(s * B + b) * R + k] = dh[k];
          for (int64_t k = 0; k < H; ++k) r.dhx[1].data<double>()[(s * B + b) * H + k] = dc[k];
        }
        const int64_t base = s * d.params_per_slot;
        std::copy(dw_ih.begin(), dw_ih.end(), r.dparams[base].data<double>());
        std::copy(dw_hh.begin(), dw_hh.end(), r.dparams[base + 1].data<double>());
        if (d.has_biases) {
          std::copy(db.begin(), db.end(), r.dparams[base + 2].data<double>());
          std::copy(db.begin(), db.end(), r.dparams[base + 3].data<double>());
        }
        if (d.projections()) {
          std::copy(dw_hr.begin(), dw_hr.end(), r.dparams[d.w_hr_index(s)].data<double>());
        }
      }
      d_out.swap(d_in);
    }

    // dx in the input's format; invalid rows stay 0.
    const lstmop::detail::SequenceLayout dx_layout = d.sequence_layout(r.dx);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t b = 0; b < d.step_batch[t]; ++b) {
        for (int64_t k = 0; k < d.I; ++k) {
          r.dx.data<double>()[t * dx_layout.t_stride + b * dx_layout.b_stride +
                              k * dx_layout.f_stride] = d_out[(t * B + b) * d.I + k];
        }
      }
    }
    return r;
  });
}

}  // namespace reference
}  // namespace lstmop
