// lstmop kernels: which vector instruction set a kernel runs with.
//
// Every kernel has one implementation per Isa, selected at run time: the
// best the CPU (and OS) supports, or a lower one on request (tests compare
// each against scalar double; LSTMOP_KERNEL_ISA=scalar|avx2|avx512 caps the
// choice for a whole process, e.g. to benchmark the fallback).
#pragma once

namespace lstmop {
namespace kernels {

enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };

// "scalar", "avx2" (AVX2 + FMA), "avx512" (AVX-512 F).
const char* isa_name(Isa isa);

// True if this CPU and OS can run kernels built for `isa`.
bool isa_supported(Isa isa);

// The highest supported Isa, capped by LSTMOP_KERNEL_ISA when set (read once).
Isa best_isa();

}  // namespace kernels
}  // namespace lstmop
