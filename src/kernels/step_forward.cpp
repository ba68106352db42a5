// The fused forward step (step_forward.h): packing and the dispatch to the
// body the weights were packed for.
#include "kernels/step_forward.h"

#include <algorithm>

#include "lstmop/tensor.h"

#include "gemm/transpose.h"
#include "kernels/step_forward_isa.h"

namespace lstmop {
namespace detail {
namespace {

int64_t width_of(kernels::Isa isa) {
  switch (isa) {
    case kernels::Isa::Avx512: return kStepWidthAvx512;
    case kernels::Isa::Avx2: return kStepWidthAvx2;
    case kernels::Isa::Scalar: break;
  }
  return kStepWidthGeneric;
}

}  // namespace

void ForwardStepWeights::allocate(WorkspaceArena& arena, kernels::Isa isa, int64_t H,
                                  int64_t max_k_input, int64_t k_hidden) {
  isa_ = isa;
  H_ = H;
  k_input_ = max_k_input;
  k_hidden_ = k_hidden;
  width_ = width_of(isa);
  const int64_t groups = (H + width_ - 1) / width_;
  arena.add(packed_, "the packed step weights (4H, input_size + hidden)",
            groups * 4 * (max_k_input + k_hidden) * width_);
}

void ForwardStepWeights::pack_units(const float* w_ih, int64_t ld_ih, const float* w_hh,
                                    int64_t ld_hh, int64_t u_begin, int64_t u_end) {
  const int64_t W = width_, row = 4 * W;
  const int64_t g_end = (std::min(u_end, H_) + W - 1) / W;
  for (int64_t g = u_begin / W; g < g_end; ++g) {
    const int64_t units = std::min<int64_t>(W, H_ - g * W);
    // Group g's k_input rows of w_ih columns and its k_hidden rows of w_hh
    // columns: adjacent (interleaved) or in the split layout's two parts.
    const int64_t input_at = split_ ? input_offset(g) : g * (k_input_ + k_hidden_) * row;
    float* input_rows = packed_.data() + input_at;
    float* hidden_rows = split_ ? packed_.data() + hidden_offset(g) : input_rows + k_input_ * row;
    for (int64_t q = 0; q < 4; ++q) {
      // Gate q: lanes [q * W, (q + 1) * W) of each row hold column k of the
      // matrix for the group's units (rows q*H + g*W + lane); zeros past H.
      const int64_t first_row = q * H_ + g * W;
      if (isa_ == kernels::Isa::Avx512) {
        pack_panel_rows_avx512(w_ih, ld_ih, first_row, units, k_input_, row, input_rows + q * W);
        pack_panel_rows_avx512(w_hh, ld_hh, first_row, units, k_hidden_, row,
                               hidden_rows + q * W);
        continue;
      }
      // The group's rows transposed (transpose.h: 8 x 8 AVX2 register blocks
      // where the CPU has them), lanes past H zero.
      const auto pack = [&](const float* m, int64_t ld, int64_t columns, float* lanes) {
        transpose(units, columns, m + first_row * ld, ld, lanes, row);
        for (int64_t k = 0; units < W && k < columns; ++k) {
          std::fill(lanes + k * row + units, lanes + k * row + W, 0.0f);
        }
      };
      pack(w_ih, ld_ih, k_input_, input_rows + q * W);
      pack(w_hh, ld_hh, k_hidden_, hidden_rows + q * W);
    }
  }
}

void step_input_chains(const ForwardStepWeights& w, const float* x, int64_t ld_x,
                       const int64_t* step_rows, int64_t steps, const float* bias, float* gx,
                       int64_t u_begin, int64_t u_end, int64_t k_chunk) {
  if (u_begin >= u_end) return;
  switch (w.isa()) {
    case kernels::Isa::Avx512:
      step_input_chains_avx512(w, x, ld_x, step_rows, steps, bias, gx, u_begin, u_end);
      return;
    case kernels::Isa::Avx2:
      step_input_chains_avx2(w, x, ld_x, step_rows, steps, bias, gx, u_begin, u_end, k_chunk);
      return;
    case kernels::Isa::Scalar: break;
  }
  step_input_chains_generic(w, x, ld_x, step_rows, steps, bias, gx, u_begin, u_end);
}

template <class Storage>
void step_forward(const ForwardStepWeights& w, const ForwardStepArgs& args,
                  const StepSaved<Storage>* saved) {
  if (args.rows <= 0 || args.u_begin >= args.u_end) return;
  switch (w.isa()) {
    case kernels::Isa::Avx512: step_forward_avx512<Storage>(w, args, saved); return;
    case kernels::Isa::Avx2: step_forward_avx2<Storage>(w, args, saved); return;
    case kernels::Isa::Scalar: break;
  }
  step_forward_generic<Storage>(w, args, saved);
}

template void step_forward<float>(const ForwardStepWeights&, const ForwardStepArgs&,
                                  const StepSaved<float>*);
template void step_forward<Half>(const ForwardStepWeights&, const ForwardStepArgs&,
                                 const StepSaved<Half>*);
template void step_forward<BFloat16>(const ForwardStepWeights&, const ForwardStepArgs&,
                                     const StepSaved<BFloat16>*);

}  // namespace detail
}  // namespace lstmop
