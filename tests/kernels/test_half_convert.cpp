// float16 <-> float32 runs (src/common/half_convert.h) give tensor.h's
// half_to_float / float_to_half bits for every value: all 65536 halves
// widened, and floats narrowed across every exponent with the significands
// that decide the rounding (ties to even in the normal and in each subnormal
// shift, one above and below them, carries into the exponent, overflow to
// infinity, NaN payloads); bfloat16 <-> float32 runs likewise give
// bfloat16_to_float / float_to_bfloat16's bits (every bfloat16 widened; floats
// of every exponent, subnormals included, around the 16-bit rounding
// position). All under the default MXCSR and with FTZ and DAZ set
// (lstmop's own computation runs with them). Lengths 1..40 and offsets
// reach the scalar remainders. Runs the body kernel_choice() picks (ctest
// reruns it capped to AVX2 and to the generic kernels); where the CPU has no
// vector body the run goes to the scalar functions and the test says so.
#include <gtest/gtest.h>
#include <xmmintrin.h>

#include <cstring>
#include <random>
#include <vector>

#include "common/half_convert.h"
#include "kernels/cpu_features.h"
#include "lstmop/tensor.h"

namespace {

using lstmop::detail::bfloat16s_to_floats;
using lstmop::detail::floats_to_bfloat16s;
using lstmop::detail::floats_to_halves;
using lstmop::detail::halves_to_floats;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// The two MXCSR settings the conversions run under; restores the caller's.
class HalfConvert : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    saved_ = _mm_getcsr();
    if (GetParam()) _mm_setcsr(saved_ | 0x8040u);  // FTZ | DAZ
    if (lstmop::kernels::kernel_choice().cap == lstmop::kernels::Isa::Scalar) {
      std::printf("[ NOTE     ] generic kernels: the conversions run the scalar functions\n");
    }
  }
  void TearDown() override { _mm_setcsr(saved_); }
  unsigned saved_ = 0;
};

// Every 16-bit pattern widened by the run conversion `run` gives the scalar
// function's bits.
void expect_every_value_widens(void (*run)(const uint16_t*, float*, int64_t),
                               float (*scalar)(uint16_t), const char* name) {
  std::vector<uint16_t> values(65536);
  for (uint32_t k = 0; k < 65536; ++k) values[k] = static_cast<uint16_t>(k);
  std::vector<float> out(65536);
  run(values.data(), out.data(), 65536);
  int64_t bad = 0;
  for (uint32_t k = 0; k < 65536; ++k) {
    if (bits_of(out[k]) != bits_of(scalar(static_cast<uint16_t>(k)))) {
      if (++bad <= 5) {
        ADD_FAILURE() << std::hex << name << " 0x" << k << " -> 0x" << bits_of(out[k]);
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// The floats of `cases` (bit patterns) narrowed by the run conversion `run`
// give the scalar function's bits.
void expect_narrows(const std::vector<uint32_t>& cases,
                    void (*run)(const float*, uint16_t*, int64_t), uint16_t (*scalar)(float)) {
  std::vector<float> in(cases.size());
  for (std::size_t k = 0; k < cases.size(); ++k) in[k] = float_of(cases[k]);
  std::vector<uint16_t> out(cases.size());
  run(in.data(), out.data(), static_cast<int64_t>(in.size()));
  int64_t bad = 0;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const uint16_t want = scalar(in[k]);
    if (out[k] != want) {
      if (++bad <= 5) {
        ADD_FAILURE() << std::hex << "float 0x" << cases[k] << " -> 0x" << out[k] << ", want 0x"
                      << want;
      }
    }
  }
  EXPECT_EQ(bad, 0) << "of " << cases.size();
}

TEST_P(HalfConvert, EveryHalfWidensToHalfToFloatsBits) {
  expect_every_value_widens(halves_to_floats, lstmop::half_to_float, "half");
}

TEST_P(HalfConvert, FloatsNarrowToFloatToHalfsBits) {
  std::vector<uint32_t> cases;
  std::mt19937 rng(5);
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t e = 0; e < 256; ++e) {
      const uint32_t base = (sign << 31) | (e << 23);
      for (int r = 0; r < 256; ++r) cases.push_back(base | (rng() & 0x7fffffu));
      // Around every rounding position: the normal one (13 bits) and each
      // subnormal shift (14..24 bits), with both parities of the kept bit.
      for (uint32_t shift = 13; shift <= 24; ++shift) {
        const uint32_t half = 1u << (shift - 1);
        for (uint32_t kept : {0u, 1u, 2u, 3u, 0x3ffu}) {
          const uint32_t high = (kept << shift) & 0x7fffffu;
          for (uint32_t rest : {0u, half - 1, half, half + 1, (1u << shift) - 1}) {
            cases.push_back(base | high | (rest & 0x7fffffu));
          }
        }
      }
    }
  }
  for (uint32_t b : {0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x7f800000u,
                     0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0x7fa5a5a5u, 0x38800000u, 0x387fffffu,
                     0x33000000u, 0x33000001u, 0x32ffffffu, 0x00000001u, 0x007fffffu}) {
    cases.push_back(b);
    cases.push_back(b | 0x80000000u);
  }
  expect_narrows(cases, floats_to_halves, lstmop::float_to_half);
}

TEST_P(HalfConvert, EveryBfloat16WidensToBfloat16ToFloatsBits) {
  expect_every_value_widens(bfloat16s_to_floats, lstmop::bfloat16_to_float, "bfloat16");
}

TEST_P(HalfConvert, FloatsNarrowToFloatToBfloat16sBits) {
  std::vector<uint32_t> cases;
  std::mt19937 rng(7);
  for (uint32_t sign = 0; sign < 2; ++sign) {
    for (uint32_t e = 0; e < 256; ++e) {  // e = 0: zeros and subnormals; 255: infinities, NaNs
      const uint32_t base = (sign << 31) | (e << 23);
      for (int r = 0; r < 64; ++r) cases.push_back(base | (rng() & 0x7fffffu));
      // The kept bit's two parities (and a carry through all seven) with the
      // dropped 16 bits below, at and above the tie.
      for (uint32_t kept : {0u, 1u, 2u, 3u, 0x7eu, 0x7fu}) {
        for (uint32_t rest : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
          cases.push_back(base | (kept << 16) | rest);
        }
      }
    }
  }
  for (uint32_t b : {0x7f7fffffu, 0x7f7f8000u, 0x7f7f7fffu, 0x7f800000u, 0x7f800001u,
                     0x7fc00000u, 0x7fffffffu, 0x7fa5a5a5u, 0x7f810000u, 0x00000001u,
                     0x007fffffu, 0x00008000u, 0x00018000u}) {
    cases.push_back(b);
    cases.push_back(b | 0x80000000u);
  }
  expect_narrows(cases, floats_to_bfloat16s, lstmop::float_to_bfloat16);
  // A few values by hand (float_to_bfloat16 itself: nearest even, NaN quieted).
  const float hand[] = {float_of(0x3f808000u), float_of(0x3f818000u), float_of(0x3f808001u),
                        float_of(0x7f7fffffu), float_of(0x7f800001u), float_of(0x00008000u)};
  uint16_t got[6];
  floats_to_bfloat16s(hand, got, 6);
  EXPECT_EQ(got[0], 0x3f80);  // a tie, even: down
  EXPECT_EQ(got[1], 0x3f82);  // a tie, odd: up
  EXPECT_EQ(got[2], 0x3f81);
  EXPECT_EQ(got[3], 0x7f80);  // overflow to infinity
  EXPECT_EQ(got[4], 0x7fc0);  // signalling NaN quieted, payload's upper bits kept
  EXPECT_EQ(got[5], 0x0000);  // a subnormal tie, even: down (not flushed by DAZ either way)
}

TEST_P(HalfConvert, EveryLengthAndOffset) {
  std::mt19937 rng(6);
  std::vector<uint16_t> halves(64);
  std::vector<float> floats(64);
  for (auto& h : halves) h = static_cast<uint16_t>(rng());
  for (auto& f : floats) f = float_of(rng());
  for (int64_t offset = 0; offset < 3; ++offset) {
    for (int64_t n = 0; n <= 40; ++n) {
      std::vector<float> wide(64, -1.0f);
      halves_to_floats(halves.data() + offset, wide.data() + offset, n);
      std::vector<uint16_t> narrow(64, 0xabcd);
      floats_to_halves(floats.data() + offset, narrow.data() + offset, n);
      std::vector<float> wide_b(64, -1.0f);
      bfloat16s_to_floats(halves.data() + offset, wide_b.data() + offset, n);
      std::vector<uint16_t> narrow_b(64, 0xabcd);
      floats_to_bfloat16s(floats.data() + offset, narrow_b.data() + offset, n);
      for (int64_t k = 0; k < 64; ++k) {
        const bool inside = k >= offset && k < offset + n;
        EXPECT_EQ(bits_of(wide[k]),
                  inside ? bits_of(lstmop::half_to_float(halves[k])) : bits_of(-1.0f))
            << "n " << n << " k " << k;
        EXPECT_EQ(narrow[k], inside ? lstmop::float_to_half(floats[k]) : 0xabcd)
            << "n " << n << " k " << k;
        EXPECT_EQ(bits_of(wide_b[k]),
                  inside ? bits_of(lstmop::bfloat16_to_float(halves[k])) : bits_of(-1.0f))
            << "bfloat16, n " << n << " k " << k;
        EXPECT_EQ(narrow_b[k], inside ? lstmop::float_to_bfloat16(floats[k]) : 0xabcd)
            << "bfloat16, n " << n << " k " << k;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Mxcsr, HalfConvert, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "FlushToZero" : "Default";
                         });

}  // namespace
