// The CPU's features, read once (libgcc's cpu model: CPUID and the OS-enabled
// register state, XCR0), and the kernel table of cpu_features.h.
#include "kernels/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace lstmop {
namespace kernels {
namespace {

// F16C (CPUID leaf 1, ECX bit 29) read directly: clang 14's
// __builtin_cpu_supports does not know "f16c" (a compile error in the fuzz
// build). Its registers are AVX's, whose OS support the "avx2" check covers.
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}

// AMX: CPUID leaf 7 EDX bits 24 (AMX-TILE) and 22 (AMX-BF16); XCR0 bits 17
// and 18 (the tile configuration and data state, enabled by the OS); Linux
// gives a process the tile data only after it asks (arch_prctl
// ARCH_REQ_XCOMP_PERM = 0x1023 for feature 18, Linux 5.16+; oneDNN asks too).
bool cpu_has_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  if ((d & (1u << 24)) == 0 || (d & (1u << 22)) == 0) return false;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  if (__get_cpuid(1, &a1, &b1, &c1, &d1) == 0 || (c1 & bit_OSXSAVE) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// CPUID leaf 0's vendor string (EBX, EDX, ECX) is "GenuineIntel".
bool cpu_is_intel() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return false;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  return std::strcmp(vendor, "GenuineIntel") == 0;
}

struct CpuFeatures {
  bool intel = false;
  bool avx2_fma = false;
  bool avx512 = false;  // F and BW, with AVX2 + FMA
  bool avx512_bf16 = false;
  bool amx_bf16 = false;
};

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    __builtin_cpu_init();
    CpuFeatures f;
    f.intel = cpu_is_intel();
    f.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                 cpu_has_f16c();
    f.avx512 = f.avx2_fma && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw");
    f.avx512_bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
    f.amx_bf16 = f.avx512_bf16 && cpu_has_amx_bf16();
    return f;
  }();
  return features;
}

// LSTMOP_KERNEL_ISA: "scalar" or "avx2" lower the cap; anything else (unset,
// "avx512", unknown) leaves it at the highest ISA.
Isa requested_cap() {
  const char* env = std::getenv("LSTMOP_KERNEL_ISA");
  if (env != nullptr && std::strcmp(env, "scalar") == 0) return Isa::Scalar;
  if (env != nullptr && std::strcmp(env, "avx2") == 0) return Isa::Avx2;
  return Isa::Avx512;
}

// LSTMOP_BF16_STEP: "matmul" (oneDNN's matmul per step) or "fused" decide the
// bfloat16 products' step form; anything else (unset) leaves it to the CPU
// (with AMX: the matmul form on lstmop's AMX tiles where the shape allows).
const char* bf16_step_request() {
  const char* env = std::getenv("LSTMOP_BF16_STEP");
  if (env != nullptr && std::strcmp(env, "matmul") == 0) return "matmul";
  if (env != nullptr && std::strcmp(env, "fused") == 0) return "fused";
  return "";
}

Isa lower(Isa a, Isa b) { return static_cast<int>(a) < static_cast<int>(b) ? a : b; }

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
    case Isa::Scalar: break;
  }
  return "scalar";
}

bool amx_bf16_usable() { return cpu_features().amx_bf16; }

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return cpu_features().avx2_fma;
    case Isa::Avx512: return cpu_features().avx512;
  }
  return false;
}

const KernelChoice& kernel_choice() {
  static const KernelChoice choice = [] {
    KernelChoice c;
    c.cap = Isa::Scalar;
    for (Isa isa : {Isa::Avx512, Isa::Avx2}) {
      if (static_cast<int>(isa) <= static_cast<int>(requested_cap()) && isa_supported(isa)) {
        c.cap = isa;
        break;
      }
    }
    c.recurrent_product = c.cap;
    c.cell_forward = c.cap;
    c.step_forward = c.cap;
    if (c.step_forward == Isa::Avx2) {
      long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
      if (l1 < 16 * 1024 || l1 > 1024 * 1024) l1 = 32 * 1024;
      c.step_k_chunk = std::max<int64_t>(64, l1 * 2 / 3 / 128 / 32 * 32);
    }
    c.cell_backward = c.cap;
    c.transpose = lower(c.cap, Isa::Avx2);
    c.bf16_gemm = c.cap == Isa::Avx512 && cpu_features().avx512_bf16;
    c.bf16_step = c.bf16_gemm;
    const std::string request = bf16_step_request();
    c.bf16_matmul_step = c.bf16_step && (request == "matmul" ||
                                         (request.empty() && cpu_features().amx_bf16));
    c.bf16_matmul_min_batch = request == "matmul" ? 1 : 4;
    c.bf16_amx_step = c.bf16_matmul_step && request.empty() && cpu_features().amx_bf16;
    c.gemm_tn_at_full_rate =
        c.cap == Isa::Avx512 || (c.cap == Isa::Avx2 && cpu_features().intel);
    return c;
  }();
  return choice;
}

std::string describe(const KernelChoice& c) {
  return std::string("cap ") + isa_name(c.cap) + ": recurrent product " +
         isa_name(c.recurrent_product) + ", cell forward " + isa_name(c.cell_forward) +
         ", forward step " + isa_name(c.step_forward) +
         (c.step_k_chunk > 0 ? " (k chunks of " + std::to_string(c.step_k_chunk) + ")" : "") +
         ", cell backward " + isa_name(c.cell_backward) + ", transpose " +
         isa_name(c.transpose) + ", bf16 GEMM " + (c.bf16_gemm ? "yes" : "no") +
         ", bf16 forward step " + (c.bf16_step ? "yes" : "no") +
         ", bf16 step on oneDNN matmul " +
         (c.bf16_matmul_step ? "from batch " + std::to_string(c.bf16_matmul_min_batch) : "no") +
         (amx_bf16_usable() ? " (AMX)" : "") +
         (c.bf16_amx_step ? ", on lstmop's AMX tiles" : "") +
         ", TN weight gradients " + (c.gemm_tn_at_full_rate ? "yes" : "no");
}

}  // namespace kernels
}  // namespace lstmop
