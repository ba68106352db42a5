// The float32 precision setting of lstm.h and precision.h.
#include "common/precision.h"

#include <atomic>
#include <string>

#include "lstmop/error.h"
#include "lstmop/lstm.h"

namespace lstmop {
namespace {

std::atomic<detail::Fp32Precision> g_precision{detail::Fp32Precision::Ieee};

}  // namespace

void set_fp32_precision(const std::string& precision) {
  if (precision == "ieee") {
    g_precision.store(detail::Fp32Precision::Ieee);
  } else if (precision == "bf16") {
    g_precision.store(detail::Fp32Precision::Bf16);
  } else {
    throw Error("precision", "precision must be \"ieee\" or \"bf16\", got \"" + precision + "\"");
  }
}

std::string get_fp32_precision() {
  return g_precision.load() == detail::Fp32Precision::Bf16 ? "bf16" : "ieee";
}

namespace detail {

Fp32Precision fp32_precision() { return g_precision.load(); }

}  // namespace detail
}  // namespace lstmop
