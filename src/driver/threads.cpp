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
#include <omp.h>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "lstmop/lstm.h"

// ThreadSanitizer builds (GCC defines __SANITIZE_THREAD__, clang answers
// __has_feature).
#if defined(__SANITIZE_THREAD__)
#define LSTMOP_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LSTMOP_THREAD_SANITIZER 1
#endif
#endif
#ifndef LSTMOP_THREAD_SANITIZER
#define LSTMOP_THREAD_SANITIZER 0
#endif

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

// The CPUs of `allowed` without `cpu`, or all of them when that would leave
// none.
cpu_set_t without_cpu(const cpu_set_t& allowed, int cpu) {
  cpu_set_t result = allowed;
  if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &result) && CPU_COUNT(&result) >= 2) {
    CPU_CLR(cpu, &result);
  }
  return result;
}

// A thread's CPUs as lstmop last set them (per thread it places).
class Placement {
 public:
  bool is(const cpu_set_t& cpus) const { return placed_ && CPU_EQUAL(&cpus, &cpus_); }
  // Sets thread tid's CPUs (0: the calling thread's), remembered if it took.
  void set(pid_t tid, const cpu_set_t& cpus) {
    if (sched_setaffinity(tid, sizeof cpus, &cpus) == 0) {
      cpus_ = cpus;
      placed_ = true;
    }
  }

 private:
  bool placed_ = false;
  cpu_set_t cpus_;
};

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
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    const cpu_set_t wanted = without_cpu(allowed, cpu);
    if (!placement_.is(wanted)) placement_.set(tid_.load(std::memory_order_acquire), wanted);
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
  Placement placement_;  // set by the claiming caller only
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

// The process that loaded lstmop. A child forked from it (without exec) has
// the parent's libgomp state but not its threads: a parallel region there
// waits for threads that do not exist, so a forked child uses the helper.
const pid_t g_loading_process = getpid();

// Runs first() on the calling thread and second() on the other thread of an
// OpenMP team of two, at the same time; returns false, having run nothing,
// when the team has one thread (a call from inside a parallel region, a
// thread limit), in a forked child, and in ThreadSanitizer builds (TSan does
// not see libgomp's synchronisation). In a torch process the team's second
// thread is torch's own OpenMP worker (one libgomp per process): after each
// of torch's parallel operations it spins on the other core for a while, and
// a helper thread of lstmop's own shared that core with it (S2 training on
// two threads in a loop with torch operations between the calls: 30 ms a
// step on the helper, 19 on the team, the C++ runner's 20). The second thread
// is kept off the caller's CPU like the helper, where its affinity is the
// caller's (or lstmop's last setting): a binding the user gave it
// (OMP_PROC_BIND, ...) is left alone.
bool run_on_team(const std::function<void()>& first, const std::function<void()>& second) {
#if LSTMOP_THREAD_SANITIZER
  (void)first, (void)second;
  return false;
#else
  if (omp_in_parallel() || getpid() != g_loading_process) return false;
  cpu_set_t caller_allowed;
  CPU_ZERO(&caller_allowed);
  const bool know_allowed = sched_getaffinity(0, sizeof caller_allowed, &caller_allowed) == 0;
  const int caller_cpu = sched_getcpu();
  int team = 0;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    team = omp_get_num_threads();
    // (the single's barrier: every thread reads the team size before any work)
    if (team == 2) {
      if (omp_get_thread_num() == 0) {
        first();
      } else {
        if (know_allowed) {
          thread_local Placement placement;
          cpu_set_t current;
          CPU_ZERO(&current);
          if (sched_getaffinity(0, sizeof current, &current) == 0 &&
              (CPU_EQUAL(&current, &caller_allowed) || placement.is(current))) {
            const cpu_set_t wanted = without_cpu(caller_allowed, caller_cpu);
            if (!CPU_EQUAL(&wanted, &current)) placement.set(0, wanted);
          }
        }
        second();
      }
    }
  }
  return team == 2;
#endif
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
  const auto rethrow_first = [&errors] {
    for (const std::exception_ptr& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  };
  if (workers == 2) {
    const std::function<void()> first = [&work] { work(0); };
    const std::function<void()> second = [&work] { work(1); };
    bool ran = run_on_team(first, second);
    if (!ran) {
      if (Helper* h = helper(); h != nullptr && h->try_start(&second)) {
        work(0);
        h->wait_done();
        ran = true;
      }
    }
    if (ran) {
      rethrow_first();
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
  rethrow_first();
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
  const std::function<void()> first_part = [&part] { part(0); };
  if (run_on_team(first_part, second_part)) return true;
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
