// Production vs lstmop::reference over a sweep of shapes and every flag
// combination: all 10 forward results and all backward results.
//
// Tolerance (oneDNN benchdnn style, lstm_test_support.h):
//   tol = 4 * (1 + backward) * ceil(log2(depth)) * eps(dtype),
// depth = K * T * L forward (K = max(I, D*H) + H + 2 terms per gate, chained
// over T steps and L layers), times B backward (the weight gradients sum over
// the T * B rows). Errors are measured against max(1, max |reference|) of each
// tensor. A float32 product of K terms accumulated pairwise or in blocks has
// an error of about log2(K) * eps, and the recurrence carries it across the T
// steps and L layers roughly additively (|f| < 1 and |o * tanh'| < 1 damp it),
// hence log2 of the whole depth; the factor 4 covers the activations (a few
// ulp each) and 1 + backward the backward's second pass over the same
// quantities. For float64 the same formula gives ~1e-14.
//
// The reference backward is given the production forward's saved tensors,
// so the backward comparison measures the backward's own error only.
#include <ostream>
#include <random>

#include "lstm_test_support.h"

namespace lstmtest {
namespace {

struct SweepSizes {
  int64_t I, H, L;
};

// Readable ctest names ("GetParam() = I17 H34 L2").
void PrintTo(const SweepSizes& s, std::ostream* os) {
  *os << "I" << s.I << " H" << s.H << " L" << s.L;
}

std::string sizes_name(const ::testing::TestParamInfo<SweepSizes>& info) {
  return "I" + std::to_string(info.param.I) + "_H" + std::to_string(info.param.H) + "_L" +
         std::to_string(info.param.L);
}

// (T, B) pairs cycled through the flag combinations: T = 1, B = 1, both,
// and small general ones.
const int64_t kTimeBatch[][2] = {{1, 1}, {1, 4}, {5, 1}, {4, 3}, {3, 5}};

// Lengths of a packed batch, cycling through: random, all equal, with 1s.
std::vector<int64_t> sweep_lengths(int64_t T, int64_t B, int kind, std::mt19937_64& rng) {
  std::vector<int64_t> lengths = random_lengths(T, B, rng);
  if (kind == 1) {
    lengths.assign(static_cast<std::size_t>(B), T);
  } else if (kind == 2) {
    for (int64_t b = B / 2 + 1; b < B; ++b) lengths[b] = 1;
  }
  return lengths;
}

// Every combination of has_biases, bidirectional, batch_first, train, packed
// and hx given / empty, for one size.
std::vector<LstmConfig> sweep_configs(const SweepSizes& s, DType dtype) {
  std::vector<LstmConfig> configs;
  std::mt19937_64 rng(1000 * s.I + 10 * s.H + s.L);
  for (int flags = 0; flags < 64; ++flags) {
    LstmConfig c;
    c.dtype = dtype;
    c.I = s.I;
    c.H = s.H;
    c.L = s.L;
    c.has_biases = flags & 1;
    c.bidirectional = flags & 2;
    c.batch_first = flags & 4;
    c.train = flags & 8;
    c.packed = flags & 16;
    c.with_hx = flags & 32;
    c.T = kTimeBatch[flags % 5][0];
    c.B = kTimeBatch[flags % 5][1];
    if (c.packed) c.lengths = sweep_lengths(c.T, c.B, (flags / 5) % 3, rng);
    configs.push_back(c);
  }
  return configs;
}

class ReferenceSweep : public ::testing::TestWithParam<SweepSizes> {};

TEST_P(ReferenceSweep, Float32EveryFlagCombination) {
  uint64_t seed = 1;
  for (const LstmConfig& cfg : sweep_configs(GetParam(), DType::Float32)) {
    expect_near_reference(cfg, seed += 7);
  }
}

TEST_P(ReferenceSweep, Float64EveryFlagCombination) {
  uint64_t seed = 2;
  for (const LstmConfig& cfg : sweep_configs(GetParam(), DType::Float64)) {
    expect_near_reference(cfg, seed += 7);
  }
}

// I=17 H=34 are oneDNN's shapes_small sizes (sic17 dhc34); H = 1, 3, 13 are
// below and across the vector widths.
INSTANTIATE_TEST_SUITE_P(Sizes, ReferenceSweep,
                         ::testing::Values(SweepSizes{17, 34, 1}, SweepSizes{17, 34, 2},
                                           SweepSizes{17, 34, 3}, SweepSizes{5, 1, 1},
                                           SweepSizes{5, 1, 2}, SweepSizes{5, 1, 3},
                                           SweepSizes{4, 3, 1}, SweepSizes{4, 3, 2},
                                           SweepSizes{4, 3, 3}, SweepSizes{7, 13, 1},
                                           SweepSizes{7, 13, 2}, SweepSizes{7, 13, 3}),
                         sizes_name);

// A larger case where the production path's blocking and vector bodies are
// exercised with remainders (B = 9, H = 37 are not multiples of 8 or 16).
TEST(ReferenceSweepLarger, Float32Bidirectional2LayersPacked) {
  for (bool packed : {false, true}) {
    LstmConfig cfg;
    cfg.T = 6;
    cfg.B = 9;
    cfg.I = 19;
    cfg.H = 37;
    cfg.L = 2;
    cfg.bidirectional = true;
    cfg.packed = packed;
    std::mt19937_64 rng(5);
    if (packed) cfg.lengths = random_lengths(cfg.T, cfg.B, rng);
    expect_near_reference(cfg, 99);
  }
}

// More valid rows than one weight-gradient chunk of the backward (1024 rows,
// lstm_backward.cpp): the dW products run over two chunks, the second partial;
// odd sizes leave remainders in the transposes' 8 x 8 blocks.
TEST(ReferenceSweepLarger, MoreRowsThanOneWeightGradientChunk) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (bool packed : {false, true}) {
      LstmConfig cfg;
      cfg.dtype = dtype;
      cfg.T = 150;
      cfg.B = 12;
      cfg.I = 11;
      cfg.H = 13;
      cfg.L = 2;
      cfg.bidirectional = true;
      cfg.packed = packed;
      if (packed) {
        for (int64_t b = 0; b < cfg.B; ++b) cfg.lengths.push_back(cfg.T - 3 * b);  // 1602 rows
      }
      expect_near_reference(cfg, 123);
    }
  }
}

// Recurrent products longer than one k block of the packed kernel (256,
// recurrent_product.cpp): forward k = H = 260, backward k = 4H = 1040; batches
// 1, 7 (a 4-row and a 3-row tile) and 14 (6 + 4 + 4 rows).
TEST(ReferenceSweepLarger, RecurrentProductLongerThanOneKBlock) {
  for (int64_t B : {1, 7, 14}) {
    LstmConfig cfg;
    cfg.T = 3;
    cfg.B = B;
    cfg.I = 5;
    cfg.H = 260;
    cfg.bidirectional = true;
    expect_near_reference(cfg, 321 + B);
  }
}

}  // namespace
}  // namespace lstmtest
