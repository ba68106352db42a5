// The drivers' scratch arena and its per-thread block cache (workspace.h).
#include "common/workspace.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "lstmop/error.h"
#include "lstmop/lstm.h"

namespace lstmop {
namespace detail {
namespace {

constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHugePage = std::size_t{2} << 20;

std::size_t block_alignment(std::size_t bytes) {
  return bytes >= kHugePageHintMinBytes ? kHugePage : kAlignment;
}

// A block of at least `bytes`, or null; *size: its bytes. 64-byte aligned,
// and from kHugePageHintMinBytes on 2 MiB-aligned, a whole number of 2 MiB
// pages and advised as transparent huge pages where huge_page_hint_enabled().
// From the aligned operator new (which tests replace to watch the sizes).
void* allocate_block(std::size_t bytes, std::size_t* size) {
  const std::size_t alignment = block_alignment(bytes);
  if (bytes > SIZE_MAX - alignment) return nullptr;
  *size = (bytes + alignment - 1) / alignment * alignment;
  void* p = ::operator new[](*size, std::align_val_t(alignment), std::nothrow);
  if (p != nullptr && alignment == kHugePage) advise_huge_pages(p, *size);
  return p;
}

// Frees a block allocate_block returned with this size.
void free_block(void* p, std::size_t size) {
  if (p != nullptr) ::operator delete[](p, std::align_val_t(block_alignment(size)));
}

// The calling thread's cached block, freed when the thread ends.
struct BlockCache {
  void* block = nullptr;
  std::size_t bytes = 0;
  ~BlockCache() { free_block(block, bytes); }
};

BlockCache& thread_cache() {
  thread_local BlockCache cache;
  return cache;
}

[[noreturn]] void too_large(const std::string& what) {
  throw Error("input", "input is too large: allocating the workspace for " + what + " failed");
}

// The huge-page default where LSTMOP_HUGE_PAGES does not decide.
std::atomic<bool> huge_pages_by_default{false};

}  // namespace

void set_huge_page_hint_default(bool enabled) {
  huge_pages_by_default.store(enabled, std::memory_order_relaxed);
}

bool huge_page_hint_enabled() {
  // 1: on, 0: off, unset or anything else: the default.
  static const int env = [] {
    const char* value = std::getenv("LSTMOP_HUGE_PAGES");
    if (value == nullptr) return -1;
    return std::string(value) == "1" ? 1 : std::string(value) == "0" ? 0 : -1;
  }();
  return env >= 0 ? env == 1 : huge_pages_by_default.load(std::memory_order_relaxed);
}

void advise_huge_pages(void* p, std::size_t bytes) {
  if (huge_page_hint_enabled()) madvise(p, bytes, MADV_HUGEPAGE);
}

void WorkspaceArena::add_part(void** slot, const char* what, int64_t count,
                              std::size_t element_size) {
  const int64_t n = count > 0 ? count : 1;
  std::size_t bytes = 0, end = 0;
  const std::size_t offset = (total_ + kAlignment - 1) / kAlignment * kAlignment;
  if (__builtin_mul_overflow(static_cast<std::size_t>(n), element_size, &bytes) ||
      __builtin_add_overflow(offset, bytes, &end) ||
      end > static_cast<std::size_t>(INT64_MAX)) {
    too_large(std::string(what) + " (" + std::to_string(count) + " elements)");
  }
  parts_.push_back(Part{slot, what, count, offset});
  total_ = end;
}

void WorkspaceArena::commit() {
  BlockCache& cache = thread_cache();
  const std::size_t need = total_ > 0 ? total_ : 1;
  if (cache.block != nullptr && cache.bytes >= need) {
    block_ = cache.block;
    block_bytes_ = cache.bytes;
    cache.block = nullptr;
    cache.bytes = 0;
  } else {
    // Too small for this call: freed first, so the call's peak is its own.
    free_block(cache.block, cache.bytes);
    cache.block = nullptr;
    cache.bytes = 0;
    block_ = allocate_block(need, &block_bytes_);
    if (block_ == nullptr) {
      std::string largest = "scratch";
      int64_t largest_count = 0;
      for (const Part& p : parts_) {
        if (p.count > largest_count) largest = p.what, largest_count = p.count;
      }
      too_large("this call (" + std::to_string(need) + " bytes; the largest part is " + largest +
                ", " + std::to_string(largest_count) + " elements)");
    }
  }
  for (const Part& p : parts_) *p.slot = static_cast<unsigned char*>(block_) + p.offset;
}

WorkspaceArena::~WorkspaceArena() {
  if (block_ == nullptr) return;
  BlockCache& cache = thread_cache();
  if (cache.block == nullptr || cache.bytes < block_bytes_) {
    free_block(cache.block, cache.bytes);
    cache.block = block_;
    cache.bytes = block_bytes_;
  } else {
    free_block(block_, block_bytes_);
  }
}

void release_thread_workspace_cache() {
  BlockCache& cache = thread_cache();
  free_block(cache.block, cache.bytes);
  cache.block = nullptr;
  cache.bytes = 0;
}

std::size_t thread_workspace_cache_bytes() { return thread_cache().bytes; }

}  // namespace detail

void release_workspace_cache() { detail::release_thread_workspace_cache(); }

}  // namespace lstmop
