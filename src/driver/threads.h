// Internal: the operators' parallelism. Independent tasks (the two
// directions of a layer, fixed halves of a product) on their own threads, and
// a pair of threads in lockstep (one direction's hidden units in two halves,
// a barrier per step). Every task writes memory no other task touches in the
// same phase, and the work of a task never depends on the thread count, so
// results do not either.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

namespace lstmop {
namespace detail {

// Runs task(0), ..., task(count - 1), spread over min(max_threads, count)
// threads (the caller's included; two as run_pair finds its second thread).
// Rethrows the first exception of a task.
// The caller decides max_threads once (from get_num_threads()) and sizes its
// per-task workspaces by it, so a concurrent set_num_threads cannot change the
// split mid-call.
void run_tasks(int64_t count, int64_t max_threads, const std::function<void(int64_t)>& task);

// A barrier for the two threads of run_pair: spins briefly, then yields.
class PairBarrier {
 public:
  void wait();

 private:
  std::atomic<int> arrived_{0};
  std::atomic<int64_t> generation_{0};
};

// Runs part(0) on the calling thread and part(1) on another one, at the same
// time (the parts may meet at a PairBarrier): the other thread of an OpenMP
// team of two (in a torch process torch's own worker, so that the two do not
// share a core), else lstmop's helper thread, else a new thread; it is kept
// off the caller's CPU where the caller may run on two or more. Returns false,
// having run nothing, when no thread can be had: the caller then does the
// work another way. Neither part may throw.
bool run_pair(const std::function<void(int)>& part);

}  // namespace detail
}  // namespace lstmop
