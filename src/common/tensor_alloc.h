// Internal: allocation of owning tensors whose errors name the argument they
// serve ("output", "dparams[3]", ...), never a bare std::bad_alloc.
#pragma once

#include <new>
#include <string>
#include <utility>
#include <vector>

#include "lstmop/error.h"
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

// Runs fn() with std::bad_alloc from anywhere inside it (a std::vector of
// size T in validation, the reference's buffers) reported as the lstmop::Error
// the API promises; the problem's size is set by `input`.
template <class Fn>
auto translate_bad_alloc(Fn&& fn) -> decltype(fn()) {
  try {
    return std::forward<Fn>(fn)();
  } catch (const std::bad_alloc&) {
    throw Error("input", "input is too large: allocating memory for this call failed "
                         "(std::bad_alloc)");
  }
}

}  // namespace detail
}  // namespace lstmop
