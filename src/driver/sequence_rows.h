// Internal: moving rows between the caller's tensors and the drivers' compact
// workspaces, shared by the forward and the backward driver.
//
// Compact rows: step t's valid sequences b < step_batch[t] are rows
// step_offset[t] + b of a (valid rows, F) workspace, so padding of
// variable-length input is never read or computed. Tensors are read through
// any strides and dtype, widened to the compute type Acc; writes round to the
// tensor's dtype (element_access.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "common/element_access.h"
#include "driver/threads.h"
#include "plan/lstm_problem.h"

namespace lstmop {
namespace detail {

// The DType of the compute type.
template <class Acc>
constexpr DType compute_dtype() {
  return std::is_same_v<Acc, float> ? DType::Float32 : DType::Float64;
}

// A tensor in the input's or the output's format (input, grad_y, output, dx)
// whose rows already lie as the compact (N, features) rows of elements of
// `dtype`: every sequence T long (no invalid row), features contiguous, rows
// consecutive (time-major, or one sequence, or a full batch_sizes input); or
// a contiguous packed_rows input or output.
// Its data, to read or write in place instead of gathering or scattering
// (the same values: a copy skipped); null for any other tensor.
inline void* compact_rows_in_place_of(const LstmProblem& p, const TensorView& v,
                                      int64_t features, DType dtype) {
  if (!v.defined || v.data == nullptr || v.dtype != dtype || features <= 0 ||
      p.valid_rows() == 0) {
    return nullptr;
  }
  if (p.packed_rows) {  // (N, features): the compact rows when contiguous
    const bool contiguous = v.stride(1) == 1 && (p.valid_rows() == 1 || v.stride(0) == features);
    return contiguous ? v.data : nullptr;
  }
  if (p.valid_rows() != p.T * p.B) return nullptr;
  const SequenceLayout l = p.sequence_layout(v);
  if (l.f_stride != 1 || (p.B > 1 && l.b_stride != features) ||
      (p.T > 1 && l.t_stride != p.B * features)) {
    return nullptr;
  }
  return v.data;
}

// compact_rows_in_place_of in the compute type.
template <class Acc>
Acc* compact_rows_in_place(const LstmProblem& p, const TensorView& v, int64_t features) {
  return static_cast<Acc*>(compact_rows_in_place_of(p, v, features, compute_dtype<Acc>()));
}

// dst (step_batch[t], features) <- step t's valid rows of a tensor in the
// input's or the output's format (l: its sequence_layout).
template <class Acc>
void gather_step_rows(const LstmProblem& p, const TensorView& v, const SequenceLayout& l,
                      int64_t t, int64_t features, Acc* dst) {
  const int64_t row_stride = p.packed_rows ? v.stride(0) : l.b_stride;
  const int64_t col_stride = p.packed_rows ? v.stride(1) : l.f_stride;
  gather_matrix<Acc>(v, p.row_offset(v, l, t, 0), p.step_batch[t], row_stride, features,
                     col_stride, dst, features);
}

// dst (N, features) <- the valid rows of a tensor in the input's or the
// output's format (input, grad_y): those of steps [t0, t1) (all by default).
template <class Acc>
void gather_valid_rows(const LstmProblem& p, const TensorView& v, int64_t features, Acc* dst,
                       int64_t t0 = 0, int64_t t1 = -1) {
  if (t1 < 0) t1 = p.T;
  if (p.packed_rows) {
    const int64_t first = p.step_offset[t0], rows = p.step_offset[t1] - first;
    gather_matrix<Acc>(v, first * v.stride(0), rows, v.stride(0), features, v.stride(1),
                       dst + first * features, features);
    return;
  }
  const SequenceLayout l = p.sequence_layout(v);
  for (int64_t t = t0; t < t1; ++t) {
    gather_step_rows<Acc>(p, v, l, t, features, dst + p.step_offset[t] * features);
  }
}

// A contiguous tensor in the input's or the output's format (output, dx) <-
// src (N, features) at the valid rows, zeros at the others (packed_rows: the
// N rows themselves): those of steps [t0, t1) (all by default).
template <class Acc>
void scatter_valid_rows(const LstmProblem& p, const Acc* src, int64_t features,
                        const TensorView& v, int64_t t0 = 0, int64_t t1 = -1) {
  if (t1 < 0) t1 = p.T;
  if (p.packed_rows) {  // no invalid row to zero
    const int64_t first = p.step_offset[t0], rows = p.step_offset[t1] - first;
    scatter_matrix<Acc>(src + first * features, features, rows, features, v,
                        first * v.stride(0), v.stride(0), v.stride(1));
    return;
  }
  const SequenceLayout l = p.sequence_layout(v);
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t rows = p.step_batch[t];
    scatter_matrix<Acc>(src + p.step_offset[t] * features, features, rows, features, v,
                        t * l.t_stride, l.b_stride, l.f_stride);
    if (rows < p.B) {
      zero_matrix(v, t * l.t_stride + rows * l.b_stride, p.B - rows, l.b_stride, features,
                  l.f_stride);
    }
  }
}

// The first step of the second of two parts of the steps with about half of
// the valid rows each (gather_valid_rows, scatter_valid_rows on two threads).
inline int64_t middle_step(const LstmProblem& p) {
  int64_t t = 0;
  while (t < p.T && 2 * p.step_offset[t] < p.valid_rows()) ++t;
  return t;
}

// fn(t0, t1) for the two parts of the steps (middle_step), on two threads
// where max_threads allows (run_tasks), else one after the other.
template <class Fn>
void in_step_halves(const LstmProblem& p, int64_t max_threads, Fn&& fn) {
  const int64_t middle = middle_step(p);
  run_tasks(2, max_threads, [&](int64_t part) {
    if (part == 0) {
      fn(int64_t{0}, middle);
    } else {
      fn(middle, p.T);
    }
  });
}

// Columns [u0, u1) of rows [first, first + rows) of slot s of a (D*L, B,
// width) view (hx entries, grad_hy, grad_cy: width R for h, H for c) into dst
// (rows, width), row stride width; zeros when v is null or undefined (an
// empty hx, an undefined gradient).
template <class Acc>
void gather_slot_rows(const TensorView* v, int64_t s, int64_t first, int64_t rows, int64_t width,
                      Acc* dst, int64_t u0, int64_t u1) {
  if (v == nullptr || !v->defined) {
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(dst + r * width + u0, dst + r * width + u1, Acc(0));
    }
    return;
  }
  gather_matrix<Acc>(*v, s * v->stride(0) + first * v->stride(1) + u0 * v->stride(2), rows,
                     v->stride(1), u1 - u0, v->stride(2), dst + u0, width);
}

// Slot s of a contiguous (D*L, B, width) output (hy, dh0: width R; cy, dc0:
// H) <- src (B, width).
template <class Acc>
void scatter_slot(const LstmProblem& p, const Acc* src, int64_t width, const TensorView& v,
                  int64_t s) {
  scatter_matrix<Acc>(src, width, p.B, width, v, s * p.B * width, width, 1);
}

// dst (rows, cols) contiguous <- a 2-D weight as stored (w_ih, w_hh, dW).
template <class Acc>
void gather_weight(const TensorView& w, int64_t rows, int64_t cols, Acc* dst) {
  gather_matrix<Acc>(w, 0, rows, w.stride(0), cols, w.stride(1), dst, cols);
}

// The rows a product reads of a 2-D weight (w_ih, w_hh) as stored: the
// caller's data when of the compute type with unit column stride (read in
// place, *ld its row stride), else `copy` (rows, cols) gathered (*ld = cols).
template <class Acc>
const Acc* weight_rows(const TensorView& w, int64_t rows, int64_t cols, Acc* copy,
                       int64_t* ld) {
  if (w.data != nullptr && w.dtype == compute_dtype<Acc>() && rows > 0 && cols > 0 &&
      w.stride(1) == 1 && w.stride(0) >= cols) {
    *ld = w.stride(0);
    return static_cast<const Acc*>(w.data);
  }
  gather_weight<Acc>(w, rows, cols, copy);
  *ld = cols;
  return copy;
}

// A (rows, cols) output written in place (the weight gradients): the
// caller's data when of the compute type and contiguous, else null (the
// driver computes into its scratch and scatters, converting).
template <class Acc>
Acc* matrix_in_place(const TensorView& v, int64_t rows, int64_t cols) {
  if (v.data == nullptr || v.dtype != compute_dtype<Acc>() || rows <= 0 || cols <= 0 ||
      v.stride(1) != 1 || (rows > 1 && v.stride(0) != cols)) {
    return nullptr;
  }
  return static_cast<Acc*>(v.data);
}

// Columns [u0, u1) of rows x width at [s, t, first:] of a saved (D*L, T, B,
// width) view (width H, or R for h) into dst, row stride width.
template <class Acc>
void gather_saved_rows(const TensorView& v, int64_t s, int64_t t, int64_t first, int64_t rows,
                       int64_t width, Acc* dst, int64_t u0, int64_t u1) {
  gather_matrix<Acc>(v, s * v.stride(0) + t * v.stride(1) + first * v.stride(2) + u0 * v.stride(3),
                     rows, v.stride(2), u1 - u0, v.stride(3), dst + u0, width);
}

// Columns [u0, u1) of the h (width R) or c (width H) that step t of direction
// dir started from, rows 0..step_batch[t]-1, into dst (rows, width): the saved
// tensor at the previous step (t - 1 forward, t + 1 reverse) for the rows that
// step had, the initial state (hx, or zeros when null) for the others.
// The step step t of direction dir started from (t - 1 forward, t + 1
// reverse) in *prev, and how many of step t's rows it had (0 at the first).
inline int64_t rows_from_previous_step(const LstmProblem& p, int64_t dir, int64_t t,
                                       int64_t* prev) {
  *prev = dir == 0 ? t - 1 : t + 1;
  return *prev < 0 || *prev >= p.T ? 0 : std::min(p.step_batch[*prev], p.step_batch[t]);
}

template <class Acc>
void gather_previous_state(const LstmProblem& p, const TensorView& saved,
                           const TensorView* initial, int64_t s, int64_t dir, int64_t t,
                           int64_t width, Acc* dst, int64_t u0, int64_t u1) {
  const int64_t rows = p.step_batch[t];
  int64_t prev = 0;
  const int64_t from_saved = rows_from_previous_step(p, dir, t, &prev);
  if (from_saved > 0) gather_saved_rows<Acc>(saved, s, prev, 0, from_saved, width, dst, u0, u1);
  if (rows > from_saved) {
    gather_slot_rows<Acc>(initial, s, from_saved, rows - from_saved, width,
                          dst + from_saved * width, u0, u1);
  }
}

// dst (rows, cols) contiguous <- 16-bit elements (bfloat16 bits) at src with
// the given strides, copied as they are.
inline void copy_bits_rows(const uint16_t* src, int64_t rows, int64_t row_stride, int64_t cols,
                           int64_t col_stride, uint16_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* row = src + r * row_stride;
    if (col_stride == 1) {
      std::copy_n(row, cols, dst + r * cols);
    } else {
      for (int64_t k = 0; k < cols; ++k) dst[r * cols + k] = row[k * col_stride];
    }
  }
}

// gather_previous_state of a bfloat16 call's h as bits: the saved h's and
// hx's bits copied as they are (what widening and rounding back gives them),
// zeros (+0) where hx is absent. saved, and initial when defined, are
// bfloat16 views. All width columns.
inline void gather_previous_state_bits(const LstmProblem& p, const TensorView& saved,
                                       const TensorView* initial, int64_t s, int64_t dir,
                                       int64_t t, int64_t width, uint16_t* dst) {
  const int64_t rows = p.step_batch[t];
  int64_t prev = 0;
  const int64_t from_saved = rows_from_previous_step(p, dir, t, &prev);
  if (from_saved > 0) {
    copy_bits_rows(static_cast<const uint16_t*>(saved.data) + s * saved.stride(0) +
                       prev * saved.stride(1),
                   from_saved, saved.stride(2), width, saved.stride(3), dst);
  }
  if (rows > from_saved) {
    uint16_t* out = dst + from_saved * width;
    if (initial == nullptr || !initial->defined) {
      std::fill(out, out + (rows - from_saved) * width, uint16_t{0});
    } else {
      copy_bits_rows(static_cast<const uint16_t*>(initial->data) + s * initial->stride(0) +
                         from_saved * initial->stride(1),
                     rows - from_saved, initial->stride(1), width, initial->stride(2), out);
    }
  }
}

// The distinct positive row counts of the steps (step_batch is
// non-increasing), largest first.
inline std::vector<int64_t> distinct_step_batches(const LstmProblem& p) {
  std::vector<int64_t> rows;
  for (int64_t t = 0; t < p.T; ++t) {
    const int64_t r = p.step_batch[t];
    if (r > 0 && (rows.empty() || rows.back() != r)) rows.push_back(r);
  }
  return rows;
}

}  // namespace detail
}  // namespace lstmop
