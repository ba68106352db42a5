// Internal: float16 <-> float32 for runs of contiguous values (the inputs,
// weights, saved tensors and results of float16 calls), with the bits of
// tensor.h's half_to_float / float_to_half for every value; bfloat16 <->
// float32 likewise (below).
//
// Element by element those two took a fifth of a float16 call (S2's shape,
// inference, Zen 5: 19% of the samples). The AVX-512 and AVX2 + F16C bodies
// (the one kernels::kernel_choice() picked; the scalar functions for the
// generic kernels, runs under 16 values and the last partial vector) widen
// with integer operations (a float16 subnormal as its integer significand
// times 2^-24, exact in float arithmetic whatever MXCSR says; infinity and
// NaN bits moved as they are, so a signalling NaN stays signalling as
// half_to_float leaves it) and narrow with vcvtps2ph rounding to nearest even
// (what the fused step's float16 stores already use), NaN lanes taking
// float_to_half's bits.
#pragma once

#include <cstdint>

namespace lstmop {
namespace detail {

void halves_to_floats(const uint16_t* src, float* dst, int64_t n);
void floats_to_halves(const float* src, uint16_t* dst, int64_t n);

// bfloat16 <-> float32 likewise, with tensor.h's bfloat16_to_float /
// float_to_bfloat16 bits for every value (integer operations only: the same
// bits whatever MXCSR says). Element by element (the compiler's SSE2 loop)
// the narrowing of a bfloat16 call's dx took 0.30 ms of T=50 B=32 I=H=256
// training on the Intel Xeon of the twenty-fourth session.
void bfloat16s_to_floats(const uint16_t* src, float* dst, int64_t n);
void floats_to_bfloat16s(const float* src, uint16_t* dst, int64_t n);

}  // namespace detail
}  // namespace lstmop
