#include "lstm_test_support.h"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <sstream>

namespace lstmtest {

namespace {
// The tests run their small shapes on the threads they ask for: the plan's
// floor on a call's work for a second thread (plan/lstm_plan.h,
// LSTMOP_MIN_PARALLEL_WORK) is 0 in every test process unless the
// environment sets it (FastPaths.SecondThreadOnlyForEnoughWork checks the
// default thresholds).
const bool kEveryCallMayTakeTwoThreads = [] {
  setenv("LSTMOP_MIN_PARALLEL_WORK", "0", 0);
  return true;
}();
}  // namespace

// ---------------------------------------------------------------------------
// Element access
// ---------------------------------------------------------------------------

double load(const TensorView& v, int64_t offset) {
  const char* base = static_cast<const char*>(v.data);
  switch (v.dtype) {
    case DType::Float32: return reinterpret_cast<const float*>(base)[offset];
    case DType::Float64: return reinterpret_cast<const double*>(base)[offset];
    case DType::Float16:
      return lstmop::half_to_float(reinterpret_cast<const uint16_t*>(base)[offset]);
    case DType::BFloat16:
      return lstmop::bfloat16_to_float(reinterpret_cast<const uint16_t*>(base)[offset]);
    case DType::Int64:
      return static_cast<double>(reinterpret_cast<const int64_t*>(base)[offset]);
  }
  return 0.0;
}

void store(const TensorView& v, int64_t offset, double value) {
  char* base = static_cast<char*>(v.data);
  switch (v.dtype) {
    case DType::Float32: reinterpret_cast<float*>(base)[offset] = static_cast<float>(value); break;
    case DType::Float64: reinterpret_cast<double*>(base)[offset] = value; break;
    case DType::Float16:
      reinterpret_cast<uint16_t*>(base)[offset] = lstmop::float_to_half(static_cast<float>(value));
      break;
    case DType::BFloat16:
      reinterpret_cast<uint16_t*>(base)[offset] =
          lstmop::float_to_bfloat16(static_cast<float>(value));
      break;
    case DType::Int64:
      reinterpret_cast<int64_t*>(base)[offset] = static_cast<int64_t>(value);
      break;
  }
}

int64_t offset_of(const TensorView& v, const std::vector<int64_t>& index) {
  int64_t off = 0;
  for (std::size_t d = 0; d < index.size(); ++d) off += index[d] * v.strides[d];
  return off;
}

void for_each_offset(const TensorView& v, const std::function<void(int64_t)>& fn) {
  if (v.numel() == 0) return;
  const std::size_t n = v.sizes.size();
  std::vector<int64_t> index(n, 0);
  int64_t off = 0;
  for (;;) {
    fn(off);
    std::size_t d = n;
    while (d > 0) {
      --d;
      if (++index[d] < v.sizes[d]) {
        off += v.strides[d];
        break;
      }
      off -= v.strides[d] * (v.sizes[d] - 1);
      index[d] = 0;
      if (d == 0) return;
    }
    if (n == 0) return;
  }
}

std::vector<double> to_doubles(const TensorView& v) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(v.numel()));
  for_each_offset(v, [&](int64_t off) { out.push_back(load(v, off)); });
  return out;
}

std::vector<unsigned char> to_bytes(const TensorView& v) {
  const std::size_t es = lstmop::dtype_size(v.dtype);
  std::vector<unsigned char> out;
  out.reserve(static_cast<std::size_t>(v.numel()) * es);
  const unsigned char* base = static_cast<const unsigned char*>(v.data);
  for_each_offset(v, [&](int64_t off) {
    const unsigned char* p = base + off * static_cast<int64_t>(es);
    out.insert(out.end(), p, p + es);
  });
  return out;
}

Tensor from_doubles(DType dtype, const std::vector<int64_t>& sizes,
                    const std::vector<double>& values) {
  Tensor t = Tensor::empty(dtype, sizes);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (int64_t k = 0; k < t.numel(); ++k) store(t.view(), k, values[k]);
  return t;
}

Tensor random_tensor(DType dtype, const std::vector<int64_t>& sizes, std::mt19937_64& rng,
                     double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t = Tensor::empty(dtype, sizes);
  for (int64_t k = 0; k < t.numel(); ++k) store(t.view(), k, dist(rng));
  return t;
}

Tensor filled(DType dtype, const std::vector<int64_t>& sizes, double value) {
  Tensor t = Tensor::empty(dtype, sizes);
  for (int64_t k = 0; k < t.numel(); ++k) store(t.view(), k, value);
  return t;
}

Tensor contiguous_copy(const TensorView& v) {
  Tensor t = Tensor::empty(v.dtype, v.sizes);
  const std::vector<unsigned char> bytes = to_bytes(v);
  if (!bytes.empty()) std::memcpy(t.data<unsigned char>(), bytes.data(), bytes.size());
  return t;
}

Tensor converted(const TensorView& v, DType dtype) {
  return from_doubles(dtype, v.sizes, to_doubles(v));
}

// ---------------------------------------------------------------------------
// Strided copies
// ---------------------------------------------------------------------------

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Gapped: return "gapped";
    case Layout::Negative: return "negative";
  }
  return "?";
}

StridedTensor relayout(const TensorView& v, Layout layout) {
  const std::size_t n = v.sizes.size();
  const int64_t es = static_cast<int64_t>(lstmop::dtype_size(v.dtype));
  std::vector<int64_t> strides(n, 0);
  int64_t span = 1;  // elements the layout addresses
  int64_t start = 0; // element offset of index 0 inside the storage
  switch (layout) {
    case Layout::Contiguous:
      strides = lstmop::contiguous_strides(v.sizes);
      span = std::max<int64_t>(v.numel(), 1);
      break;
    case Layout::Transposed: {
      int64_t s = 1;
      for (std::size_t d = 0; d < n; ++d) {
        strides[d] = s;
        s *= std::max<int64_t>(v.sizes[d], 1);
      }
      span = s;
      break;
    }
    case Layout::Gapped: {
      // Innermost stride 2, every outer stride one padding element wider:
      // sizes (a, b) get strides ((2b + 1), 2).
      int64_t s = 2;
      for (std::size_t d = n; d-- > 0;) {
        strides[d] = s;
        s = s * std::max<int64_t>(v.sizes[d], 1) + 1;
      }
      span = s + 3;
      start = 1;  // a gap before the first element too
      break;
    }
    case Layout::Negative: {
      const std::vector<int64_t> row = lstmop::contiguous_strides(v.sizes);
      for (std::size_t d = 0; d < n; ++d) {
        strides[d] = -row[d];
        start += row[d] * (std::max<int64_t>(v.sizes[d], 1) - 1);
      }
      span = std::max<int64_t>(v.numel(), 1);
      break;
    }
  }
  StridedTensor out;
  // Filled with a recognisable pattern so that a read of padding shows up.
  out.storage = std::make_shared<std::vector<unsigned char>>(
      static_cast<std::size_t>(span * es), static_cast<unsigned char>(0x7f));
  out.view = TensorView(out.storage->data() + start * es, v.dtype, v.sizes, strides);
  const unsigned char* src = static_cast<const unsigned char*>(v.data);
  std::vector<int64_t> src_offsets, dst_offsets;
  for_each_offset(v, [&](int64_t off) { src_offsets.push_back(off); });
  for_each_offset(out.view, [&](int64_t off) { dst_offsets.push_back(off); });
  unsigned char* dst = static_cast<unsigned char*>(out.view.data);
  for (std::size_t k = 0; k < src_offsets.size(); ++k) {
    std::memcpy(dst + dst_offsets[k] * es, src + src_offsets[k] * es, static_cast<std::size_t>(es));
  }
  return out;
}

StridedTensor expanded(const TensorView& v, int64_t dim, int64_t size) {
  EXPECT_EQ(v.sizes.at(static_cast<std::size_t>(dim)), 1);
  StridedTensor out = relayout(v, Layout::Contiguous);
  out.view.sizes[static_cast<std::size_t>(dim)] = size;
  out.view.strides[static_cast<std::size_t>(dim)] = 0;
  return out;
}

// ---------------------------------------------------------------------------
// Problems
// ---------------------------------------------------------------------------

int64_t LstmConfig::length(int64_t b) const {
  return packed ? lengths.at(static_cast<std::size_t>(b)) : T;
}

std::string LstmConfig::name() const {
  std::ostringstream s;
  s << lstmop::dtype_name(dtype) << " T" << T << " B" << B << " I" << I << " H" << H;
  if (P > 0) s << " P" << P;
  s << " L" << L << " D" << D() << " bias=" << has_biases << " batch_first=" << batch_first
    << " train=" << train << " hx=" << with_hx;
  if (packed) {
    s << " lengths=[";
    for (std::size_t k = 0; k < lengths.size(); ++k) s << (k ? "," : "") << lengths[k];
    s << "]";
  }
  return s.str();
}

std::vector<int64_t> batch_sizes_from_lengths(const std::vector<int64_t>& lengths, int64_t T) {
  std::vector<int64_t> bs(static_cast<std::size_t>(T), 0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t len : lengths) bs[t] += len > t ? 1 : 0;
  }
  return bs;
}

std::vector<int64_t> random_lengths(int64_t T, int64_t B, std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> dist(1, T);
  std::vector<int64_t> lengths(static_cast<std::size_t>(B));
  for (int64_t& len : lengths) len = dist(rng);
  lengths[0] = T;
  std::sort(lengths.begin(), lengths.end(), std::greater<int64_t>());
  return lengths;
}

TensorList LstmProblem::hx_list() const {
  TensorList v;
  for (const Tensor& t : hx) v.push_back(t.view());
  return v;
}

TensorList LstmProblem::param_list() const {
  TensorList v;
  for (const Tensor& t : params) v.push_back(t.view());
  return v;
}

TensorView LstmProblem::batch_sizes_view() const {
  return batch_sizes.defined() ? batch_sizes.view() : TensorView();
}

LstmProblem make_problem(const LstmConfig& cfg, uint64_t seed, double weight_scale) {
  std::mt19937_64 rng(seed);
  LstmProblem p;
  p.cfg = cfg;
  const DType dt = cfg.dtype;
  if (cfg.packed) {
    EXPECT_EQ(static_cast<int64_t>(cfg.lengths.size()), cfg.B) << cfg.name();
    p.input = random_tensor(dt, {cfg.T * cfg.B, cfg.I}, rng);
    // Invalid rows: larger values, so that using them by mistake shows.
    for (int64_t t = 0; t < cfg.T; ++t) {
      for (int64_t b = 0; b < cfg.B; ++b) {
        if (t >= cfg.lengths[b]) {
          for (int64_t k = 0; k < cfg.I; ++k) {
            store(p.input.view(), (t * cfg.B + b) * cfg.I + k,
                  std::uniform_real_distribution<double>(-4.0, 4.0)(rng));
          }
        }
      }
    }
    const std::vector<int64_t> bs = batch_sizes_from_lengths(cfg.lengths, cfg.T);
    p.batch_sizes = Tensor::empty(DType::Int64, {cfg.T});
    std::copy(bs.begin(), bs.end(), p.batch_sizes.data<int64_t>());
  } else if (cfg.batch_first) {
    p.input = random_tensor(dt, {cfg.B, cfg.T, cfg.I}, rng);
  } else {
    p.input = random_tensor(dt, {cfg.T, cfg.B, cfg.I}, rng);
  }
  if (cfg.with_hx) {
    p.hx.push_back(random_tensor(dt, {cfg.S(), cfg.B, cfg.R()}, rng));
    p.hx.push_back(random_tensor(dt, {cfg.S(), cfg.B, cfg.H}, rng));
  }
  const double w = weight_scale / std::sqrt(static_cast<double>(cfg.H));
  for (int64_t l = 0; l < cfg.L; ++l) {
    const int64_t in_size = l == 0 ? cfg.I : cfg.D() * cfg.R();
    for (int64_t d = 0; d < cfg.D(); ++d) {
      p.params.push_back(random_tensor(dt, {4 * cfg.H, in_size}, rng, -w, w));
      p.params.push_back(random_tensor(dt, {4 * cfg.H, cfg.R()}, rng, -w, w));
      if (cfg.has_biases) {
        p.params.push_back(random_tensor(dt, {4 * cfg.H}, rng, -w, w));
        p.params.push_back(random_tensor(dt, {4 * cfg.H}, rng, -w, w));
      }
      // torch.nn.LSTM initialises w_hr like the others: 1/sqrt(hidden_size).
      if (cfg.P > 0) p.params.push_back(random_tensor(dt, {cfg.P, cfg.H}, rng, -w, w));
    }
  }
  return p;
}

LstmProblem converted_problem(const LstmProblem& p, DType dtype) {
  LstmProblem q = p;
  q.cfg.dtype = dtype;
  q.input = converted(p.input, dtype);
  for (Tensor& t : q.hx) t = converted(t, dtype);
  for (Tensor& t : q.params) t = converted(t, dtype);
  return q;
}

namespace {
std::vector<int64_t> output_shape(const LstmConfig& c) {
  const int64_t F = c.D() * c.R();
  if (c.packed) return {c.T * c.B, F};
  if (c.batch_first) return {c.B, c.T, F};
  return {c.T, c.B, F};
}
}  // namespace

LstmGrads make_grads(const LstmProblem& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const LstmConfig& c = p.cfg;
  LstmGrads g;
  g.grad_y = random_tensor(c.dtype, output_shape(c), rng);
  g.grad_hy = random_tensor(c.dtype, {c.S(), c.B, c.R()}, rng);
  g.grad_cy = random_tensor(c.dtype, {c.S(), c.B, c.H}, rng);
  return g;
}

LstmGrads converted_grads(const LstmGrads& g, DType dtype) {
  LstmGrads h;
  if (g.grad_y.defined()) h.grad_y = converted(g.grad_y, dtype);
  if (g.grad_hy.defined()) h.grad_hy = converted(g.grad_hy, dtype);
  if (g.grad_cy.defined()) h.grad_cy = converted(g.grad_cy, dtype);
  return h;
}

// ---------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------

AllResults run_all(const LstmProblem& p, const LstmGrads& g) {
  AllResults r;
  r.fwd = run_forward(p);
  if (p.cfg.train) r.bwd = run_backward(p, g, r.fwd);
  return r;
}

ForwardResult run_forward(const LstmProblem& p) {
  const LstmConfig& c = p.cfg;
  return lstmop::lstm_forward(p.input, p.hx_list(), p.param_list(), c.has_biases, c.L, 0.0,
                              c.train, c.bidirectional, c.batch_first, p.batch_sizes_view());
}

ForwardResult run_reference_forward(const LstmProblem& p) {
  const LstmConfig& c = p.cfg;
  return lstmop::reference::lstm_forward(p.input, p.hx_list(), p.param_list(), c.has_biases, c.L,
                                         0.0, c.train, c.bidirectional, c.batch_first,
                                         p.batch_sizes_view());
}

namespace {
TensorView view_or_undefined(const Tensor& t) { return t.defined() ? t.view() : TensorView(); }
}  // namespace

BackwardResult run_backward(const LstmProblem& p, const LstmGrads& g, const ForwardResult& s) {
  const LstmConfig& c = p.cfg;
  return lstmop::lstm_backward(view_or_undefined(g.grad_y), view_or_undefined(g.grad_hy),
                               view_or_undefined(g.grad_cy), p.input, p.hx_list(),
                               p.param_list(), s.i, s.j, s.f, s.o, s.h, s.c, s.tanhc,
                               c.has_biases, c.L, 0.0, true, c.bidirectional, c.batch_first,
                               p.batch_sizes_view());
}

BackwardResult run_reference_backward(const LstmProblem& p, const LstmGrads& g,
                                      const ForwardResult& s) {
  const LstmConfig& c = p.cfg;
  return lstmop::reference::lstm_backward(
      view_or_undefined(g.grad_y), view_or_undefined(g.grad_hy), view_or_undefined(g.grad_cy),
      p.input, p.hx_list(), p.param_list(), s.i, s.j, s.f, s.o, s.h, s.c, s.tanhc, c.has_biases,
      c.L, 0.0, true, c.bidirectional, c.batch_first, p.batch_sizes_view());
}

ForwardResult converted_result(const ForwardResult& r, DType dtype) {
  ForwardResult c;
  c.output = converted(r.output, dtype);
  c.hy = converted(r.hy, dtype);
  c.cy = converted(r.cy, dtype);
  c.i = converted(r.i, dtype);
  c.j = converted(r.j, dtype);
  c.f = converted(r.f, dtype);
  c.o = converted(r.o, dtype);
  c.h = converted(r.h, dtype);
  c.c = converted(r.c, dtype);
  c.tanhc = converted(r.tanhc, dtype);
  return c;
}

NamedViews forward_outputs(const ForwardResult& r) {
  return {{"output", r.output.view()}, {"hy", r.hy.view()}, {"cy", r.cy.view()},
          {"i", r.i.view()},           {"j", r.j.view()},   {"f", r.f.view()},
          {"o", r.o.view()},           {"h", r.h.view()},   {"c", r.c.view()},
          {"tanhc", r.tanhc.view()}};
}

NamedViews backward_outputs(const BackwardResult& r) {
  NamedViews v{{"dx", r.dx.view()}};
  EXPECT_EQ(r.dhx.size(), 2u);
  if (r.dhx.size() == 2) {
    v.emplace_back("dh0", r.dhx[0].view());
    v.emplace_back("dc0", r.dhx[1].view());
  }
  for (std::size_t k = 0; k < r.dparams.size(); ++k) {
    v.emplace_back("dparams[" + std::to_string(k) + "]", r.dparams[k].view());
  }
  return v;
}

namespace {
double dot(const TensorView& a, const Tensor& b) {
  if (!b.defined()) return 0.0;
  const std::vector<double> x = to_doubles(a), y = to_doubles(b);
  double s = 0.0;
  for (std::size_t k = 0; k < x.size() && k < y.size(); ++k) s += x[k] * y[k];
  return s;
}
}  // namespace

double loss(const ForwardResult& r, const LstmGrads& g) {
  return dot(r.output, g.grad_y) + dot(r.hy, g.grad_hy) + dot(r.cy, g.grad_cy);
}

}  // namespace lstmtest
