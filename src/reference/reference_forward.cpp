// The reference forward: the contract's cell as plain loops in double, every
// sequence of the batch run on its own with its own length; with projections
// h = w_hr m, m = o * tanh(c) (R = P features of h, H of c). For float16 and
// bfloat16 it states the contract's 16-bit model (detail::PrecisionModel): h
// is rounded to the dtype as the call stores it, and that value is what the
// next step and the next layer multiply; m is rounded before the w_hr product;
// c is carried in float32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "lstmop/reference.h"
#include "reference/reference_common.h"
#include "common/float_environment.h"
#include "common/tensor_alloc.h"

namespace lstmop {
namespace reference {

ForwardResult lstm_forward(const TensorView& input, const TensorList& hx, const TensorList& params,
                           bool has_biases, int64_t num_layers, double dropout, bool train,
                           bool bidirectional, bool batch_first, const TensorView& batch_sizes) {
  return lstmop::detail::translate_bad_alloc([&]() {
    // IEEE double, subnormals included, whatever the caller's environment.
    const lstmop::detail::ControlWordScope environment(lstmop::detail::call_control_word(false));
    using lstmop::detail::allocate;
    const lstmop::detail::LstmProblem d =
        lstmop::detail::check_forward_args(input, hx, params, has_biases, num_layers, dropout, train,
                                           bidirectional, batch_first, batch_sizes, true);
    const ForwardShapes shapes = lstmop::detail::forward_shapes(d);
    const DType f64 = DType::Float64;
    ForwardResult r;
    r.output = allocate("output", f64, shapes.output, true);
    r.hy = allocate("hy", f64, shapes.hy, true);
    r.cy = allocate("cy", f64, shapes.cy, true);
    r.i = allocate("i", f64, shapes.i, true);
    r.j = allocate("j", f64, shapes.j, true);
    r.f = allocate("f", f64, shapes.f, true);
    r.o = allocate("o", f64, shapes.o, true);
    r.h = allocate("h", f64, shapes.h, true);
    r.c = allocate("c", f64, shapes.c, true);
    r.tanhc = allocate("tanhc", f64, shapes.tanhc, true);

    const int64_t T = d.T, B = d.B, H = d.H, R = d.R, D = d.D;
    // Saved tensors (S, T, B, H), contiguous; h is (S, T, B, R).
    auto saved = [&](const Tensor& t, int64_t s, int64_t step, int64_t b) {
      const int64_t width = &t == &r.h ? R : H;
      return t.data<double>() + ((s * T + step) * B + b) * width;
    };

    // The current layer's input, (T, B, I_l), padded positions unused.
    int64_t in_size = d.I;
    std::vector<double> layer_in(static_cast<std::size_t>(T * B * in_size), 0.0);
    const lstmop::detail::SequenceLayout in_layout = d.sequence_layout(input);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t b = 0; b < d.step_batch[t]; ++b) {
        for (int64_t k = 0; k < in_size; ++k) {
          layer_in[(t * B + b) * in_size + k] = lstmop::detail::load_double(
              input, t * in_layout.t_stride + b * in_layout.b_stride + k * in_layout.f_stride);
        }
      }
    }

    const detail::PrecisionModel model(d.dtype);
    std::vector<double> h(R), c(H), h0(R), c0(H), a(4 * H), m(H);
    for (int64_t l = 0; l < d.L; ++l) {
      std::vector<double> layer_out(static_cast<std::size_t>(T * B * D * R), 0.0);
      for (int64_t dir = 0; dir < D; ++dir) {
        const int64_t s = l * D + dir;
        const detail::SlotWeights w = detail::read_slot(d, params, s);
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = d.sequence_length(b);
          for (int64_t k = 0; k < R; ++k) h0[k] = d.has_hx ? detail::at3(hx[0], s, b, k) : 0.0;
          for (int64_t k = 0; k < H; ++k) c0[k] = d.has_hx ? detail::at3(hx[1], s, b, k) : 0.0;
          h = h0;
          c = c0;
          for (int64_t n = 0; n < len; ++n) {
            const int64_t t = dir == 0 ? n : len - 1 - n;
            const double* x = layer_in.data() + (t * B + b) * in_size;  // in_size may be 0
            for (int64_t g = 0; g < 4 * H; ++g) {
              double sum = w.bias[g];
              for (int64_t k = 0; k < in_size; ++k) sum += w.w_ih[g * in_size + k] * x[k];
              for (int64_t k = 0; k < R; ++k) sum += w.w_hh[g * R + k] * h[k];
              a[g] = sum;
            }
            for (int64_t k = 0; k < H; ++k) {
              // Gate blocks of a: i, f, g, o (PyTorch order).
              const double gi = detail::sigmoid(a[k]);
              const double gf = detail::sigmoid(a[H + k]);
              const double gj = std::tanh(a[2 * H + k]);
              const double go = detail::sigmoid(a[3 * H + k]);
              c[k] = model.carried_cell(gf * c[k] + gi * gj);
              const double tc = std::tanh(c[k]);
              // Without projections m is h; with them the operand of w_hr.
              m[k] = d.projections() ? model.product_operand(go * tc)
                                     : model.stored_hidden(go * tc);
              if (train) {
                saved(r.i, s, t, b)[k] = gi;
                saved(r.j, s, t, b)[k] = gj;
                saved(r.f, s, t, b)[k] = gf;
                saved(r.o, s, t, b)[k] = go;
                saved(r.c, s, t, b)[k] = c[k];
                saved(r.tanhc, s, t, b)[k] = tc;
              }
            }
            for (int64_t k = 0; k < R; ++k) {
              if (d.projections()) {
                double sum = 0.0;
                for (int64_t u = 0; u < H; ++u) sum += w.w_hr[k * H + u] * m[u];
                h[k] = model.stored_hidden(sum);
              } else {
                h[k] = m[k];
              }
              if (train) saved(r.h, s, t, b)[k] = h[k];
              layer_out[(t * B + b) * D * R + dir * R + k] = h[k];
            }
          }
          for (int64_t k = 0; k < R; ++k) r.hy.data<double>()[(s * B + b) * R + k] = h[k];
          for (int64_t k = 0; k < H; ++k) r.cy.data<double>()[(s * B + b) * H + k] = c[k];
          if (train) {
            // Positions past the sequence's end: gates 0, the carried state
            // (forward: the last valid step's; reverse: the initial one).
            const std::vector<double>& hc = dir == 0 ? h : h0;
            const std::vector<double>& cc = dir == 0 ? c : c0;
            for (int64_t t = len; t < T; ++t) {
              for (int64_t k = 0; k < R; ++k) saved(r.h, s, t, b)[k] = hc[k];
              for (int64_t k = 0; k < H; ++k) {
                saved(r.c, s, t, b)[k] = cc[k];
                saved(r.tanhc, s, t, b)[k] = std::tanh(cc[k]);
              }
            }
          }
        }
      }
      layer_in.swap(layer_out);
      in_size = D * R;
    }

    // Output rows of valid positions; the others stay 0.
    const lstmop::detail::SequenceLayout out_layout = d.sequence_layout(r.output);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t b = 0; b < d.step_batch[t]; ++b) {
        for (int64_t k = 0; k < D * R; ++k) {
          r.output.data<double>()[t * out_layout.t_stride + b * out_layout.b_stride +
                                  k * out_layout.f_stride] = layer_in[(t * B + b) * D * R + k];
        }
      }
    }
    if (!train) {
      std::copy(r.hy.data<double>(), r.hy.data<double>() + r.hy.numel(), r.h.data<double>());
      std::copy(r.cy.data<double>(), r.cy.data<double>() + r.cy.numel(), r.c.data<double>());
    }
    return r;
  });
}

}  // namespace reference
}  // namespace lstmop
