// Bad forward arguments: one test per class of error. Each checks, for
// lstm_forward, reference::lstm_forward, lstm_forward_out and (for errors in
// shapes, dtypes and flags) lstm_forward_shapes, that an lstmop::Error (also
// caught as std::invalid_argument) is thrown, that argument() names the
// argument, that the message holds the expected and the actual value, that no
// caller output and no input is written (lstm_bad_input_support.h).
//
// The valid problem: T = 3, B = 2, I = 5, H = 3 (4H = 12), L = 2,
// bidirectional (S = 4), with biases: 16 params.
#include <cmath>
#include <limits>

#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

using lstmop::shape_string;

class BadForward : public ::testing::Test {
 protected:
  BadForward() : cfg(bad_input_base_config()), p(make_problem(cfg, 900)) {}
  LstmConfig cfg;
  LstmProblem p;

  ForwardArgs args() const { return forward_args(p); }
  void rejected(const ForwardArgs& a, const std::string& argument,
                const std::vector<std::string>& contains, bool values_only = false) {
    expect_forward_rejected(a, p, argument, contains, values_only);
  }
};

Tensor zeros(DType dtype, const std::vector<int64_t>& sizes) { return filled(dtype, sizes, 0.0); }

// ---------------------------------------------------------------------------
// params
// ---------------------------------------------------------------------------

TEST_F(BadForward, ParamsCount) {
  ForwardArgs a = args();
  a.params.pop_back();  // 15 of 16
  rejected(a, "params", {"16", "15"});
  a = args();
  a.has_biases = false;  // 16 given, 8 expected
  rejected(a, "params", {"8", "16"});
  a = args();
  a.params.clear();
  rejected(a, "params", {"16", "0"});
}

TEST_F(BadForward, ParamsCountWithoutBiases) {
  LstmConfig c = cfg;
  c.has_biases = false;
  const LstmProblem q = make_problem(c, 901);
  ForwardArgs a = forward_args(q);
  a.params.push_back(a.params.back());  // 9 of 8
  expect_forward_rejected(a, q, "params", {"8", "9"});
  a = forward_args(q);
  a.has_biases = true;  // 8 given, 16 expected
  expect_forward_rejected(a, q, "params", {"16", "8"});
}

// Every params entry of every layer and direction, with and without biases:
// one more column (weights) or row (biases) than expected.
TEST_F(BadForward, EveryParamShape) {
  for (bool has_biases : {true, false}) {
    LstmConfig c = cfg;
    c.has_biases = has_biases;
    const LstmProblem q = make_problem(c, 902);
    for (std::size_t k = 0; k < q.params.size(); ++k) {
      SCOPED_TRACE("has_biases " + std::to_string(has_biases) + " params[" + std::to_string(k) +
                   "]");
      const std::vector<int64_t> expected = q.params[k].sizes();
      std::vector<int64_t> wrong = expected;
      wrong.back() += 1;
      ForwardArgs a = forward_args(q);
      a.params[k] = a.own(zeros(c.dtype, wrong));
      // e.g. "params[1] (weight_hh, layer 0, forward) must be [12, 3], got [12, 4]"
      expect_forward_rejected(a, q, "params[" + std::to_string(k) + "]",
                              {shape_string(expected), shape_string(wrong)});
    }
  }
}

TEST_F(BadForward, ParamShapeMistakes) {
  // Layer 1's w_ih with layer 0's input size (5 instead of D*H = 6).
  ForwardArgs a = args();
  a.params[8] = a.own(zeros(cfg.dtype, {12, 5}));
  rejected(a, "params[8]", {"[12, 6]", "[12, 5]"});
  // The seed document's mistake: w_hh where w_ih belongs.
  a = args();
  a.params[4] = a.params[1];
  rejected(a, "params[4]", {"[12, 5]", "[12, 3]"});
  // A bias of rank 2.
  a = args();
  a.params[2] = a.own(zeros(cfg.dtype, {12, 1}));
  rejected(a, "params[2]", {"[12]", "[12, 1]"});
  // A weight of rank 1.
  a = args();
  a.params[1] = a.own(zeros(cfg.dtype, {12}));
  rejected(a, "params[1]", {"[12, 3]", "[12]"});
}

TEST_F(BadForward, GateRowsNotMultipleOfFourOrZero) {
  ForwardArgs a = args();
  a.params[0] = a.own(zeros(cfg.dtype, {10, 5}));  // 4H = 10: H is not an integer
  rejected(a, "params[0]", {"4", "[10, 5]"});
  a = args();
  a.params[0] = a.own(zeros(cfg.dtype, {0, 5}));  // H = 0
  rejected(a, "params[0]", {"4", "[0, 5]"});
}

TEST_F(BadForward, UndefinedParam) {
  ForwardArgs a = args();
  a.params[5] = TensorView();
  rejected(a, "params[5]", {"undefined"});
}

// ---------------------------------------------------------------------------
// num_layers, input
// ---------------------------------------------------------------------------

TEST_F(BadForward, NumLayersNotPositive) {
  for (int64_t n : {0, -1}) {
    ForwardArgs a = args();
    a.num_layers = n;
    rejected(a, "num_layers", {"1", std::to_string(n)});
  }
}

TEST_F(BadForward, InputRank) {
  ForwardArgs a = args();
  a.input = a.own(zeros(cfg.dtype, {6, 5}));  // 2-D without batch_sizes
  rejected(a, "input", {"3", "[6, 5]"});
  a = args();
  a.input = a.own(zeros(cfg.dtype, {3, 2, 5, 1}));
  rejected(a, "input", {"3", "[3, 2, 5, 1]"});
  a = args();
  a.input = a.own(zeros(cfg.dtype, {}));  // 0-d
  rejected(a, "input", {"3", "[]"});
}

TEST_F(BadForward, InputRankWithBatchSizes) {
  ForwardArgs a = args();
  a.batch_sizes = a.own(from_doubles(DType::Int64, {3}, {2, 2, 1}));
  rejected(a, "input", {"2", "[3, 2, 5]"});  // 3-D input, 2-D expected
}

TEST_F(BadForward, InputDtypeInt64) {
  ForwardArgs a = args();
  a.input = a.own(zeros(DType::Int64, {3, 2, 5}));
  rejected(a, "input", {"float32", "int64"});
}

TEST_F(BadForward, UndefinedInput) {
  ForwardArgs a = args();
  a.input = TensorView();
  rejected(a, "input", {"undefined"});
}

TEST_F(BadForward, EmptyTimeOrBatch) {
  ForwardArgs a = args();
  a.input = a.own(zeros(cfg.dtype, {0, 2, 5}));  // T = 0
  rejected(a, "input", {"T", "0", "[0, 2, 5]"});
  a = args();
  a.input = a.own(zeros(cfg.dtype, {3, 0, 5}));  // B = 0
  a.hx.clear();
  rejected(a, "input", {"B", "0", "[3, 0, 5]"});
  a = args();
  a.batch_first = true;
  a.input = a.own(zeros(cfg.dtype, {2, 0, 5}));  // batch_first, T = 0
  rejected(a, "input", {"T", "0", "[2, 0, 5]"});
}

// A shape-only view (data == nullptr) is fine for the shape functions but an
// error, not a crash, for a call that computes.
TEST_F(BadForward, NullDataInComputeCalls) {
  auto shape_only = [](const TensorView& v) { return TensorView(nullptr, v.dtype, v.sizes); };
  ForwardArgs a = args();
  a.input = shape_only(a.input);
  rejected(a, "input", {}, /*values_only=*/true);
  a = args();
  a.hx[0] = shape_only(a.hx[0]);
  rejected(a, "hx[0]", {}, true);
  a = args();
  a.params[3] = shape_only(a.params[3]);
  rejected(a, "params[3]", {}, true);
  EXPECT_NO_THROW(lstmop::lstm_forward_shapes(a.input, a.hx, a.params, a.has_biases,
                                              a.num_layers, a.dropout, a.train, a.bidirectional,
                                              a.batch_first, a.batch_sizes));
}

// ---------------------------------------------------------------------------
// dtypes
// ---------------------------------------------------------------------------

TEST_F(BadForward, MixedDtypes) {
  ForwardArgs a = args();
  a.params[1] = a.own(converted(p.params[1], DType::Float64));
  rejected(a, "params[1]", {"float32", "float64"});
  a = args();
  a.params[15] = a.own(converted(p.params[15], DType::BFloat16));
  rejected(a, "params[15]", {"float32", "bfloat16"});
  a = args();
  a.hx[1] = a.own(converted(p.hx[1], DType::Float16));
  rejected(a, "hx[1]", {"float32", "float16"});
  // A float16 input with float32 parameters: the first parameter is blamed.
  a = args();
  a.input = a.own(converted(p.input, DType::Float16));
  rejected(a, "params[0]", {"float16", "float32"});
}

// ---------------------------------------------------------------------------
// hx
// ---------------------------------------------------------------------------

TEST_F(BadForward, HxCount) {
  ForwardArgs a = args();
  a.hx.pop_back();
  rejected(a, "hx", {"2", "1"});
  a = args();
  a.hx.push_back(a.hx[0]);
  rejected(a, "hx", {"2", "3"});
}

TEST_F(BadForward, HxShape) {
  ForwardArgs a = args();
  a.hx[0] = a.own(zeros(cfg.dtype, {4, 2, 4}));  // H + 1
  rejected(a, "hx[0]", {"[4, 2, 3]", "[4, 2, 4]"});
  a = args();
  a.hx[1] = a.own(zeros(cfg.dtype, {2, 2, 3}));  // L slots only: bidirectional forgotten
  rejected(a, "hx[1]", {"[4, 2, 3]", "[2, 2, 3]"});
  a = args();
  a.hx[0] = a.own(zeros(cfg.dtype, {2, 3}));  // rank 2
  rejected(a, "hx[0]", {"[4, 2, 3]", "[2, 3]"});
  a = args();
  a.hx[1] = TensorView();
  rejected(a, "hx[1]", {"undefined"});
}

// ---------------------------------------------------------------------------
// batch_sizes
// ---------------------------------------------------------------------------

// The packed problem: T = 3, B = 2, lengths 3, 2: batch_sizes [2, 2, 1],
// input (6, 5).
class BadBatchSizes : public ::testing::Test {
 protected:
  BadBatchSizes() : cfg(packed_config()), p(make_problem(cfg, 910)) {}
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

TEST_F(BadBatchSizes, DtypeFloat) {
  ForwardArgs a = forward_args(p);
  a.batch_sizes = a.own(from_doubles(DType::Float32, {3}, {2, 2, 1}));
  expect_forward_rejected(a, p, "batch_sizes", {"int64", "float32"});
}

TEST_F(BadBatchSizes, Rank2) {
  ForwardArgs a = forward_args(p);
  a.batch_sizes = a.own(from_doubles(DType::Int64, {3, 1}, {2, 2, 1}));
  expect_forward_rejected(a, p, "batch_sizes", {"1-D", "[3, 1]"});
}

TEST_F(BadBatchSizes, LengthDoesNotDivideInputRows) {
  ForwardArgs a = with_batch_sizes({2, 2, 1, 1});  // T = 4 does not divide 6 rows
  expect_forward_rejected(a, p, "batch_sizes", {"4", "6"});
}

TEST_F(BadBatchSizes, Increasing) {
  expect_forward_rejected(with_batch_sizes({2, 1, 2}), p, "batch_sizes",
                          {"non-increasing", "batch_sizes[2]"}, true);
}

TEST_F(BadBatchSizes, FirstIsNotB) {
  expect_forward_rejected(with_batch_sizes({1, 1, 1}), p, "batch_sizes",
                          {"2", "batch_sizes[0]", "1"}, true);
}

TEST_F(BadBatchSizes, Zero) {
  expect_forward_rejected(with_batch_sizes({2, 1, 0}), p, "batch_sizes",
                          {"[1, 2]", "batch_sizes[2]", "0"}, true);
}

TEST_F(BadBatchSizes, Negative) {
  expect_forward_rejected(with_batch_sizes({2, -1, -1}), p, "batch_sizes",
                          {"[1, 2]", "-1"}, true);
}

TEST_F(BadBatchSizes, GreaterThanB) {
  expect_forward_rejected(with_batch_sizes({3, 1, 1}), p, "batch_sizes",
                          {"2", "batch_sizes[0]", "3"}, true);
}

TEST_F(BadBatchSizes, EmptyMeansFixedLength) {
  // An empty batch_sizes is fixed-length mode: the 2-D input is then wrong.
  ForwardArgs a = forward_args(p);
  a.batch_sizes = a.own(Tensor::empty(DType::Int64, {0}));
  expect_forward_rejected(a, p, "input", {"3", "[6, 5]"});
}

// ---------------------------------------------------------------------------
// dropout
// ---------------------------------------------------------------------------

TEST_F(BadForward, DropoutOutOfRange) {
  const std::pair<double, const char*> cases[] = {
      {-0.1, "-0.1"}, {1.5, "1.5"}, {std::numeric_limits<double>::quiet_NaN(), "nan"}};
  for (const auto& c : cases) {
    ForwardArgs a = args();
    a.dropout = c.first;
    rejected(a, "dropout", {"[0, 1]", c.second});
    a.train = false;  // out of range whatever train is
    rejected(a, "dropout", {"[0, 1]", c.second});
  }
}

TEST_F(BadForward, DropoutWithTrainAndSeveralLayersPointsToNnLstm) {
  ForwardArgs a = args();
  a.dropout = 0.5;
  rejected(a, "dropout", {"lstmop.nn.LSTM", "0.5"});
}

// dropout > 0 is accepted with train=False or L == 1, and changes nothing:
// the op applies no dropout.
TEST(Dropout, AllowedWithEvalOrOneLayerAndIgnored) {
  for (int variant = 0; variant < 2; ++variant) {
    LstmConfig c = bad_input_base_config();
    if (variant == 0) c.train = false;
    if (variant == 1) c.L = 1;
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, 920);
    const ForwardResult expected = run_forward(p);
    for (double dropout : {0.5, 1.0}) {
      const ForwardResult r = lstmop::lstm_forward(p.input, p.hx_list(), p.param_list(),
                                                   c.has_biases, c.L, dropout, c.train,
                                                   c.bidirectional, c.batch_first);
      const NamedViews a = forward_outputs(r), b = forward_outputs(expected);
      for (std::size_t k = 0; k < a.size(); ++k) {
        EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
      }
      EXPECT_NO_THROW(lstmop::reference::lstm_forward(p.input, p.hx_list(), p.param_list(),
                                                      c.has_biases, c.L, dropout, c.train,
                                                      c.bidirectional, c.batch_first));
      if (!c.train) continue;
      const LstmGrads g = make_grads(p, 921);
      const BackwardResult gb = run_backward(p, g, expected);
      const BackwardResult gr = lstmop::lstm_backward(
          g.grad_y, g.grad_hy, g.grad_cy, p.input, p.hx_list(), p.param_list(), r.i, r.j, r.f,
          r.o, r.h, r.c, r.tanhc, c.has_biases, c.L, dropout, true, c.bidirectional);
      const NamedViews ga = backward_outputs(gr), gexp = backward_outputs(gb);
      for (std::size_t k = 0; k < ga.size(); ++k) {
        EXPECT_TRUE(bitwise_equal(ga[k].second, gexp[k].second)) << ga[k].first;
      }
    }
  }
}

}  // namespace
}  // namespace lstmtest
