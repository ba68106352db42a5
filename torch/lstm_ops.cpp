// The PyTorch face of lstmop: the schemas of lstmop::_lstm and
// lstmop::_lstm_backward (verbatim from the contract, pinned by
// torch/schemas.txt) and their CPU and Meta kernels.
//
// Both kernels describe every torch tensor to the core as an
// lstmop::TensorView: its own data pointer, dtype, sizes and strides (in
// elements), so non-contiguous inputs are read in place, never copied. The
// core validates everything and infers the output shapes; the kernel
// allocates contiguous outputs of those shapes and (CPU) lets the core write
// straight into them, or (Meta) returns them unwritten.
//
// Bad arguments raise c10::Error (Python: RuntimeError), see lstm_ops.h.
// The Autograd kernels live in lstm_autograd.cpp.
#include "lstm_ops.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "api/packed.h"
#include "lstmop/lstm.h"
#include "output_memory.h"

namespace lstmop_torch {
namespace {

// The contract's schemas, character for character (torch/schemas.txt pins them
// and tests/python/test_schema.py fails when the registered ones drift).
constexpr const char* kForwardSchema =
    "_lstm(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, "
    "float dropout, bool train, bool bidirectional, *, bool? batch_first=False, "
    "Tensor? batch_sizes=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, "
    "Tensor, Tensor, Tensor)";
constexpr const char* kBackwardSchema =
    "_lstm_backward(Tensor grad_y, Tensor grad_hy, Tensor grad_cy, Tensor input, Tensor[] hx, "
    "Tensor[] params, Tensor i, Tensor j, Tensor f, Tensor o, Tensor h, Tensor c, "
    "Tensor tanhc, bool has_biases, int num_layers, float dropout, bool train, "
    "bool bidirectional, *, bool? batch_first=False, Tensor? batch_sizes=None) -> "
    "(Tensor, Tensor[], Tensor[])";

// What a kernel does with memory: the CPU kernel reads inputs and writes
// outputs; the Meta kernel only looks at shapes (data pointers stay null);
// the argument checks (Shapes) look at shapes of tensors on any device.
enum class Memory { Cpu, Meta, Shapes };

}  // namespace

std::string torch_dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kLong: return "torch.int64";
    case at::kInt: return "torch.int32";
    case at::kShort: return "torch.int16";
    case at::kChar: return "torch.int8";
    case at::kByte: return "torch.uint8";
    case at::kBool: return "torch.bool";
    case at::kComplexFloat: return "torch.complex64";
    case at::kComplexDouble: return "torch.complex128";
    case at::kQInt8: return "torch.qint8";
    case at::kQUInt8: return "torch.quint8";
    case at::kQInt32: return "torch.qint32";
    default: return std::string("torch.") + c10::toString(type);
  }
}

namespace {

lstmop::DType lstmop_dtype(const Tensor& tensor, const std::string& name) {
  switch (tensor.scalar_type()) {
    case at::kFloat: return lstmop::DType::Float32;
    case at::kDouble: return lstmop::DType::Float64;
    case at::kHalf: return lstmop::DType::Float16;
    case at::kBFloat16: return lstmop::DType::BFloat16;
    case at::kLong: return lstmop::DType::Int64;
    default:
      C10_THROW_ERROR(Error, name + " must have dtype torch.float32, torch.float64, "
                                    "torch.float16 or torch.bfloat16 (batch_sizes: "
                                    "torch.int64), got " +
                                    torch_dtype_name(tensor.scalar_type()));
  }
}

std::string device_string(const Tensor& tensor) { return tensor.device().str(); }

// A strided view of `tensor` for the core; an undefined tensor becomes the
// undefined view (an absent optional, or zeros for a gradient).
// `cpu_allowed_on_meta`: batch_sizes is host data, so the Meta kernel accepts it
// on the CPU as well as on meta.
lstmop::TensorView view_of(const Tensor& tensor, const std::string& name, Memory memory,
                           bool cpu_allowed_on_meta = false) {
  if (!tensor.defined()) {
    return {};
  }
  if (tensor.layout() != at::kStrided) {
    // NotImplementedError (a RuntimeError in Python), the class the dispatcher and
    // torch.nn.LSTM give a sparse tensor.
    C10_THROW_ERROR(NotImplementedError, name + " must be a dense (strided) tensor, got layout " +
                                             c10::str(tensor.layout()));
  }
  const bool on_cpu = tensor.device().is_cpu();
  if (memory == Memory::Cpu && !on_cpu) {
    C10_THROW_ERROR(Error, name + " must be a CPU tensor (lstmop has CPU and meta "
                                  "kernels only), got device " +
                                  device_string(tensor));
  }
  if (memory == Memory::Meta && !tensor.is_meta() && !(cpu_allowed_on_meta && on_cpu)) {
    C10_THROW_ERROR(Error, name + " must be a meta tensor like the other arguments, got "
                                  "device " +
                                  device_string(tensor));
  }
  const lstmop::DType dtype = lstmop_dtype(tensor, name);
  void* data = memory == Memory::Cpu ? tensor.data_ptr() : nullptr;  // Meta, Shapes: no data
  return lstmop::TensorView(data, dtype, tensor.sizes().vec(), tensor.strides().vec());
}

lstmop::TensorList views_of(TensorList tensors, const std::string& name, Memory memory) {
  lstmop::TensorList views;
  views.reserve(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    views.push_back(view_of(tensors[k], name + "[" + std::to_string(k) + "]", memory));
  }
  return views;
}

lstmop::TensorView batch_sizes_view(const c10::optional<Tensor>& batch_sizes, Memory memory) {
  if (!batch_sizes.has_value()) {
    return {};
  }
  // batch_sizes' values are read on the host: CPU in both kernels, or meta
  // (length only) in the Meta kernel.
  if (memory == Memory::Cpu && batch_sizes->defined() && !batch_sizes->device().is_cpu()) {
    C10_THROW_ERROR(Error, "batch_sizes must be a CPU int64 tensor, got device " +
                               device_string(*batch_sizes));
  }
  return view_of(*batch_sizes, "batch_sizes", memory, /*cpu_allowed_on_meta=*/true);
}

// The core's views of _lstm_backward's arguments (the same checks and error
// names, in the same order, for the padded and the packed-rows backward).
struct BackwardArgViews {
  lstmop::TensorView grad_y, grad_hy, grad_cy, input;
  lstmop::TensorList hx, params;
  lstmop::TensorView i, j, f, o, h, c, tanhc, batch_sizes;
};

BackwardArgViews backward_arg_views(Memory memory, const Tensor& grad_y, const Tensor& grad_hy,
                                    const Tensor& grad_cy, const Tensor& input, TensorList hx,
                                    TensorList params, const Tensor& i, const Tensor& j,
                                    const Tensor& f, const Tensor& o, const Tensor& h,
                                    const Tensor& c, const Tensor& tanhc,
                                    const c10::optional<Tensor>& batch_sizes) {
  BackwardArgViews v;
  v.grad_y = view_of(grad_y, "grad_y", memory);
  v.grad_hy = view_of(grad_hy, "grad_hy", memory);
  v.grad_cy = view_of(grad_cy, "grad_cy", memory);
  v.input = view_of(input, "input", memory);
  v.hx = views_of(hx, "hx", memory);
  v.params = views_of(params, "params", memory);
  v.i = view_of(i, "i", memory);
  v.j = view_of(j, "j", memory);
  v.f = view_of(f, "f", memory);
  v.o = view_of(o, "o", memory);
  v.h = view_of(h, "h", memory);
  v.c = view_of(c, "c", memory);
  v.tanhc = view_of(tanhc, "tanhc", memory);
  v.batch_sizes = batch_sizes_view(batch_sizes, memory);
  return v;
}

// Outputs: large CPU ones from the binding's block cache (output_memory.h).
Tensor empty_like_shape(const std::vector<int64_t>& shape, const Tensor& like) {
  return lstmop_torch::empty_output(shape, like);
}

// The core's thread count follows torch.set_num_threads / torch.get_num_threads
// (results do not depend on it: the core is deterministic for any count).
void follow_torch_thread_count() {
  const int threads = std::max(1, at::get_num_threads());
  if (lstmop::get_num_threads() != threads) {
    lstmop::set_num_threads(threads);
  }
}

// Runs `body`, turning the core's lstmop::Error into a c10::Error with the
// core's message (never an abort; Python sees RuntimeError, as from aten::lstm).
template <class Body>
auto translating_core_errors(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const lstmop::Error& error) {
    C10_THROW_ERROR(Error, error.what());
  }
}

// The forward's ten results in `shapes` (large ones from the output block
// cache, empty_like_shape), and the core's views of them.
ForwardTuple empty_forward_results(const lstmop::ForwardShapes& shapes, const Tensor& like) {
  return ForwardTuple(empty_like_shape(shapes.output, like), empty_like_shape(shapes.hy, like),
                      empty_like_shape(shapes.cy, like), empty_like_shape(shapes.i, like),
                      empty_like_shape(shapes.j, like), empty_like_shape(shapes.f, like),
                      empty_like_shape(shapes.o, like), empty_like_shape(shapes.h, like),
                      empty_like_shape(shapes.c, like), empty_like_shape(shapes.tanhc, like));
}

lstmop::ForwardOutputs forward_output_views(const ForwardTuple& result, Memory memory) {
  lstmop::ForwardOutputs out;
  out.output = view_of(std::get<0>(result), "output", memory);
  out.hy = view_of(std::get<1>(result), "hy", memory);
  out.cy = view_of(std::get<2>(result), "cy", memory);
  out.i = view_of(std::get<3>(result), "i", memory);
  out.j = view_of(std::get<4>(result), "j", memory);
  out.f = view_of(std::get<5>(result), "f", memory);
  out.o = view_of(std::get<6>(result), "o", memory);
  out.h = view_of(std::get<7>(result), "h", memory);
  out.c = view_of(std::get<8>(result), "c", memory);
  out.tanhc = view_of(std::get<9>(result), "tanhc", memory);
  return out;
}

// The backward's results (dx, [dh0, dc0], dparams) in `shapes`, and the
// core's views of them.
BackwardTuple empty_backward_results(const lstmop::BackwardShapes& shapes, const Tensor& like) {
  std::vector<Tensor> dhx{empty_like_shape(shapes.dh0, like), empty_like_shape(shapes.dc0, like)};
  std::vector<Tensor> dparams;
  dparams.reserve(shapes.dparams.size());
  for (const auto& shape : shapes.dparams) dparams.push_back(empty_like_shape(shape, like));
  return BackwardTuple(empty_like_shape(shapes.dx, like), std::move(dhx), std::move(dparams));
}

lstmop::BackwardOutputs backward_output_views(const BackwardTuple& result, Memory memory) {
  lstmop::BackwardOutputs out;
  out.dx = view_of(std::get<0>(result), "dx", memory);
  out.dh0 = view_of(std::get<1>(result)[0], "dh0", memory);
  out.dc0 = view_of(std::get<1>(result)[1], "dc0", memory);
  out.dparams = views_of(std::get<2>(result), "dparams", memory);
  return out;
}

ForwardTuple lstm_forward_kernel(Memory memory, const Tensor& input, TensorList hx,
                                 TensorList params, bool has_biases, int64_t num_layers,
                                 double dropout, bool train, bool bidirectional,
                                 c10::optional<bool> batch_first,
                                 const c10::optional<Tensor>& batch_sizes) {
  return translating_core_errors([&] {
    const lstmop::TensorView input_view = view_of(input, "input", memory);
    const lstmop::TensorList hx_views = views_of(hx, "hx", memory);
    const lstmop::TensorList params_views = views_of(params, "params", memory);
    const lstmop::TensorView batch_sizes_v = batch_sizes_view(batch_sizes, memory);
    const bool is_batch_first = batch_first.value_or(false);

    if (memory != Memory::Cpu) {  // shapes only
      const lstmop::ForwardShapes shapes = lstmop::lstm_forward_shapes(
          input_view, hx_views, params_views, has_biases, num_layers, dropout, train,
          bidirectional, is_batch_first, batch_sizes_v);
      return empty_forward_results(shapes, input);
    }
    follow_torch_thread_count();
    // One pass of the core's argument checks; the results allocated in between.
    ForwardTuple result;
    lstmop::lstm_forward_into(
        [&](const lstmop::ForwardShapes& shapes) {
          result = empty_forward_results(shapes, input);
          return forward_output_views(result, memory);
        },
        input_view, hx_views, params_views, has_biases, num_layers, dropout, train,
        bidirectional, is_batch_first, batch_sizes_v);
    return result;
  });
}

BackwardTuple lstm_backward_kernel(Memory memory, const Tensor& grad_y, const Tensor& grad_hy,
                                   const Tensor& grad_cy, const Tensor& input, TensorList hx,
                                   TensorList params, const Tensor& i, const Tensor& j,
                                   const Tensor& f, const Tensor& o, const Tensor& h,
                                   const Tensor& c, const Tensor& tanhc, bool has_biases,
                                   int64_t num_layers, double dropout, bool train,
                                   bool bidirectional, c10::optional<bool> batch_first,
                                   const c10::optional<Tensor>& batch_sizes) {
  return translating_core_errors([&] {
    const BackwardArgViews v = backward_arg_views(memory, grad_y, grad_hy, grad_cy, input, hx,
                                                  params, i, j, f, o, h, c, tanhc, batch_sizes);
    const bool is_batch_first = batch_first.value_or(false);

    if (memory != Memory::Cpu) {  // shapes only
      const lstmop::BackwardShapes shapes = lstmop::lstm_backward_shapes(
          v.grad_y, v.grad_hy, v.grad_cy, v.input, v.hx, v.params, v.i, v.j, v.f, v.o, v.h,
          v.c, v.tanhc, has_biases, num_layers, dropout, train, bidirectional, is_batch_first,
          v.batch_sizes);
      return empty_backward_results(shapes, input);
    }
    follow_torch_thread_count();
    // One pass of the core's argument checks; the results allocated in between.
    BackwardTuple result;
    lstmop::lstm_backward_into(
        [&](const lstmop::BackwardShapes& shapes) {
          result = empty_backward_results(shapes, input);
          return backward_output_views(result, memory);
        },
        v.grad_y, v.grad_hy, v.grad_cy, v.input, v.hx, v.params, v.i, v.j, v.f, v.o, v.h, v.c,
        v.tanhc, has_biases, num_layers, dropout, train, bidirectional, is_batch_first,
        v.batch_sizes);
    return result;
  });
}

}  // namespace

std::vector<Tensor> argument_gradients(BackwardTuple result, int64_t hx_count,
                                       int64_t trailing) {
  std::vector<Tensor> gradients;
  gradients.reserve(1 + static_cast<size_t>(hx_count) + std::get<2>(result).size() +
                    static_cast<size_t>(trailing));
  gradients.push_back(std::move(std::get<0>(result)));
  // dh0, dc0 exist also for an empty hx; they only have somewhere to go when hx was given.
  for (int64_t k = 0; k < hx_count; ++k) {
    gradients.push_back(std::move(std::get<1>(result).at(static_cast<size_t>(k))));
  }
  for (Tensor& dparam : std::get<2>(result)) gradients.push_back(std::move(dparam));
  gradients.resize(gradients.size() + static_cast<size_t>(trailing));
  return gradients;
}

ForwardTuple forward_packed_rows(const Tensor& input, TensorList hx, TensorList params,
                                 bool has_biases, int64_t num_layers, bool bidirectional,
                                 const Tensor& batch_sizes, int64_t padded_rows, bool train) {
  return translating_core_errors([&] {
    const Memory memory = Memory::Cpu;
    const lstmop::TensorView input_view = view_of(input, "input", memory);
    const lstmop::TensorList hx_views = views_of(hx, "hx", memory);
    const lstmop::TensorList params_views = views_of(params, "params", memory);
    const lstmop::TensorView batch_sizes_v = batch_sizes_view(batch_sizes, memory);
    // The result shapes of the padded problem (checked by the caller), the
    // output's rows those of the packed input.
    const lstmop::TensorView padded(nullptr, input_view.dtype,
                                    {padded_rows, input_view.size(1)});
    lstmop::ForwardShapes shapes = lstmop::lstm_forward_shapes(
        padded, hx_views, params_views, has_biases, num_layers, 0.0, train, bidirectional, false,
        batch_sizes_v);
    shapes.output[0] = input.size(0);
    ForwardTuple result = empty_forward_results(shapes, input);
    follow_torch_thread_count();
    lstmop::detail::lstm_forward_packed_out(forward_output_views(result, memory), input_view,
                                            hx_views, params_views, has_biases, num_layers,
                                            bidirectional, batch_sizes_v, train);
    return result;
  });
}

BackwardTuple backward_packed_rows(const Tensor& grad_y, const Tensor& grad_hy,
                                   const Tensor& grad_cy, const Tensor& input, TensorList hx,
                                   TensorList params, const Tensor& i, const Tensor& j,
                                   const Tensor& f, const Tensor& o, const Tensor& h,
                                   const Tensor& c, const Tensor& tanhc, bool has_biases,
                                   int64_t num_layers, bool bidirectional,
                                   const Tensor& batch_sizes) {
  return translating_core_errors([&] {
    const Memory memory = Memory::Cpu;
    const BackwardArgViews v = backward_arg_views(memory, grad_y, grad_hy, grad_cy, input, hx,
                                                  params, i, j, f, o, h, c, tanhc, batch_sizes);
    // dx as the packed input; dh0, dc0 as the saved h and c have them
    // ((D*L, T, B, .) -> (D*L, B, .)); dparams as params.
    lstmop::BackwardShapes shapes;
    shapes.dx = input.sizes().vec();
    shapes.dh0 = {h.size(0), h.size(2), h.size(3)};
    shapes.dc0 = {c.size(0), c.size(2), c.size(3)};
    for (const Tensor& p : params) shapes.dparams.push_back(p.sizes().vec());
    BackwardTuple result = empty_backward_results(shapes, input);
    follow_torch_thread_count();
    lstmop::detail::lstm_backward_packed_out(backward_output_views(result, memory), v.grad_y,
                                             v.grad_hy, v.grad_cy, v.input, v.hx, v.params, v.i,
                                             v.j, v.f, v.o, v.h, v.c, v.tanhc, has_biases,
                                             num_layers, bidirectional, v.batch_sizes);
    return result;
  });
}

namespace {

template <Memory memory>
ForwardTuple lstm_forward(const Tensor& input, TensorList hx, TensorList params, bool has_biases,
                          int64_t num_layers, double dropout, bool train, bool bidirectional,
                          c10::optional<bool> batch_first,
                          const c10::optional<Tensor>& batch_sizes) {
  return lstm_forward_kernel(memory, input, hx, params, has_biases, num_layers, dropout, train,
                             bidirectional, batch_first, batch_sizes);
}

template <Memory memory>
BackwardTuple lstm_backward(const Tensor& grad_y, const Tensor& grad_hy, const Tensor& grad_cy,
                            const Tensor& input, TensorList hx, TensorList params,
                            const Tensor& i, const Tensor& j, const Tensor& f, const Tensor& o,
                            const Tensor& h, const Tensor& c, const Tensor& tanhc,
                            bool has_biases, int64_t num_layers, double dropout, bool train,
                            bool bidirectional, c10::optional<bool> batch_first,
                            const c10::optional<Tensor>& batch_sizes) {
  return lstm_backward_kernel(memory, grad_y, grad_hy, grad_cy, input, hx, params, i, j, f, o, h,
                              c, tanhc, has_biases, num_layers, dropout, train, bidirectional,
                              batch_first, batch_sizes);
}

std::string with_dims(at::IntArrayRef sizes) {
  return std::to_string(sizes.size()) + "-D " + c10::str(sizes);
}

}  // namespace

const c10::TypedOperatorHandle<ForwardSignature>& forward_op() {
  static const auto handle = c10::Dispatcher::singleton()
                                 .findSchemaOrThrow("lstmop::_lstm", "")
                                 .typed<ForwardSignature>();
  return handle;
}

const c10::TypedOperatorHandle<BackwardSignature>& backward_op() {
  static const auto handle = c10::Dispatcher::singleton()
                                 .findSchemaOrThrow("lstmop::_lstm_backward", "")
                                 .typed<BackwardSignature>();
  return handle;
}

void check_forward_arguments(const Tensor& input, TensorList hx, TensorList params,
                             bool has_biases, int64_t num_layers, double dropout, bool train,
                             bool bidirectional, bool batch_first,
                             const c10::optional<Tensor>& batch_sizes) {
  translating_core_errors([&] {
    const Memory memory = Memory::Shapes;
    lstmop::lstm_forward_shapes(view_of(input, "input", memory), views_of(hx, "hx", memory),
                                views_of(params, "params", memory), has_biases, num_layers,
                                dropout, train, bidirectional, batch_first,
                                batch_sizes_view(batch_sizes, memory));
  });
}

void check_backward_arguments(const Tensor& grad_y, const Tensor& grad_hy, const Tensor& grad_cy,
                              const Tensor& input, TensorList hx, TensorList params,
                              const Tensor& i, const Tensor& j, const Tensor& f, const Tensor& o,
                              const Tensor& h, const Tensor& c, const Tensor& tanhc,
                              bool has_biases, int64_t num_layers, double dropout, bool train,
                              bool bidirectional, bool batch_first,
                              const c10::optional<Tensor>& batch_sizes) {
  translating_core_errors([&] {
    const Memory memory = Memory::Shapes;
    lstmop::lstm_backward_shapes(
        view_of(grad_y, "grad_y", memory), view_of(grad_hy, "grad_hy", memory),
        view_of(grad_cy, "grad_cy", memory), view_of(input, "input", memory),
        views_of(hx, "hx", memory), views_of(params, "params", memory), view_of(i, "i", memory),
        view_of(j, "j", memory), view_of(f, "f", memory), view_of(o, "o", memory),
        view_of(h, "h", memory), view_of(c, "c", memory), view_of(tanhc, "tanhc", memory),
        has_biases, num_layers, dropout, train, bidirectional, batch_first,
        batch_sizes_view(batch_sizes, memory));
  });
}

bool is_variable_length(const c10::optional<Tensor>& batch_sizes) {
  return batch_sizes.has_value() && batch_sizes->defined() && batch_sizes->numel() > 0;
}

std::vector<int64_t> checked_batch_sizes(const Tensor& batch_sizes, int64_t batch) {
  TORCH_CHECK(batch_sizes.device().is_cpu(),
              "batch_sizes must be a CPU tensor (its values are read on the host), got device ",
              batch_sizes.device().str());
  TORCH_CHECK(batch_sizes.scalar_type() == at::kLong,
              "batch_sizes must have dtype torch.int64, got ",
              torch_dtype_name(batch_sizes.scalar_type()));
  TORCH_CHECK(batch_sizes.dim() == 1, "batch_sizes must be 1-D (T,), got ",
              with_dims(batch_sizes.sizes()));
  TORCH_CHECK(batch_sizes.numel() > 0,
              "batch_sizes must have at least one entry (T >= 1), got an empty tensor");
  const Tensor values_tensor = batch_sizes.contiguous();
  const int64_t* data = values_tensor.data_ptr<int64_t>();
  std::vector<int64_t> values(data, data + values_tensor.numel());
  const int64_t first = values[0];
  if (batch >= 0) {
    TORCH_CHECK(first == batch, "batch_sizes must start with B = ", batch,
                ", got batch_sizes[0] = ", first);
  }
  // Every entry in [1, B]; B = batch_sizes[0] (itself >= 1), the sequences.
  const int64_t bound = std::max<int64_t>(first, 1);
  for (size_t t = 0; t < values.size(); ++t) {
    TORCH_CHECK(values[t] >= 1 && values[t] <= bound,
                "batch_sizes entries must lie in [1, B] = [1, ", bound,
                "] (B = batch_sizes[0]), got batch_sizes[", t, "] = ", values[t]);
    // (The message is only built when the check fails, so t > 0 there.)
    TORCH_CHECK(t == 0 || values[t] <= values[t - 1],
                "batch_sizes must be non-increasing, got batch_sizes[", t, "] = ", values[t],
                " > batch_sizes[", t - 1, "] = ", values[t - 1]);
  }
  return values;
}

}  // namespace lstmop_torch

TORCH_LIBRARY(lstmop, m) {
  m.def(lstmop_torch::kForwardSchema);
  m.def(lstmop_torch::kBackwardSchema);
}

TORCH_LIBRARY_IMPL(lstmop, CPU, m) {
  using lstmop_torch::Memory;
  m.impl("_lstm", TORCH_FN(lstmop_torch::lstm_forward<Memory::Cpu>));
  m.impl("_lstm_backward", TORCH_FN(lstmop_torch::lstm_backward<Memory::Cpu>));
}

TORCH_LIBRARY_IMPL(lstmop, Meta, m) {
  using lstmop_torch::Memory;
  m.impl("_lstm", TORCH_FN(lstmop_torch::lstm_forward<Memory::Meta>));
  m.impl("_lstm_backward", TORCH_FN(lstmop_torch::lstm_backward<Memory::Meta>));
}
