#include "allocation_tracker.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace lstmtest {
namespace {

std::atomic<std::size_t> g_largest{0};
std::atomic<std::size_t> g_refused{0};
std::atomic<std::size_t> g_limit{SIZE_MAX};

void* tracked_allocate(std::size_t size, std::size_t alignment, bool nothrow) {
  std::size_t seen = g_largest.load(std::memory_order_relaxed);
  while (size > seen && !g_largest.compare_exchange_weak(seen, size)) {
  }
  void* p = nullptr;
  if (size > g_limit.load(std::memory_order_relaxed)) {
    g_refused.fetch_add(1);
  } else if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(size > 0 ? size : 1);
  } else if (posix_memalign(&p, alignment, size > 0 ? size : 1) != 0) {
    p = nullptr;
  }
  if (p == nullptr && !nothrow) throw std::bad_alloc();
  return p;
}

}  // namespace

void start_allocation_tracking(std::size_t refuse_above) {
  g_limit.store(refuse_above);
  g_largest.store(0);
  g_refused.store(0);
}

std::size_t largest_allocation_request() { return g_largest.load(); }
std::size_t refused_allocation_requests() { return g_refused.load(); }

std::size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
}

}  // namespace lstmtest

// The replaced global allocation functions.
using lstmtest::tracked_allocate;
constexpr std::size_t kPlain = alignof(std::max_align_t);

void* operator new(std::size_t n) { return tracked_allocate(n, kPlain, false); }
void* operator new[](std::size_t n) { return tracked_allocate(n, kPlain, false); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return tracked_allocate(n, kPlain, true);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return tracked_allocate(n, kPlain, true);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return tracked_allocate(n, static_cast<std::size_t>(a), false);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return tracked_allocate(n, static_cast<std::size_t>(a), false);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return tracked_allocate(n, static_cast<std::size_t>(a), true);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return tracked_allocate(n, static_cast<std::size_t>(a), true);
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
