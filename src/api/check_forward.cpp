// The forward's argument checks (checks.h): input and batch_sizes, flags,
// params, hx, the size bound, batch_sizes' values. Each message starts with
// the argument's name and gives the expected and the actual value.
#include <algorithm>
#include <cmath>
#include <cstdint>

#ifdef __linux__
#include <sys/sysinfo.h>
#endif

#include "api/check_support.h"
#include "api/checks.h"

namespace lstmop {
namespace detail {
namespace {

// Refuses a problem whose outputs and workspaces cannot exist: an upper bound
// of the elements a call allocates (outputs, the production and reference
// workspaces; 8 bytes each, the widest compute type) must stay within
// call_byte_limit(). Stride-0 views can describe such problems with a few bytes
// (input (2^40, 1, 1) with strides 0); they get an error at once instead of an
// allocation failure, an out-of-memory kill (with memory overcommit, a huge
// request succeeds lazily) or a loop of 2^40 steps.
constexpr int64_t kMaxCallBytes = int64_t(1) << 44;  // 16 TiB

// The estimate counts every element at 8 bytes and every workspace of both
// implementations, so it is about twice what a float32 call really takes: a
// call is refused when the estimate exceeds twice the machine's memory (RAM +
// swap), i.e. when it could not run here anyway; never above 2^44 bytes.
int64_t call_byte_limit() {
  static const int64_t limit = [] {
    int64_t memory = 0;
#ifdef __linux__
    struct sysinfo info;
    if (sysinfo(&info) == 0) {
      const double bytes =
          (double(info.totalram) + double(info.totalswap)) * double(info.mem_unit);
      memory = bytes >= double(kMaxCallBytes) ? kMaxCallBytes : static_cast<int64_t>(bytes);
    }
#endif
    if (memory <= 0) return kMaxCallBytes;
    return std::min(kMaxCallBytes, 2 * memory);
  }();
  return limit;
}

std::string log2_bytes(int64_t elements) {
  return "about 2^" + number(std::round(std::log2(8.0 * double(elements)) * 10) / 10) + " bytes";
}

// `machine_limit`: calls that will run here (or on views that carry data: the binding's CPU
// kernels infer the shapes before they allocate) are held to call_byte_limit(); shape
// inference on shape-only views (data null: meta tensors) to 2^44 bytes, so that it gives the
// same answer on every machine.
void check_call_size(const LstmProblem& d, bool machine_limit) {
  const int64_t H = d.H, G = 4 * H;
  bool ok = true;
  auto mul = [&](int64_t a, int64_t b) {
    int64_t r = 0;
    ok = ok && mul_ok(a, b, &r);
    return ok ? r : 0;
  };
  auto add = [&](int64_t a, int64_t b) {
    int64_t r = 0;
    ok = ok && !__builtin_add_overflow(a, b, &r);
    return ok ? r : 0;
  };
  const int64_t limit_elements = (machine_limit ? call_byte_limit() : kMaxCallBytes) / 8;
  // Built only for an error: formatting it costs a few microseconds a call.
  const auto limit_text = [&] {
    return log2_bytes(limit_elements) +
           (machine_limit ? " (the smaller of 2^44 bytes and twice this machine's RAM + swap)"
                          : " (2^44 bytes, the bound of shape inference)");
  };
  // Weights alone (set by params): params gathered, dparams, dw workspaces:
  // 3 copies of every slot's 4H x (I_l + R + 2) and P x H (w_hr).
  const int64_t R = d.R;
  int64_t weights = 0;
  for (int64_t s = 0; s < d.slots; ++s) {
    const int64_t in_size = s < d.D ? d.I : mul(d.D, R);
    weights = add(weights, mul(3, add(mul(G, add(add(in_size, R), 2)), mul(d.P, H))));
  }
  if (!ok || weights > limit_elements) {
    fail(param_label(d, 0),
         "is too large: the weights of " + std::to_string(d.slots) + " slots with hidden_size = " +
             std::to_string(H) + " and input_size = " + std::to_string(d.I) + " need " +
             (ok ? log2_bytes(weights) : std::string("more than 2^63 bytes")) +
             " of copies and gradients, more than " + limit_text());
  }
  // Set by the input's T and B: states and their gradients (S, B, H), 12
  // copies; per (t, b) row: output / dx (D*R, I_l), the layer input / output /
  // gradient workspaces (3 * max(I, D*R)), gates or gate gradients and h_prev
  // per direction (5H), with projections m and dh (H + R) per direction, the
  // saved tensors when train (7 * S * H).
  const int64_t states = mul(12, mul(d.slots, mul(d.B, H)));
  const int64_t DR = mul(d.D, R);
  int64_t per_row = add(DR, mul(3, std::max(d.I, DR)));
  per_row = add(per_row, mul(d.D, add(mul(5, H), d.projections() ? add(H, R) : 0)));
  if (d.train) per_row = add(per_row, mul(7, mul(d.slots, H)));
  const int64_t total = add(add(weights, states), mul(mul(d.T, d.B), per_row));
  if (ok && total <= limit_elements) return;
  fail("input", "is too large: the problem (T = " + std::to_string(d.T) + ", B = " +
                    std::to_string(d.B) + ", input_size = " + std::to_string(d.I) +
                    ", hidden_size = " + std::to_string(H) + ", D*L = " + std::to_string(d.slots) +
                    ") needs " +
                    (ok ? log2_bytes(total) : std::string("more than 2^63 bytes")) +
                    " of outputs and workspace, more than " + limit_text());
}


}  // namespace

LstmProblem check_forward_args(const TensorView& input, const TensorList& hx,
                               const TensorList& params, bool has_biases, int64_t num_layers,
                               double dropout, bool train, bool bidirectional, bool batch_first,
                               const TensorView& batch_sizes, bool read_values) {
  LstmProblem dims;
  dims.has_biases = has_biases;
  dims.train = train;

  // input and batch_sizes: T, B, I.
  check_view("input", input, "");
  if (!is_floating(input.dtype)) {
    fail("input", std::string("must be float32, float64, float16 or bfloat16, got ") +
                      dtype_name(input.dtype));
  }
  dims.dtype = input.dtype;
  if (batch_sizes.defined) check_view("batch_sizes", batch_sizes, "");
  dims.variable_length = batch_sizes.defined && batch_sizes.numel() > 0;
  if (dims.variable_length) {
    if (batch_sizes.dtype != DType::Int64) {
      fail("batch_sizes", std::string("must be int64, got ") + dtype_name(batch_sizes.dtype));
    }
    if (batch_sizes.dim() != 1) {
      fail("batch_sizes", "must be 1-D (T,), got " + with_dims(batch_sizes.sizes));
    }
    if (input.dim() != 2) {
      fail("input", "must be 2-D (T*B, input_size) when batch_sizes is given, got " +
                        with_dims(input.sizes));
    }
    dims.T = batch_sizes.size(0);
    if (input.size(0) % dims.T != 0) {
      fail("batch_sizes", "length T = " + std::to_string(dims.T) +
                              " must divide input.size(0) = " + std::to_string(input.size(0)) +
                              " (input is (T*B, input_size)), got remainder " +
                              std::to_string(input.size(0) % dims.T));
    }
    dims.B = input.size(0) / dims.T;
    dims.I = input.size(1);
    dims.batch_first = false;  // ignored in variable-length mode
    if (dims.B == 0) {  // batch_sizes[0] must be B, and its entries >= 1
      fail("input", "must have at least one sequence (B >= 1) with batch_sizes, got B = 0 "
                    "in shape " + shape_string(input.sizes));
    }
  } else {
    if (input.dim() != 3) {
      fail("input", std::string("must be 3-D ") +
                        (batch_first ? "(B, T, input_size) with batch_first"
                                     : "(T, B, input_size)") +
                        " (2-D only with batch_sizes), got " + with_dims(input.sizes));
    }
    dims.batch_first = batch_first;
    dims.T = batch_first ? input.size(1) : input.size(0);
    dims.B = batch_first ? input.size(0) : input.size(1);
    dims.I = input.size(2);
  }
  if (dims.T < 1) {
    fail("input", "must have at least one time step (T >= 1), got T = 0 in shape " +
                      shape_string(input.sizes));
  }
  // B = 0 (an empty batch: empty outputs, zero parameter gradients) and
  // input_size = 0 (an input product of zero) are accepted, as torch.nn.LSTM
  // accepts them.
  check_data("input", input, read_values);

  // Flags.
  if (num_layers < 1) fail("num_layers", "must be >= 1, got " + std::to_string(num_layers));
  dims.L = num_layers;
  dims.D = bidirectional ? 2 : 1;
  if (!(dropout >= 0.0 && dropout <= 1.0)) {
    fail("dropout", "must lie in [0, 1], got " + number(dropout));
  }
  if (dropout > 0.0 && train && num_layers > 1) {
    fail("dropout", "must be 0 with train=true and num_layers > 1: this op applies no dropout, "
                    "got dropout = " + number(dropout) + " with num_layers = " +
                    std::to_string(num_layers) +
                    "; use lstmop.nn.LSTM, which applies dropout between layers itself");
  }

  // params: count, then every shape. H comes from params[0]; with projections
  // P (the width R of h) from the first slot's w_hr.
  const int64_t plain_per_slot = has_biases ? 4 : 2;
  int64_t plain_count = 0, projected_count = 0;
  const bool counts_fit = mul_ok(plain_per_slot * dims.D, dims.L, &plain_count) &&
                          mul_ok((plain_per_slot + 1) * dims.D, dims.L, &projected_count);
  const int64_t count = static_cast<int64_t>(params.size());
  if (!counts_fit || (count != plain_count && count != projected_count)) {
    const std::string slots = std::to_string(dims.D) + " * " + std::to_string(dims.L);
    const std::string kinds = has_biases ? "w_ih, w_hh, b_ih, b_hh" : "w_ih, w_hh";
    fail("params", "must hold " + std::to_string(plain_per_slot) + " * " + slots + " = " +
                       (counts_fit ? std::to_string(plain_count) : std::string("too many")) +
                       " tensors (" + kinds + " per layer and direction), or " +
                       std::to_string(plain_per_slot + 1) + " * " + slots + " = " +
                       (counts_fit ? std::to_string(projected_count) : std::string("too many")) +
                       " with projections (" + kinds + ", w_hr), got " +
                       std::to_string(params.size()));
  }
  dims.params_per_slot = count == plain_count ? plain_per_slot : plain_per_slot + 1;
  dims.slots = dims.D * dims.L;
  {
    const std::string label = param_label(dims, 0);
    const TensorView& w = params[0];
    check_view(label, w, "");
    check_dtype(label, w, dims.dtype);
    if (w.dim() != 2) {
      fail(label, "must be 2-D [4*hidden_size, input_size], got " + with_dims(w.sizes));
    }
    if (w.size(0) < 4 || w.size(0) % 4 != 0) {
      fail(label, "must have 4*hidden_size rows, a positive multiple of 4 (hidden_size >= 1), got " +
                      shape_string(w.sizes));
    }
    dims.H = w.size(0) / 4;
  }
  dims.R = dims.H;
  if (dims.params_per_slot == plain_per_slot + 1) {
    // proj_size from the first w_hr: (P, H) with 1 <= P < H.
    const int64_t index = dims.w_hr_index(0);
    const std::string label = param_label(dims, index);
    const TensorView& w = params[index];
    check_view(label, w, "");
    check_dtype(label, w, dims.dtype);
    if (w.dim() != 2) {
      fail(label, "must be 2-D [proj_size, hidden_size] = [proj_size, " + std::to_string(dims.H) +
                      "] with 1 <= proj_size < hidden_size, got " + with_dims(w.sizes));
    }
    if (w.size(0) < 1 || w.size(0) >= dims.H || w.size(1) != dims.H) {
      fail(label, "must be [proj_size, hidden_size] = [proj_size, " + std::to_string(dims.H) +
                      "] with 1 <= proj_size < hidden_size = " + std::to_string(dims.H) +
                      " (hidden_size from params[0]), got " + shape_string(w.sizes));
    }
    dims.P = w.size(0);
    dims.R = dims.P;
  }
  const int64_t G = 4 * dims.H;
  dims.slot_input_size.resize(static_cast<std::size_t>(dims.slots));
  for (int64_t s = 0; s < dims.slots; ++s) {
    const int64_t in_size = s < dims.D ? dims.I : dims.D * dims.R;
    dims.slot_input_size[s] = in_size;
    for (int64_t p = 0; p < dims.params_per_slot; ++p) {
      const int64_t index = s * dims.params_per_slot + p;
      // Built whole (assigning a braced list to an empty vector trips GCC 12's
      // -Wnonnull on the inlined memmove).
      const bool w_hr = dims.projections() && index == dims.w_hr_index(s);
      const std::vector<int64_t> shape = p == 0   ? std::vector<int64_t>{G, in_size}
                                         : p == 1 ? std::vector<int64_t>{G, dims.R}
                                         : w_hr   ? std::vector<int64_t>{dims.P, dims.H}
                                                  : std::vector<int64_t>{G};
      check_input_tensor(param_label(dims, index), params[index], dims, shape, "", read_values);
    }
  }

  // hx: empty or [h0 (D*L, B, R), c0 (D*L, B, H)].
  if (!hx.empty() && hx.size() != 2) {
    fail("hx", "must be empty or hold 2 tensors [h0, c0], got " + std::to_string(hx.size()));
  }
  dims.has_hx = !hx.empty();
  for (std::size_t k = 0; k < hx.size(); ++k) {
    const bool hidden = k == 0;
    const int64_t width = hidden ? dims.R : dims.H;
    const std::string meaning =
        hidden && dims.projections() ? " (D*L, B, proj_size)" : " (D*L, B, hidden_size)";
    check_input_tensor("hx[" + std::to_string(k) + "]", hx[k], dims, {dims.slots, dims.B, width},
                       meaning, read_values);
  }

  // Before anything of size T is allocated or read (batch_sizes' values).
  check_call_size(dims, read_values || input.data != nullptr);

  if (read_values) {
    dims.step_batch.assign(static_cast<std::size_t>(dims.T), dims.B);
    if (dims.variable_length) {
      check_data("batch_sizes", batch_sizes, true);
      const int64_t* bs = static_cast<const int64_t*>(batch_sizes.data);
      const int64_t st = batch_sizes.stride(0);
      for (int64_t t = 0; t < dims.T; ++t) {
        const int64_t v = bs[t * st];
        const bool bad = v < 1 || v > dims.B || (t == 0 && v != dims.B) ||
                         (t > 0 && v > dims.step_batch[t - 1]);
        if (!bad) {
          dims.step_batch[t] = v;
          continue;
        }
        const std::string at = "batch_sizes[" + std::to_string(t) + "] = " + std::to_string(v);
        if (v < 1 || v > dims.B) {
          fail("batch_sizes", "entries must lie in [1, B] = [1, " + std::to_string(dims.B) +
                                  "] (B = input.size(0) / T), got " + at);
        }
        if (t == 0 && v != dims.B) {
          fail("batch_sizes", "must start with B = input.size(0) / T = " +
                                  std::to_string(dims.B) + ", got " + at);
        }
        if (t > 0 && v > dims.step_batch[t - 1]) {
          fail("batch_sizes", "must be non-increasing, got " + at + " > batch_sizes[" +
                                  std::to_string(t - 1) + "] = " +
                                  std::to_string(dims.step_batch[t - 1]));
        }
      }
    }
    dims.step_offset.assign(static_cast<std::size_t>(dims.T) + 1, 0);
    for (int64_t t = 0; t < dims.T; ++t) {
      dims.step_offset[t + 1] = dims.step_offset[t] + dims.step_batch[t];
    }
  }
  return dims;
}

}  // namespace detail
}  // namespace lstmop
