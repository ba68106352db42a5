// The fused forward step (step_forward.h): packing and the dispatch to the
// body the weights were packed for.
#include "kernels/step_forward.h"

#include <algorithm>

#include "lstmop/tensor.h"

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
  const int64_t W = width_, K = k_input_ + k_hidden_, row = 4 * W;
  const int64_t g_end = (std::min(u_end, H_) + W - 1) / W;
  float* out = packed_.data();
  for (int64_t g = u_begin / W; g < g_end; ++g) {
    const int64_t units = std::min<int64_t>(W, H_ - g * W);
    for (int64_t q = 0; q < 4; ++q) {
      // Gate q of group g: lanes [q * W, (q + 1) * W) of each of the group's
      // K rows hold column k of w_ih (k < k_input), then of w_hh, for the
      // group's units (rows q*H + g*W + lane); zeros past H.
      float* lanes = out + g * K * row + q * W;
      const int64_t first_row = q * H_ + g * W;
      if (isa_ == kernels::Isa::Avx512) {
        pack_panel_rows_avx512(w_ih, ld_ih, first_row, units, k_input_, row, lanes);
        pack_panel_rows_avx512(w_hh, ld_hh, first_row, units, k_hidden_, row,
                               lanes + k_input_ * row);
        continue;
      }
      for (int64_t k = 0; k < K; ++k) {
        const bool input_part = k < k_input_;
        const float* w = input_part ? w_ih + first_row * ld_ih + k
                                    : w_hh + first_row * ld_hh + (k - k_input_);
        const int64_t ld = input_part ? ld_ih : ld_hh;
        float* dst = lanes + k * row;
        for (int64_t lane = 0; lane < units; ++lane) dst[lane] = w[lane * ld];
        for (int64_t lane = units; lane < W; ++lane) dst[lane] = 0.0f;
      }
    }
  }
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
