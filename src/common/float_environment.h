// Internal: the floating-point environment lstmop computes in (CONTRACT.md,
// "Subnormal numbers"). float32 and 16-bit calls treat subnormal operands and
// results as zero (x86 MXCSR: DAZ reads them as zero, FTZ writes zero
// instead), so vanishing values cost no microcode assists (tens of times
// slower on Intel cores); float64 calls, the reference, and every call after
// set_flush_denormal(false) keep IEEE subnormals. Either way lstmop runs with
// round to nearest and every exception masked, and gives the caller's thread
// its MXCSR back on exit, error or not: the caller's environment never
// changes. Threads that work for a call (driver/threads.h) take the calling
// thread's control word for the work and restore their own after.
#pragma once

#include <cstdint>

#include "lstmop/tensor.h"

namespace lstmop {
namespace detail {

// The control word of a call: round to nearest, all exceptions masked, and
// FTZ + DAZ when `flush_subnormals`.
uint32_t call_control_word(bool flush_subnormals);

// Whether a production call of this dtype flushes: every dtype but float64,
// unless set_flush_denormal(false).
bool flushes_subnormals(DType dtype);

uint32_t read_control_word();
void write_control_word(uint32_t word);

// Sets a control word for a scope and restores the thread's previous one
// (status flags included) when the scope ends.
class ControlWordScope {
 public:
  explicit ControlWordScope(uint32_t word) : saved_(read_control_word()) {
    write_control_word(word);
  }
  ~ControlWordScope() { write_control_word(saved_); }
  ControlWordScope(const ControlWordScope&) = delete;
  ControlWordScope& operator=(const ControlWordScope&) = delete;

 private:
  uint32_t saved_;
};

}  // namespace detail
}  // namespace lstmop
