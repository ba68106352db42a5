// The binding's memory for large CPU outputs.
//
// A training step's saved tensors (S1: 52 MiB each, ten outputs) live from
// the forward to the backward and die; the next step asks for the same
// sizes again. From the system allocator each of them is a fresh mapping
// (glibc maps blocks above 32 MiB directly and unmaps them on free): page
// faults and the kernel zeroing every page, on every step (S1 training: 5% of
// the step, bfloat16 B1 more). Smaller ones fare no better in a loop that
// holds a call's outputs until the next call returns (`y = lstm(x)` in a
// loop): glibc grows its heap for the new outputs and, when the old ones die
// at its top, gives the pages back to the kernel (trimming), so every call
// faults its outputs in again (T=200 B=8 H=128 inference: about 7% of the
// call in the kernel). Outputs of kCachedOutputMinBytes and more therefore
// come from blocks the outputs of earlier calls returned when they died
// (same bytes or up to 1/8 more), else from new page-aligned blocks; from
// kHugePageHintMinBytes on, 2 MiB-aligned blocks advised as transparent huge
// pages, and so are the core's scratch blocks in the plugin
// (src/common/workspace.h, which says why both alike; LSTMOP_HUGE_PAGES=0:
// neither).
//
// The cache keeps returned blocks up to the largest number of bytes such
// outputs have held at once (so a loop keeps what one step needs, never
// more), and of blocks below kHugePageHintMinBytes at most 256 and 256 MiB
// (a caller that once held thousands of outputs at once gets that memory
// back when they die); release_output_memory() frees them (Python:
// lstmop.release_cached_memory()). Outputs are ordinary CPU tensors whose
// storage cannot grow in place (resize_ to more bytes than they had raises,
// as for torch.from_numpy's); their values are never read before the core
// writes them.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/workspace.h"

namespace lstmop_torch {

constexpr std::size_t kCachedOutputMinBytes = std::size_t{64} << 10;
using lstmop::detail::kHugePageHintMinBytes;  // the core's scratch blocks' (8 MiB)

// An uninitialised tensor of `shape` with like's dtype and device (contiguous).
at::Tensor empty_output(const std::vector<int64_t>& shape, const at::Tensor& like);

// Frees every cached block (outputs still alive keep theirs).
void release_output_memory();

// Bytes of the blocks the cache holds now (not counting live outputs).
int64_t cached_output_bytes();

}  // namespace lstmop_torch
