// Bad-input classes beyond tests/cpp's one-test-per-class suites: every
// mutation of every params entry (rows, columns, rank, each layer and
// direction, with and without biases), params in the wrong order, extreme
// num_layers and dropout values, malformed views (negative sizes, a stride per
// dimension missing) of every tensor argument, input_size 0, hx of another
// batch or layout, batch_sizes of rank 0, longer than the input, with extreme
// or unreadable values, and strided batch_sizes read correctly.
//
// Each rejection goes through expect_forward_rejected / expect_backward_rejected
// (tests/cpp/lstm_bad_input_support.h): lstm_forward, reference::lstm_forward,
// lstm_forward_out (caller outputs must keep their sentinel bytes) and, for
// errors visible in shapes, lstm_forward_shapes must all throw an lstmop::Error
// naming the argument, with the expected and the actual value in the message;
// no input byte may change.
//
// The valid problem (bad_input_base_config): T = 3, B = 2, I = 5, H = 3
// (4H = 12), L = 2, bidirectional (S = 4), with biases: 16 params.
#include <cmath>
#include <cstdint>
#include <limits>

#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

using lstmop::shape_string;

Tensor zeros(DType dtype, const std::vector<int64_t>& sizes) { return filled(dtype, sizes, 0.0); }

// A view of v's data whose sizes/strides are replaced (malformed views are
// built by assigning the public fields, which the constructor would refuse).
TensorView with_fields(const TensorView& v, std::vector<int64_t> sizes,
                       std::vector<int64_t> strides) {
  TensorView w = v;
  w.sizes = std::move(sizes);
  w.strides = std::move(strides);
  return w;
}

class Validation : public ::testing::Test {
 protected:
  Validation() : cfg(bad_input_base_config()), p(make_problem(cfg, 1300)) {}
  LstmConfig cfg;
  LstmProblem p;

  ForwardArgs args() const { return forward_args(p); }
  void rejected(const ForwardArgs& a, const std::string& argument,
                const std::vector<std::string>& contains, bool values_only = false) {
    expect_forward_rejected(a, p, argument, contains, values_only);
  }
};

// ---------------------------------------------------------------------------
// params: every entry, every kind of wrong shape
// ---------------------------------------------------------------------------

struct ShapeMutation {
  const char* name;
  // The wrong shape for an entry of shape `s`, or kNotApplicable.
  std::vector<int64_t> (*apply)(const std::vector<int64_t>& s);
};

const std::vector<int64_t> kNotApplicable{-1};

const ShapeMutation kMutations[] = {
    {"four more rows",
     [](const std::vector<int64_t>& s) {
       std::vector<int64_t> w = s;
       w[0] += 4;  // still a multiple of 4: only the comparison with H = rows(params[0]) / 4 sees it
       return w;
     }},
    {"one row less",
     [](const std::vector<int64_t>& s) {
       std::vector<int64_t> w = s;
       w[0] -= 1;
       return w;
     }},
    {"one column less",
     [](const std::vector<int64_t>& s) {
       if (s.size() != 2) return kNotApplicable;
       return std::vector<int64_t>{s[0], s[1] - 1};
     }},
    {"transposed",
     [](const std::vector<int64_t>& s) {
       if (s.size() != 2) return kNotApplicable;
       return std::vector<int64_t>{s[1], s[0]};
     }},
    {"one more dimension",
     [](const std::vector<int64_t>& s) {
       std::vector<int64_t> w = s;
       w.push_back(1);
       return w;
     }},
    {"one dimension less",
     [](const std::vector<int64_t>& s) {
       return std::vector<int64_t>(s.begin(), s.end() - 1);  // a weight becomes 1-D, a bias 0-d
     }},
};

// Every entry k >= 1 of every slot (layer 0/1, forward/reverse), with and
// without biases, for every mutation: the Error names params[k] and gives both
// shapes. params[0] defines H and is tested below.
TEST_F(Validation, EveryParamEveryMutation) {
  for (bool has_biases : {true, false}) {
    LstmConfig c = cfg;
    c.has_biases = has_biases;
    const LstmProblem q = make_problem(c, 1301);
    for (std::size_t k = 1; k < q.params.size(); ++k) {
      for (const ShapeMutation& m : kMutations) {
        const std::vector<int64_t> expected = q.params[k].sizes();
        const std::vector<int64_t> wrong = m.apply(expected);
        if (wrong == kNotApplicable || wrong == expected) continue;
        SCOPED_TRACE("has_biases " + std::to_string(has_biases) + " params[" + std::to_string(k) +
                     "] " + m.name + " " + shape_string(wrong));
        ForwardArgs a = forward_args(q);
        a.params[k] = a.own(zeros(c.dtype, wrong));
        expect_forward_rejected(a, q, "params[" + std::to_string(k) + "]",
                                {shape_string(expected), shape_string(wrong)});
      }
    }
  }
}

// params[0] fixes H = rows / 4; four more rows there make every other entry
// wrong, and the first one checked (params[1], w_hh of slot 0) is blamed with
// the shape H' = 4 implies.
TEST_F(Validation, FirstParamDefinesHiddenSize) {
  ForwardArgs a = args();
  a.params[0] = a.own(zeros(cfg.dtype, {16, 5}));
  rejected(a, "params[1]", {"[16, 4]", "[12, 3]"});
  a = args();
  a.params[0] = a.own(zeros(cfg.dtype, {12}));  // rank 1
  rejected(a, "params[0]", {"2-D", "[12]"});
  a = args();
  a.params[0] = a.own(zeros(cfg.dtype, {12, 5, 1}));  // rank 3
  rejected(a, "params[0]", {"2-D", "[12, 5, 1]"});
  a = args();
  a.params[0] = a.own(zeros(cfg.dtype, {2, 5}));  // fewer than 4 rows
  rejected(a, "params[0]", {"4", "[2, 5]"});
}

// The entries in another order than PyTorch's _flat_weights (per slot w_ih,
// w_hh, b_ih, b_hh; slots layer by layer, forward before reverse). Orders that
// keep every shape (e.g. the two directions of one layer swapped) cannot be
// told apart and compute another model; every other order is refused.
TEST_F(Validation, ParamsInTheWrongOrder) {
  // w_hh before w_ih in slot 0: params[0] = [12, 3] sets H = 3 but must be [12, 5].
  ForwardArgs a = args();
  std::swap(a.params[0], a.params[1]);
  rejected(a, "params[0]", {"[12, 5]", "[12, 3]"});
  // Biases first: params[0] is 1-D.
  a = args();
  std::swap(a.params[0], a.params[2]);
  std::swap(a.params[1], a.params[3]);
  rejected(a, "params[0]", {"2-D", "[12]"});
  // Layer 1 before layer 0: its w_ih is [12, 6] (D*H columns), not [12, 5].
  a = args();
  for (int k = 0; k < 8; ++k) std::swap(a.params[k], a.params[8 + k]);
  rejected(a, "params[0]", {"[12, 5]", "[12, 6]"});
  // Without biases, bidirectional: w_hh in layer 1's w_ih place ([12, 3] for
  // [12, 6]). (Unidirectional, the seed document's [w_ih, w_hh, w_hh, w_hh]
  // has every shape right, D*H == H, and cannot be detected.)
  LstmConfig c = cfg;
  c.has_biases = false;
  const LstmProblem q = make_problem(c, 1302);
  a = forward_args(q);
  a.params[4] = a.params[1];
  expect_forward_rejected(a, q, "params[4]", {"[12, 6]", "[12, 3]", "weight_ih, layer 1, forward"});
  // w_ih and w_hh of slot 1 (reverse direction) swapped.
  a = args();
  std::swap(a.params[4], a.params[5]);
  rejected(a, "params[4]", {"[12, 5]", "[12, 3]", "weight_ih, layer 0, reverse"});
  // A bias in a weight's place in layer 1, reverse.
  a = args();
  std::swap(a.params[13], a.params[14]);
  rejected(a, "params[13]", {"[12, 3]", "[12]", "weight_hh, layer 1, reverse"});
}

TEST_F(Validation, ParamOfIntegerDtype) {
  ForwardArgs a = args();
  a.params[6] = a.own(zeros(DType::Int64, {12}));
  rejected(a, "params[6]", {"float32", "int64"});
}

// ---------------------------------------------------------------------------
// num_layers, dropout: extreme values
// ---------------------------------------------------------------------------

TEST_F(Validation, NumLayersExtremes) {
  const int64_t big[] = {std::numeric_limits<int64_t>::min(), -(int64_t(1) << 40)};
  for (int64_t n : big) {
    ForwardArgs a = args();
    a.num_layers = n;
    rejected(a, "num_layers", {">= 1", std::to_string(n)});
  }
  // Positive but far more layers than params: the count would overflow int64
  // (4 * 2 * L); the Error says so instead of wrapping around.
  for (int64_t n : {std::numeric_limits<int64_t>::max(), int64_t(1) << 61, int64_t(3)}) {
    SCOPED_TRACE(n);
    ForwardArgs a = args();
    a.num_layers = n;
    rejected(a, "params", {std::to_string(n), "got 16"});
  }
}

TEST_F(Validation, DropoutExtremes) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::pair<double, const char*> out_of_range[] = {
      {inf, "inf"}, {-inf, "-inf"}, {-1e-300, "-1e-300"}, {1.0000001, "1"}};
  for (const auto& c : out_of_range) {
    SCOPED_TRACE(c.second);
    ForwardArgs a = args();
    a.dropout = c.first;
    a.train = false;
    rejected(a, "dropout", {"[0, 1]", c.second});
  }
  // Any dropout > 0, however small, is refused with train and L > 1.
  const double min_denormal = std::numeric_limits<double>::denorm_min();
  for (double d : {min_denormal, 1.0}) {
    SCOPED_TRACE(d);
    ForwardArgs a = args();
    a.dropout = d;
    rejected(a, "dropout", {"lstmop.nn.LSTM"});
  }
  // -0.0 is 0: accepted.
  ForwardArgs a = args();
  EXPECT_NO_THROW(lstmop::lstm_forward(a.input, a.hx, a.params, a.has_biases, a.num_layers, -0.0,
                                       a.train, a.bidirectional, a.batch_first, a.batch_sizes));
}

// ---------------------------------------------------------------------------
// Malformed views of every tensor argument
// ---------------------------------------------------------------------------

// A negative size, or one stride fewer than sizes, in input, hx[k], params[k]:
// "must have non-negative sizes" / "one stride per dimension".
TEST_F(Validation, MalformedViewsOfForwardArguments) {
  // Negative-size views carry no data pointer: nothing can be addressed
  // through them (and the structure is checked before the data).
  auto negative = [](const TensorView& v) {
    std::vector<int64_t> s = v.sizes;
    s.back() = -s.back();
    TensorView w = with_fields(v, s, v.strides);
    w.data = nullptr;
    return w;
  };
  auto short_strides = [](const TensorView& v) {
    return with_fields(v, v.sizes, std::vector<int64_t>(v.strides.begin(), v.strides.end() - 1));
  };
  ForwardArgs a = args();
  a.input = negative(a.input);
  rejected(a, "input", {"non-negative", "[3, 2, -5]"});
  a = args();
  a.input = short_strides(a.input);
  rejected(a, "input", {"one stride per dimension", "3", "2 strides"});
  for (std::size_t k = 0; k < 2; ++k) {
    const std::string name = "hx[" + std::to_string(k) + "]";
    a = args();
    a.hx[k] = negative(a.hx[k]);
    rejected(a, name, {"non-negative", "[4, 2, -3]"});
    a = args();
    a.hx[k] = short_strides(a.hx[k]);
    rejected(a, name, {"one stride per dimension"});
  }
  for (std::size_t k : {std::size_t(0), std::size_t(3), std::size_t(9), std::size_t(14)}) {
    const std::string name = "params[" + std::to_string(k) + "]";
    a = args();
    a.params[k] = negative(a.params[k]);
    rejected(a, name, {"non-negative"});
    a = args();
    a.params[k] = short_strides(a.params[k]);
    rejected(a, name, {"one stride per dimension"});
  }
}

// The same for the backward's own tensors: saved i..tanhc and the gradients.
TEST(ValidationBackward, MalformedViewsOfSavedTensorsAndGradients) {
  const LstmProblem p = make_problem(bad_input_base_config(), 1310);
  const char* const names[] = {"grad_y", "grad_hy", "grad_cy", "i", "j", "f", "o", "h", "c",
                               "tanhc"};
  for (std::size_t n = 0; n < 10; ++n) {
    const char* name = names[n];
    for (int variant = 0; variant < 2; ++variant) {
      SCOPED_TRACE(std::string(name) + (variant == 0 ? " negative size" : " strides missing"));
      BackwardArgs b = backward_args(p);
      TensorView* members[] = {&b.grad_y, &b.grad_hy, &b.grad_cy, &b.i, &b.j,
                               &b.f,      &b.o,       &b.h,       &b.c, &b.tanhc};
      TensorView& v = *members[n];
      std::vector<int64_t> sizes = v.sizes, strides = v.strides;
      if (variant == 0) {
        sizes.front() = -sizes.front();
      } else {
        strides.pop_back();
      }
      v = with_fields(v, sizes, strides);
      if (variant == 0) v.data = nullptr;
      expect_backward_rejected(b, p, name,
                               {variant == 0 ? "non-negative" : "one stride per dimension"});
    }
  }
}

// ---------------------------------------------------------------------------
// input and hx
// ---------------------------------------------------------------------------

TEST_F(Validation, InputSizeZeroAndRanks) {
  ForwardArgs a = args();
  a.input = a.own(zeros(cfg.dtype, {3, 2, 0}));
  rejected(a, "input", {"input_size >= 1", "[3, 2, 0]"});
  a = args();
  a.input = a.own(zeros(cfg.dtype, {30}));
  rejected(a, "input", {"3-D", "1-D [30]"});
  a = args();
  a.input = a.own(zeros(cfg.dtype, {1, 3, 2, 5, 1}));
  rejected(a, "input", {"3-D", "5-D"});
  // batch_first names the layout it expected.
  a = args();
  a.batch_first = true;
  a.input = a.own(zeros(cfg.dtype, {6, 5}));
  rejected(a, "input", {"(B, T, input_size)", "[6, 5]"});
}

TEST_F(Validation, HxOfAnotherBatchOrLayout) {
  // B = 3 rows of state for B = 2 sequences.
  ForwardArgs a = args();
  a.hx[0] = a.own(zeros(cfg.dtype, {4, 3, 3}));
  rejected(a, "hx[0]", {"[4, 2, 3]", "[4, 3, 3]"});
  // hx batch-major (B, D*L, H) with batch_first: hx is (D*L, B, H) whatever batch_first is.
  LstmConfig c = cfg;
  c.batch_first = true;
  const LstmProblem q = make_problem(c, 1320);
  a = forward_args(q);
  a.hx[1] = a.own(zeros(c.dtype, {2, 4, 3}));
  expect_forward_rejected(a, q, "hx[1]", {"[4, 2, 3]", "[2, 4, 3]"});
  // Integer states.
  a = args();
  a.hx[0] = a.own(zeros(DType::Int64, {4, 2, 3}));
  rejected(a, "hx[0]", {"float32", "int64"});
  // Both undefined.
  a = args();
  a.hx = {TensorView(), TensorView()};
  rejected(a, "hx[0]", {"undefined"});
}

// ---------------------------------------------------------------------------
// batch_sizes
// ---------------------------------------------------------------------------

// The packed problem: T = 3, B = 2, lengths 3, 2: batch_sizes [2, 2, 1],
// input (6, 5).
class ValidationPacked : public ::testing::Test {
 protected:
  ValidationPacked() : cfg(packed_config()), p(make_problem(cfg, 1330)) {}
  static LstmConfig packed_config() {
    LstmConfig c = bad_input_base_config();
    c.packed = true;
    c.lengths = {3, 2};
    return c;
  }
  LstmConfig cfg;
  LstmProblem p;

  ForwardArgs with_batch_sizes(const std::vector<double>& values) {
    ForwardArgs a = forward_args(p);
    a.batch_sizes = a.own(from_doubles(DType::Int64, {static_cast<int64_t>(values.size())},
                                       values));
    return a;
  }
};

TEST_F(ValidationPacked, ZeroDimensional) {
  ForwardArgs a = forward_args(p);
  a.batch_sizes = a.own(from_doubles(DType::Int64, {}, {2}));
  expect_forward_rejected(a, p, "batch_sizes", {"1-D", "0-D []"});
}

TEST_F(ValidationPacked, LongerThanTheInputRows) {
  // T = 7 > 6 rows: 6 % 7 = 6.
  ForwardArgs a = with_batch_sizes({1, 1, 1, 1, 1, 1, 1});
  expect_forward_rejected(a, p, "batch_sizes", {"7", "6"});
  // T = 12: twice the rows.
  a = with_batch_sizes(std::vector<double>(12, 1.0));
  expect_forward_rejected(a, p, "batch_sizes", {"12", "6"});
}

TEST_F(ValidationPacked, ZeroInputRows) {
  // (0, 5) input: T = 3 divides 0 rows, B = 0.
  ForwardArgs a = forward_args(p);
  a.input = a.own(zeros(cfg.dtype, {0, 5}));
  a.hx.clear();
  expect_forward_rejected(a, p, "input", {"B >= 1", "[0, 5]"});
}

TEST_F(ValidationPacked, ExtremeValues) {
  // from_doubles rounds; write the int64 extremes directly.
  for (int64_t v : {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
    SCOPED_TRACE(v);
    for (int position = 0; position < 3; ++position) {
      ForwardArgs a = with_batch_sizes({2, 2, 1});
      a.keep.back().data<int64_t>()[position] = v;
      expect_forward_rejected(a, p, "batch_sizes", {"[1, 2]", std::to_string(v)}, true);
    }
  }
}

// A batch_sizes view without data: shapes work, compute calls say so.
TEST_F(ValidationPacked, NoData) {
  ForwardArgs a = forward_args(p);
  a.batch_sizes = TensorView(nullptr, DType::Int64, {3});
  expect_forward_rejected(a, p, "batch_sizes", {"data"}, true);
  EXPECT_NO_THROW(lstmop::lstm_forward_shapes(a.input, a.hx, a.params, a.has_biases,
                                              a.num_layers, 0.0, a.train, a.bidirectional,
                                              a.batch_first, a.batch_sizes));
}

TEST_F(ValidationPacked, NegativeSizeOrMissingStride) {
  ForwardArgs a = forward_args(p);
  a.batch_sizes = with_fields(a.batch_sizes, {-3}, {1});
  a.batch_sizes.data = nullptr;
  expect_forward_rejected(a, p, "batch_sizes", {"non-negative", "[-3]"});
  a = forward_args(p);
  a.batch_sizes = with_fields(a.batch_sizes, {3}, {});
  expect_forward_rejected(a, p, "batch_sizes", {"one stride per dimension"});
}

// Not an error: a strided batch_sizes (every other element of a buffer, or
// read backwards) is read through its stride, and gives the results of the
// contiguous one, bitwise.
TEST_F(ValidationPacked, StridedBatchSizesAreReadThroughTheirStride) {
  const ForwardResult expected = run_forward(p);
  std::vector<int64_t> every_other = {2, -7, 2, -7, 1};
  std::vector<int64_t> backwards = {1, 2, 2};
  const TensorView strided(every_other.data(), DType::Int64, {3}, {2});
  const TensorView reversed(backwards.data() + 2, DType::Int64, {3}, {-1});
  for (const TensorView& bs : {strided, reversed}) {
    const ForwardResult r =
        lstmop::lstm_forward(p.input, p.hx_list(), p.param_list(), cfg.has_biases, cfg.L, 0.0,
                             cfg.train, cfg.bidirectional, false, bs);
    const NamedViews a = forward_outputs(r), b = forward_outputs(expected);
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
    }
  }
  EXPECT_EQ(every_other[1], -7) << "batch_sizes' gaps were written";
}

// An empty batch_sizes of any dtype and rank is fixed-length mode: with a 3-D
// input the call is valid and equals batch_sizes=None bitwise.
TEST(ValidationEmptyBatchSizes, AnyDtypeOrRankMeansFixedLength) {
  const LstmProblem p = make_problem(bad_input_base_config(), 1340);
  const ForwardResult expected = run_forward(p);
  const Tensor empties[] = {Tensor::empty(DType::Float32, {0}),
                            Tensor::empty(DType::Int64, {0, 3}),
                            Tensor::empty(DType::Float64, {2, 0})};
  for (const Tensor& bs : empties) {
    SCOPED_TRACE(shape_string(bs.sizes()));
    const LstmConfig& c = p.cfg;
    const ForwardResult r = lstmop::lstm_forward(p.input, p.hx_list(), p.param_list(),
                                                 c.has_biases, c.L, 0.0, c.train,
                                                 c.bidirectional, c.batch_first, bs);
    const NamedViews a = forward_outputs(r), b = forward_outputs(expected);
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
    }
  }
}

// ---------------------------------------------------------------------------
// Saved tensors and gradients: the remaining shapes
// ---------------------------------------------------------------------------

class ValidationBackwardSaved : public ::testing::Test {
 protected:
  ValidationBackwardSaved() : cfg(bad_input_base_config()), p(make_problem(cfg, 1350)) {}
  LstmConfig cfg;
  LstmProblem p;
};

// Saved tensors mixed from a train=True and a train=False forward: the first
// eval one is blamed.
TEST_F(ValidationBackwardSaved, MixOfTrainAndEvalSavedTensors) {
  LstmProblem q = p;
  q.cfg.train = false;
  const ForwardResult eval = run_forward(q);
  BackwardArgs b = backward_args(p);
  b.saved_owner.h = eval.h;  // keep alive
  b.h = eval.h;              // (S, B, H) instead of (S, T, B, H)
  expect_backward_rejected(b, p, "h", {"[4, 3, 2, 3]", "[4, 2, 3]"});
  b = backward_args(p);
  b.tanhc = eval.tanhc;  // (0,)
  b.saved_owner.tanhc = eval.tanhc;
  expect_backward_rejected(b, p, "tanhc", {"[4, 3, 2, 3]", "[0]"});
}

// Saved tensors of another problem: one more step, another batch, another
// hidden size, a unidirectional forward.
TEST_F(ValidationBackwardSaved, SavedTensorsOfAnotherProblem) {
  const std::pair<std::vector<int64_t>, const char*> wrong[] = {
      {{4, 4, 2, 3}, "T + 1"}, {{4, 3, 3, 3}, "B + 1"}, {{4, 3, 2, 4}, "H + 1"},
      {{2, 3, 2, 3}, "D = 1"}, {{4, 6, 3}, "(S, T*B, H)"}, {{4, 3, 2, 3, 1}, "rank 5"}};
  for (const auto& w : wrong) {
    SCOPED_TRACE(w.second);
    BackwardArgs b = backward_args(p);
    b.c = b.fwd.own(filled(cfg.dtype, w.first, 0.25));
    expect_backward_rejected(b, p, "c", {"[4, 3, 2, 3]", shape_string(w.first)});
  }
}

TEST_F(ValidationBackwardSaved, GradientsOfIntegerDtypeOrExtraDimension) {
  BackwardArgs b = backward_args(p);
  b.grad_cy = b.fwd.own(zeros(DType::Int64, {4, 2, 3}));
  expect_backward_rejected(b, p, "grad_cy", {"float32", "int64"});
  b = backward_args(p);
  b.grad_y = b.fwd.own(zeros(cfg.dtype, {1, 3, 2, 6}));
  expect_backward_rejected(b, p, "grad_y", {"[3, 2, 6]", "[1, 3, 2, 6]"});
  b = backward_args(p);
  b.grad_hy = b.fwd.own(zeros(cfg.dtype, {4, 2, 3, 1}));
  expect_backward_rejected(b, p, "grad_hy", {"[4, 2, 3]", "[4, 2, 3, 1]"});
}

// Every gradient undefined is valid (all zeros): every result is 0.
TEST_F(ValidationBackwardSaved, AllGradientsUndefinedGiveZeros) {
  BackwardArgs b = backward_args(p);
  const ForwardArgs& a = b.fwd;
  const BackwardResult r = lstmop::lstm_backward(
      TensorView(), TensorView(), TensorView(), a.input, a.hx, a.params, b.i, b.j, b.f, b.o, b.h,
      b.c, b.tanhc, a.has_biases, a.num_layers, 0.0, true, a.bidirectional, a.batch_first,
      a.batch_sizes);
  for (const auto& named : backward_outputs(r)) {
    EXPECT_EQ(max_abs(named.second), 0.0) << named.first;
  }
}

}  // namespace
}  // namespace lstmtest
