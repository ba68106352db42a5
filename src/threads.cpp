// Thread count setting and the task runner of threads.h.
#include "threads.h"

#include <algorithm>
#include <atomic>
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

void run_tasks(int64_t count, int64_t max_threads, const std::function<void(int64_t)>& task) {
  const int64_t workers = std::min<int64_t>(max_threads, count);
  if (workers <= 1) {
    for (int64_t k = 0; k < count; ++k) task(k);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
  auto work = [&](int64_t w) {
    try {
      for (int64_t k = w; k < count; k += workers) task(k);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
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
  std::thread second;
  try {
    second = std::thread([&part] { part(1); });
  } catch (const std::system_error&) {
    return false;
  }
  part(0);
  second.join();
  return true;
}

}  // namespace detail
}  // namespace lstmop
