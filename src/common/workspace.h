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
// call's peak is never its own workspace plus a stale one.
//
// Huge pages: blocks of kHugePageHintMinBytes and more are 2 MiB-aligned, and
// advised as transparent huge pages (madvise MADV_HUGEPAGE) where
// huge_page_hint_enabled(): LSTMOP_HUGE_PAGES=1 in the environment, or unset
// in the plugin, whose large outputs are advised too (torch/output_memory.h);
// a C++ caller's outputs are its own memory, so scratch stays on ordinary
// pages there unless the variable says 1. Measured on the eighth session's
// Zen 5 VM (docs/performance.md): a call's memory all on huge pages or all
// on 4 KiB pages ran a training step in the same time, a mix of the two
// slower (S1 training: 2.1-2.6 s either way; huge-page scratch with the C++
// runner's 4 KiB outputs 2.3-3.8 s, huge-page outputs with 4 KiB scratch in
// the plugin 2.8-3.2 s); and after the process unmaps a large block (torch
// frees a tensor of 32 MiB or more), the first touch of each resident 4 KiB
// page costs ~3.5 us (plugin S4 training 178 -> 300-370 ms; on huge pages
// 195-218), which the plugin's callers, torch code, do all the time.
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

// Whether blocks of kHugePageHintMinBytes and more (scratch, the plugin's
// outputs) are advised as transparent huge pages: LSTMOP_HUGE_PAGES=1 yes,
// =0 no (read once), else the default set below (false unless set).
bool huge_page_hint_enabled();
// The default where LSTMOP_HUGE_PAGES does not decide (the plugin sets true
// when it loads).
void set_huge_page_hint_default(bool enabled);
// Advises [p, p + bytes) (2 MiB-aligned, a whole number of 2 MiB pages) as
// transparent huge pages where huge_page_hint_enabled(): the scratch blocks'
// and the plugin's output blocks' one rule.
void advise_huge_pages(void* p, std::size_t bytes);

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
