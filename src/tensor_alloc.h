// Internal: allocation of owning tensors whose errors name the argument they
// serve ("output", "dparams[3]", ...), never a bare std::bad_alloc.
#pragma once

#include <string>
#include <vector>

#include "lstmop/tensor.h"

namespace lstmop {
namespace detail {

// Empty string if a tensor of these sizes can be described; otherwise the
// reason (negative size, element count or byte size overflowing int64).
std::string allocation_size_problem(DType dtype, const std::vector<int64_t>& sizes,
                                    std::size_t* bytes);

// Tensor::empty / Tensor::zeros, with errors that name `name`.
Tensor allocate(const std::string& name, DType dtype, const std::vector<int64_t>& sizes,
                bool zero);

}  // namespace detail
}  // namespace lstmop
