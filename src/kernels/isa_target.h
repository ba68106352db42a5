// Internal: how ISA code is built, one way everywhere. The library is compiled
// for the baseline x86-64; every function that uses AVX2 or AVX-512
// instructions carries one of these target attributes and is called only
// where kernel_choice() (cpu_features.h) picked its ISA. (Per-file -m flags
// would also compile the inline library code those files instantiate for the
// ISA, and the linker may keep that copy for callers on any CPU.)
#pragma once

#define LSTMOP_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define LSTMOP_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx2,fma,f16c")))

// Vector helpers that must be inlined into the kernel loops that call them
// (an out-of-line call clobbers every vector register: the accumulators of
// a tile spilled around it). Measured: the fused step's epilogue with tanh_v
// called out of line cost S2 (T=50 B=32 I=H=256, float32) 3-5%.
#define LSTMOP_ALWAYS_INLINE __attribute__((always_inline))
