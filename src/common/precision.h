// Internal: the process-wide internal precision of float32 calls
// (lstm.h: set_fp32_precision), read by the plan.
#pragma once

namespace lstmop {
namespace detail {

enum class Fp32Precision { Ieee, Bf16 };

Fp32Precision fp32_precision();

}  // namespace detail
}  // namespace lstmop
