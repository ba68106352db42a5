// The ISAs a kernels test runs: every one this CPU supports (scalar always).
#pragma once

#include <cstdio>
#include <vector>

#include "cpu_isa.h"

namespace lstmop {
namespace kernels {

inline std::vector<Isa> supported_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (isa_supported(isa)) isas.push_back(isa);
  static bool printed = false;
  if (!printed) {
    printed = true;
    std::printf("[kernels] ISAs tested on this CPU:");
    for (Isa isa : isas) std::printf(" %s", isa_name(isa));
    std::printf(" (best_isa: %s)\n", isa_name(best_isa()));
  }
  return isas;
}

}  // namespace kernels
}  // namespace lstmop
