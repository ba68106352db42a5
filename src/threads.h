// Internal: the operators' only parallelism: independent tasks (the two
// directions of a layer) on their own threads. Each task must write memory no
// other task touches, so results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace lstmop {
namespace detail {

// Runs task(0), ..., task(count - 1), spread over min(get_num_threads(), count)
// threads (the caller's included). Rethrows the first exception of a task.
void run_tasks(int64_t count, const std::function<void(int64_t)>& task);

}  // namespace detail
}  // namespace lstmop
