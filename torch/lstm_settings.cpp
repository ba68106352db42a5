// Process-wide settings of the core, as ops so that Python (lstmop.set_flush_denormal and
// friends in python/lstmop/__init__.py) and TorchScript reach them without a second
// extension module:
//
//   lstmop::set_flush_denormal(bool enabled) -> ()
//   lstmop::get_flush_denormal() -> bool
//
// Their schemas are documented in docs/lstm.md ("Subnormal numbers").
#include <torch/library.h>

#include "lstmop/lstm.h"

namespace {

void set_flush_denormal(bool enabled) { lstmop::set_flush_denormal(enabled); }
bool get_flush_denormal() { return lstmop::get_flush_denormal(); }

}  // namespace

TORCH_LIBRARY_FRAGMENT(lstmop, m) {
  m.def("set_flush_denormal(bool enabled) -> ()", &set_flush_denormal);
  m.def("get_flush_denormal() -> bool", &get_flush_denormal);
}
