// lstmop bench: lstmop's C++ API under the peer protocol of bench_case.h.
//
// Times lstm_forward_out (train=false), or lstm_forward_out (train=true) then
// lstm_backward_out with a gradient on the output only, into outputs
// allocated once before timing (like the oneDNN peer's memories). Variable
// length (--lengths) runs lstmop's batch_sizes mode: (T*B, I) rows, the
// invalid ones zero. --proj P adds w_hr (P, H) to every layer and direction
// (LSTM with projections: h is P wide).
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "bench_case.h"
#include "lstmop/lstmop.h"

namespace lstmbench {
namespace {

using lstmop::DType;
using lstmop::Tensor;
using lstmop::TensorView;

DType dtype_of(const std::string& name) {
  if (name == "bfloat16") return DType::BFloat16;
  if (name == "float16") return DType::Float16;
  return DType::Float32;
}

// A tensor of `dtype` holding `values` (rounded to nearest even for 16-bit types).
Tensor from_floats(DType dtype, const std::vector<int64_t>& sizes, const float* values) {
  Tensor t = Tensor::empty(dtype, sizes);
  const int64_t n = t.numel();
  for (int64_t k = 0; k < n; ++k) {
    if (dtype == DType::Float32) t.data<float>()[k] = values[k];
    else if (dtype == DType::BFloat16) t.data<uint16_t>()[k] = lstmop::float_to_bfloat16(values[k]);
    else t.data<uint16_t>()[k] = lstmop::float_to_half(values[k]);
  }
  return t;
}

std::vector<float> to_floats(const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (t.dtype() == DType::Float32) out[k] = t.data<float>()[k];
    else if (t.dtype() == DType::BFloat16) out[k] = lstmop::bfloat16_to_float(t.data<uint16_t>()[k]);
    else out[k] = lstmop::half_to_float(t.data<uint16_t>()[k]);
  }
  return out;
}

Tensor alloc(DType dtype, const std::vector<int64_t>& sizes) { return Tensor::zeros(dtype, sizes); }

class LstmopRun {
 public:
  explicit LstmopRun(const BenchCase& c) : c_(c), dtype_(dtype_of(c.dtype)) {
    lstmop::set_num_threads(c.threads);
    lstmop::set_fp32_precision(c.fp32_precision);
    const int64_t T = c.T, B = c.B, H = c.H, R = c.hidden_width(), D = c.directions();
    variable_ = !c.lengths.empty();
    input_sizes_ = variable_ ? std::vector<int64_t>{T * B, c.I} : std::vector<int64_t>{T, B, c.I};
    std::vector<float> x(static_cast<std::size_t>(T * B * c.I));
    fill_uniform(x.data(), static_cast<int64_t>(x.size()), -1.0f, 1.0f, c.seed);
    if (variable_) {
      batch_sizes_ = Tensor::empty(DType::Int64, {T});
      std::vector<int64_t> sizes = c.batch_sizes();
      std::memcpy(batch_sizes_.data<int64_t>(), sizes.data(), sizes.size() * 8);
      for (int64_t t = 0; t < T; ++t)  // invalid rows zero, like a padded PackedSequence
        for (int64_t b = sizes[static_cast<std::size_t>(t)]; b < B; ++b)
          std::memset(&x[static_cast<std::size_t>((t * B + b) * c.I)], 0, static_cast<std::size_t>(c.I) * 4);
    }
    input_ = from_floats(dtype_, input_sizes_, x.data());
    const float bound = 1.0f / std::sqrt(static_cast<float>(H));
    uint64_t seed = c.seed;
    for (int64_t l = 0; l < c.layers; ++l) {
      const int64_t in = l == 0 ? c.I : D * R;
      for (int64_t d = 0; d < D; ++d) {
        std::vector<std::vector<int64_t>> shapes{{4 * H, in}, {4 * H, R}, {4 * H}, {4 * H}};
        if (c.proj > 0) shapes.push_back({c.proj, H});  // w_hr, last in the slot
        for (const std::vector<int64_t>& shape : shapes) {
          int64_t n = 1;
          for (int64_t s : shape) n *= s;
          std::vector<float> v(static_cast<std::size_t>(n));
          fill_uniform(v.data(), n, -bound, bound, ++seed);
          params_.push_back(from_floats(dtype_, shape, v.data()));
        }
      }
    }
    for (const Tensor& p : params_) param_views_.push_back(p.view());
    std::vector<float> gy(static_cast<std::size_t>(T * B * D * R));
    fill_uniform(gy.data(), static_cast<int64_t>(gy.size()), -1.0f, 1.0f, ++seed);
    grad_y_ = from_floats(dtype_, variable_ ? std::vector<int64_t>{T * B, D * R}
                                            : std::vector<int64_t>{T, B, D * R}, gy.data());
    allocate_outputs();
  }

  void run_once() {
    lstmop::lstm_forward_out(fwd_views_, input_, hx_, param_views_, true, c_.layers, 0.0, c_.train(),
                             c_.bidirectional, false, batch_sizes_view());
    if (!c_.train()) return;
    lstmop::lstm_backward_out(bwd_views_, grad_y_, TensorView(), TensorView(), input_, hx_, param_views_,
                              fwd_.i, fwd_.j, fwd_.f, fwd_.o, fwd_.h, fwd_.c, fwd_.tanhc, true,
                              c_.layers, 0.0, true, c_.bidirectional, false, batch_sizes_view());
  }

  // Same files as the oneDNN peer (bench/lstm_bench.py: verify_peer), float32 only.
  void verify(const std::string& dir) {
    if (dtype_ != DType::Float32) throw std::runtime_error("--verify-dir needs --dtype float32");
    const int64_t T = c_.T, B = c_.B, H = c_.H, D = c_.directions(), S = c_.layers * D;
    const int64_t R = c_.hidden_width();
    std::vector<float> x = read_floats(dir + "/x.bin", T * B * c_.I);
    input_ = from_floats(dtype_, input_sizes_, x.data());
    Tensor h0 = from_floats(dtype_, {S, B, R}, read_floats(dir + "/h0.bin", S * B * R).data());
    Tensor c0 = from_floats(dtype_, {S, B, H}, read_floats(dir + "/c0.bin", S * B * H).data());
    hx_ = {h0.view(), c0.view()};
    int64_t count = 0;
    for (const Tensor& p : params_) count += p.numel();
    std::vector<float> flat = read_floats(dir + "/params.bin", count);
    const float* p = flat.data();
    for (Tensor& t : params_) {
      std::memcpy(t.data<float>(), p, static_cast<std::size_t>(t.numel()) * 4);
      p += t.numel();
    }
    if (c_.train()) {
      std::vector<float> gy = read_floats(dir + "/gy.bin", T * B * D * R);
      std::memcpy(grad_y_.data<float>(), gy.data(), gy.size() * 4);
    }
    run_once();
    run_once();  // twice, like the oneDNN peer: no state may carry over between calls
    write_floats(dir + "/lstmop_y.bin", to_floats(fwd_.output).data(), fwd_.output.numel());
    write_floats(dir + "/lstmop_hy.bin", to_floats(fwd_.hy).data(), fwd_.hy.numel());
    write_floats(dir + "/lstmop_cy.bin", to_floats(fwd_.cy).data(), fwd_.cy.numel());
    if (!c_.train()) return;
    write_floats(dir + "/lstmop_dx.bin", to_floats(bwd_.dx).data(), bwd_.dx.numel());
    write_floats(dir + "/lstmop_dh0.bin", to_floats(bwd_.dhx[0]).data(), bwd_.dhx[0].numel());
    write_floats(dir + "/lstmop_dc0.bin", to_floats(bwd_.dhx[1]).data(), bwd_.dhx[1].numel());
    std::vector<float> dparams;
    for (const Tensor& g : bwd_.dparams) {
      std::vector<float> v = to_floats(g);
      dparams.insert(dparams.end(), v.begin(), v.end());
    }
    write_floats(dir + "/lstmop_dparams.bin", dparams.data(), static_cast<int64_t>(dparams.size()));
  }

  std::string info() const {
    std::size_t bytes = 0;
    for (const Tensor* t : {&fwd_.output, &fwd_.hy, &fwd_.cy, &fwd_.i, &fwd_.j, &fwd_.f, &fwd_.o,
                            &fwd_.h, &fwd_.c, &fwd_.tanhc, &bwd_.dx})
      bytes += static_cast<std::size_t>(t->numel()) * lstmop::dtype_size(dtype_);
    std::ostringstream os;
    os << "peer=lstmop_runner threads=" << lstmop::get_num_threads() << " output_bytes=" << bytes;
    return os.str();
  }

 private:
  TensorView batch_sizes_view() const { return variable_ ? batch_sizes_.view() : TensorView(); }

  void allocate_outputs() {
    lstmop::ForwardShapes s = lstmop::lstm_forward_shapes(
        input_, hx_, param_views_, true, c_.layers, 0.0, c_.train(), c_.bidirectional, false,
        batch_sizes_view());
    fwd_ = {alloc(dtype_, s.output), alloc(dtype_, s.hy), alloc(dtype_, s.cy), alloc(dtype_, s.i),
            alloc(dtype_, s.j), alloc(dtype_, s.f), alloc(dtype_, s.o), alloc(dtype_, s.h),
            alloc(dtype_, s.c), alloc(dtype_, s.tanhc)};
    fwd_views_ = fwd_.views();
    if (!c_.train()) return;
    lstmop::BackwardShapes b = lstmop::lstm_backward_shapes(
        grad_y_, TensorView(), TensorView(), input_, hx_, param_views_, fwd_.i, fwd_.j, fwd_.f,
        fwd_.o, fwd_.h, fwd_.c, fwd_.tanhc, true, c_.layers, 0.0, true, c_.bidirectional, false,
        batch_sizes_view());
    bwd_.dx = alloc(dtype_, b.dx);
    bwd_.dhx = {alloc(dtype_, b.dh0), alloc(dtype_, b.dc0)};
    for (const std::vector<int64_t>& shape : b.dparams) bwd_.dparams.push_back(alloc(dtype_, shape));
    bwd_views_ = bwd_.views();
  }

  BenchCase c_;
  DType dtype_;
  bool variable_ = false;
  std::vector<int64_t> input_sizes_;
  Tensor input_, grad_y_, batch_sizes_;
  std::vector<Tensor> params_;
  lstmop::TensorList param_views_, hx_;
  lstmop::ForwardResult fwd_;
  lstmop::ForwardOutputs fwd_views_;
  lstmop::BackwardResult bwd_;
  lstmop::BackwardOutputs bwd_views_;
};

}  // namespace
}  // namespace lstmbench

int main(int argc, char** argv) {
  using namespace lstmbench;
  return run_main([&]() {
    Command cmd = parse_command(argc, argv);
    LstmopRun run(cmd.c);
    if (cmd.action == Action::Verify) {
      run.verify(cmd.verify_dir);
      std::printf("verified %s\n", run.info().c_str());
      return 0;
    }
    auto run_once = [&]() { run.run_once(); };
    run_once();  // warm-up
    if (cmd.action == Action::Serve) {
      serve(run_once, run.info());
    } else {
      std::printf("ready %s\n", run.info().c_str());
      print_timings(time_runs(run_once, cmd.reps, cmd.pause_ms, cmd.flush_mb));
    }
    return 0;
  });
}
