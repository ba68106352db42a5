// Bad params (the weights and biases of every layer and direction): their
// count, every kind of wrong shape of every entry with and without biases,
// entries in the wrong order, dtypes, undefined entries. Each rejection goes
// through expect_forward_rejected (lstm_bad_input_support.h): lstm_forward,
// reference::lstm_forward, lstm_forward_out and lstm_forward_shapes throw an
// lstmop::Error naming the entry, with the expected and the actual value, and
// write nothing.
//
// The valid problem (bad_input_base_config): T = 3, B = 2, I = 5, H = 3
// (4H = 12), L = 2, bidirectional (S = 4), with biases: 16 params.
#include <string>
#include <vector>

#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

using lstmop::shape_string;

class BadParams : public BadForwardFixture {
 protected:
  BadParams() : BadForwardFixture(900) {}
};

// ---------------------------------------------------------------------------
// The count
// ---------------------------------------------------------------------------

TEST_F(BadParams, ParamsCount) {
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

TEST_F(BadParams, ParamsCountWithoutBiases) {
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

// ---------------------------------------------------------------------------
// Shapes: every entry, every kind of wrong shape
// ---------------------------------------------------------------------------

// Every params entry of every layer and direction, with and without biases:
// one more column (weights) or row (biases) than expected.
TEST_F(BadParams, EveryParamShape) {
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
TEST_F(BadParams, EveryParamEveryMutation) {
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

TEST_F(BadParams, ParamShapeMistakes) {
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

TEST_F(BadParams, GateRowsNotMultipleOfFourOrZero) {
  ForwardArgs a = args();
  a.params[0] = a.own(zeros(cfg.dtype, {10, 5}));  // 4H = 10: H is not an integer
  rejected(a, "params[0]", {"4", "[10, 5]"});
  a = args();
  a.params[0] = a.own(zeros(cfg.dtype, {0, 5}));  // H = 0
  rejected(a, "params[0]", {"4", "[0, 5]"});
}

// params[0] fixes H = rows / 4; four more rows there make every other entry
// wrong, and the first one checked (params[1], w_hh of slot 0) is blamed with
// the shape H' = 4 implies.
TEST_F(BadParams, FirstParamDefinesHiddenSize) {
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
TEST_F(BadParams, ParamsInTheWrongOrder) {
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

// ---------------------------------------------------------------------------
// Dtypes, undefined entries
// ---------------------------------------------------------------------------

TEST_F(BadParams, MixedDtypes) {
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

TEST_F(BadParams, ParamOfIntegerDtype) {
  ForwardArgs a = args();
  a.params[6] = a.own(zeros(DType::Int64, {12}));
  rejected(a, "params[6]", {"float32", "int64"});
}

TEST_F(BadParams, UndefinedParam) {
  ForwardArgs a = args();
  a.params[5] = TensorView();
  rejected(a, "params[5]", {"undefined"});
}

}  // namespace
}  // namespace lstmtest
