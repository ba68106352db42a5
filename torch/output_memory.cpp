// The binding's memory for large CPU outputs (output_memory.h).
#include "output_memory.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "common/workspace.h"

namespace lstmop_torch {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kPage = std::size_t{4} << 10;
constexpr std::size_t kSmallBlocksMaxBytes = std::size_t{256} << 20;
constexpr std::size_t kSmallBlocksMaxCount = 256;

// In the plugin a call's large memory is on huge pages by default: its
// outputs here and the core's scratch alike (src/common/workspace.h says
// why); LSTMOP_HUGE_PAGES=0 in the environment: neither.
const bool kHugePagesByDefault = [] {
  lstmop::detail::set_huge_page_hint_default(true);
  return true;
}();

class OutputBlocks {
 public:
  // A block of at least `bytes` (a multiple of kPage): a cached one of up to
  // 1/8 more, else a new one (2 MiB-aligned and advised as huge pages from
  // kHugePageHintMinBytes on, as the core's scratch blocks are). Sets *size to
  // the block's bytes.
  void* take(std::size_t bytes, std::size_t* size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::size_t best = free_.size();
      for (std::size_t k = 0; k < free_.size(); ++k) {
        const std::size_t b = free_[k].bytes;
        if (b >= bytes && b <= bytes + bytes / 8 && (best == free_.size() || b < free_[best].bytes)) {
          best = k;
        }
      }
      if (best < free_.size()) {
        const Block block = free_[best];
        free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
        uncount(block.bytes);
        add_live(block.bytes);
        *size = block.bytes;
        return block.ptr;
      }
      // A miss: the cache gives up its oldest blocks until cached and live
      // bytes with the new block stay within the most ever live at once.
      const std::size_t bound = std::max(peak_, live_ + bytes);
      while (!free_.empty() && cached_ + live_ + bytes > bound) {
        std::free(free_.front().ptr);
        uncount(free_.front().bytes);
        free_.erase(free_.begin());
      }
      add_live(bytes);
    }
    const bool huge = bytes >= kHugePageHintMinBytes;
    void* p = std::aligned_alloc(huge ? kHugePage : kPage, bytes);
    if (p == nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      live_ -= bytes;
      TORCH_CHECK(false, "lstmop: not enough memory for an output of ", bytes, " bytes");
    }
    if (huge) lstmop::detail::advise_huge_pages(p, bytes);
    *size = bytes;
    return p;
  }

  // An output's block, back from its tensor: kept while cached bytes stay
  // within the most ever live at once, else freed. Blocks below
  // kHugePageHintMinBytes also within kSmallBlocksMaxBytes and
  // kSmallBlocksMaxCount all together: a caller that once held thousands of
  // such outputs at once (a list of an evaluation's results) gets that memory
  // back when they die, as from the system allocator, instead of the cache
  // keeping it; a loop's few outputs a call fit many times over.
  void give_back(void* p, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_ -= bytes;
    const bool small = bytes < kHugePageHintMinBytes;
    const bool room = !small || (small_bytes_ + bytes <= kSmallBlocksMaxBytes &&
                                 small_count_ < kSmallBlocksMaxCount);
    if (cached_ + bytes <= peak_ && room) {
      free_.push_back(Block{p, bytes});
      cached_ += bytes;
      if (small) {
        small_bytes_ += bytes;
        ++small_count_;
      }
    } else {
      std::free(p);
    }
  }

  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Block& b : free_) std::free(b.ptr);
    free_.clear();
    cached_ = small_bytes_ = small_count_ = 0;
    peak_ = live_;
  }

  std::size_t cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }

 private:
  struct Block {
    void* ptr;
    std::size_t bytes;
  };
  void add_live(std::size_t bytes) {
    live_ += bytes;
    peak_ = std::max(peak_, live_);
  }
  // A cached block leaves the cache (taken or freed).
  void uncount(std::size_t bytes) {
    cached_ -= bytes;
    if (bytes < kHugePageHintMinBytes) {
      small_bytes_ -= bytes;
      --small_count_;
    }
  }

  std::mutex mutex_;
  std::vector<Block> free_;  // oldest first
  std::size_t cached_ = 0, live_ = 0, peak_ = 0;
  std::size_t small_bytes_ = 0, small_count_ = 0;  // cached blocks below kHugePageHintMinBytes
};

// Never destroyed: outputs may die after static destructors have run.
OutputBlocks& blocks() {
  static OutputBlocks* instance = new OutputBlocks();
  return *instance;
}

}  // namespace

at::Tensor empty_output(const std::vector<int64_t>& shape, const at::Tensor& like) {
  const at::TensorOptions options = like.options();
  if (!like.device().is_cpu()) return at::empty(shape, options);
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  const std::size_t bytes = static_cast<std::size_t>(numel) * like.element_size();
  if (bytes < kCachedOutputMinBytes) return at::empty(shape, options);
  const std::size_t unit = bytes >= kHugePageHintMinBytes ? kHugePage : kPage;
  const std::size_t rounded = (bytes + unit - 1) / unit * unit;
  std::size_t size = 0;
  void* p = blocks().take(rounded, &size);
  return at::from_blob(
      p, shape, [size](void* data) { blocks().give_back(data, size); }, options);
}

void release_output_memory() { blocks().release(); }

int64_t cached_output_bytes() { return static_cast<int64_t>(blocks().cached()); }

}  // namespace lstmop_torch
