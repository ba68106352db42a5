// Test-only replacement of the global operator new / delete (every variant,
// aligned and nothrow included) that records the largest single request and
// refuses requests above a limit without passing them on to malloc: a test can
// then show that a call never asked for a giant block, and a giant request can
// neither succeed lazily (overcommit) nor get the process OOM-killed.
#pragma once

#include <cstddef>

namespace lstmtest {

// From now on: record the largest request, refuse (nullptr / std::bad_alloc)
// every request of more than refuse_above bytes.
void start_allocation_tracking(std::size_t refuse_above);
// The largest request since start_allocation_tracking (0 if none).
std::size_t largest_allocation_request();
// Requests refused since start_allocation_tracking.
std::size_t refused_allocation_requests();
// Total RAM of the machine (sysconf), the most a single allocation could get.
std::size_t physical_memory_bytes();

}  // namespace lstmtest
