// Internal: the one place that reads the CPU's features, and the table of
// which body every kernel family runs, decided once per process (like
// XNNPACK's hardware-config.c + gemm-config.c).
//
// Each family has a generic body (portable C++) and bodies for the ISAs
// below; LSTMOP_KERNEL_ISA=scalar|avx2|avx512 caps the ISA for the whole
// process (read once), so every family's lower bodies can be run and tested
// on a bigger CPU. Families: the recurrent product, the forward and the
// backward cell pass, the float transpose, the bfloat16 GEMM, and the GEMM
// form of the backward's weight gradients.
#pragma once

#include <cstdint>
#include <string>

namespace lstmop {
namespace kernels {

// Scalar: portable C++ only. Avx2: AVX2 + FMA. Avx512: AVX-512 F and BW
// (+ AVX2 + FMA): every AVX-512 CPU but the Xeon Phi (F without BW).
enum class Isa { Scalar = 0, Avx2 = 1, Avx512 = 2 };

// "scalar", "avx2", "avx512".
const char* isa_name(Isa isa);

// True if this CPU and OS can run bodies built for `isa`, whatever the cap
// (tests run every body the CPU has).
bool isa_supported(Isa isa);

// True if the CPU has AMX tiles with bfloat16 (AMX-TILE, AMX-BF16), the OS
// enables their state and lets this process use it (Linux: the permission
// request ARCH_REQ_XCOMP_PERM for the tile data, made once).
bool amx_bf16_usable();

// The ISA every family runs with, decided once from the CPU and the cap.
struct KernelChoice {
  Isa cap = Isa::Scalar;  // the highest supported ISA, capped by LSTMOP_KERNEL_ISA
  Isa recurrent_product = Isa::Scalar;
  Isa cell_forward = Isa::Scalar;
  // The fused forward step (step_forward.h) of the float compute type.
  Isa step_forward = Isa::Scalar;
  // The AVX2 fused step's k chunk (ForwardStepArgs::k_chunk): packed rows of
  // 128 bytes filling two thirds of the L1 data cache (sysconf; 32 KiB if
  // unknown), a multiple of 32: 256 for 48 KiB, 160 for 32 KiB. Intel Xeon
  // (48 KiB) under the AVX2 cap, T=50 B=32 I=H=256 inference: 0.85x the
  // whole k's time with 256, 0.89x with 160. 0 where the step is not AVX2's.
  int64_t step_k_chunk = 0;
  // The fused forward step on bfloat16 dot products (step_forward_bf16.h):
  // cap Avx512 and AVX512-BF16.
  bool bf16_step = false;
  // The cap: the AVX-512 body of this memory-bound pass took 0.75-1.1x the
  // AVX2 body's time on a Zen 4 core, and made float32 training 2-3% faster
  // on an Intel Xeon (two 512-bit FMA units; the pass ~5% of T=200 B=8
  // I=H=128 training with the AVX2 body).
  Isa cell_backward = Isa::Scalar;
  Isa transpose = Isa::Scalar;  // at most Avx2 (8 x 8 blocks)
  // oneDNN's bfloat16 matmul (vdpbf16ps): cap Avx512 and AVX512-BF16.
  bool bf16_gemm = false;
  // The bfloat16 products' per-step products on oneDNN's matmul
  // (bf16_matmul_step.h) instead of lstmop's fused step, for batches of at
  // least bf16_matmul_min_batch: where bf16_step and the CPU has AMX tiles
  // for bfloat16 the OS lets this process use (oneDNN runs the matmul on
  // them), from batch 4 (below, a step's product is too small to pay for a
  // primitive's execution: ~2.5 us a step, measured on Zen 4 at B = 1,
  // where the fused step takes 3.4 us in all). LSTMOP_BF16_STEP=matmul (any
  // batch) or fused overrides the choice where bf16_step (tests run the
  // matmul form on any AVX512-BF16 CPU).
  bool bf16_matmul_step = false;
  int bf16_matmul_min_batch = 4;
  // The matmul form's per-step products (forward, with the cell pass fused
  // after each block, and the backward's dh) on lstmop's own AMX tiles
  // (kernels/step_forward_amx.h) instead of oneDNN's matmul, where the CPU
  // has AMX tiles for bfloat16 and the shape allows (amx_step_supported;
  // then from batch 1); LSTMOP_BF16_STEP=matmul keeps oneDNN's.
  bool bf16_amx_step = false;
  // dnnl_sgemm's TN form runs the weight-gradient shapes at its NT rate with
  // its AVX-512 kernels (Zen 4), at half of it with its AVX2 ones on Zen 3,
  // at full rate with them on an Intel core (the Xeon under AVX2 caps on
  // lstmop and oneDNN, training without the transposed copies: T=200 B=8
  // I=H=128 0.93x the time, T=50 B=32 I=H=256 0.97x, S1 0.97x): the backward
  // skips the transposed copies with cap Avx512, and with cap Avx2 on Intel.
  bool gemm_tn_at_full_rate = false;
};

const KernelChoice& kernel_choice();

// "recurrent product avx512, cell forward avx512, ..." (tests print it).
std::string describe(const KernelChoice& choice);

}  // namespace kernels
}  // namespace lstmop
