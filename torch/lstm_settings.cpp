// Process-wide settings of the core, as ops so that Python (lstmop.set_flush_denormal and
// friends in python/lstmop/__init__.py) and TorchScript reach them without a second
// extension module:
//
//   lstmop::set_flush_denormal(bool enabled) -> ()
//   lstmop::get_flush_denormal() -> bool
//   lstmop::set_fp32_precision(str precision) -> ()
//   lstmop::get_fp32_precision() -> str
//   lstmop::release_cached_memory() -> ()
//   lstmop::cached_memory_bytes() -> int
//
// Their schemas are documented in docs/lstm.md ("Subnormal numbers", "float32 on bfloat16
// units", "Constraints"). A bad precision raises ValueError (TORCH_CHECK_VALUE) with the core's
// message.
#include <c10/util/Exception.h>
#include <c10/util/string_view.h>
#include <torch/library.h>

#include <string>

#include "lstmop/lstm.h"
#include "output_memory.h"

namespace {

void set_flush_denormal(bool enabled) { lstmop::set_flush_denormal(enabled); }
bool get_flush_denormal() { return lstmop::get_flush_denormal(); }

void set_fp32_precision(c10::string_view precision) {
  try {
    lstmop::set_fp32_precision(std::string(precision));
  } catch (const lstmop::Error& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
}
std::string get_fp32_precision() { return lstmop::get_fp32_precision(); }

// The binding's cached output blocks (output_memory.h) and the calling
// thread's core workspace block.
void release_cached_memory() {
  lstmop_torch::release_output_memory();
  lstmop::release_workspace_cache();
}
int64_t cached_memory_bytes() { return lstmop_torch::cached_output_bytes(); }

}  // namespace

TORCH_LIBRARY_FRAGMENT(lstmop, m) {
  m.def("set_flush_denormal(bool enabled) -> ()", &set_flush_denormal);
  m.def("get_flush_denormal() -> bool", &get_flush_denormal);
  m.def("set_fp32_precision(str precision) -> ()", &set_fp32_precision);
  m.def("get_fp32_precision() -> str", &get_fp32_precision);
  m.def("release_cached_memory() -> ()", &release_cached_memory);
  m.def("cached_memory_bytes() -> int", &cached_memory_bytes);
}
