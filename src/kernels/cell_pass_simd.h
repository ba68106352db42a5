// Internal: the vector cell passes of cell_pass.h written once over a vector
// type V, for cell_pass_avx2.cpp (8 floats, AVX2 + FMA) and
// cell_pass_avx512.cpp (16 floats, AVX-512 F/BW). Only those two files include
// this, each after defining LSTMOP_CELL_TARGET (the target attribute of
// isa_target.h every function here carries) and its V.
//
// V provides (every operation lane-wise, the same IEEE operation in both ISAs,
// so both give the same bits for every element):
//   reg, mask (a lane predicate), kLanes;
//   set1, add, sub, mul, div, min, max (min(a, b) / max(a, b) return b when
//   either is NaN), fmadd(a, b, c) = a*b + c, fnmadd(a, b, c) = c - a*b and
//   fnmsub(a, b, c) = -(a*b) - c fused, pow2i(n) = 2^n for integral n in
//   [-127, 127] as a float built from the exponent bits, scale2(p, n) = p *
//   2^n for integral n (exact where the result is a normal float: mul(p,
//   pow2i(n)) in AVX2, vscalefps in AVX-512), abs, with_sign_of(t, x) = t
//   with x's sign bit or-ed in;
//   less(a, b) (ordered a < b, false for NaN), zero_where(m, v),
//   div_zero_where(m, a, b) = zero_where(m, div(a, b));
//   Tail tail(count): the lanes k < count (all when count >= kLanes);
//   loadu, storeu, load_tail(Tail, p), store_tail(Tail, p, v);
//   store_bfloat16(uint16_t* p, reg) for a full vector (float_to_bfloat16 of
//   tensor.h per lane: nearest even, NaN quieted with sign and payload kept).
//
// Activations: exp(x) = 2^n (1 + p(r)), n = round(x / ln 2) (one fused
// rounding), r = x - n ln 2 in two parts, p(r) = r + r^2 P(r) for expm1 on
// [-ln 2 / 2, ln 2 / 2] (P of degree 4, scripts/fit_expm1_polynomial.py:
// 3.8e-9 relative error of exp(r) with the float coefficients in exact
// arithmetic; Cephes' expf has a term more), x raised to -87 if below so 2^n
// is a normal float (NaN kept; x <= 88 by the callers), 2^n (1 + p) by
// V::scale2 (an exact scaling either way); sigmoid(x) = 1 / (1 + exp(-x)),
// exactly 0 for x < -88;
// tanh(x) = sign(x) m / (1 + e), e = exp(-2|x|), m = 1 - e = 1 - 2^n - 2^n p
// in one rounding (no cancellation for small |x|), 1 + e from e rounded once
// (error and saturation: cell_pass_isa.h).
//
// The last partial vector of a row goes through the same operations with
// masked loads and stores, so every element gets the same bits wherever it
// sits in the row (H need not be a multiple of the vector width).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/element_access.h"
#include "kernels/cell_pass.h"
#include "kernels/isa_target.h"

#ifndef LSTMOP_CELL_TARGET
#error "define LSTMOP_CELL_TARGET before including cell_pass_simd.h"
#endif

namespace lstmop {
namespace detail {
namespace cell_simd {

// y[e] = tanh(v[e]) where bit e of kTanh is set, else sigmoid(v[e]), for M
// vectors; the only definition of the activations (sigmoid_v and tanh_v
// below are its M = 1 forms). Each step is applied to all M vectors before
// the next, so that M independent chains of the exp (tens of cycles of
// latency each) overlap in the core instead of one activation waiting on the
// previous one's; lane for lane the operations are the same whatever M is.
//
// exp(x) for x <= 88 (NaN kept); x below -87 is taken as -87, so that 2^n is
// a normal float and p 2^n exact. x above 88 gives a meaningless value: it is
// never used (sigmoid's exp(-x) is replaced by the limit 0 for x < -88;
// tanh's argument is -2|x| <= 0).
template <class V, int M, uint32_t kTanh>
LSTMOP_CELL_TARGET inline LSTMOP_ALWAYS_INLINE void activate_interleaved(
    const typename V::reg (&v)[M], typename V::reg (&y)[M]) {
  static_assert(M <= 32, "kTanh holds 32 bits");
  using reg = typename V::reg;
  constexpr auto is_tanh = [](int e) { return ((kTanh >> e) & 1u) != 0; };
  reg x[M], n[M], r[M], p[M];
  // exp's argument, -v for a sigmoid and -2|v| for tanh, raised to -87 if
  // below. A tanh lane's x[e] holds it; a sigmoid lane's holds its negation
  // min(87, v), and n and r below turn the signs (fnmadd for fmadd, fnmsub
  // for fnmadd: the same values, one negation fewer).
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) {
    x[e] = is_tanh(e) ? V::mul(V::min(V::set1(43.5f), V::abs(v[e])), V::set1(-2.0f))
                      : V::min(V::set1(87.0f), v[e]);
  }
  // n = x / ln 2 rounded to an integer in the fused multiply-add's one
  // rounding: adding 1.5 * 2^23 leaves no bits below the unit (|x / ln 2| <
  // 2^22), and subtracting it back is exact. (The product rounded to a float
  // first and then to an integer could round the other way at a tie: then n
  // differs by one and r by ln 2, still within exp's polynomial range.)
  const reg shifter = V::set1(12582912.0f), log2e = V::set1(1.44269504088896341f);
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) {
    n[e] = V::sub(is_tanh(e) ? V::fmadd(x[e], log2e, shifter) : V::fnmadd(x[e], log2e, shifter),
                  shifter);
  }
  // ln 2 = 0.693359375 - 2.12194440e-4: n * 0.693359375 is exact for |n| < 2^15.
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) {
    r[e] = is_tanh(e) ? V::fnmadd(n[e], V::set1(0.693359375f), x[e])
                      : V::fnmsub(n[e], V::set1(0.693359375f), x[e]);
  }
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) r[e] = V::fnmadd(n[e], V::set1(-2.12194440e-4f), r[e]);
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) {
    p[e] = V::fmadd(V::set1(1.3814565027e-3f), r[e], V::set1(8.3687128499e-3f));
  }
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) p[e] = V::fmadd(p[e], r[e], V::set1(4.1668388993e-2f));
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) p[e] = V::fmadd(p[e], r[e], V::set1(1.6666521132e-1f));
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) p[e] = V::fmadd(p[e], r[e], V::set1(4.9999994040e-1f));
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) p[e] = V::fmadd(p[e], V::mul(r[e], r[e]), r[e]);
  // p = expm1(r) here. A NaN n gives a meaningless 2^n, but p is NaN then
  // and so is every result.
  const reg one = V::set1(1.0f);
#pragma GCC unroll 32
  for (int e = 0; e < M; ++e) {
    if (!is_tanh(e)) {
      // sigmoid = 1 / (1 + exp(-v)), exp(-v) = (1 + p) 2^n; the exact limit 0
      // below -88 (false for NaN), where exp(-v) is meaningless.
      const reg ex = V::scale2(V::add(p[e], one), n[e]);
      y[e] = V::div_zero_where(V::less(v[e], V::set1(-88.0f)), one, V::add(one, ex));
    } else {
      // tanh |v| = (1 - e) / (1 + e), e = exp(-2|v|): the numerator as
      // 1 - 2^n - 2^n p in one rounding (fnmadd; 1 - 2^n is exact), so that
      // small |v| keeps its relative accuracy (no 1 - e cancellation); the
      // denominator from e = 2^n + 2^n p rounded once (not 2 - m, which
      // would carry m's rounding twice into the quotient).
      const reg t = V::scale2(one, n[e]);
      const reg m = V::fnmadd(t, p[e], V::sub(one, t));
      const reg d = V::add(one, V::fmadd(t, p[e], t));
      y[e] = V::with_sign_of(V::div(m, d), v[e]);
    }
  }
}

template <class V>
LSTMOP_CELL_TARGET inline LSTMOP_ALWAYS_INLINE typename V::reg sigmoid_v(typename V::reg x) {
  const typename V::reg v[1] = {x};
  typename V::reg y[1];
  activate_interleaved<V, 1, 0u>(v, y);
  return y[0];
}

template <class V>
LSTMOP_CELL_TARGET inline LSTMOP_ALWAYS_INLINE typename V::reg tanh_v(typename V::reg x) {
  const typename V::reg v[1] = {x};
  typename V::reg y[1];
  activate_interleaved<V, 1, 1u>(v, y);
  return y[0];
}

// activate_interleaved where the registers hold it: with AVX-512's 32 the M
// activations interleaved (T=200 B=8 I=H=128 inference on Zen 5: bfloat16
// 5.6%, float32 3% faster than one at a time); AVX2's 16 would spill them
// (B=1 2% slower), so there one activation after the other.
template <class V, int M, uint32_t kTanh>
LSTMOP_CELL_TARGET inline LSTMOP_ALWAYS_INLINE void activate(const typename V::reg (&v)[M],
                                                             typename V::reg (&y)[M]) {
  if constexpr (V::kLanes < 16) {
#pragma GCC unroll 32
    for (int e = 0; e < M; ++e) {
      y[e] = ((kTanh >> e) & 1u) != 0 ? tanh_v<V>(v[e]) : sigmoid_v<V>(v[e]);
    }
  } else {
    activate_interleaved<V, M, kTanh>(v, y);
  }
}

// kTanh of `rows` rows' gates laid out (i, f, g, o) per row: g is the tanh.
constexpr uint32_t gate_tanh_bits(int rows) {
  uint32_t bits = 0;
  for (int r = 0; r < rows; ++r) bits |= 4u << (4 * r);
  return bits;
}

// Full vectors use plain loads and stores, only a row's last partial vector
// the masked ones (slow on AMD's cores in AVX2); the arithmetic is the same.
template <class V, bool kFull>
LSTMOP_CELL_TARGET inline typename V::reg load(const typename V::Tail& m, const float* p) {
  if constexpr (kFull) {
    (void)m;
    return V::loadu(p);
  } else {
    return V::load_tail(m, p);
  }
}
template <class V, bool kFull>
LSTMOP_CELL_TARGET inline void store(const typename V::Tail& m, float* p, typename V::reg v) {
  if constexpr (kFull) {
    (void)m;
    V::storeu(p, v);
  } else {
    V::store_tail(m, p, v);
  }
}

// gates + bias of one gate block, one vector of columns.
template <class V, bool kFull>
LSTMOP_CELL_TARGET inline typename V::reg preactivation(const typename V::Tail& m, const float* a,
                                                        const float* bias) {
  return V::add(load<V, kFull>(m, a), load<V, kFull>(m, bias));
}

// Saved-tensor stores: float directly, full bfloat16 vectors rounded in
// registers, anything else element by element (StoreAs, nearest even).
template <class V, bool kFull, class Storage>
LSTMOP_CELL_TARGET inline void store_saved(Storage* dst, const typename V::Tail& m, int64_t count,
                                           typename V::reg v) {
  if constexpr (std::is_same_v<Storage, float>) {
    (void)count;
    store<V, kFull>(m, dst, v);
  } else if constexpr (std::is_same_v<Storage, BFloat16> && kFull) {
    (void)m, (void)count;
    V::store_bfloat16(reinterpret_cast<uint16_t*>(dst), v);
  } else {
    alignas(64) float tmp[V::kLanes];
    V::storeu(tmp, v);
    for (int64_t e = 0; e < count; ++e) dst[e] = StoreAs<Storage>::from(tmp[e]);
  }
}

// Columns [k, k + count) of one row.
template <class V, bool kFull, class Storage>
LSTMOP_CELL_TARGET inline void forward_block(int64_t H, int64_t k, int64_t count, const float* a,
                                             const float* bias, float* c, float* h, float* out,
                                             const StepSaved<Storage>* saved, int64_t e) {
  const typename V::Tail m = V::tail(count);
  typename V::reg x[4], g[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) x[q] = preactivation<V, kFull>(m, a + q * H + k, bias + q * H + k);
  activate<V, 4, gate_tanh_bits(1)>(x, g);
  const auto gi = g[0], gf = g[1], gj = g[2], go = g[3];
  const auto cn = V::add(V::mul(gf, load<V, kFull>(m, c + k)), V::mul(gi, gj));
  const auto tc = tanh_v<V>(cn);
  const auto hn = V::mul(go, tc);
  store<V, kFull>(m, c + k, cn);
  store<V, kFull>(m, h + k, hn);
  store<V, kFull>(m, out + k, hn);
  if (saved != nullptr) {
    store_saved<V, kFull>(saved->i + e, m, count, gi);
    store_saved<V, kFull>(saved->j + e, m, count, gj);
    store_saved<V, kFull>(saved->f + e, m, count, gf);
    store_saved<V, kFull>(saved->o + e, m, count, go);
    store_saved<V, kFull>(saved->c + e, m, count, cn);
    store_saved<V, kFull>(saved->tanhc + e, m, count, tc);
    if (saved->h != nullptr) store_saved<V, kFull>(saved->h + e, m, count, hn);
  }
}

// Full columns [k, k + kLanes) of two rows (gates a0 and a0 + 4H, states and
// outputs a row stride H and ld_out apart): forward_block's values, the two
// rows' eight gate activations and their two tanh(c) interleaved (activate),
// so the exps' latency chains overlap (the AMX step's blocks of 16 units: S6
// bfloat16 inference on an Intel Xeon, the cell pass ~26% of the time).
template <class V, class Storage>
LSTMOP_CELL_TARGET inline void forward_block_rows2(int64_t H, int64_t k, const float* a,
                                                   const float* bias, float* c, float* h,
                                                   float* out, int64_t ld_out,
                                                   const StepSaved<Storage>* saved, int64_t e) {
  const typename V::Tail m = V::tail(V::kLanes);
  typename V::reg x[8], g[8];
#pragma GCC unroll 8
  for (int q = 0; q < 8; ++q) {
    x[q] = preactivation<V, true>(m, a + (q / 4) * 4 * H + (q % 4) * H + k, bias + (q % 4) * H + k);
  }
  activate<V, 8, gate_tanh_bits(2)>(x, g);
  typename V::reg cn[2], tc[2];
#pragma GCC unroll 2
  for (int r = 0; r < 2; ++r) {
    cn[r] = V::add(V::mul(g[4 * r + 1], load<V, true>(m, c + r * H + k)),
                   V::mul(g[4 * r], g[4 * r + 2]));
  }
  activate<V, 2, 3u>(cn, tc);
#pragma GCC unroll 2
  for (int r = 0; r < 2; ++r) {
    const auto hn = V::mul(g[4 * r + 3], tc[r]);
    store<V, true>(m, c + r * H + k, cn[r]);
    store<V, true>(m, h + r * H + k, hn);
    store<V, true>(m, out + r * ld_out + k, hn);
    if (saved != nullptr) {
      const int64_t at = e + r * H;
      store_saved<V, true>(saved->i + at, m, V::kLanes, g[4 * r]);
      store_saved<V, true>(saved->j + at, m, V::kLanes, g[4 * r + 2]);
      store_saved<V, true>(saved->f + at, m, V::kLanes, g[4 * r + 1]);
      store_saved<V, true>(saved->o + at, m, V::kLanes, g[4 * r + 3]);
      store_saved<V, true>(saved->c + at, m, V::kLanes, cn[r]);
      store_saved<V, true>(saved->tanhc + at, m, V::kLanes, tc[r]);
      if (saved->h != nullptr) store_saved<V, true>(saved->h + at, m, V::kLanes, hn);
    }
  }
}

template <class V, class Storage>
LSTMOP_CELL_TARGET void cell_forward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                     const float* gates, const float* bias, float* c_state,
                                     float* h_state, float* layer_out, int64_t ld_out,
                                     const StepSaved<Storage>* saved) {
  const int64_t G = 4 * H;
  int64_t r = 0;
  if constexpr (V::kLanes >= 16) {  // AVX-512's 32 registers hold two rows' gates
    for (; r + 2 <= rows; r += 2) {
      int64_t k = u_begin;
      for (; k + V::kLanes <= u_end; k += V::kLanes) {
        forward_block_rows2<V, Storage>(H, k, gates + r * G, bias, c_state + r * H,
                                        h_state + r * H, layer_out + r * ld_out, ld_out, saved,
                                        r * H + k);
      }
      for (int64_t q = r; q < r + 2 && k < u_end; ++q) {
        forward_block<V, false, Storage>(H, k, u_end - k, gates + q * G, bias, c_state + q * H,
                                         h_state + q * H, layer_out + q * ld_out, saved,
                                         q * H + k);
      }
    }
  }
  for (; r < rows; ++r) {
    const float* a = gates + r * G;
    float* c = c_state + r * H;
    float* h = h_state + r * H;
    float* out = layer_out + r * ld_out;
    int64_t k = u_begin;
    for (; k + V::kLanes <= u_end; k += V::kLanes) {
      forward_block<V, true, Storage>(H, k, V::kLanes, a, bias, c, h, out, saved, r * H + k);
    }
    if (k < u_end) {
      forward_block<V, false, Storage>(H, k, u_end - k, a, bias, c, h, out, saved, r * H + k);
    }
  }
}

// A saved tensor's vector: floats, or bfloat16 bits (uint16_t) widened to
// floats, exactly (the tail through a zero-filled copy).
template <class V, bool kFull>
LSTMOP_CELL_TARGET inline typename V::reg load_saved(const typename V::Tail& m, int64_t count,
                                                     const float* p) {
  (void)count;
  return load<V, kFull>(m, p);
}
template <class V, bool kFull>
LSTMOP_CELL_TARGET inline typename V::reg load_saved(const typename V::Tail& m, int64_t count,
                                                     const uint16_t* p) {
  (void)m;
  if constexpr (kFull) {
    (void)count;
    return V::load_bfloat16(p);
  } else {
    uint16_t tmp[V::kLanes] = {};
    for (int64_t e = 0; e < count; ++e) tmp[e] = p[e];
    return V::load_bfloat16(tmp);
  }
}

// S: float, or uint16_t for bfloat16 saved tensors (the same arithmetic on
// the widened values, so the same bits as on a float copy of them).
template <class V, bool kFull, class S>
LSTMOP_CELL_TARGET inline void backward_block(int64_t H, int64_t k, int64_t count, int64_t e,
                                              const S* i, const S* j, const S* f, const S* o,
                                              const S* tanhc, const S* c_prev, const float* dy,
                                              const float* dh_state, float* dc_state,
                                              float* dg) {
  const auto one = V::set1(1.0f);
  const typename V::Tail m = V::tail(count);
  const auto gi = load_saved<V, kFull>(m, count, i + e);
  const auto gj = load_saved<V, kFull>(m, count, j + e);
  const auto gf = load_saved<V, kFull>(m, count, f + e);
  const auto go = load_saved<V, kFull>(m, count, o + e);
  const auto tc = load_saved<V, kFull>(m, count, tanhc + e);
  const auto dh = V::add(load<V, kFull>(m, dh_state + e), load<V, kFull>(m, dy + k));
  const auto dc = V::add(load<V, kFull>(m, dc_state + e),
                         V::mul(V::mul(dh, go), V::sub(one, V::mul(tc, tc))));
  const auto d_i = V::mul(V::mul(V::mul(dc, gj), gi), V::sub(one, gi));
  const auto d_f =
      V::mul(V::mul(V::mul(dc, load_saved<V, kFull>(m, count, c_prev + e)), gf), V::sub(one, gf));
  const auto d_g = V::mul(V::mul(dc, gi), V::sub(one, V::mul(gj, gj)));
  const auto d_o = V::mul(V::mul(V::mul(dh, tc), go), V::sub(one, go));
  store<V, kFull>(m, dg + k, d_i);
  store<V, kFull>(m, dg + H + k, d_f);
  store<V, kFull>(m, dg + 2 * H + k, d_g);
  store<V, kFull>(m, dg + 3 * H + k, d_o);
  store<V, kFull>(m, dc_state + e, V::mul(dc, gf));
}

template <class V, class S>
LSTMOP_CELL_TARGET void cell_backward(int64_t rows, int64_t H, int64_t u_begin, int64_t u_end,
                                      const S* i, const S* j, const S* f, const S* o,
                                      const S* tanhc, const S* c_prev, const float* d_out,
                                      int64_t ld_out, const float* dh_state, float* dc_state,
                                      float* d_gates) {
  const int64_t G = 4 * H;
  for (int64_t r = 0; r < rows; ++r) {
    const float* dy = d_out + r * ld_out;
    float* dg = d_gates + r * G;
    int64_t k = u_begin;
    for (; k + V::kLanes <= u_end; k += V::kLanes) {
      backward_block<V, true, S>(H, k, V::kLanes, r * H + k, i, j, f, o, tanhc, c_prev, dy,
                                 dh_state, dc_state, dg);
    }
    if (k < u_end) {
      backward_block<V, false, S>(H, k, u_end - k, r * H + k, i, j, f, o, tanhc, c_prev, dy,
                                  dh_state, dc_state, dg);
    }
  }
}

// y = F(x) for n floats.
template <class V, typename V::reg (*F)(typename V::reg)>
LSTMOP_CELL_TARGET void apply(int64_t n, const float* x, float* y) {
  for (int64_t k = 0; k < n; k += V::kLanes) {
    const typename V::Tail m = V::tail(n - k);
    store<V, false>(m, y + k, F(load<V, false>(m, x + k)));
  }
}

}  // namespace cell_simd
}  // namespace detail
}  // namespace lstmop
