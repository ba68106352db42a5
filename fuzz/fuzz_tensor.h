// The fuzzer's tensors: strided views over owned byte storages in any layout
// (storage order permuted, padded, negative or zero strides), element access
// in every dtype, and storage checksums (to prove no input was written).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lstmop/lstmop.h"

namespace lstmfuzz {

using lstmop::DType;
using lstmop::TensorView;

// How a tensor's elements are laid out in its storage.
struct Layout {
  std::vector<int> order;      // storage order, innermost first (a permutation of the dims)
  std::vector<bool> padded;    // one unused element after each run of this dim
  std::vector<bool> negative;  // this dim is stored backwards (negative stride)
  std::vector<bool> zero;      // stride 0 (every index of this dim reads index 0's element)
};

// Row-major, no padding, no negative or zero strides.
Layout contiguous_layout(std::size_t dims);

// A view that owns its storage (shared: views may alias one storage).
struct Strided {
  std::shared_ptr<std::vector<unsigned char>> storage;
  TensorView view;
};

// Element offset of a row-major flat index.
int64_t offset_of_flat(const TensorView& v, int64_t flat);

double load(const TensorView& v, int64_t offset);
void store(const TensorView& v, int64_t offset, double value);

// Values of v in logical row-major order, widened to double.
std::vector<double> values_of(const TensorView& v);

// A tensor of `sizes` in `layout` whose element at flat index k is values[k]
// (with zero strides, the last write to a shared element wins). Unused
// storage bytes hold 0x7f.
Strided make_strided(DType dtype, const std::vector<int64_t>& sizes, const Layout& layout,
                     const std::vector<double>& values);

// A strided copy of v (same logical values).
Strided relayout(const TensorView& v, const Layout& layout);

// FNV-1a of a storage's bytes.
uint64_t checksum(const std::vector<unsigned char>& bytes);

}  // namespace lstmfuzz
