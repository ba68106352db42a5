// Bad batch_sizes (variable length): its view (dtype, rank, length against
// the input's rows, data, malformed) and its values (non-increasing, first
// not B, out of [1, B], int64 extremes); and what is not an error: a strided
// batch_sizes is read through its stride, an empty one means fixed length.
// Rejections go through expect_forward_rejected (lstm_bad_input_support.h);
// errors only visible in the values (values_only) skip lstm_forward_shapes,
// which does not read them.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

using lstmop::shape_string;

class BadBatchSizes : public BadBatchSizesFixture {
 protected:
  BadBatchSizes() : BadBatchSizesFixture(910) {}
};

// ---------------------------------------------------------------------------
// The view: dtype, rank, length, data, malformed
// ---------------------------------------------------------------------------

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

TEST_F(BadBatchSizes, ZeroDimensional) {
  ForwardArgs a = forward_args(p);
  a.batch_sizes = a.own(from_doubles(DType::Int64, {}, {2}));
  expect_forward_rejected(a, p, "batch_sizes", {"1-D", "0-D []"});
}

TEST_F(BadBatchSizes, LengthDoesNotDivideInputRows) {
  ForwardArgs a = with_batch_sizes({2, 2, 1, 1});  // T = 4 does not divide 6 rows
  expect_forward_rejected(a, p, "batch_sizes", {"4", "6"});
}

TEST_F(BadBatchSizes, LongerThanTheInputRows) {
  // T = 7 > 6 rows: 6 % 7 = 6.
  ForwardArgs a = with_batch_sizes({1, 1, 1, 1, 1, 1, 1});
  expect_forward_rejected(a, p, "batch_sizes", {"7", "6"});
  // T = 12: twice the rows.
  a = with_batch_sizes(std::vector<double>(12, 1.0));
  expect_forward_rejected(a, p, "batch_sizes", {"12", "6"});
}

TEST_F(BadBatchSizes, ZeroInputRows) {
  // (0, 5) input: T = 3 divides 0 rows, B = 0.
  ForwardArgs a = forward_args(p);
  a.input = a.own(zeros(cfg.dtype, {0, 5}));
  a.hx.clear();
  expect_forward_rejected(a, p, "input", {"B >= 1", "[0, 5]"});
}

// A batch_sizes view without data: shapes work, compute calls say so.
TEST_F(BadBatchSizes, NoData) {
  ForwardArgs a = forward_args(p);
  a.batch_sizes = TensorView(nullptr, DType::Int64, {3});
  expect_forward_rejected(a, p, "batch_sizes", {"data"}, true);
  EXPECT_NO_THROW(lstmop::lstm_forward_shapes(a.input, a.hx, a.params, a.has_biases,
                                              a.num_layers, 0.0, a.train, a.bidirectional,
                                              a.batch_first, a.batch_sizes));
}

TEST_F(BadBatchSizes, NegativeSizeOrMissingStride) {
  ForwardArgs a = forward_args(p);
  a.batch_sizes = with_fields(a.batch_sizes, {-3}, {1});
  a.batch_sizes.data = nullptr;
  expect_forward_rejected(a, p, "batch_sizes", {"non-negative", "[-3]"});
  a = forward_args(p);
  a.batch_sizes = with_fields(a.batch_sizes, {3}, {});
  expect_forward_rejected(a, p, "batch_sizes", {"one stride per dimension"});
}

// ---------------------------------------------------------------------------
// The values
// ---------------------------------------------------------------------------

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

TEST_F(BadBatchSizes, ExtremeValues) {
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

// ---------------------------------------------------------------------------
// Not errors: strided and empty batch_sizes
// ---------------------------------------------------------------------------

// Not an error: a strided batch_sizes (every other element of a buffer, or
// read backwards) is read through its stride, and gives the results of the
// contiguous one, bitwise.
TEST_F(BadBatchSizes, StridedBatchSizesAreReadThroughTheirStride) {
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

TEST_F(BadBatchSizes, EmptyMeansFixedLength) {
  // An empty batch_sizes is fixed-length mode: the 2-D input is then wrong.
  ForwardArgs a = forward_args(p);
  a.batch_sizes = a.own(Tensor::empty(DType::Int64, {0}));
  expect_forward_rejected(a, p, "input", {"3", "[6, 5]"});
}

// An empty batch_sizes of any dtype and rank is fixed-length mode: with a 3-D
// input the call is valid and equals batch_sizes=None bitwise.
TEST(EmptyBatchSizes, AnyDtypeOrRankMeansFixedLength) {
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

}  // namespace
}  // namespace lstmtest
