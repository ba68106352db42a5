// Thread count setting and the task runner of threads.h.
#include "driver/threads.h"

#include "common/float_environment.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <exception>
#include <immintrin.h>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "lstmop/lstm.h"

namespace lstmop {
namespace {
std::atomic<int> g_num_threads{1};
}  // namespace

void set_num_threads(int num_threads) {
  if (num_threads < 1) {
    throw Error("num_threads", "num_threads must be >= 1, got " + std::to_string(num_threads));
  }
  g_num_threads.store(num_threads);
}

int get_num_threads() { return g_num_threads.load(); }

namespace detail {
namespace {

// Waits until ready() holds: spins (pause) for about spin_us microseconds,
// then yields the core between checks.
template <class Ready>
void spin_then_yield(Ready ready, int64_t spin_us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (int64_t k = 0; !ready(); ++k) {
    if (k % 64 != 63 || std::chrono::steady_clock::now() < until) {
      _mm_pause();
    } else {
      std::this_thread::yield();
    }
  }
}

// One persistent helper thread. A thread started per call begins on its
// parent's core, and while the parent spins at the first barrier the
// scheduler may take milliseconds to move it (measured: median S3 step loop
// 4x slower than its best); a helper that lives between calls stays where it
// runs. One caller at a time claims it; others start a thread of their own.
//
// Where the caller may run on two or more CPUs, the helper may not run on the
// caller's current one. Woken from the caller's CPU after a pause (sleeping on
// its condition variable), the helper was placed on that same CPU, and the
// pair's per-step barriers then passed the core back and forth, one yield a
// step, until the scheduler balanced them, which a call of a few milliseconds
// did not outlast (2-vCPU VM, B = 8 bfloat16 steps after 250 ms pauses: 10-16
// ms a call instead of 1.1).
class Helper {
 public:
  // Returns once the thread runs (its id known, so that the first job is
  // placed too).
  Helper() {
    std::thread([this] { loop(); }).detach();
    while (tid_.load(std::memory_order_acquire) == 0) std::this_thread::yield();
  }

  // Starts job on the helper, or returns false when another caller has it.
  bool try_start(const std::function<void()>* job) {
    if (!claim_.try_lock()) return false;
    keep_off(sched_getcpu());
    done_.store(false, std::memory_order_relaxed);
    job_.store(job, std::memory_order_release);
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_one();
    return true;
  }

  void wait_done() {
    spin_then_yield([this] { return done_.load(std::memory_order_acquire); }, 200);
    claim_.unlock();
  }

 private:
  // The helper's CPUs: the calling thread's allowed set without `cpu` (all of
  // it when that would leave none). A system call only when the set changes.
  void keep_off(int cpu) {
    const pid_t tid = tid_.load(std::memory_order_acquire);
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (tid == 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed) && CPU_COUNT(&allowed) >= 2) {
      CPU_CLR(cpu, &allowed);
    }
    if (placed_ && CPU_EQUAL(&allowed, &placement_)) return;
    if (sched_setaffinity(tid, sizeof allowed, &allowed) == 0) {
      placement_ = allowed;
      placed_ = true;
    }
  }

  void loop() {
    tid_.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
    for (;;) {
      // The next job usually follows within microseconds (the next layer):
      // spin a little before sleeping.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
      while (job_.load(std::memory_order_acquire) == nullptr &&
             std::chrono::steady_clock::now() < until) {
        _mm_pause();
      }
      if (job_.load(std::memory_order_acquire) == nullptr) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return job_.load(std::memory_order_acquire) != nullptr; });
      }
      const std::function<void()>* job = job_.exchange(nullptr, std::memory_order_acq_rel);
      (*job)();
      done_.store(true, std::memory_order_release);
    }
  }

  std::mutex claim_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<const std::function<void()>*> job_{nullptr};
  std::atomic<bool> done_{false};
  std::atomic<pid_t> tid_{0};
  // The helper's affinity as last set (by the claiming caller only).
  cpu_set_t placement_;
  bool placed_ = false;
};

// The process's helper, started on first use; a forked child (which has no
// copy of the thread) starts its own. Never destroyed: the detached thread
// sleeps on its condition variable when the process ends.
Helper* helper() {
  static std::mutex mutex;
  static Helper* current = nullptr;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (current == nullptr || owner != getpid()) {
    try {
      current = new Helper();
    } catch (const std::system_error&) {
      return nullptr;
    }
    owner = getpid();
  }
  return current;
}

}  // namespace

void run_tasks(int64_t count, int64_t max_threads, const std::function<void(int64_t)>& task) {
  const int64_t workers = std::min<int64_t>(max_threads, count);
  if (workers <= 1) {
    for (int64_t k = 0; k < count; ++k) task(k);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
  // Every worker computes in the calling thread's environment (float_environment.h).
  const uint32_t control_word = read_control_word();
  auto work = [&](int64_t w) {
    const ControlWordScope environment(control_word);
    try {
      for (int64_t k = w; k < count; k += workers) task(k);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  if (workers == 2) {
    const std::function<void()> second = [&work] { work(1); };
    if (Helper* h = helper(); h != nullptr && h->try_start(&second)) {
      work(0);
      h->wait_done();
      for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
      }
      return;
    }
  }
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(workers - 1));
  try {
    for (int64_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  } catch (const std::system_error&) {
    // No thread to be had: run the remaining workers' tasks here.
    for (int64_t w = static_cast<int64_t>(threads.size()) + 1; w < workers; ++w) work(w);
  }
  work(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

void PairBarrier::wait() {
  const int64_t generation = generation_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) == 1) {
    arrived_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  for (int spin = 0; generation_.load(std::memory_order_acquire) == generation; ++spin) {
    if (spin < 4096) {
      _mm_pause();
    } else {
      std::this_thread::yield();
    }
  }
}

bool run_pair(const std::function<void(int)>& part) {
  // The second part computes in the calling thread's environment (float_environment.h).
  const uint32_t control_word = read_control_word();
  const std::function<void()> second_part = [&part, control_word] {
    const ControlWordScope environment(control_word);
    part(1);
  };
  if (Helper* h = helper(); h != nullptr && h->try_start(&second_part)) {
    part(0);
    h->wait_done();
    return true;
  }
  std::thread second;
  try {
    second = std::thread(second_part);
  } catch (const std::system_error&) {
    return false;
  }
  part(0);
  second.join();
  return true;
}

}  // namespace detail
}  // namespace lstmop
