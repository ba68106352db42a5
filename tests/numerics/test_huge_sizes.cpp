// Sizes whose products overflow, and problems whose memory cannot exist,
// described by a few bytes through stride-0 views (like torch.expand). Every
// entry point must throw an lstmop::Error at once (well under a second), and
// never ask the allocator for a block it cannot have:
// - past the library's call bound (more than 2^44 bytes of outputs and
//   workspace, e.g. T = 2^40 steps): no request above 64 MiB at all;
// - needing more than the machine's RAM (e.g. T = 2^34: 64 GiB of output):
//   no single request above the physical memory (such a request can only
//   fail, or with vm.overcommit_memory=1 succeed lazily and end in an
//   out-of-memory kill half-way through the call);
// - element counts or addressed extents past int64: an Error naming the view.
//
// allocation_tracker.cpp replaces operator new for this executable: it records
// the largest request and refuses (returns nullptr / throws std::bad_alloc)
// every request above the current limit without passing it to malloc, so no
// test here can allocate a giant block or get the machine into swap.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "allocation_tracker.h"
#include "lstm_bad_input_support.h"

namespace lstmtest {
namespace {

constexpr std::size_t kSmallRequest = std::size_t(64) << 20;  // 64 MiB
constexpr double kFastSeconds = 1.0;

// One float (or double), seen through stride-0 views of any shape.
struct Scalars {
  float f32[8] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  int64_t ones[2] = {1, 1};
  TensorView broadcast(const std::vector<int64_t>& sizes) {
    return TensorView(f32, DType::Float32, sizes, std::vector<int64_t>(sizes.size(), 0));
  }
};

// The result of one call: what it threw and how it went.
struct Outcome {
  bool threw_error = false;      // an lstmop::Error
  bool threw_other = false;      // anything else
  std::string argument, what;
  double seconds = 0.0;
  std::size_t largest_request = 0;
};

Outcome run_call(const std::function<void()>& call, std::size_t refuse_above) {
  Outcome r;
  start_allocation_tracking(refuse_above);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    call();
  } catch (const lstmop::Error& e) {
    r.threw_error = true;
    r.argument = e.argument();
    r.what = e.what();
  } catch (const std::exception& e) {
    r.threw_other = true;
    r.what = e.what();
  } catch (...) {
    r.threw_other = true;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.largest_request = largest_allocation_request();
  start_allocation_tracking(SIZE_MAX);
  return r;
}

// Each entry point of a forward call, by name.
// The reference is left out where it could legitimately compute for long (it
// reads stride-0 weights in place, so a huge H costs it time, not memory).
std::vector<std::pair<std::string, std::function<void()>>> forward_calls(
    const ForwardArgs& a, bool with_shapes, bool with_reference = true) {
  std::vector<std::pair<std::string, std::function<void()>>> calls;
  calls.emplace_back("lstm_forward", [a] {
    lstmop::lstm_forward(a.input, a.hx, a.params, a.has_biases, a.num_layers, a.dropout, a.train,
                         a.bidirectional, a.batch_first, a.batch_sizes);
  });
  if (with_reference) {
    calls.emplace_back("reference::lstm_forward", [a] {
      lstmop::reference::lstm_forward(a.input, a.hx, a.params, a.has_biases, a.num_layers,
                                      a.dropout, a.train, a.bidirectional, a.batch_first,
                                      a.batch_sizes);
    });
  }
  if (with_shapes) {
    calls.emplace_back("lstm_forward_shapes", [a] {
      lstmop::lstm_forward_shapes(a.input, a.hx, a.params, a.has_biases, a.num_layers, a.dropout,
                                  a.train, a.bidirectional, a.batch_first, a.batch_sizes);
    });
  }
  return calls;
}

// A backward call on the same arguments, with every saved tensor and gradient
// a stride-0 view of the right shape (S, T, B, H) / output shape.
struct HugeBackward {
  ForwardArgs fwd;
  TensorView grad_y, grad_hy, grad_cy, saved;
};

std::vector<std::pair<std::string, std::function<void()>>> backward_calls(const HugeBackward& b) {
  std::vector<std::pair<std::string, std::function<void()>>> calls;
  const ForwardArgs& a = b.fwd;
  const TensorView& s = b.saved;
  calls.emplace_back("lstm_backward", [b, a, s] {
    lstmop::lstm_backward(b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params, s, s, s, s, s,
                          s, s, a.has_biases, a.num_layers, a.dropout, true, a.bidirectional,
                          a.batch_first, a.batch_sizes);
  });
  calls.emplace_back("reference::lstm_backward", [b, a, s] {
    lstmop::reference::lstm_backward(b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params, s,
                                     s, s, s, s, s, s, a.has_biases, a.num_layers, a.dropout,
                                     true, a.bidirectional, a.batch_first, a.batch_sizes);
  });
  calls.emplace_back("lstm_backward_shapes", [b, a, s] {
    lstmop::lstm_backward_shapes(b.grad_y, b.grad_hy, b.grad_cy, a.input, a.hx, a.params, s, s,
                                 s, s, s, s, s, a.has_biases, a.num_layers, a.dropout, true,
                                 a.bidirectional, a.batch_first, a.batch_sizes);
  });
  return calls;
}

// I = 1, H = 1, one layer, unidirectional, with biases; params and input are
// stride-0 views of `s`.
ForwardArgs tiny_model(Scalars& s, const std::vector<int64_t>& input_sizes, bool train) {
  ForwardArgs a;
  a.input = s.broadcast(input_sizes);
  a.params = {s.broadcast({4, input_sizes.back()}), s.broadcast({4, 1}), s.broadcast({4}),
              s.broadcast({4})};
  a.has_biases = true;
  a.num_layers = 1;
  a.train = train;
  return a;
}

// Every call: an lstmop::Error naming `argument` (when not empty) whose message
// holds each of `contains`, within kFastSeconds, no request above max_request.
void expect_refused_fast(const std::vector<std::pair<std::string, std::function<void()>>>& calls,
                         const std::string& argument, const std::vector<std::string>& contains,
                         std::size_t max_request) {
  for (const auto& named : calls) {
    SCOPED_TRACE(named.first);
    // Requests above max_request are refused by the tracker, so whatever the
    // library does, nothing giant is allocated; the assertion below says
    // whether it asked.
    const Outcome r = run_call(named.second, max_request);
    EXPECT_TRUE(r.threw_error) << (r.threw_other ? "threw another exception: " + r.what
                                                 : std::string("did not throw"));
    EXPECT_FALSE(r.threw_other) << r.what;
    if (!argument.empty()) {
      EXPECT_EQ(r.argument, argument) << r.what;
    }
    for (const std::string& c : contains) {
      EXPECT_NE(r.what.find(c), std::string::npos) << "message lacks '" << c << "': " << r.what;
    }
    EXPECT_EQ(r.what.rfind(r.argument, 0), 0u) << "the message starts with the argument: "
                                                << r.what;
    EXPECT_LT(r.seconds, kFastSeconds) << r.what;
    EXPECT_LE(r.largest_request, max_request)
        << "asked the allocator for " << r.largest_request << " bytes in one block: " << r.what;
  }
}

const int64_t k2To40 = int64_t(1) << 40;

// ---------------------------------------------------------------------------
// Past the call bound: refused before anything of size T is allocated or read
// ---------------------------------------------------------------------------

TEST(HugeSizes, StrideZeroInputOf2To40Steps) {
  Scalars s;
  for (bool train : {false, true}) {
    SCOPED_TRACE(train ? "train" : "eval");
    const ForwardArgs a = tiny_model(s, {k2To40, 1, 1}, train);
    expect_refused_fast(forward_calls(a, true), "input", {"T = 1099511627776", "too large"},
                        kSmallRequest);
  }
  HugeBackward b;
  b.fwd = tiny_model(s, {k2To40, 1, 1}, true);
  b.grad_y = s.broadcast({k2To40, 1, 1});
  b.grad_hy = b.grad_cy = s.broadcast({1, 1, 1});
  b.saved = s.broadcast({1, k2To40, 1, 1});
  expect_refused_fast(backward_calls(b), "input", {"T = 1099511627776"}, kSmallRequest);
}

// The _out form: the caller's outputs are small buffers of a valid problem;
// the input is refused first and no output byte is written.
TEST(HugeSizes, StrideZeroInputOf2To40StepsOutForm) {
  Scalars s;
  const ForwardArgs a = tiny_model(s, {k2To40, 1, 1}, false);
  LstmConfig c;
  c.T = 1;
  c.B = 1;
  c.I = 1;
  c.H = 1;
  c.train = false;
  const LstmProblem valid = make_problem(c, 1500);
  const ForwardResult out = sentinel_forward_outputs(valid);
  expect_refused_fast({{"lstm_forward_out",
                        [&] {
                          lstmop::lstm_forward_out(out.views(), a.input, a.hx, a.params,
                                                   a.has_biases, a.num_layers, 0.0, false,
                                                   false);
                        }}},
                      "input", {"T = 1099511627776"}, kSmallRequest);
  EXPECT_TRUE(untouched(out));
}

TEST(HugeSizes, StrideZeroBatchOf2To40) {
  Scalars s;
  expect_refused_fast(forward_calls(tiny_model(s, {1, k2To40, 1}, false), true), "input",
                      {"B = 1099511627776"}, kSmallRequest);
  ForwardArgs a = tiny_model(s, {k2To40, 1, 1}, true);
  a.batch_first = true;  // (B, T, I): B = 2^40
  expect_refused_fast(forward_calls(a, true), "input", {"B = 1099511627776"}, kSmallRequest);
}

// Variable-length mode: batch_sizes of 2^40 entries (stride 0, all 1) must be
// refused before its values are read one by one.
TEST(HugeSizes, StrideZeroBatchSizesOf2To40Entries) {
  Scalars s;
  ForwardArgs a = tiny_model(s, {k2To40, 1}, true);
  a.batch_sizes = TensorView(s.ones, DType::Int64, {k2To40}, {0});
  expect_refused_fast(forward_calls(a, true), "input", {"T = 1099511627776"}, kSmallRequest);
}

TEST(HugeSizes, StrideZeroInputSizeOf2To40) {
  Scalars s;
  const ForwardArgs a = tiny_model(s, {1, 1, k2To40}, false);
  expect_refused_fast(forward_calls(a, true), "params[0]", {"input_size = 1099511627776"},
                      kSmallRequest);
}

TEST(HugeSizes, StrideZeroHiddenSizeOf2To30) {
  Scalars s;
  const int64_t H = int64_t(1) << 30;
  ForwardArgs a;
  a.input = s.broadcast({1, 1, 1});
  a.params = {s.broadcast({4 * H, 1}), s.broadcast({4 * H, H}), s.broadcast({4 * H}),
              s.broadcast({4 * H})};
  a.has_biases = true;
  a.num_layers = 1;
  expect_refused_fast(forward_calls(a, true), "params[0]", {"hidden_size = 1073741824"},
                      kSmallRequest);
}

// Many layers of stride-0 params: the weights alone are past the bound.
TEST(HugeSizes, ManyWideLayers) {
  Scalars s;
  const int64_t H = int64_t(1) << 16, L = 4096;
  ForwardArgs a;
  a.input = s.broadcast({1, 1, H});
  for (int64_t l = 0; l < L; ++l) {
    a.params.push_back(s.broadcast({4 * H, H}));
    a.params.push_back(s.broadcast({4 * H, H}));
  }
  a.has_biases = false;
  a.num_layers = L;
  expect_refused_fast(forward_calls(a, true), "params[0]", {"too large"}, kSmallRequest);
}

// ---------------------------------------------------------------------------
// Beyond the machine's memory (but within the call bound): refused without a
// request the allocator cannot serve
// ---------------------------------------------------------------------------

// The smallest power of two T with T * 4 bytes (the float32 output of a
// 1-unit LSTM alone) above twice the RAM.
int64_t steps_beyond_ram() {
  const double ram = static_cast<double>(physical_memory_bytes());
  return int64_t(1) << static_cast<int>(std::ceil(std::log2(2.0 * ram / 4.0)));
}

TEST(BeyondMemory, StrideZeroInputLongerThanMemoryHolds) {
  Scalars s;
  const int64_t T = steps_beyond_ram();
  const std::size_t ram = physical_memory_bytes();
  SCOPED_TRACE("T = " + std::to_string(T) + ", RAM " + std::to_string(ram) + " bytes");
  for (bool train : {false, true}) {
    SCOPED_TRACE(train ? "train" : "eval");
    const ForwardArgs a = tiny_model(s, {T, 1, 1}, train);
    expect_refused_fast(forward_calls(a, false), "", {}, ram);
  }
  HugeBackward b;
  b.fwd = tiny_model(s, {T, 1, 1}, true);
  b.grad_y = s.broadcast({T, 1, 1});
  b.grad_hy = b.grad_cy = s.broadcast({1, 1, 1});
  b.saved = s.broadcast({1, T, 1, 1});
  auto calls = backward_calls(b);
  calls.pop_back();  // the shape function computes no values: it may answer
  expect_refused_fast(calls, "", {}, ram);
}

// A hidden size whose w_hh alone (4H x H floats) is beyond the RAM.
TEST(BeyondMemory, StrideZeroWeightsLargerThanMemory) {
  Scalars s;
  const std::size_t ram = physical_memory_bytes();
  int64_t H = 1;
  while (static_cast<double>(4 * H) * static_cast<double>(H) * 4.0 < 2.0 * double(ram)) H *= 2;
  SCOPED_TRACE("H = " + std::to_string(H));
  ForwardArgs a;
  a.input = s.broadcast({1, 1, 1});
  a.params = {s.broadcast({4 * H, 1}), s.broadcast({4 * H, H})};
  a.has_biases = false;
  a.num_layers = 1;
  expect_refused_fast(forward_calls(a, false, false), "", {}, ram);
}

// ---------------------------------------------------------------------------
// Element counts and extents past int64
// ---------------------------------------------------------------------------

TEST(Overflow, ElementCountOfInput) {
  Scalars s;
  const int64_t big[][3] = {{int64_t(1) << 32, int64_t(1) << 32, 1},
                            {int64_t(1) << 21, int64_t(1) << 21, int64_t(1) << 21},
                            {std::numeric_limits<int64_t>::max(), 2, 1}};
  for (const auto& sizes : big) {
    const std::vector<int64_t> v(sizes, sizes + 3);
    SCOPED_TRACE(lstmop::shape_string(v));
    expect_refused_fast(forward_calls(tiny_model(s, v, true), true), "input",
                        {"2^63 elements", lstmop::shape_string(v)}, kSmallRequest);
  }
}

TEST(Overflow, ExtentOfInput) {
  Scalars s;
  const int64_t min = std::numeric_limits<int64_t>::min();
  const int64_t huge = int64_t(1) << 62;
  const std::vector<int64_t> strides[] = {
      {huge, 1, 1}, {-huge, 1, 1}, {min, 1, 1}, {huge / 2, huge / 2, 1}, {3, 1, huge}};
  for (const auto& st : strides) {
    SCOPED_TRACE(lstmop::shape_string(st));
    ForwardArgs a = tiny_model(s, {3, 3, 1}, true);
    a.input = TensorView(s.f32, DType::Float32, {3, 3, 1}, st);
    if (st[2] == huge) a.input.sizes = {1, 1, 2};  // the inner dimension's span overflows
    a.params[0] = s.broadcast({4, a.input.sizes.back()});
    expect_refused_fast(forward_calls(a, true), "input", {"2^63", "strides"}, kSmallRequest);
  }
}

TEST(Overflow, ElementCountOfParamsAndStates) {
  Scalars s;
  const int64_t big = int64_t(1) << 40;
  // w_hh (4H, H) with H = 2^40: 2^82 elements.
  ForwardArgs a = tiny_model(s, {1, 1, 1}, true);
  a.params = {s.broadcast({4 * big, 1}), s.broadcast({4 * big, big}), s.broadcast({4 * big}),
              s.broadcast({4 * big})};
  expect_refused_fast(forward_calls(a, true), "params[1]", {"2^63 elements"}, kSmallRequest);
  // hx of 2^63 or more elements: caught by its own count before its shape.
  a = tiny_model(s, {1, 1, 1}, true);
  a.hx = {s.broadcast({big, big, 1}), s.broadcast({1, 1, 1})};
  expect_refused_fast(forward_calls(a, true), "hx[0]", {"2^63 elements"}, kSmallRequest);
}

TEST(Overflow, ElementCountOfSavedTensorsAndGradients) {
  Scalars s;
  const int64_t big = int64_t(1) << 40;
  HugeBackward b;
  b.fwd = tiny_model(s, {2, 1, 1}, true);
  b.saved = s.broadcast({1, 2, 1, 1});
  b.grad_y = s.broadcast({big, big, 1});  // 2^80 elements
  expect_refused_fast(backward_calls(b), "grad_y", {"2^63 elements"}, kSmallRequest);
  b.grad_y = TensorView();
  b.saved = s.broadcast({big, 2, big, 1});
  expect_refused_fast(backward_calls(b), "i", {"2^63 elements"}, kSmallRequest);
}

// The tracker itself: a giant request is refused, not served.
TEST(AllocationTracker, RefusesAndRecordsGiantRequests) {
  start_allocation_tracking(kSmallRequest);
  void* p = ::operator new(std::size_t(1) << 40, std::nothrow);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(largest_allocation_request(), std::size_t(1) << 40);
  EXPECT_EQ(refused_allocation_requests(), 1u);
  EXPECT_THROW(lstmop::Tensor::empty(DType::Float32, {int64_t(1) << 40}), lstmop::Error);
  start_allocation_tracking(SIZE_MAX);
  EXPECT_GT(physical_memory_bytes(), std::size_t(1) << 28);
}

// ---------------------------------------------------------------------------
// Shape inference on shape-only views, and contiguous strides past int64
// ---------------------------------------------------------------------------

// Shape-only (data null) float32 views of an L-layer bidirectional problem.
struct ShapeOnly {
  TensorView input;
  std::vector<TensorView> params;
  ShapeOnly(int64_t T, int64_t B, int64_t I, int64_t H, int64_t L) {
    input = TensorView(nullptr, DType::Float32, {T, B, I});
    for (int64_t l = 0; l < L; ++l) {
      for (int d = 0; d < 2; ++d) {
        params.emplace_back(nullptr, DType::Float32, std::vector<int64_t>{4 * H, l == 0 ? I : 2 * H});
        params.emplace_back(nullptr, DType::Float32, std::vector<int64_t>{4 * H, H});
        params.emplace_back(nullptr, DType::Float32, std::vector<int64_t>{4 * H});
        params.emplace_back(nullptr, DType::Float32, std::vector<int64_t>{4 * H});
      }
    }
  }
};

// A problem that needs more memory than this machine has (T = 1000, B = 256,
// I = H = 1024, 2 bidirectional layers, training: about 2^35.6 bytes by the
// bound's estimate) has its shapes inferred on shape-only views (meta tensors)
// all the same: shape inference answers alike on every machine. Past 2^44
// bytes it is refused there too.
TEST(ShapeInference, OnShapeOnlyViewsDoesNotDependOnThisMachinesMemory) {
  const ShapeOnly big(1000, 256, 1024, 1024, 2);
  const lstmop::ForwardShapes s =
      lstmop::lstm_forward_shapes(big.input, {}, big.params, true, 2, 0.0, true, true);
  EXPECT_EQ(s.output, (std::vector<int64_t>{1000, 256, 2048}));
  EXPECT_EQ(s.i, (std::vector<int64_t>{4, 1000, 256, 1024}));
  const ShapeOnly huge(int64_t(1) << 24, 1024, 1024, 1024, 2);
  std::string what;
  try {
    (void)lstmop::lstm_forward_shapes(huge.input, {}, huge.params, true, 2, 0.0, true, true);
  } catch (const lstmop::Error& e) {
    what = e.what();
    EXPECT_EQ(e.argument(), "input");
  }
  EXPECT_NE(what.find("2^44 bytes, the bound of shape inference"), std::string::npos) << what;
}

// Sizes whose running product leaves int64 where a size is 0 (no element):
// the outer strides saturate instead of overflowing (UBSan's signed overflow).
TEST(Overflow, ContiguousStridesOfAnEmptyTensorWithHugeSizes) {
  const int64_t k2To40 = int64_t(1) << 40, max = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> sizes{0, k2To40, k2To40};
  EXPECT_EQ(lstmop::contiguous_strides(sizes), (std::vector<int64_t>{max, k2To40, 1}));
  const TensorView v(nullptr, DType::Float32, sizes);
  EXPECT_EQ(v.numel(), 0);
  const lstmop::Tensor t = lstmop::Tensor::empty(DType::Float32, sizes);
  EXPECT_EQ(t.view().numel(), 0);
}

}  // namespace
}  // namespace lstmtest
