// Process-wide settings of the core, as ops so that Python (lstmop.set_flush_denormal and
// friends in python/lstmop/__init__.py) and TorchScript reach them without a second
// extension module:
//
//   lstmop::set_flush_denormal(bool enabled) -> ()
//   lstmop::get_flush_denormal() -> bool
//   lstmop::set_fp32_precision(str precision) -> ()
//   lstmop::get_fp32_precision() -> str
//
// Their schemas are documented in docs/lstm.md ("Subnormal numbers", "float32 on bfloat16
// units"). A bad precision raises ValueError (TORCH_CHECK_VALUE) with the core's message.
#include <c10/util/Exception.h>
#include <c10/util/string_view.h>
#include <torch/library.h>

#include <string>

#include "lstmop/lstm.h"

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

}  // namespace

TORCH_LIBRARY_FRAGMENT(lstmop, m) {
  m.def("set_flush_denormal(bool enabled) -> ()", &set_flush_denormal);
  m.def("get_flush_denormal() -> bool", &get_flush_denormal);
  m.def("set_fp32_precision(str precision) -> ()", &set_fp32_precision);
  m.def("get_fp32_precision() -> str", &get_fp32_precision);
}
