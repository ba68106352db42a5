// Empty batches and input_size = 0 (CONTRACT.md v2, "Inputs"), as
// torch.nn.LSTM accepts them:
// - B = 0: outputs of the documented shapes with no elements, a backward whose
//   parameter gradients are zero and whose dx, dh0, dc0 are empty, in every
//   mode (layers, bidirectional, batch_first, with and without hx, inference),
//   every dtype, one and two threads, the _out forms too;
// - input_size = 0: layer 0's input product is zero, so the results are those
//   of the same LSTM with zero input; against the float64 reference (which
//   takes the same shapes), dw_ih (4H, 0) and dx (T, B, 0) empty.
// With batch_sizes, B = 0 stays an error (batch_sizes[0] must be B, and every
// entry >= 1: tests/validation/test_bad_batch_sizes.cpp).
#include <string>
#include <vector>

#include "lstm_test_support.h"

namespace lstmtest {
namespace {

std::vector<LstmConfig> empty_batch_configs() {
  std::vector<LstmConfig> configs;
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    LstmConfig c;
    c.dtype = dtype;
    c.T = 4, c.B = 0, c.I = 5, c.H = 6, c.L = 2;
    c.bidirectional = true;
    configs.push_back(c);
    c.batch_first = true;
    c.with_hx = false;
    configs.push_back(c);
    c.batch_first = false;
    c.bidirectional = false;
    c.train = false;
    configs.push_back(c);
  }
  return configs;
}

TEST(EmptyBatch, ShapesZeroGradientsEveryModeAndThreads) {
  const int saved = lstmop::get_num_threads();
  uint64_t seed = 6000;
  for (const LstmConfig& cfg : empty_batch_configs()) {
    for (int threads : {1, 2}) {
      lstmop::set_num_threads(threads);
      SCOPED_TRACE(cfg.name() + " threads " + std::to_string(threads));
      const LstmProblem p = make_problem(cfg, seed += 10);
      const lstmop::ForwardShapes shapes = lstmop::lstm_forward_shapes(
          p.input, p.hx_list(), p.param_list(), cfg.has_biases, cfg.L, 0.0, cfg.train,
          cfg.bidirectional, cfg.batch_first, p.batch_sizes_view());
      const ForwardResult f = run_forward(p);
      EXPECT_EQ(f.output.sizes(), shapes.output);
      EXPECT_EQ(f.hy.sizes(), (std::vector<int64_t>{cfg.S(), 0, cfg.H}));
      EXPECT_EQ(f.cy.sizes(), (std::vector<int64_t>{cfg.S(), 0, cfg.H}));
      EXPECT_EQ(f.output.numel(), 0);
      const std::vector<int64_t> out_shape =
          cfg.batch_first ? std::vector<int64_t>{0, cfg.T, cfg.D() * cfg.H}
                          : std::vector<int64_t>{cfg.T, 0, cfg.D() * cfg.H};
      EXPECT_EQ(f.output.sizes(), out_shape);
      if (cfg.train) {
        EXPECT_EQ(f.i.sizes(), (std::vector<int64_t>{cfg.S(), cfg.T, 0, cfg.H}));
        const BackwardResult b = run_backward(p, make_grads(p, seed + 1), f);
        EXPECT_EQ(b.dx.sizes(), p.input.sizes());
        EXPECT_EQ(b.dhx[0].sizes(), (std::vector<int64_t>{cfg.S(), 0, cfg.H}));
        EXPECT_EQ(b.dhx[1].sizes(), (std::vector<int64_t>{cfg.S(), 0, cfg.H}));
        ASSERT_EQ(b.dparams.size(), p.params.size());
        for (std::size_t k = 0; k < b.dparams.size(); ++k) {
          EXPECT_EQ(b.dparams[k].sizes(), p.params[k].sizes()) << "dparams[" << k << "]";
          EXPECT_EQ(max_abs(b.dparams[k]), 0.0) << "dparams[" << k << "]";
          EXPECT_GT(b.dparams[k].numel(), 0);
        }
        const BackwardResult rb = run_reference_backward(p, make_grads(p, seed + 1), f);
        for (const Tensor& t : rb.dparams) EXPECT_EQ(max_abs(t), 0.0);
      }
      const ForwardResult rf = run_reference_forward(p);
      EXPECT_EQ(rf.output.sizes(), out_shape);
    }
  }
  lstmop::set_num_threads(saved);
}

// The _out form with caller buffers of no elements (null data is fine for them).
TEST(EmptyBatch, OutFormWritesNothing) {
  LstmConfig cfg;
  cfg.T = 3, cfg.B = 0, cfg.I = 4, cfg.H = 5;
  const LstmProblem p = make_problem(cfg, 6100);
  const ForwardResult alloc = run_forward(p);
  const lstmop::ForwardResult out = lstmop::lstm_forward(
      p.input, p.hx_list(), p.param_list(), cfg.has_biases, cfg.L, 0.0, true, false);
  EXPECT_NO_THROW(lstmop::lstm_forward_out(out.views(), p.input, p.hx_list(), p.param_list(),
                                           cfg.has_biases, cfg.L, 0.0, true, false));
  EXPECT_EQ(out.output.sizes(), alloc.output.sizes());
}

// input_size = 0: the same results as zero input of any width, and the
// reference's, in the modes of the sweep.
TEST(EmptyBatch, InputSizeZeroIsAZeroInputProduct) {
  uint64_t seed = 6200;
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t B : {1, 5}) {  // both forms of the fused step
      LstmConfig cfg;
      cfg.dtype = dtype;
      cfg.T = 5, cfg.B = B, cfg.I = 0, cfg.H = 7, cfg.L = 2;
      cfg.bidirectional = true;
      expect_near_reference(cfg, seed += 10);
      cfg.packed = true;
      cfg.lengths.clear();
      for (int64_t b = 0; b < B; ++b) cfg.lengths.push_back(5 - b % 3);
      expect_near_reference(cfg, seed += 10);

      // Zero input of width 3 with w_ih's columns anything: the same bits in
      // float64 (every product term is an exact zero).
      if (dtype != DType::Float64) continue;
      LstmConfig wide = cfg;
      wide.packed = false;
      wide.lengths.clear();
      wide.I = 3;
      LstmConfig empty = wide;
      empty.I = 0;
      const LstmProblem pe = make_problem(empty, seed + 1);
      LstmProblem pw = make_problem(wide, seed + 1);
      pw.input = filled(dtype, pw.input.sizes(), 0.0);
      pw.hx = pe.hx;
      for (std::size_t k = 0; k < pw.params.size(); ++k) {
        if (k % 4 != 0 || k >= 4 * 2) pw.params[k] = pe.params[k];  // all but layer 0's w_ih
      }
      const ForwardResult fe = run_forward(pe), fw = run_forward(pw);
      EXPECT_EQ(to_bytes(fe.output.view()), to_bytes(fw.output.view()));
      EXPECT_EQ(to_bytes(fe.hy.view()), to_bytes(fw.hy.view()));
      const BackwardResult be = run_backward(pe, make_grads(pe, seed + 2), fe);
      EXPECT_EQ(be.dx.sizes(), pe.input.sizes());
      EXPECT_EQ(be.dparams[0].sizes(), (std::vector<int64_t>{4 * cfg.H, 0}));
    }
  }
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    LstmConfig cfg;
    cfg.dtype = dtype;
    cfg.T = 4, cfg.B = 6, cfg.I = 0, cfg.H = 8;
    seed += 10;  // (once, before the call: its arguments are unsequenced)
    expect_low_precision_near_reference(make_problem(cfg, seed), seed + 1);
  }
}

}  // namespace
}  // namespace lstmtest
