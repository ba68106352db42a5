// Bad forward arguments besides params and batch_sizes: num_layers, input,
// hx, dropout (and dropout values that are allowed and change nothing), views
// without data, malformed views (negative sizes, a stride missing). Each
// rejection goes through expect_forward_rejected (lstm_bad_input_support.h):
// lstm_forward, reference::lstm_forward, lstm_forward_out and (for errors in
// shapes, dtypes and flags) lstm_forward_shapes throw an lstmop::Error (also
// caught as std::invalid_argument) whose argument() names the argument and
// whose message holds the expected and the actual value; no caller output and
// no input is written.
//
// The valid problem (bad_input_base_config): T = 3, B = 2, I = 5, H = 3
// (4H = 12), L = 2, bidirectional (S = 4), with biases: 16 params.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

using lstmop::shape_string;

class BadForward : public BadForwardFixture {
 protected:
  BadForward() : BadForwardFixture(900) {}
};

// ---------------------------------------------------------------------------
// num_layers
// ---------------------------------------------------------------------------

TEST_F(BadForward, NumLayersNotPositive) {
  for (int64_t n : {0, -1}) {
    ForwardArgs a = args();
    a.num_layers = n;
    rejected(a, "num_layers", {"1", std::to_string(n)});
  }
}

TEST_F(BadForward, NumLayersExtremes) {
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

// ---------------------------------------------------------------------------
// input
// ---------------------------------------------------------------------------

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

// (input_size = 0 is accepted: tests/api/test_empty_batch.cpp.)
TEST_F(BadForward, InputRanks) {
  ForwardArgs a = args();
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

// (B = 0 is accepted: tests/api/test_empty_batch.cpp.)
TEST_F(BadForward, EmptyTime) {
  ForwardArgs a = args();
  a.input = a.own(zeros(cfg.dtype, {0, 2, 5}));  // T = 0
  rejected(a, "input", {"T", "0", "[0, 2, 5]"});
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

// A negative size, or one stride fewer than sizes, in input, hx[k], params[k]:
// "must have non-negative sizes" / "one stride per dimension".
TEST_F(BadForward, MalformedViewsOfForwardArguments) {
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

TEST_F(BadForward, HxOfAnotherBatchOrLayout) {
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

TEST_F(BadForward, DropoutExtremes) {
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
