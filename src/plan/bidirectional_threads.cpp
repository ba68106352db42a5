// The choice between directions in parallel and split mode for bidirectional
// layers on two threads (bidirectional_threads.h).
#include "plan/bidirectional_threads.h"

#include <time.h>

#include <algorithm>

namespace lstmop {
namespace detail {

namespace {

struct State {
  std::atomic<int> mode{static_cast<int>(BidirectionalThreads::Mode::Adaptive)};
  std::atomic<bool> split{false};
  // Calls in a row that asked for the other way.
  std::atomic<int> pending{0};
  std::atomic<int64_t> switches{0};
  std::atomic<int64_t> parallel_reports{0}, split_reports{0};
};

State& state() {
  static State s;
  return s;
}

// Counts a call that asks for the other way; switches at kCallsToSwitch in a row.
void vote(bool wants_other, bool to_split) {
  State& s = state();
  if (s.split.load(std::memory_order_relaxed) == to_split) return;  // already there
  if (!wants_other) {
    s.pending.store(0, std::memory_order_relaxed);
    return;
  }
  if (s.pending.fetch_add(1, std::memory_order_relaxed) + 1 >=
      BidirectionalThreads::kCallsToSwitch) {
    s.pending.store(0, std::memory_order_relaxed);
    s.split.store(to_split, std::memory_order_relaxed);
    s.switches.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

bool BidirectionalThreads::split() {
  const State& s = state();
  switch (static_cast<Mode>(s.mode.load(std::memory_order_relaxed))) {
    case Mode::Parallel: return false;
    case Mode::Split: return true;
    case Mode::Adaptive: break;
  }
  return s.split.load(std::memory_order_relaxed);
}

void BidirectionalThreads::record_parallel(int64_t time0, int64_t time1) {
  state().parallel_reports.fetch_add(1, std::memory_order_relaxed);
  if (time0 <= 0 || time1 <= 0) return;
  const double ratio = static_cast<double>(std::max(time0, time1)) /
                       static_cast<double>(std::min(time0, time1));
  vote(ratio >= kSplitRatio, true);
}

void BidirectionalThreads::record_split(int64_t boundary, int64_t H, int64_t plan_boundary) {
  state().split_reports.fetch_add(1, std::memory_order_relaxed);
  if (boundary <= 0 || boundary >= H || plan_boundary <= 0 || plan_boundary >= H) return;
  const double share = static_cast<double>(boundary) / static_cast<double>(H - boundary);
  const double plan_share =
      static_cast<double>(plan_boundary) / static_cast<double>(H - plan_boundary);
  const double ratio = std::max(share / plan_share, plan_share / share);
  vote(ratio < kParallelRatio, false);
}

void BidirectionalThreads::set_mode(Mode mode) {
  state().mode.store(static_cast<int>(mode), std::memory_order_relaxed);
}

void BidirectionalThreads::reset() {
  State& s = state();
  s.split.store(false, std::memory_order_relaxed);
  s.pending.store(0, std::memory_order_relaxed);
}

int64_t BidirectionalThreads::switches() {
  return state().switches.load(std::memory_order_relaxed);
}

int64_t BidirectionalThreads::parallel_reports() {
  return state().parallel_reports.load(std::memory_order_relaxed);
}

int64_t BidirectionalThreads::split_reports() {
  return state().split_reports.load(std::memory_order_relaxed);
}

int64_t thread_cpu_ns() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + static_cast<int64_t>(t.tv_nsec);
#else
  return 0;
#endif
}

}  // namespace detail
}  // namespace lstmop
