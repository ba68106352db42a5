// The pair of threads behind split mode and the parallel directions
// (driver/threads.h): both parts run, at the same time, meeting at the
// barrier in lockstep, also when called from inside an OpenMP parallel region
// (a team of one there: the helper thread), and the second thread never runs
// on the CPU its caller is on when the caller may use another (a helper placed
// on its caller's CPU passed the core back and forth at every barrier: 10x
// slower steps).
#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "driver/threads.h"

namespace {

using lstmop::detail::PairBarrier;
using lstmop::detail::run_pair;

std::set<int> allowed_cpus_of(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  std::set<int> cpus;
  while (std::getline(status, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) != 0) continue;
    std::stringstream list(line.substr(line.find(':') + 1));
    std::string range;
    while (std::getline(list, range, ',')) {
      const std::size_t dash = range.find('-');
      const int first = std::stoi(range.substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
      for (int c = first; c <= last; ++c) cpus.insert(c);
    }
  }
  return cpus;
}

pid_t own_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

TEST(ThreadPair, PartsMeetInLockstepAtTheBarrier) {
  PairBarrier barrier;
  std::atomic<int> step_of[2] = {{0}, {0}};
  std::atomic<bool> out_of_step{false};
  const bool ran = run_pair([&](int part) {
    for (int step = 1; step <= 500; ++step) {
      step_of[part].store(step);
      barrier.wait();
      // Both parts have stored this step before either passes the barrier.
      if (step_of[1 - part].load() < step) out_of_step.store(true);
      barrier.wait();
    }
  });
  ASSERT_TRUE(ran);
  EXPECT_EQ(step_of[0].load(), 500);
  EXPECT_EQ(step_of[1].load(), 500);
  EXPECT_FALSE(out_of_step.load());
}

TEST(ThreadPair, SecondThreadRunsOffTheCallersCpu) {
  const std::set<int> allowed = allowed_cpus_of(own_tid());
  if (allowed.size() < 2) {
    GTEST_SKIP() << "this process may run on " << allowed.size()
                 << " CPU: no other CPU to keep the helper on";
  }
  // Pauses between calls: the helper sleeps on its condition variable, and a
  // wake-up from the caller's CPU is where the scheduler placed it there.
  int checked = 0;
  for (int call = 0; call < 20; ++call) {
    std::this_thread::sleep_for(std::chrono::milliseconds(call % 2 == 0 ? 1 : 20));
    const int caller_before = sched_getcpu();
    std::atomic<int> helper_cpu{-1};
    std::atomic<pid_t> helper_tid{0};
    PairBarrier barrier;
    ASSERT_TRUE(run_pair([&](int part) {
      if (part == 1) {
        helper_cpu.store(sched_getcpu());
        helper_tid.store(own_tid());
      }
      barrier.wait();
    }));
    const int caller_after = sched_getcpu();
    if (caller_before != caller_after) continue;  // the caller moved: nothing to compare
    ++checked;
    EXPECT_NE(helper_cpu.load(), caller_before) << "call " << call;
    std::set<int> expected = allowed;
    expected.erase(caller_before);
    EXPECT_EQ(allowed_cpus_of(helper_tid.load()), expected) << "call " << call;
  }
  EXPECT_GE(checked, 10) << "the caller changed CPUs during most calls";
}

TEST(ThreadPair, PairsCalledFromInsideAnOpenMpRegionRunInLockstep) {
  // Each thread of an outer team runs pairs of its own: no team of two can be
  // had there, so the second part goes to the helper (one caller) or a thread
  // of its own (the other); a part left waiting at the barrier would hang.
  std::atomic<int> completed{0};
#pragma omp parallel num_threads(2)
  {
    for (int call = 0; call < 20; ++call) {
      PairBarrier barrier;
      std::atomic<int> arrived{0};
      const bool ran = run_pair([&](int) {
        for (int step = 0; step < 50; ++step) barrier.wait();
        arrived.fetch_add(1);
      });
      if (ran && arrived.load() == 2) completed.fetch_add(1);
    }
  }
  EXPECT_EQ(completed.load(), 2 * 20);
}

}  // namespace
