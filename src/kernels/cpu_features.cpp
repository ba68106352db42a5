// lstmop kernels: run-time instruction-set detection.
#include "kernels/cpu_features.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace lstmop {
namespace kernels {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    default: return "scalar";
  }
}

bool isa_supported(Isa isa) {
  // libgcc's cpu model checks both CPUID and the OS-enabled state (XCR0).
  __builtin_cpu_init();
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512: return __builtin_cpu_supports("avx512f") && isa_supported(Isa::Avx2);
  }
  return false;
}

static Isa detect() {
  Isa cap = Isa::Avx512;
  if (const char* env = std::getenv("LSTMOP_KERNEL_ISA")) {
    if (!std::strcmp(env, "scalar")) cap = Isa::Scalar;
    else if (!std::strcmp(env, "avx2")) cap = Isa::Avx2;
  }
  for (Isa isa : {Isa::Avx512, Isa::Avx2}) {
    if (static_cast<int>(isa) <= static_cast<int>(cap) && isa_supported(isa)) return isa;
  }
  return Isa::Scalar;
}

Isa best_isa() {
  static const Isa isa = detect();
  return isa;
}

}  // namespace kernels
}  // namespace lstmop
