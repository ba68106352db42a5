// The call's floating-point environment (float_environment.h) and the
// process-wide flush setting of lstm.h.
#include "common/float_environment.h"

#include <xmmintrin.h>

#include <atomic>

#include "lstmop/lstm.h"

namespace lstmop {
namespace {

std::atomic<bool> g_flush_denormal{true};

// MXCSR fields (Intel SDM vol. 1, 10.2.3).
constexpr uint32_t kExceptionMasks = 0x1f80;  // IM DM ZM OM UM PM
constexpr uint32_t kDenormalsAreZero = 0x0040;
constexpr uint32_t kFlushToZero = 0x8000;

}  // namespace

void set_flush_denormal(bool enabled) { g_flush_denormal.store(enabled); }
bool get_flush_denormal() { return g_flush_denormal.load(); }

namespace detail {

uint32_t call_control_word(bool flush_subnormals) {
  // Round to nearest (RC = 00), status flags clear.
  return kExceptionMasks | (flush_subnormals ? kDenormalsAreZero | kFlushToZero : 0u);
}

bool flushes_subnormals(DType dtype) {
  return dtype != DType::Float64 && g_flush_denormal.load();
}

uint32_t read_control_word() { return _mm_getcsr(); }
void write_control_word(uint32_t word) { _mm_setcsr(word); }

}  // namespace detail
}  // namespace lstmop
