// lstmop: the `_lstm` / `_lstm_backward` operator pair (docs/lstm.md and
// docs/lstm_backward.md give the full contract).
//
// Every function takes exactly the contract's arguments, in the contract's
// order: input, hx, params, has_biases, num_layers, dropout, train,
// bidirectional, batch_first, batch_sizes. An undefined TensorView stands for
// an absent optional tensor (batch_sizes=None, an undefined gradient); an
// empty hx list means zero initial states.
//
// All arguments are validated before any work; a bad one throws lstmop::Error
// and nothing is written. Inputs are never written.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lstmop/error.h"
#include "lstmop/tensor.h"

namespace lstmop {

using TensorList = std::vector<TensorView>;

// ---------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------

// The 10 forward results, in the contract's order. With S = D*L slots and R
// the width of h (proj_size with projections: params holds a w_hr (P, H) at
// the end of every slot; else H):
//   output (T, B, D*R) | (B, T, D*R) if batch_first | (T*B, D*R) with batch_sizes
//   hy (S, B, R), cy (S, B, H)
//   i, j, f, o, tanhc (S, T, B, H) when train, else (0,)
//   h (S, T, B, R), c (S, T, B, H) when train, else equal to hy, cy
struct ForwardShapes {
  std::vector<int64_t> output, hy, cy, i, j, f, o, h, c, tanhc;
};

// Caller-allocated output views. Each must be defined, have exactly the shape
// from lstm_forward_shapes, the input's dtype, and be contiguous.
struct ForwardOutputs {
  TensorView output, hy, cy, i, j, f, o, h, c, tanhc;
};

// Owning results of the allocating form.
struct ForwardResult {
  Tensor output, hy, cy, i, j, f, o, h, c, tanhc;
  ForwardOutputs views() const;
};

// Shape inference: validates every shape, dtype and flag (not the values of
// batch_sizes, so it works on shape-only views with data == nullptr, except
// that batch_sizes' length is read from its sizes) and returns the shapes.
// Size bound: a problem whose outputs and workspace would exceed 2^44 bytes is
// refused ("input", or "params[0]" for the weights alone); a call that
// computes, and shape inference on views that carry data, is also held to
// twice this machine's RAM + swap (on shape-only views the answer is the
// same on every machine).
ForwardShapes lstm_forward_shapes(const TensorView& input, const TensorList& hx,
                                  const TensorList& params, bool has_biases, int64_t num_layers,
                                  double dropout, bool train, bool bidirectional,
                                  bool batch_first = false, const TensorView& batch_sizes = {});

// Computes the forward into caller-allocated outputs: each of the shape
// lstm_forward_shapes gives, the input's dtype, contiguous, sharing no byte
// with an input or another output (the error names both, e.g. "out.hy must
// not share memory with an input tensor, got one overlapping hx[0]"); nothing
// is written when a check fails.
void lstm_forward_out(const ForwardOutputs& out, const TensorView& input, const TensorList& hx,
                      const TensorList& params, bool has_biases, int64_t num_layers, double dropout,
                      bool train, bool bidirectional, bool batch_first = false,
                      const TensorView& batch_sizes = {});

// Computes the forward into memory the caller provides once the shapes are
// known, checking the arguments once (lstm_forward_shapes then
// lstm_forward_out check them twice): `allocate` is called once, with what
// lstm_forward_shapes would return, after every argument check passed, and
// returns the output views, which are then checked as lstm_forward_out's. An
// exception from `allocate` propagates; nothing is computed then. (The
// PyTorch binding allocates its result tensors this way.)
using ForwardAllocator = std::function<ForwardOutputs(const ForwardShapes&)>;
void lstm_forward_into(const ForwardAllocator& allocate, const TensorView& input,
                       const TensorList& hx, const TensorList& params, bool has_biases,
                       int64_t num_layers, double dropout, bool train, bool bidirectional,
                       bool batch_first = false, const TensorView& batch_sizes = {});

// Allocating form.
ForwardResult lstm_forward(const TensorView& input, const TensorList& hx, const TensorList& params,
                           bool has_biases, int64_t num_layers, double dropout, bool train,
                           bool bidirectional, bool batch_first = false,
                           const TensorView& batch_sizes = {});

// ---------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------

// dx has input's shape (2-D with batch_sizes); dh0 is (D*L, B, R), dc0
// (D*L, B, H); dparams[k] has params[k]'s shape (w_hr's gradient included).
struct BackwardShapes {
  std::vector<int64_t> dx, dh0, dc0;
  std::vector<std::vector<int64_t>> dparams;
};

// Caller-allocated gradient views: defined, exact shape, input's dtype,
// contiguous; dparams.size() == params.size().
struct BackwardOutputs {
  TensorView dx, dh0, dc0;
  std::vector<TensorView> dparams;
};

struct BackwardResult {
  Tensor dx;
  std::vector<Tensor> dhx;      // {dh0, dc0}
  std::vector<Tensor> dparams;  // one per params entry
  BackwardOutputs views() const;
};

// grad_y, grad_hy, grad_cy may be undefined (= zeros). i..tanhc are outputs
// 3..9 of a train=True forward with the same arguments.
BackwardShapes lstm_backward_shapes(const TensorView& grad_y, const TensorView& grad_hy,
                                    const TensorView& grad_cy, const TensorView& input,
                                    const TensorList& hx, const TensorList& params,
                                    const TensorView& i, const TensorView& j, const TensorView& f,
                                    const TensorView& o, const TensorView& h, const TensorView& c,
                                    const TensorView& tanhc, bool has_biases, int64_t num_layers,
                                    double dropout, bool train, bool bidirectional,
                                    bool batch_first = false, const TensorView& batch_sizes = {});

// Computes the backward into caller-allocated outputs, checked as
// lstm_forward_out's (an output over a saved tensor or an upstream gradient
// is refused too, e.g. "out.dh0 ... got one overlapping grad_hy").
void lstm_backward_out(const BackwardOutputs& out, const TensorView& grad_y,
                       const TensorView& grad_hy, const TensorView& grad_cy,
                       const TensorView& input, const TensorList& hx, const TensorList& params,
                       const TensorView& i, const TensorView& j, const TensorView& f,
                       const TensorView& o, const TensorView& h, const TensorView& c,
                       const TensorView& tanhc, bool has_biases, int64_t num_layers, double dropout,
                       bool train, bool bidirectional, bool batch_first = false,
                       const TensorView& batch_sizes = {});

// The backward into memory the caller provides, as lstm_forward_into: one
// pass of the argument checks, `allocate` called once with what
// lstm_backward_shapes would return, its views checked as lstm_backward_out's.
using BackwardAllocator = std::function<BackwardOutputs(const BackwardShapes&)>;
void lstm_backward_into(const BackwardAllocator& allocate, const TensorView& grad_y,
                        const TensorView& grad_hy, const TensorView& grad_cy,
                        const TensorView& input, const TensorList& hx, const TensorList& params,
                        const TensorView& i, const TensorView& j, const TensorView& f,
                        const TensorView& o, const TensorView& h, const TensorView& c,
                        const TensorView& tanhc, bool has_biases, int64_t num_layers,
                        double dropout, bool train, bool bidirectional, bool batch_first = false,
                        const TensorView& batch_sizes = {});

BackwardResult lstm_backward(const TensorView& grad_y, const TensorView& grad_hy,
                             const TensorView& grad_cy, const TensorView& input,
                             const TensorList& hx, const TensorList& params, const TensorView& i,
                             const TensorView& j, const TensorView& f, const TensorView& o,
                             const TensorView& h, const TensorView& c, const TensorView& tanhc,
                             bool has_biases, int64_t num_layers, double dropout, bool train,
                             bool bidirectional, bool batch_first = false,
                             const TensorView& batch_sizes = {});

// ---------------------------------------------------------------------------
// Threads
// ---------------------------------------------------------------------------

// Number of threads the operators may use (>= 1). Results are bitwise
// identical whatever this is. Default: 1. Applies process-wide. A call whose
// work is too small to gain from a second thread runs on one (one direction
// of its widest layer under 2^21 multiply-adds forward, 2^22 backward: valid
// rows x 4 hidden_size x (layer input + h's width, proj_size or hidden_size));
// LSTMOP_MIN_PARALLEL_WORK=<n> in the environment sets that floor for both,
// 0 for none.
void set_num_threads(int num_threads);
int get_num_threads();

// ---------------------------------------------------------------------------
// Subnormal numbers
// ---------------------------------------------------------------------------

// float32 and 16-bit calls treat subnormal operands and results as zero inside
// their computation (x86 FTZ and DAZ, set on entry and restored on exit on
// every thread a call uses), so vanishing values cost no time; float64 keeps
// IEEE subnormals. set_flush_denormal(false) keeps IEEE behaviour in every
// dtype. Default: true. Applies process-wide, to calls that start after it.
// The caller's floating-point environment is never changed.
void set_flush_denormal(bool enabled);
bool get_flush_denormal();

// ---------------------------------------------------------------------------
// float32 on bfloat16 units, by choice
// ---------------------------------------------------------------------------

// "ieee" (the default): float32 calls compute in IEEE float32. "bf16": float32
// calls take the operands of their matrix products rounded to bfloat16 (the
// input, the weights, h as the next step multiplies it; products exact, sums
// in float32, everything else float32, results float32) where the CPU has a
// bfloat16 dot-product instruction (AVX512-BF16) and subnormals are flushed
// (set_flush_denormal), and stay IEEE float32 elsewhere: PyTorch 2.x's
// torch.backends.mkldnn.rnn.fp32_precision convention. Any other value throws
// lstmop::Error naming "precision". Applies process-wide, to calls that start
// after it.
void set_fp32_precision(const std::string& precision);
std::string get_fp32_precision();

// ---------------------------------------------------------------------------
// Scratch memory
// ---------------------------------------------------------------------------

// The production operators keep their scratch block (one per calling thread,
// the largest any call on that thread has needed; freed when the thread
// ends), so repeated calls do not fault fresh pages in. This frees the
// calling thread's block now; the next call allocates a new one.
void release_workspace_cache();

}  // namespace lstmop
