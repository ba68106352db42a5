// lstmop bench: oneDNN's LSTM primitive, called directly, as a peer.
//
// It computes the model of torch.nn.LSTM / the lstmop contract:
// - one lstm_forward (and lstm_backward) primitive per layer: oneDNN's own
//   multi-layer bidirectional form runs each direction through all layers on
//   its own and concatenates only at the end, which is a different model;
//   here layer l reads the (T, B, D*H) concat of layer l-1 (bidirectional_concat);
// - weights converted from PyTorch's (4H, I_l) rows to oneDNN's ldigo
//   {1, D, I_l, 4, H}: a transpose; both gate orders are i, f, g(c~), o,
//   which verify_peer in bench/lstm_bench.py checks against torch.nn.LSTM;
// - one bias per slot, b_ih + b_hh (ldgo, float32);
// - variable length is not available in oneDNN: it runs padded to T.
// What is timed: the primitives' execute calls only (forward_inference; or
// forward_training of every layer then backward of every layer). Weight
// reorders into the primitives' preferred layouts are done once before
// timing and reported separately (reorder_ms): the peer's best case. Training
// includes clearing the diff weights, which oneDNN accumulates into.
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_case.h"

namespace lstmbench {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// The data-type choices of one primitive configuration.
struct Types {
  dt data;          // src/dst layer and iter, weights
  dt diff_data;     // diff src/dst layer and iter
  dt diff_weights;  // diff weights
};

struct Layer {
  int64_t in = 0;  // I_l
  dnnl::lstm_forward::primitive_desc fwd_pd;
  dnnl::lstm_forward fwd;
  dnnl::lstm_backward::primitive_desc bwd_pd;
  dnnl::lstm_backward bwd;
  // ldigo / ldgo float32 copies in PyTorch's meaning, the reorder sources.
  memory user_w_layer, user_w_iter, bias;
  memory w_layer_fwd, w_iter_fwd, w_layer_bwd, w_iter_bwd;
  memory src_iter, src_iter_c, dst_layer, dst_iter, dst_iter_c, workspace;
  memory diff_src_layer, diff_src_iter, diff_src_iter_c;
  memory diff_w_layer, diff_w_iter, diff_bias, diff_dst_iter, diff_dst_iter_c;
};

class OnednnLstm {
 public:
  explicit OnednnLstm(const BenchCase& c) : c_(c), eng_(dnnl::engine::kind::cpu, 0), stream_(eng_) {
    if (c.dtype == "float16") throw Unsupported("oneDNN 2.6 has no float16 LSTM on CPU");
    if (c.proj > 0) {
      throw Unsupported("this peer runs oneDNN's LSTM without projections (its LSTMP is "
                        "inference-only on its fast kernels)");
    }
    const dt data = c.dtype == "bfloat16" ? dt::bf16 : dt::f32;
    const int64_t T = c.T, B = c.B, H = c.H, D = c.directions();
    input_user_ = memory({{T, B, c.I}, dt::f32, tag::tnc}, eng_);
    grad_y_user_ = memory({{T, B, D * H}, dt::f32, tag::tnc}, eng_);
    input_ = memory({{T, B, c.I}, data, tag::tnc}, eng_);
    grad_y_ = memory({{T, B, D * H}, data, tag::tnc}, eng_);
    layers_.resize(static_cast<std::size_t>(c.layers));
    for (int64_t l = 0; l < c.layers; ++l) build_layer(l, data);
    fill_default_data();
  }

  // Everything a primitive may read: uniform data like torch's init.
  void fill_default_data() {
    const float bound = 1.0f / std::sqrt(static_cast<float>(c_.H));
    uint64_t seed = c_.seed;
    for (Layer& L : layers_) {
      fill(L.user_w_layer, -bound, bound, ++seed);
      fill(L.user_w_iter, -bound, bound, ++seed);
      fill(L.bias, -bound, bound, ++seed);
      zero(L.src_iter);
      zero(L.src_iter_c);
    }
    fill(input_user_, -1.0f, 1.0f, ++seed);
    fill(grad_y_user_, -1.0f, 1.0f, ++seed);
    commit_inputs();
  }

  // Reorders the user float32 data into the primitives' memories.
  void commit_inputs() {
    auto t0 = std::chrono::steady_clock::now();
    reorder(input_user_, input_);
    reorder(grad_y_user_, grad_y_);
    for (Layer& L : layers_) {
      reorder(L.user_w_layer, L.w_layer_fwd);
      reorder(L.user_w_iter, L.w_iter_fwd);
      if (c_.train()) {
        reorder(L.user_w_layer, L.w_layer_bwd);
        reorder(L.user_w_iter, L.w_iter_bwd);
      }
    }
    stream_.wait();
    reorder_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  void run_once() {
    forward();
    if (c_.train()) backward();
    stream_.wait();
  }

  void forward() {
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      Layer& L = layers_[l];
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC_LAYER, l == 0 ? input_ : layers_[l - 1].dst_layer},
          {DNNL_ARG_SRC_ITER, L.src_iter},
          {DNNL_ARG_SRC_ITER_C, L.src_iter_c},
          {DNNL_ARG_WEIGHTS_LAYER, L.w_layer_fwd},
          {DNNL_ARG_WEIGHTS_ITER, L.w_iter_fwd},
          {DNNL_ARG_BIAS, L.bias},
          {DNNL_ARG_DST_LAYER, L.dst_layer},
          {DNNL_ARG_DST_ITER, L.dst_iter},
          {DNNL_ARG_DST_ITER_C, L.dst_iter_c}};
      if (c_.train()) args.insert({DNNL_ARG_WORKSPACE, L.workspace});
      L.fwd.execute(stream_, args);
    }
  }

  void backward() {
    for (std::size_t k = layers_.size(); k-- > 0;) {
      Layer& L = layers_[k];
      // oneDNN's RNN backward adds to diff weights and diff bias (bench --verify shows 2x
      // after two passes otherwise), so a training step must clear them: part of the cost.
      zero(L.diff_w_layer);
      zero(L.diff_w_iter);
      zero(L.diff_bias);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC_LAYER, k == 0 ? input_ : layers_[k - 1].dst_layer},
          {DNNL_ARG_SRC_ITER, L.src_iter},
          {DNNL_ARG_SRC_ITER_C, L.src_iter_c},
          {DNNL_ARG_WEIGHTS_LAYER, L.w_layer_bwd},
          {DNNL_ARG_WEIGHTS_ITER, L.w_iter_bwd},
          {DNNL_ARG_BIAS, L.bias},
          {DNNL_ARG_DST_LAYER, L.dst_layer},
          {DNNL_ARG_DST_ITER, L.dst_iter},
          {DNNL_ARG_DST_ITER_C, L.dst_iter_c},
          {DNNL_ARG_WORKSPACE, L.workspace},
          {DNNL_ARG_DIFF_DST_LAYER, k + 1 == layers_.size() ? grad_y_ : layers_[k + 1].diff_src_layer},
          {DNNL_ARG_DIFF_DST_ITER, L.diff_dst_iter},
          {DNNL_ARG_DIFF_DST_ITER_C, L.diff_dst_iter_c},
          {DNNL_ARG_DIFF_SRC_LAYER, L.diff_src_layer},
          {DNNL_ARG_DIFF_SRC_ITER, L.diff_src_iter},
          {DNNL_ARG_DIFF_SRC_ITER_C, L.diff_src_iter_c},
          {DNNL_ARG_DIFF_WEIGHTS_LAYER, L.diff_w_layer},
          {DNNL_ARG_DIFF_WEIGHTS_ITER, L.diff_w_iter},
          {DNNL_ARG_DIFF_BIAS, L.diff_bias}};
      L.bwd.execute(stream_, args);
    }
  }

  // --verify-dir: torch-layout files in, torch-layout results out.
  void verify(const std::string& dir) {
    const int64_t T = c_.T, B = c_.B, H = c_.H, D = c_.directions(), S = c_.layers * D;
    const int64_t G = 4 * H;
    std::vector<float> x = read_floats(dir + "/x.bin", T * B * c_.I);
    std::vector<float> h0 = read_floats(dir + "/h0.bin", S * B * H);
    std::vector<float> c0 = read_floats(dir + "/c0.bin", S * B * H);
    int64_t param_count = 0;
    for (const Layer& L : layers_) param_count += D * (G * L.in + G * H + 2 * G);
    std::vector<float> params = read_floats(dir + "/params.bin", param_count);
    std::memcpy(input_user_.get_data_handle(), x.data(), x.size() * 4);
    if (c_.train()) {
      std::vector<float> gy = read_floats(dir + "/gy.bin", T * B * D * H);
      std::memcpy(grad_y_user_.get_data_handle(), gy.data(), gy.size() * 4);
    }
    const float* p = params.data();
    for (int64_t l = 0; l < c_.layers; ++l) {
      Layer& L = layers_[static_cast<std::size_t>(l)];
      auto* wl = static_cast<float*>(L.user_w_layer.get_data_handle());
      auto* wi = static_cast<float*>(L.user_w_iter.get_data_handle());
      auto* bias = static_cast<float*>(L.bias.get_data_handle());
      for (int64_t d = 0; d < D; ++d) {
        const float* w_ih = p;             // (4H, I_l)
        const float* w_hh = w_ih + G * L.in;  // (4H, H)
        const float* b_ih = w_hh + G * H;
        const float* b_hh = b_ih + G;
        p = b_hh + G;
        for (int64_t row = 0; row < G; ++row) {
          for (int64_t k = 0; k < L.in; ++k) wl[(d * L.in + k) * G + row] = w_ih[row * L.in + k];
          for (int64_t k = 0; k < H; ++k) wi[(d * H + k) * G + row] = w_hh[row * H + k];
          bias[d * G + row] = b_ih[row] + b_hh[row];
        }
        const int64_t slot = l * D + d;
        set_state(L.src_iter, d, h0.data() + slot * B * H);
        set_state(L.src_iter_c, d, c0.data() + slot * B * H);
      }
    }
    commit_inputs();
    // Twice: the second pass must not depend on the first (e.g. accumulated diff weights).
    for (int pass = 0; pass < 2; ++pass) {
      forward();
      if (c_.train()) backward();
      stream_.wait();
    }

    write_floats(dir + "/onednn_y.bin", to_plain(layers_.back().dst_layer, tag::tnc).data(), T * B * D * H);
    std::vector<float> hy(static_cast<std::size_t>(S * B * H)), cy(hy.size());
    for (int64_t l = 0; l < c_.layers; ++l) {
      const Layer& L = layers_[static_cast<std::size_t>(l)];
      std::vector<float> h = to_plain(L.dst_iter, tag::ldnc), cc = to_plain(L.dst_iter_c, tag::ldnc);
      std::memcpy(hy.data() + l * D * B * H, h.data(), h.size() * 4);
      std::memcpy(cy.data() + l * D * B * H, cc.data(), cc.size() * 4);
    }
    write_floats(dir + "/onednn_hy.bin", hy.data(), S * B * H);
    write_floats(dir + "/onednn_cy.bin", cy.data(), S * B * H);
    if (!c_.train()) return;

    write_floats(dir + "/onednn_dx.bin", to_plain(layers_.front().diff_src_layer, tag::tnc).data(), T * B * c_.I);
    std::vector<float> dh0(hy.size()), dc0(hy.size()), dparams;
    for (int64_t l = 0; l < c_.layers; ++l) {
      const Layer& L = layers_[static_cast<std::size_t>(l)];
      std::vector<float> dh = to_plain(L.diff_src_iter, tag::ldnc), dc = to_plain(L.diff_src_iter_c, tag::ldnc);
      std::memcpy(dh0.data() + l * D * B * H, dh.data(), dh.size() * 4);
      std::memcpy(dc0.data() + l * D * B * H, dc.data(), dc.size() * 4);
      std::vector<float> dwl = to_plain(L.diff_w_layer, tag::ldigo);
      std::vector<float> dwi = to_plain(L.diff_w_iter, tag::ldigo);
      std::vector<float> db = to_plain(L.diff_bias, tag::ldgo);
      for (int64_t d = 0; d < D; ++d) {
        for (int64_t row = 0; row < G; ++row)
          for (int64_t k = 0; k < L.in; ++k) dparams.push_back(dwl[(d * L.in + k) * G + row]);
        for (int64_t row = 0; row < G; ++row)
          for (int64_t k = 0; k < H; ++k) dparams.push_back(dwi[(d * H + k) * G + row]);
        for (int rep = 0; rep < 2; ++rep)  // d b_ih == d b_hh
          for (int64_t row = 0; row < G; ++row) dparams.push_back(db[d * G + row]);
      }
    }
    write_floats(dir + "/onednn_dh0.bin", dh0.data(), S * B * H);
    write_floats(dir + "/onednn_dc0.bin", dc0.data(), S * B * H);
    write_floats(dir + "/onednn_dparams.bin", dparams.data(), static_cast<int64_t>(dparams.size()));
  }

  std::string info() const {
    std::ostringstream os;
    std::size_t bytes = input_.get_desc().get_size() + grad_y_.get_desc().get_size(), ws = 0;
    for (const Layer& L : layers_) {
      for (const memory* m : {&L.w_layer_fwd, &L.w_iter_fwd, &L.w_layer_bwd, &L.w_iter_bwd, &L.bias,
                              &L.src_iter, &L.src_iter_c, &L.dst_layer, &L.dst_iter, &L.dst_iter_c,
                              &L.workspace, &L.diff_src_layer, &L.diff_src_iter, &L.diff_src_iter_c,
                              &L.diff_w_layer, &L.diff_w_iter, &L.diff_bias, &L.diff_dst_iter,
                              &L.diff_dst_iter_c})
        if (*m) bytes += m->get_desc().get_size();
      if (L.workspace) ws += L.workspace.get_desc().get_size();
    }
    os << "peer=onednn fwd_impl=" << layers_[0].fwd_pd.impl_info_str();
    if (c_.train()) os << " bwd_impl=" << layers_[0].bwd_pd.impl_info_str();
    os << " reorder_ms=" << reorder_ms_ << " workspace_bytes=" << ws << " primitive_bytes=" << bytes
       << " isa=" << static_cast<int>(dnnl::get_effective_cpu_isa());
    return os.str();
  }

 private:
  void build_layer(int64_t l, dt data) {
    const int64_t T = c_.T, B = c_.B, H = c_.H, D = c_.directions();
    Layer& L = layers_[static_cast<std::size_t>(l)];
    L.in = l == 0 ? c_.I : D * H;
    const auto dir = D == 2 ? dnnl::rnn_direction::bidirectional_concat
                            : dnnl::rnn_direction::unidirectional_left2right;
    const memory::dims layer_in{T, B, L.in}, layer_out{T, B, D * H}, state{1, D, B, H};
    const memory::dims w_layer{1, D, L.in, 4, H}, w_iter{1, D, H, 4, H}, bias{1, D, 4, H};
    auto md = [](const memory::dims& d, dt t, tag f) { return memory::desc(d, t, f); };

    const auto prop = c_.train() ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    dnnl::lstm_forward::desc fwd_desc(
        prop, dir, md(layer_in, data, tag::tnc), md(state, data, tag::ldnc), md(state, dt::f32, tag::ldnc),
        md(w_layer, data, tag::any), md(w_iter, data, tag::any), md(bias, dt::f32, tag::ldgo),
        md(layer_out, data, tag::tnc), md(state, data, tag::ldnc), md(state, dt::f32, tag::ldnc));
    L.fwd_pd = dnnl::lstm_forward::primitive_desc(fwd_desc, eng_, true);
    if (!L.fwd_pd) throw Unsupported("oneDNN has no LSTM forward for dtype " + c_.dtype + " on this CPU");
    L.fwd = dnnl::lstm_forward(L.fwd_pd);

    L.user_w_layer = memory({w_layer, dt::f32, tag::ldigo}, eng_);
    L.user_w_iter = memory({w_iter, dt::f32, tag::ldigo}, eng_);
    L.bias = memory({bias, dt::f32, tag::ldgo}, eng_);
    L.w_layer_fwd = memory(L.fwd_pd.weights_layer_desc(), eng_);
    L.w_iter_fwd = memory(L.fwd_pd.weights_iter_desc(), eng_);
    L.src_iter = memory(L.fwd_pd.src_iter_desc(), eng_);
    L.src_iter_c = memory(L.fwd_pd.src_iter_c_desc(), eng_);
    L.dst_layer = memory(L.fwd_pd.dst_layer_desc(), eng_);
    L.dst_iter = memory(L.fwd_pd.dst_iter_desc(), eng_);
    L.dst_iter_c = memory(L.fwd_pd.dst_iter_c_desc(), eng_);
    if (!c_.train()) return;
    L.workspace = memory(L.fwd_pd.workspace_desc(), eng_);

    // bfloat16 backward: try the data-type combinations oneDNN may accept.
    std::vector<Types> candidates{{data, data, dt::f32}, {data, data, data}, {data, dt::f32, dt::f32}};
    if (data == dt::f32) candidates = {{dt::f32, dt::f32, dt::f32}};
    // A combination oneDNN rejects throws from the desc constructor: try the next one.
    for (const Types& t : candidates) try {
      dnnl::lstm_backward::desc bwd_desc(
          dnnl::prop_kind::backward, dir, md(layer_in, data, tag::tnc), md(state, data, tag::ldnc),
          md(state, dt::f32, tag::ldnc), md(w_layer, data, tag::any), md(w_iter, data, tag::any),
          md(bias, dt::f32, tag::ldgo), md(layer_out, data, tag::tnc), md(state, data, tag::ldnc),
          md(state, dt::f32, tag::ldnc), md(layer_in, t.diff_data, tag::tnc),
          md(state, t.diff_data, tag::ldnc), md(state, dt::f32, tag::ldnc),
          md(w_layer, t.diff_weights, tag::any), md(w_iter, t.diff_weights, tag::any),
          md(bias, dt::f32, tag::ldgo), md(layer_out, t.diff_data, tag::tnc),
          md(state, t.diff_data, tag::ldnc), md(state, dt::f32, tag::ldnc));
      L.bwd_pd = dnnl::lstm_backward::primitive_desc(bwd_desc, eng_, L.fwd_pd, true);
      if (L.bwd_pd) break;
    } catch (const dnnl::error&) {
      continue;
    }
    if (!L.bwd_pd) throw Unsupported("oneDNN has no LSTM backward for dtype " + c_.dtype + " on this CPU");
    if (L.bwd_pd.diff_dst_layer_desc().data_type() != grad_y_.get_desc().data_type() && l + 1 == c_.layers)
      grad_y_ = memory(L.bwd_pd.diff_dst_layer_desc(), eng_);
    L.bwd = dnnl::lstm_backward(L.bwd_pd);
    L.w_layer_bwd = memory(L.bwd_pd.weights_layer_desc(), eng_);
    L.w_iter_bwd = memory(L.bwd_pd.weights_iter_desc(), eng_);
    L.diff_src_layer = memory(L.bwd_pd.diff_src_layer_desc(), eng_);
    L.diff_src_iter = memory(L.bwd_pd.diff_src_iter_desc(), eng_);
    L.diff_src_iter_c = memory(L.bwd_pd.diff_src_iter_c_desc(), eng_);
    L.diff_w_layer = memory(L.bwd_pd.diff_weights_layer_desc(), eng_);
    L.diff_w_iter = memory(L.bwd_pd.diff_weights_iter_desc(), eng_);
    L.diff_bias = memory(L.bwd_pd.diff_bias_desc(), eng_);
    L.diff_dst_iter = memory(L.bwd_pd.diff_dst_iter_desc(), eng_);
    L.diff_dst_iter_c = memory(L.bwd_pd.diff_dst_iter_c_desc(), eng_);
    zero(L.diff_dst_iter);
    zero(L.diff_dst_iter_c);
  }

  void fill(const memory& m, float lo, float hi, uint64_t seed) {
    fill_uniform(static_cast<float*>(m.get_data_handle()),
                 static_cast<int64_t>(m.get_desc().get_size() / 4), lo, hi, seed);
  }
  static void zero(const memory& m) { std::memset(m.get_data_handle(), 0, m.get_desc().get_size()); }

  void reorder(const memory& from, const memory& to) {
    dnnl::reorder(from, to).execute(stream_, const_cast<memory&>(from), const_cast<memory&>(to));
  }

  // Direction d of a (1, D, B, H) state from float32 data.
  void set_state(const memory& m, int64_t d, const float* values) {
    const int64_t n = c_.B * c_.H;
    memory user({{1, c_.directions(), c_.B, c_.H}, dt::f32, tag::ldnc}, eng_);
    reorder(m, user);
    stream_.wait();
    std::memcpy(static_cast<float*>(user.get_data_handle()) + d * n, values, static_cast<std::size_t>(n) * 4);
    reorder(user, m);
    stream_.wait();
  }

  // The memory's values as plain float32 in its own logical layout.
  std::vector<float> to_plain(const memory& m, tag plain) {
    memory user({m.get_desc().dims(), dt::f32, plain}, eng_);
    reorder(m, user);
    stream_.wait();
    const auto* p = static_cast<const float*>(user.get_data_handle());
    return std::vector<float>(p, p + user.get_desc().get_size() / 4);
  }

  BenchCase c_;
  dnnl::engine eng_;
  dnnl::stream stream_;
  memory input_user_, grad_y_user_, input_, grad_y_;
  std::vector<Layer> layers_;
  double reorder_ms_ = 0;
};

}  // namespace
}  // namespace lstmbench

int main(int argc, char** argv) {
  using namespace lstmbench;
  return run_main([&]() {
    Command cmd = parse_command(argc, argv);
    omp_set_num_threads(cmd.c.threads);
    OnednnLstm model(cmd.c);
    if (cmd.action == Action::Verify) {
      model.verify(cmd.verify_dir);
      std::printf("verified %s\n", model.info().c_str());
      return 0;
    }
    auto run_once = [&]() { model.run_once(); };
    run_once();  // warm-up: first-touch of every buffer, oneDNN's scratchpad
    if (cmd.action == Action::Serve) {
      serve(run_once, model.info());
    } else {
      std::printf("ready %s\n", model.info().c_str());
      print_timings(time_runs(run_once, cmd.reps, cmd.pause_ms, cmd.flush_mb));
    }
    return 0;
  });
}
