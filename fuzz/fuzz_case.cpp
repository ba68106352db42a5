#include "fuzz_case.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace lstmfuzz {
namespace {

// splitmix64: the value generator (seeded from the input bytes).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Multiples of 1/64 in [-1, 1].
  double unit() { return static_cast<double>(static_cast<int64_t>(next() % 129) - 64) / 64.0; }
};

const DType kDtypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

DType other_dtype(DType d, int which) {
  const DType options[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                           DType::Int64};
  DType o = options[which % 5];
  if (o == d) o = options[(which + 1) % 5];
  return o;
}

}  // namespace

const char* corruption_name(Corruption c) {
  static const char* const names[] = {
      "none",          "params_count",   "param_shape",     "param_dtype",
      "hx_count",      "hx_shape",       "hx_dtype",        "num_layers",
      "dropout",       "input_rank",     "input_dtype",     "empty_time_or_batch",
      "batch_sizes_values", "batch_sizes_dtype", "batch_sizes_length", "backward_flag",
      "saved_shape",   "saved_from_eval", "grad_shape",     "grad_dtype",
      "backward_train_false", "undefined", "output_aliases_input"};
  const int k = static_cast<int>(c);
  return k >= 0 && k < static_cast<int>(Corruption::kCount) ? names[k] : "?";
}

std::string Case::describe() const {
  std::ostringstream s;
  s << lstmop::dtype_name(dtype) << " T" << T << " B" << B << " I" << I << " H" << H;
  if (P > 0) s << " P" << P;
  s << " L" << L << " D" << D() << " bias=" << has_biases << " batch_first=" << batch_first
    << " train=" << train << " hx=" << with_hx << " special=" << special_values
    << " corruption=" << corruption_name(corruption) << "/" << corruption_detail;
  if (packed) {
    s << " lengths=[";
    for (std::size_t k = 0; k < lengths.size(); ++k) s << (k ? "," : "") << lengths[k];
    s << "]";
  }
  return s.str();
}

Layout layout_from_code(uint8_t code, std::size_t dims, bool allow_zero) {
  Layout l = contiguous_layout(dims);
  if (dims == 0 || code < 96) return l;  // most tensors contiguous
  const unsigned kind = code % 6;
  const std::size_t d = (code / 6) % dims;
  switch (kind) {
    case 0:  // storage order reversed (column-major)
      std::reverse(l.order.begin(), l.order.end());
      break;
    case 1:  // every dim padded
      l.padded.assign(dims, true);
      break;
    case 2:  // one dim backwards
      l.negative[d] = true;
      break;
    case 3:  // every dim backwards
      l.negative.assign(dims, true);
      break;
    case 4:  // one dim broadcast (stride 0)
      if (allow_zero) l.zero[d] = true;
      break;
    case 5:  // a rotation of the storage order, padded innermost, one dim backwards
      std::rotate(l.order.begin(), l.order.begin() + static_cast<long>(d), l.order.end());
      l.padded[l.order[0]] = true;
      l.negative[(d + 1) % dims] = true;
      break;
  }
  return l;
}

Strided make_random_tensor(DType dtype, const std::vector<int64_t>& sizes, uint8_t code,
                           uint64_t seed, double scale) {
  Rng rng{seed};
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  std::vector<double> values(static_cast<std::size_t>(n));
  for (double& v : values) v = rng.unit() * scale;
  return make_strided(dtype, sizes, layout_from_code(code, sizes.size(), true), values);
}

Case decode_case(const uint8_t* data, std::size_t size) {
  ByteReader r(data, size);
  Case c;
  const uint8_t flags = r.byte();
  c.dtype = kDtypes[flags & 3];
  c.bidirectional = flags & 4;
  c.has_biases = !(flags & 8);
  c.batch_first = flags & 16;
  c.train = !(flags & 32);
  c.with_hx = flags & 64;
  c.packed = flags & 128;
  c.T = r.range(1, 6);
  c.B = r.range(1, 5);
  c.I = r.range(1, 7);
  c.H = r.range(1, 9);
  c.L = r.range(1, 3);
  const uint8_t mode = r.byte();
  c.special_values = mode % 8 == 7;
  c.check_two_threads = (mode / 8) % 4 == 0;
  const uint8_t corruption = r.byte();
  // About half the cases are valid calls.
  c.corruption = corruption < 128
                     ? Corruption::kNone
                     : static_cast<Corruption>(1 + corruption % (static_cast<int>(Corruption::kCount) - 1));
  c.corruption_detail = r.byte();
  c.value_seed = r.u64();
  const uint8_t input_layout = r.byte(), hx_layout = r.byte(), params_layout = r.byte(),
                bs_layout = r.byte();
  c.saved_layout_code = r.byte();
  c.grad_layout_code = r.byte();
  const uint8_t grads = r.byte();
  for (int k = 0; k < 3; ++k) c.grad_defined[k] = !((grads >> k) & 1);
  const bool shared_params_storage = (grads >> 4) & 1;
  // Bits 5-7: projections when nonzero, P = 1 + (code - 1) % (H - 1) in [1, H)
  // (P = 1 = H when H = 1: refused, w_hr must have fewer rows than H).
  const int proj_code = (grads >> 5) & 7;
  if (proj_code != 0) c.P = 1 + (proj_code - 1) % std::max<int64_t>(1, c.H - 1);
  if (c.packed) {
    // B lengths in [1, T], sorted, the first one T.
    c.lengths.push_back(c.T);
    for (int64_t b = 1; b < c.B; ++b) c.lengths.push_back(r.range(1, c.T));
    std::sort(c.lengths.begin(), c.lengths.end(), std::greater<int64_t>());
  }

  const Corruption k = c.corruption;
  const int detail = c.corruption_detail;
  int64_t T = c.T, B = c.B;
  if (k == Corruption::kEmptyTimeOrBatch) (detail & 1 ? T : B) = 0;
  const int64_t D = c.D(), S = D * c.L, G = 4 * c.H, R = c.R();
  uint64_t seed = c.value_seed;

  // input
  std::vector<int64_t> in_sizes = c.packed       ? std::vector<int64_t>{T * B, c.I}
                                  : c.batch_first ? std::vector<int64_t>{B, T, c.I}
                                                  : std::vector<int64_t>{T, B, c.I};
  DType in_dtype = c.dtype;
  if (k == Corruption::kInputRank) {
    if (detail & 1) {
      in_sizes.push_back(1);
    } else {
      in_sizes.pop_back();
    }
  }
  if (k == Corruption::kInputDtype) in_dtype = DType::Int64;
  c.owned.push_back(make_random_tensor(in_dtype, in_sizes, input_layout, ++seed, 1.0));
  c.input = c.owned.back().view;

  // Special values: NaN, +-inf, +-1e4 at a few decoded positions of input and hx.
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), 1e4, -1e4};
  // No infinity in c0: f * c0 with f = sigmoid(a_f) is inf * tiny in double
  // but inf * 0 = NaN where float32's sigmoid underflows (a_f < -103), so the
  // NaN positions would legitimately differ from the reference's.
  auto sprinkle = [&](const TensorView& v, bool allow_inf) {
    const int64_t n = v.numel();
    if (!c.special_values || n == 0 || v.dtype == DType::Int64) return;
    const int count = 1 + r.byte() % 3;
    for (int j = 0; j < count; ++j) {
      const int64_t flat = r.byte() % n;
      const int which = r.byte() % 5;
      store(v, offset_of_flat(v, flat), allow_inf || (which != 1 && which != 2) ? specials[which]
                                                                                : specials[3]);
    }
  };
  sprinkle(c.input, true);

  // batch_sizes
  if (c.packed) {
    std::vector<double> bs(static_cast<std::size_t>(T), 0.0);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t len : c.lengths) bs[t] += len > t ? 1 : 0;
    }
    DType bs_dtype = DType::Int64;
    if (k == Corruption::kBatchSizesValues) {
      for (double& v : bs) v = static_cast<double>(r.range(-1, c.B + 1));
    }
    if (k == Corruption::kBatchSizesLength) {
      if (detail & 1) {
        bs.push_back(1);
      } else if (!bs.empty()) {
        bs.pop_back();
      }
    }
    if (k == Corruption::kBatchSizesDtype) bs_dtype = DType::Float32;
    c.owned.push_back(make_strided(bs_dtype, {static_cast<int64_t>(bs.size())},
                                   layout_from_code(bs_layout, 1, true), bs));
    c.batch_sizes = c.owned.back().view;
  }

  // hx
  if (c.with_hx) {
    for (int j = 0; j < 2; ++j) {
      std::vector<int64_t> sizes{S, B, j == 0 ? R : c.H};
      DType dt = c.dtype;
      if (k == Corruption::kHxShape && (detail & 1) == j) sizes[(detail / 2) % 3] += 1;
      if (k == Corruption::kHxDtype && (detail & 1) == j) dt = other_dtype(c.dtype, detail / 2);
      c.owned.push_back(make_random_tensor(dt, sizes, hx_layout, ++seed, 1.0));
      c.hx.push_back(c.owned.back().view);
      sprinkle(c.hx.back(), j == 0);
    }
    if (k == Corruption::kHxCount) {
      if (detail & 1) {
        c.hx.pop_back();
      } else {
        c.hx.push_back(c.hx[0]);
      }
    }
  }

  // params, slot by slot: w_ih (4H, I_l), w_hh (4H, R) [, b_ih, b_hh (4H)]
  // [, w_hr (P, H)], uniform in [-1/sqrt(H), 1/sqrt(H)] (PyTorch's
  // initialisation).
  const double w = 1.0 / std::sqrt(static_cast<double>(c.H));
  std::vector<std::vector<int64_t>> shapes;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t in_size = s < D ? c.I : D * R;
    shapes.push_back({G, in_size});
    shapes.push_back({G, R});
    if (c.has_biases) {
      shapes.push_back({G});
      shapes.push_back({G});
    }
    if (c.P > 0) shapes.push_back({c.P, c.H});
  }
  const std::size_t target = shapes.empty() ? 0 : detail % shapes.size();
  if (k == Corruption::kParamShape) {
    std::vector<int64_t>& s = shapes[target];
    s[(detail / 7) % s.size()] += 1;
  }
  if (shared_params_storage) {
    // Every entry a contiguous view into one storage, at decoded offsets:
    // entries may overlap each other (inputs may share memory).
    int64_t largest = 0;
    for (const auto& s : shapes) {
      int64_t n = 1;
      for (int64_t x : s) n *= x;
      largest = std::max(largest, n);
    }
    const int64_t extra = 16;
    c.owned.push_back(
        make_random_tensor(c.dtype, {largest + extra}, 0, ++seed, w));
    const Strided& storage = c.owned.back();
    const int64_t es = static_cast<int64_t>(lstmop::dtype_size(c.dtype));
    for (const auto& s : shapes) {
      const int64_t at = r.byte() % (extra + 1);
      c.params.emplace_back(static_cast<unsigned char*>(storage.view.data) + at * es, c.dtype, s);
    }
  } else {
    for (const auto& s : shapes) {
      c.owned.push_back(make_random_tensor(c.dtype, s, params_layout, ++seed, w));
      c.params.push_back(c.owned.back().view);
    }
  }
  if (k == Corruption::kParamDtype && !c.params.empty()) {
    const Strided copy = make_random_tensor(other_dtype(c.dtype, detail / 3),
                                            c.params[target].sizes, 0, ++seed, w);
    c.owned.push_back(copy);
    c.params[target] = copy.view;
  }
  if (k == Corruption::kParamsCount) {
    if (detail & 1) {
      c.params.pop_back();
    } else {
      c.params.push_back(c.params.back());
    }
  }

  c.num_layers = c.L;
  if (k == Corruption::kNumLayers) {
    const int64_t options[] = {0, -1, c.L + 1, c.L - 1};
    c.num_layers = options[detail % 4];
  }
  if (k == Corruption::kDropout) {
    const double options[] = {-0.5, 1.5, std::numeric_limits<double>::quiet_NaN(), 0.5, 1.0};
    c.dropout = options[detail % 5];
  }
  if (k == Corruption::kUndefined) {
    const int which = detail % 3;
    if (which == 0) {
      c.input = TensorView();
    } else if (which == 1 && !c.hx.empty()) {
      c.hx[detail / 3 % c.hx.size()] = TensorView();
    } else if (!c.params.empty()) {
      c.params[detail / 3 % c.params.size()] = TensorView();
    }
  }
  return c;
}

}  // namespace lstmfuzz
