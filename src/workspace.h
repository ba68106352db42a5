// Internal: a contiguous, cache-line aligned scratch buffer for the drivers.
// All of a call's buffers are allocated before any output is written, so an
// allocation failure (an lstmop::Error naming `input`, whose sizes set the
// workspace) leaves the caller's outputs untouched.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <string>

#include "lstmop/error.h"

namespace lstmop {
namespace detail {

template <class T>
class Workspace {
 public:
  Workspace() = default;
  Workspace(const char* what, int64_t count) { allocate(what, count); }

  void allocate(const char* what, int64_t count) {
    const int64_t n = count > 0 ? count : 1;
    int64_t bytes = 0;
    void* p = nullptr;
    if (!__builtin_mul_overflow(n, static_cast<int64_t>(sizeof(T)), &bytes)) {
      p = ::operator new[](static_cast<std::size_t>(bytes), std::align_val_t(kAlignment),
                           std::nothrow);
    }
    if (p == nullptr) {
      throw Error("input", "input is too large: allocating the workspace for " +
                               std::string(what) + " (" + std::to_string(count) +
                               " elements) failed");
    }
    data_.reset(static_cast<T*>(p));
  }
  T* data() const { return data_.get(); }

 private:
  static constexpr std::size_t kAlignment = 64;
  struct Delete {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t(kAlignment)); }
  };
  std::unique_ptr<T, Delete> data_;
};

}  // namespace detail
}  // namespace lstmop
