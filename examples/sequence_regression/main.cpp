// sequence_regression: trains a tiny LSTM sequence-regression model with lstmop's C++ API
// alone (no torch): forward, backward, a plain SGD step, and the loss printed as it falls.
//
// The task: a sequence of T noisy inputs x_t; the target at step t is the mean of the last
// three inputs, (x_t + x_{t-1} + x_{t-2}) / 3 (missing ones count as 0), so the model has
// to remember two steps. The model: one LSTM layer (I = 1, H = 16) and a linear read-out
// y_t = w . h_t + b0. Loss: mean squared error over the T x B outputs.
//
// Exit status 0 when the final loss is below half the first one, 1 otherwise, so a test can
// run this program and check that training works.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <lstmop/lstmop.h>

namespace {

constexpr int64_t kSteps = 24;   // T
constexpr int64_t kBatch = 32;   // B
constexpr int64_t kInput = 1;    // I
constexpr int64_t kHidden = 16;  // H
constexpr int kIterations = 300;
constexpr float kLearningRate = 0.5f;

using lstmop::DType;
using lstmop::Tensor;

float* data(const Tensor& t) { return t.data<float>(); }

Tensor uniform(const std::vector<int64_t>& sizes, float bound, std::mt19937& rng) {
  Tensor t = Tensor::empty(DType::Float32, sizes);
  std::uniform_real_distribution<float> dist(-bound, bound);
  for (int64_t k = 0; k < t.numel(); ++k) data(t)[k] = dist(rng);
  return t;
}

// A fresh batch: x (T, B, 1) uniform in [-1, 1], target (T, B).
void make_batch(std::mt19937& rng, Tensor& x, Tensor& target) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t k = 0; k < x.numel(); ++k) data(x)[k] = dist(rng);
  for (int64_t t = 0; t < kSteps; ++t) {
    for (int64_t b = 0; b < kBatch; ++b) {
      float sum = 0.0f;
      for (int64_t back = 0; back < 3 && back <= t; ++back) sum += data(x)[(t - back) * kBatch + b];
      data(target)[t * kBatch + b] = sum / 3.0f;
    }
  }
}

struct Model {
  // params in PyTorch's _flat_weights order: w_ih (4H, I), w_hh (4H, H), b_ih (4H), b_hh (4H).
  std::vector<Tensor> params;
  Tensor readout_w;  // (H)
  float readout_b = 0.0f;

  explicit Model(std::mt19937& rng) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(kHidden));  // torch's LSTM init
    params = {uniform({4 * kHidden, kInput}, bound, rng), uniform({4 * kHidden, kHidden}, bound, rng),
              uniform({4 * kHidden}, bound, rng), uniform({4 * kHidden}, bound, rng)};
    readout_w = uniform({kHidden}, bound, rng);
  }
  lstmop::TensorList param_views() const { return {params.begin(), params.end()}; }
};

// One training step on (x, target): returns the loss before the update.
float train_step(Model& model, const Tensor& x, const Tensor& target) {
  const lstmop::TensorList no_hx;  // zero initial states
  const bool has_biases = true, train = true, bidirectional = false;
  const int64_t num_layers = 1;
  const double dropout = 0.0;

  // Forward: output (T, B, H) and the saved activations the backward needs.
  lstmop::ForwardResult fwd = lstmop::lstm_forward(x, no_hx, model.param_views(), has_biases,
                                                   num_layers, dropout, train, bidirectional);
  const float* h = data(fwd.output);

  // Read-out, loss and dloss/doutput.
  const int64_t rows = kSteps * kBatch;
  Tensor grad_output = Tensor::zeros(DType::Float32, {kSteps, kBatch, kHidden});
  std::vector<float> grad_w(kHidden, 0.0f);
  float grad_b = 0.0f;
  double loss = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    float y = model.readout_b;
    for (int64_t k = 0; k < kHidden; ++k) y += data(model.readout_w)[k] * h[r * kHidden + k];
    const float err = y - data(target)[r];
    loss += static_cast<double>(err) * err;
    const float dy = 2.0f * err / static_cast<float>(rows);
    grad_b += dy;
    for (int64_t k = 0; k < kHidden; ++k) {
      grad_w[k] += dy * h[r * kHidden + k];
      data(grad_output)[r * kHidden + k] = dy * data(model.readout_w)[k];
    }
  }

  // Backward through the LSTM: no gradient flows into the final states (undefined views).
  lstmop::BackwardResult bwd = lstmop::lstm_backward(
      grad_output, lstmop::TensorView(), lstmop::TensorView(), x, no_hx, model.param_views(),
      fwd.i, fwd.j, fwd.f, fwd.o, fwd.h, fwd.c, fwd.tanhc, has_biases, num_layers, dropout, train,
      bidirectional);

  // SGD step.
  for (std::size_t p = 0; p < model.params.size(); ++p) {
    float* w = data(model.params[p]);
    const float* g = data(bwd.dparams[p]);
    for (int64_t k = 0; k < model.params[p].numel(); ++k) w[k] -= kLearningRate * g[k];
  }
  for (int64_t k = 0; k < kHidden; ++k) data(model.readout_w)[k] -= kLearningRate * grad_w[k];
  model.readout_b -= kLearningRate * grad_b;
  return static_cast<float>(loss / static_cast<double>(rows));
}

}  // namespace

int main() {
  try {
    std::mt19937 rng(1234);
    Model model(rng);
    Tensor x = Tensor::empty(DType::Float32, {kSteps, kBatch, kInput});
    Tensor target = Tensor::empty(DType::Float32, {kSteps, kBatch});
    std::printf("sequence regression: LSTM(I=%lld, H=%lld) + linear read-out, T=%lld, B=%lld, "
                "SGD lr %.2f, lstmop threads %d\n",
                static_cast<long long>(kInput), static_cast<long long>(kHidden),
                static_cast<long long>(kSteps), static_cast<long long>(kBatch), kLearningRate,
                lstmop::get_num_threads());
    float first = 0.0f, last = 0.0f;
    for (int it = 0; it < kIterations; ++it) {
      make_batch(rng, x, target);
      last = train_step(model, x, target);
      if (it == 0) first = last;
      if (it % 25 == 0 || it == kIterations - 1) std::printf("step %4d  loss %.5f\n", it, last);
    }
    const bool fell = last < 0.5f * first;
    std::printf("loss %.5f -> %.5f: %s\n", first, last,
                fell ? "fell below half, training works" : "did NOT fall below half");
    return fell ? 0 : 1;
  } catch (const lstmop::Error& e) {
    std::fprintf(stderr, "lstmop error (argument %s): %s\n", e.argument().c_str(), e.what());
    return 2;
  }
}
