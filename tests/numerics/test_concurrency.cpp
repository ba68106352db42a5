// Concurrency and thread-count determinism (run under ThreadSanitizer by
// scripts/test-hardening.sh):
// - 8 threads call forward and backward at once, repeatedly, on different
//   data (pairs of threads share the same read-only params and hx, each has
//   its own input and gradients); every result is bitwise what a sequential
//   call gives. With the core's own thread count 1 and 2 (then every
//   bidirectional layer runs its directions on two more threads).
// - Results are bitwise identical across repeated runs and across 1 and 2
//   threads: float32, bfloat16, float16, float64; fixed and variable length;
//   forward and backward; split mode, a few rows' unpacked steps in unit
//   parts, the chained form.
// Worker threads only record what they find; all gtest assertions run on the
// main thread.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "lstm_test_support.h"

namespace lstmtest {
namespace {

// "" if every result of a and b has the same shape and bytes, else the first
// that differs.
std::string first_difference(const AllResults& a, const AllResults& b, bool train) {
  NamedViews x = forward_outputs(a.fwd), y = forward_outputs(b.fwd);
  if (train) {
    for (const auto& n : backward_outputs(a.bwd)) x.push_back(n);
    for (const auto& n : backward_outputs(b.bwd)) y.push_back(n);
  }
  if (x.size() != y.size()) return "result count";
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (x[k].second.sizes != y[k].second.sizes || to_bytes(x[k].second) != to_bytes(y[k].second)) {
      return x[k].first;
    }
  }
  return "";
}

// Small enough for ThreadSanitizer (5-15x slower), large enough that the
// kernels run their vector bodies and remainders (H = 19, 4H = 76).
std::vector<LstmConfig> configs() {
  std::vector<LstmConfig> out;
  std::mt19937_64 rng(21);
  const DType dtypes[] = {DType::Float32, DType::BFloat16, DType::Float16, DType::Float64};
  for (int k = 0; k < 8; ++k) {
    LstmConfig c;
    c.dtype = dtypes[k % 4];
    c.T = 4 + k % 3;
    c.B = 5;
    c.I = 7;
    c.H = 19;
    c.L = 1 + k % 2;
    c.bidirectional = k % 4 != 3;
    c.packed = k % 3 == 1;
    c.batch_first = !c.packed && k % 4 == 2;
    c.with_hx = k % 5 != 4;
    c.train = k != 6;
    if (c.packed) c.lengths = random_lengths(c.T, c.B, rng);
    out.push_back(c);
  }
  // One direction with enough recurrent work for split mode on two threads
  // (the hidden units halved, a barrier per step; src/README.md), fixed and
  // variable length, float32 and bfloat16 (and bfloat16 inference, which on
  // an AMX CPU splits its steps on the tiles too).
  for (int k = 0; k < 3; ++k) {
    LstmConfig c;
    c.dtype = k == 0 ? DType::Float32 : DType::BFloat16;
    c.train = k != 2;
    c.T = 20;
    c.B = 16;
    c.I = 5;
    c.H = 96;  // 16 x 96 x 384 multiply-adds a step, >= 16 steps: above split mode's bounds
    c.packed = k == 1;
    if (c.packed) {
      for (int64_t b = 0; b < c.B; ++b) c.lengths.push_back(20 - b / 2);
    }
    out.push_back(c);
  }
  // bfloat16 training with 2^23 multiply-adds of dh a step: on an AMX CPU
  // the backward's steps split on the tiles (lstm_plan.cpp).
  LstmConfig dh_split;
  dh_split.dtype = DType::BFloat16;
  dh_split.T = 4;
  dh_split.B = 32;
  dh_split.I = 5;
  dh_split.H = 256;
  out.push_back(dh_split);
  // Unpacked steps of a few rows (lstm_plan.h: at most 3 rows, a w_hh of
  // 1 MiB): two parts of the units in lockstep on two threads, variable
  // length; and the chained form (packed weights of 1 MiB and more, batch 4),
  // bidirectional: each direction on its thread.
  LstmConfig few;
  few.T = 6;
  few.B = 2;
  few.I = 5;
  few.H = 256;
  few.packed = true;
  few.lengths = {6, 3};
  out.push_back(few);
  LstmConfig chained;
  chained.T = 3;
  chained.B = 4;
  chained.I = 192;
  chained.H = 192;
  chained.bidirectional = true;
  out.push_back(chained);
  return out;
}

class ThreadsTest : public ::testing::Test {
 protected:
  void TearDown() override { lstmop::set_num_threads(1); }
};

// 8 workers: worker w runs configuration kPairConfigs[w % 4] with its own
// data; workers w and w + 4 share params and hx (the same storage, read
// concurrently) and differ in input and gradients. The four: float32 fixed
// length bidirectional; bfloat16 variable length, 2 layers; float16
// batch_first train=False; float64 variable length, 2 layers, unidirectional.
void run_eight_workers(int core_threads) {
  const std::vector<LstmConfig> cfgs = configs();
  const std::size_t kPairConfigs[] = {0, 1, 6, 7};
  struct Work {
    LstmProblem p;
    LstmGrads g;
    AllResults expected;
  };
  std::vector<Work> work(8);
  for (int w = 0; w < 8; ++w) {
    work[w].p = make_problem(cfgs[kPairConfigs[w % 4]], 1900 + static_cast<uint64_t>(w));
    if (w >= 4) {
      work[w].p.params = work[w - 4].p.params;
      work[w].p.hx = work[w - 4].p.hx;
    }
    work[w].g = make_grads(work[w].p, 1950 + static_cast<uint64_t>(w));
  }
  // Sequential expectations with the same core thread count.
  lstmop::set_num_threads(core_threads);
  for (Work& wk : work) wk.expected = run_all(wk.p, wk.g);

  constexpr int kRepeats = 3;
  std::vector<std::string> failures(8);
  std::mutex m;
  std::condition_variable cv;
  int waiting = 0;
  bool go = false;
  std::vector<std::thread> threads;
  for (int w = 0; w < 8; ++w) {
    threads.emplace_back([&, w] {
      {
        std::unique_lock<std::mutex> lock(m);
        ++waiting;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
      }
      const Work& wk = work[w];
      try {
        for (int r = 0; r < kRepeats; ++r) {
          const std::string diff = first_difference(run_all(wk.p, wk.g), wk.expected, wk.p.cfg.train);
          if (!diff.empty()) {
            failures[w] = "repeat " + std::to_string(r) + ": " + diff + " differs";
            return;
          }
        }
      } catch (const std::exception& e) {
        failures[w] = std::string("threw: ") + e.what();
      }
    });
  }
  {
    // Release all workers at once.
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return waiting == 8; });
    go = true;
    cv.notify_all();
  }
  for (std::thread& t : threads) t.join();
  for (int w = 0; w < 8; ++w) {
    EXPECT_EQ(failures[w], "") << "worker " << w << " (" << work[w].p.cfg.name() << ")";
  }
}

TEST_F(ThreadsTest, EightCallersAtOnceGetTheSequentialResults) { run_eight_workers(1); }

TEST_F(ThreadsTest, EightCallersAtOnceWithTwoCoreThreadsEach) { run_eight_workers(2); }

TEST_F(ThreadsTest, BitwiseIdenticalAcrossRunsAndOneOrTwoThreads) {
  uint64_t seed = 2000;
  for (const LstmConfig& c : configs()) {
    SCOPED_TRACE(c.name());
    const LstmProblem p = make_problem(c, ++seed);
    const LstmGrads g = make_grads(p, ++seed);
    lstmop::set_num_threads(1);
    const AllResults one = run_all(p, g);
    EXPECT_EQ(first_difference(run_all(p, g), one, c.train), "") << "second run, 1 thread";
    lstmop::set_num_threads(2);
    EXPECT_EQ(first_difference(run_all(p, g), one, c.train), "") << "2 threads";
    EXPECT_EQ(first_difference(run_all(p, g), one, c.train), "") << "2 threads, again";
  }
}

// The thread count may change between calls made by other threads: each call
// still gets the sequential bits (set_num_threads is process-wide and atomic).
TEST_F(ThreadsTest, ThreadCountChangingWhileOthersCall) {
  const LstmConfig c = configs()[0];
  const LstmProblem p = make_problem(c, 2100);
  const LstmGrads g = make_grads(p, 2101);
  const AllResults expected = run_all(p, g);
  std::atomic<bool> stop{false};
  std::thread toggler([&] {
    int n = 1;
    while (!stop.load()) {
      lstmop::set_num_threads(n);
      n = 3 - n;
      std::this_thread::yield();
    }
  });
  std::vector<std::string> failures(4);
  std::vector<std::thread> callers;
  for (int w = 0; w < 4; ++w) {
    callers.emplace_back([&, w] {
      for (int r = 0; r < 3 && failures[w].empty(); ++r) {
        failures[w] = first_difference(run_all(p, g), expected, c.train);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  stop.store(true);
  toggler.join();
  for (int w = 0; w < 4; ++w) EXPECT_EQ(failures[w], "") << "caller " << w;
}

}  // namespace
}  // namespace lstmtest
