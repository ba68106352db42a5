// Internal: the operators' only parallelism: independent tasks (the two
// directions of a layer) on their own threads. Each task must write memory no
// other task touches, so results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace lstmop {
namespace detail {

// Runs task(0), ..., task(count - 1), spread over min(max_threads, count)
// threads (the caller's included). Rethrows the first exception of a task.
// The caller decides max_threads once (from get_num_threads()) and sizes its
// per-task workspaces by it, so a concurrent set_num_threads cannot change the
// split mid-call.
void run_tasks(int64_t count, int64_t max_threads, const std::function<void(int64_t)>& task);

}  // namespace detail
}  // namespace lstmop
