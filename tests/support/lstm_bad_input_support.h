// Helpers of the bad-input suites: the arguments of a forward / backward call
// as plain views (so a test can break any one of them), and checks that every
// entry point rejects them with the right lstmop::Error, writes nothing into
// caller outputs and leaves every input as it was.
#pragma once

#include <string>
#include <vector>

#include "lstm_test_support.h"

namespace lstmtest {

// Success iff fn throws an lstmop::Error, caught as std::invalid_argument,
// whose argument() is `argument` and whose what() contains every string of
// `contains` (the expected and the actual value).
::testing::AssertionResult throws_error(const std::function<void()>& fn,
                                        const std::string& argument,
                                        const std::vector<std::string>& contains);

// Like throws_error for a caller-allocated output: argument() must name the
// output's field, i.e. be `field` or end in "." + field ("out.tanhc").
::testing::AssertionResult throws_output_error(const std::function<void()>& fn,
                                               const std::string& field,
                                               const std::vector<std::string>& contains);

// Arguments of a forward call. `keep` owns the tensors a test creates.
struct ForwardArgs {
  TensorView input;
  TensorList hx, params;
  bool has_biases = true;
  int64_t num_layers = 1;
  double dropout = 0.0;
  bool train = true, bidirectional = false, batch_first = false;
  TensorView batch_sizes;
  std::vector<Tensor> keep;

  // Keeps t alive and returns its view.
  TensorView own(Tensor t);
};

ForwardArgs forward_args(const LstmProblem& p);

// Arguments of a backward call: the forward's plus gradients and saved tensors.
struct BackwardArgs {
  ForwardArgs fwd;
  TensorView grad_y, grad_hy, grad_cy;
  TensorView i, j, f, o, h, c, tanhc;
  ForwardResult saved_owner;
  LstmGrads grads_owner;
};

// A valid backward call of p: train=True forward results and random grads.
BackwardArgs backward_args(const LstmProblem& p);

// Caller outputs of a forward / backward of the valid problem `p`, filled with
// a sentinel byte pattern.
ForwardResult sentinel_forward_outputs(const LstmProblem& p);
BackwardResult sentinel_backward_outputs(const LstmProblem& p);
// Every byte of every output still holds the sentinel pattern.
::testing::AssertionResult untouched(const ForwardResult& r);
::testing::AssertionResult untouched(const BackwardResult& r);

// Runs lstm_forward, reference::lstm_forward, lstm_forward_out (into sentinel
// buffers of `valid`'s shapes) and, unless `values_only` (an error only
// visible in the values of batch_sizes), lstm_forward_shapes on `args`: each
// must throw the Error, write no output and no input.
void expect_forward_rejected(const ForwardArgs& args, const LstmProblem& valid,
                             const std::string& argument,
                             const std::vector<std::string>& contains, bool values_only = false);

// The same for lstm_backward, reference::lstm_backward, lstm_backward_out and
// lstm_backward_shapes.
void expect_backward_rejected(const BackwardArgs& args, const LstmProblem& valid,
                              const std::string& argument,
                              const std::vector<std::string>& contains, bool values_only = false);

// The valid problem of the bad-input suites: T = 3, B = 2, I = 5, H = 3
// (4H = 12), L = 2, bidirectional (S = 4), with biases (16 params), hx given.
// Distinct sizes, so that a message's numbers say which is which.
LstmConfig bad_input_base_config();

// Zeros of a dtype and shape.
Tensor zeros(DType dtype, const std::vector<int64_t>& sizes);

// A view of v's data whose sizes/strides are replaced (malformed views are
// built by assigning the public fields, which the constructor would refuse).
TensorView with_fields(const TensorView& v, std::vector<int64_t> sizes,
                       std::vector<int64_t> strides);

// Fixtures of the bad-input suites: the valid problem of bad_input_base_config()
// (values drawn from `seed`), whose arguments a test breaks: args() gives them,
// rejected() checks a broken set through every entry point.
class BadForwardFixture : public ::testing::Test {
 protected:
  explicit BadForwardFixture(uint64_t seed);
  ForwardArgs args() const { return forward_args(p); }
  void rejected(const ForwardArgs& a, const std::string& argument,
                const std::vector<std::string>& contains, bool values_only = false) const {
    expect_forward_rejected(a, p, argument, contains, values_only);
  }
  LstmConfig cfg;
  LstmProblem p;
};

class BadBackwardFixture : public ::testing::Test {
 protected:
  explicit BadBackwardFixture(uint64_t seed);
  BackwardArgs args() const { return backward_args(p); }
  void rejected(const BackwardArgs& b, const std::string& argument,
                const std::vector<std::string>& contains, bool values_only = false) const {
    expect_backward_rejected(b, p, argument, contains, values_only);
  }
  LstmConfig cfg;
  LstmProblem p;
};

// The variable-length problem: T = 3, B = 2, lengths 3, 2: batch_sizes
// [2, 2, 1], input (6, 5); with_batch_sizes() replaces batch_sizes' values.
class BadBatchSizesFixture : public ::testing::Test {
 protected:
  explicit BadBatchSizesFixture(uint64_t seed);
  ForwardArgs with_batch_sizes(const std::vector<double>& values) const;
  LstmConfig cfg;
  LstmProblem p;
};

}  // namespace lstmtest
