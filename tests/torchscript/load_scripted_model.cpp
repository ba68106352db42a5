// Second half of the TorchScript deployment test: what a TorchScript user's C++ program does
// with a model that contains lstmop.nn.LSTM. It loads the op library (as
// torch.ops.load_library does in Python), loads the model export_model.py scripted and saved,
// runs it in evaluation mode (padded and packed input) and in training mode (dropout between
// the layers, masks from the same seed), differentiates it, and checks every output and
// gradient against what Python computed: the same ops on the same inputs, so bit for bit.
//
//   load_scripted_model MODEL.pt EXPECTED.pt OP_LIBRARY.so
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/script.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int kDropoutSeed = 7;  // export_model.py's DROPOUT_SEED

int failures = 0;

void check_equal(const std::string& name, const at::Tensor& got, const at::Tensor& expected) {
  if (got.sizes() != expected.sizes() || got.scalar_type() != expected.scalar_type() ||
      !at::equal(got, expected)) {
    const double difference =
        got.sizes() == expected.sizes() ? (got - expected).abs().max().item<double>() : -1.0;
    std::fprintf(stderr, "MISMATCH %s: got %s, expected %s, max difference %g\n", name.c_str(),
                 c10::str(got.sizes()).c_str(), c10::str(expected.sizes()).c_str(), difference);
    ++failures;
  } else {
    std::printf("ok %s %s\n", name.c_str(), c10::str(got.sizes()).c_str());
  }
}

// Runs `method` of the model on `inputs`, checks its three outputs and the gradients of
// sum(weight_k * output_k) with respect to every parameter against `prefix`_k, `prefix`_gradk.
void check_method(torch::jit::script::Module& model, const torch::jit::script::Module& expected,
                  const std::string& method, const std::vector<c10::IValue>& inputs,
                  const std::string& prefix) {
  const auto outputs = model.get_method(method)(inputs).toTuple()->elements();
  at::Tensor loss = at::zeros({}, at::kDouble);
  for (size_t k = 0; k < outputs.size(); ++k) {
    const at::Tensor output = outputs[k].toTensor();
    check_equal(prefix + "_" + std::to_string(k), output,
                expected.attr(prefix + "_" + std::to_string(k)).toTensor());
    loss = loss + (expected.attr("weight" + std::to_string(k)).toTensor() * output).sum();
  }
  std::vector<at::Tensor> parameters;
  for (const auto& parameter : model.named_parameters()) parameters.push_back(parameter.value);
  const auto gradients = torch::autograd::grad({loss}, parameters);
  for (size_t k = 0; k < gradients.size(); ++k) {
    check_equal(prefix + "_grad" + std::to_string(k), gradients[k],
                expected.attr(prefix + "_grad" + std::to_string(k)).toTensor());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.pt EXPECTED.pt OP_LIBRARY.so\n", argv[0]);
    return 2;
  }
  // The op library registers lstmop::lstm, _lstm, ... with the dispatcher when it is loaded;
  // the model refers to them by name.
  if (dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL) == nullptr) {
    std::fprintf(stderr, "cannot load the op library %s: %s\n", argv[3], dlerror());
    return 1;
  }
  at::set_num_threads(1);  // as export_model.py: the linear layers' products in the same order
  try {
    torch::jit::script::Module model = torch::jit::load(argv[1]);
    const torch::jit::script::Module expected = torch::jit::load(argv[2]);
    const at::Tensor x = expected.attr("x").toTensor();
    const at::Tensor lengths = expected.attr("lengths").toTensor();
    const int64_t parameter_count = expected.attr("parameter_count").toTensor().item<int64_t>();
    if (static_cast<int64_t>(model.parameters().size()) != parameter_count) {
      std::fprintf(stderr, "the loaded model has %zu parameters, expected %lld\n",
                   model.parameters().size(), static_cast<long long>(parameter_count));
      return 1;
    }

    model.eval();
    check_method(model, expected, "forward", {x}, "eval_forward");
    check_method(model, expected, "packed", {x, lengths}, "eval_packed");
    model.train();
    torch::manual_seed(kDropoutSeed);
    check_method(model, expected, "forward", {x}, "train_forward");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  if (failures > 0) {
    std::fprintf(stderr, "%d mismatches\n", failures);
    return 1;
  }
  std::printf("the scripted model gives Python's results in C++\n");
  return 0;
}
