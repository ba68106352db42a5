// Internal: the drivers' scratch memory.
//
// A driver declares every buffer it needs in its constructor (add), then
// commits once: all of them become cache-line aligned parts of one block.
// The block comes from, and goes back to, a one-block cache of the calling
// thread, so a training loop that calls the same shapes again and again
// touches fresh pages (and pays their page faults) only on its first call.
// The cache holds the largest block a thread has used since it last
// released the cache (lstmop::release_workspace_cache, lstm.h); a block that
// is too small for a call is freed before the larger one is allocated, so a
// call's peak is never its own workspace plus a stale one. Blocks of
// kHugePageHintMinBytes and more are 2 MiB-aligned and advised as transparent
// huge pages (madvise MADV_HUGEPAGE; LSTMOP_HUGE_PAGES=0 in the environment:
// not), as the plugin's large outputs are (torch/output_memory.h): all of a
// call's large memory alike. Measured on the eighth session's Zen 5 VM
// (docs/performance.md): after the process unmaps a large block (any torch
// operation freeing a tensor of 32 MiB or more), the first touch of every
// resident 4 KiB page costs ~3.5 us (S4 training 178 -> 300-360 ms, huge
// pages 195-218), and huge-page outputs with 4 KiB scratch ran every step
// slower than either alone (S1 training 2.9-3.0 s, 2.3-2.5 with both alike).
//
// All of a call's scratch is allocated before any output is written, so an
// allocation failure (an lstmop::Error naming `input`, whose sizes set the
// workspace) leaves the caller's outputs untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lstmop {
namespace detail {

constexpr std::size_t kHugePageHintMinBytes = std::size_t{8} << 20;

// Whether blocks of kHugePageHintMinBytes and more are advised as transparent
// huge pages: unless LSTMOP_HUGE_PAGES=0 (read once).
bool huge_page_hint_enabled();

// A typed part of a WorkspaceArena's block: a non-owning pointer, null until
// the arena commits.
template <class T>
class Workspace {
 public:
  T* data() const { return data_; }

 private:
  friend class WorkspaceArena;
  T* data_ = nullptr;
};

class WorkspaceArena {
 public:
  WorkspaceArena() = default;
  WorkspaceArena(const WorkspaceArena&) = delete;
  WorkspaceArena& operator=(const WorkspaceArena&) = delete;
  ~WorkspaceArena();

  // Declares `count` elements (at least one) for w; `what` names the buffer
  // in the error should the block not be had.
  template <class T>
  void add(Workspace<T>& w, const char* what, int64_t count) {
    add_part(reinterpret_cast<void**>(&w.data_), what, count, sizeof(T));
  }

  // Allocates (or reuses) the block and points every declared part into it.
  void commit();

  std::size_t bytes() const { return total_; }

 private:
  struct Part {
    void** slot;
    const char* what;
    int64_t count;
    std::size_t offset;
  };
  void add_part(void** slot, const char* what, int64_t count, std::size_t element_size);

  std::vector<Part> parts_;
  std::size_t total_ = 0;
  void* block_ = nullptr;
  std::size_t block_bytes_ = 0;
};

// Frees the calling thread's cached block (lstm.h: release_workspace_cache).
void release_thread_workspace_cache();
// Bytes the calling thread's cache holds (tests).
std::size_t thread_workspace_cache_bytes();

}  // namespace detail
}  // namespace lstmop
