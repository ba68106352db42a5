// The drivers' scratch block (common/workspace.h): cache-line aligned; from
// kHugePageHintMinBytes on 2 MiB-aligned, and advised as transparent huge
// pages where LSTMOP_HUGE_PAGES=1 (ctest's test_workspace_memory_hint run) or,
// the variable unset, where the default says so (the plugin sets it; a C++
// caller's default is ordinary pages; =0 in test_workspace_memory_no_hint),
// so that where the kernel honours madvise(MADV_HUGEPAGE) such a block is
// backed by huge pages; the block a call leaves is the next call's.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "common/workspace.h"
#include "lstmop/lstm.h"

namespace {

using lstmop::detail::kHugePageHintMinBytes;
using lstmop::detail::Workspace;
using lstmop::detail::WorkspaceArena;

constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

// The kernel's transparent-huge-page mode: "always", "madvise", "never", or
// "absent" (no THP in this kernel).
std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  if (!std::getline(f, text)) return "absent";
  const auto open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos) return "absent";
  return text.substr(open + 1, close - open - 1);
}

// LSTMOP_HUGE_PAGES: 1, 0, or -1 (unset or another value: the default).
int hint_variable() {
  const char* env = std::getenv("LSTMOP_HUGE_PAGES");
  if (env == nullptr) return -1;
  return std::string(env) == "1" ? 1 : std::string(env) == "0" ? 0 : -1;
}

// AnonHugePages (KiB) of the mapping of /proc/self/smaps that holds p; -1 if
// none does.
long anon_huge_kib(const void* p) {
  std::ifstream f("/proc/self/smaps");
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= address && address < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stol(line.substr(std::strlen("AnonHugePages:")));
    }
  }
  return -1;
}

TEST(WorkspaceMemory, SmallBlocksAreCacheLineAligned) {
  lstmop::release_workspace_cache();
  WorkspaceArena arena;
  Workspace<float> a, b;
  arena.add(a, "a", 1000);
  arena.add(b, "b", 3);
  arena.commit();
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 64, 0u);
  EXPECT_GE(b.data() - a.data(), 1000);
}

// A large block from a fresh cache, its pages touched: 2 MiB-aligned, and
// backed by huge pages exactly where advised (THP mode madvise; always: any
// aligned block; never or absent: only the alignment is checked).
void check_large_block(bool advised) {
  lstmop::release_workspace_cache();
  const int64_t count = static_cast<int64_t>(3 * kHugePageHintMinBytes / sizeof(float));
  const void* first = nullptr;
  {
    WorkspaceArena arena;
    Workspace<float> w;
    arena.add(w, "w", count);
    arena.commit();
    first = w.data();
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(w.data()) % kHugePage, 0u)
        << "a block of " << arena.bytes() << " bytes starts at " << w.data();
    std::memset(w.data(), 1, static_cast<std::size_t>(count) * sizeof(float));
    const long huge = anon_huge_kib(w.data());
    const std::string mode = thp_mode();
    std::cout << "THP mode " << mode << ", LSTMOP_HUGE_PAGES " << hint_variable()
              << ", advised " << advised << ": " << huge << " KiB of the "
              << arena.bytes() / 1024 << " KiB block's mapping in huge pages\n";
    ASSERT_GE(huge, 0) << "no mapping in /proc/self/smaps holds the block";
    if (mode == "always") {
      EXPECT_GT(huge, 0) << "THP mode always: the aligned block is backed by huge pages";
    } else if (mode == "madvise") {
      if (advised) {
        EXPECT_GT(huge, 0) << "THP mode madvise: the advised block is backed by huge pages";
      } else {
        EXPECT_EQ(huge, 0) << "the block is not advised";
      }
    } else {
      std::cout << "THP is " << mode << " in this kernel: the hint is a no-op, only the "
                << "alignment is checked\n";
    }
  }
  // The block went back to the thread's cache: the next call of the same
  // size gets it again (no fresh pages).
  {
    WorkspaceArena again;
    Workspace<float> w;
    again.add(w, "w", count);
    again.commit();
    EXPECT_EQ(static_cast<const void*>(w.data()), first);
  }
  lstmop::release_workspace_cache();
}

TEST(WorkspaceMemory, LargeBlocksAreHugePageAlignedAndAdvisedAsTheSettingSays) {
  const int variable = hint_variable();
  ASSERT_FALSE(lstmop::detail::huge_page_hint_enabled() && variable == -1)
      << "a C++ caller's default is ordinary pages";
  {
    SCOPED_TRACE("the default");
    check_large_block(/*advised=*/variable == 1);
  }
  // The plugin's default (set when it loads): huge pages unless the variable
  // says 0.
  lstmop::detail::set_huge_page_hint_default(true);
  {
    SCOPED_TRACE("the default set to huge pages");
    EXPECT_EQ(lstmop::detail::huge_page_hint_enabled(), variable != 0);
    check_large_block(/*advised=*/variable != 0);
  }
  lstmop::detail::set_huge_page_hint_default(false);
}

}  // namespace
