// Internal: every oneDNN call of gemm.cpp and gemm_bf16.cpp runs on one
// OpenMP thread, so that oneDNN's blocking, hence every bit of a product,
// never depends on lstmop's or the caller's thread settings.
#pragma once

#include <omp.h>

namespace lstmop {
namespace detail {

// Sets the calling thread's OpenMP thread count to 1 for its lifetime and
// restores the previous value after (omp_set_num_threads is per thread).
class OneOpenMpThread {
 public:
  OneOpenMpThread() : saved_(omp_get_max_threads()) {
    if (saved_ != 1) omp_set_num_threads(1);
  }
  ~OneOpenMpThread() {
    if (saved_ != 1) omp_set_num_threads(saved_);
  }
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  int saved_;
};

}  // namespace detail
}  // namespace lstmop
