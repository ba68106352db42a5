// NaN propagates to exactly what it reaches, and nowhere else.
//
// A NaN in one element of sequence b's data (input at step t0, h0 of one
// slot, grad_y at step t0, grad_hy of one slot) makes NaN of every result the
// math makes depend on it, and of nothing else:
// - production's NaN positions equal the reference's, element for element, in
//   every result (forward and backward);
// - no result of another sequence b' != b is NaN, and each is bitwise what a
//   run without the NaN gives (each sequence is computed on its own; only the
//   parameter gradients sum over sequences);
// - by hand, for one layer, one direction: the forward is NaN for sequence b
//   at steps t >= t0 only (output, saved i j f o h c tanhc, hy, cy); a NaN in
//   grad_y at t0 makes dx NaN for sequence b at steps t <= t0 only.
// A NaN in the padding of a variable-length input or grad_y (rows that belong
// to no sequence) reaches nothing: every result is bitwise the clean run's.
#include <cmath>
#include <limits>

#include "numerics_support.h"

namespace lstmtest {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Every problem here is train=True: run_all (the support library's) runs the backward too.
using Results = AllResults;

Results run_reference_all(const LstmProblem& p, const LstmGrads& g) {
  const LstmProblem p64 = converted_problem(p, DType::Float64);
  Results r;
  r.fwd = run_reference_forward(p64);
  r.bwd = run_reference_backward(p64, converted_grads(g, DType::Float64), r.fwd);
  return r;
}

// Batch axis of each named result (-1: none, the parameter gradients).
int batch_axis(const std::string& name, const LstmConfig& c) {
  if (name == "output" || name == "dx") return c.packed ? 0 : (c.batch_first ? 0 : 1);
  if (name == "hy" || name == "cy" || name == "dh0" || name == "dc0") return 1;
  if (name.rfind("dparams", 0) == 0) return -1;
  return 2;  // saved (S, T, B, H)
}

NamedViews all_results(const Results& r) {
  NamedViews v = forward_outputs(r.fwd);
  for (const auto& named : backward_outputs(r.bwd)) v.push_back(named);
  return v;
}

// The three checks of the file comment; returns the NaN masks of production.
std::vector<std::vector<bool>> check_propagation(const LstmProblem& p, const LstmGrads& g,
                                                 const LstmProblem& clean_p,
                                                 const LstmGrads& clean_g, int64_t b) {
  const LstmConfig& c = p.cfg;
  const Results got_run = run_all(p, g), want_run = run_reference_all(p, g),
            clean_run = run_all(clean_p, clean_g);
  const NamedViews got = all_results(got_run), want = all_results(want_run),
                   clean = all_results(clean_run);
  std::vector<std::vector<bool>> masks;
  int64_t nan_count = 0;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const std::string& name = got[k].first;
    const std::vector<bool> m = nan_mask(got[k].second);
    EXPECT_EQ(m, nan_mask(want[k].second)) << name << ": NaN positions differ from the reference's";
    const int axis = batch_axis(name, c);
    if (axis >= 0) {
      const std::vector<uint64_t> bits = value_bits(got[k].second);
      const std::vector<uint64_t> clean_bits = value_bits(clean[k].second);
      for (std::size_t e = 0; e < m.size(); ++e) {
        const bool packed_rows = c.packed && (name == "output" || name == "dx");
        const int64_t batch = batch_of(got[k].second.sizes, static_cast<int64_t>(e), axis,
                                       packed_rows ? c.B : 0);
        if (batch == b) continue;
        EXPECT_FALSE(m[e]) << name << " element " << e << " of sequence " << batch
                           << " is NaN; only sequence " << b << " was";
        EXPECT_EQ(bits[e], clean_bits[e]) << name << " element " << e << " of sequence " << batch
                                          << " differs from the run without the NaN";
      }
    }
    for (bool x : m) nan_count += x;
    masks.push_back(m);
  }
  EXPECT_GT(nan_count, 0) << "the NaN reached nothing";
  return masks;
}

LstmConfig base(DType dtype, bool bidirectional, int64_t L) {
  LstmConfig c;
  c.dtype = dtype;
  c.T = 5;
  c.B = 4;
  c.I = 6;
  c.H = 19;  // a vector body and a remainder
  c.L = L;
  c.bidirectional = bidirectional;
  return c;
}

const DType kDtypes[] = {DType::Float32, DType::BFloat16, DType::Float64};

// Offset of (t, b, k) in an input or grad_y of the configuration's layout.
int64_t sequence_offset(const LstmConfig& c, int64_t t, int64_t b, int64_t k, int64_t F) {
  if (c.packed) return (t * c.B + b) * F + k;
  if (c.batch_first) return (b * c.T + t) * F + k;
  return (t * c.B + b) * F + k;
}

TEST(NanPropagation, InputOfOneSequenceOneLayerByHand) {
  for (DType dtype : kDtypes) {
    const LstmConfig c = base(dtype, false, 1);
    SCOPED_TRACE(c.name());
    const int64_t t0 = 2, b = 1;
    const LstmProblem clean = make_problem(c, 1700);
    const LstmGrads g = make_grads(clean, 1701);
    LstmProblem p = clean;
    p.input = contiguous_copy(clean.input);
    store(p.input, sequence_offset(c, t0, b, 3, c.I), kNaN);
    const std::vector<std::vector<bool>> m = check_propagation(p, g, clean, g, b);
    // Forward results 0..9: NaN iff sequence b and t >= t0.
    const ForwardResult clean_fwd = run_forward(clean);
    const NamedViews names = forward_outputs(clean_fwd);
    for (std::size_t k = 0; k < names.size(); ++k) {
      const std::vector<int64_t>& sizes = names[k].second.sizes;
      for (std::size_t e = 0; e < m[k].size(); ++e) {
        std::vector<int64_t> index(sizes.size());
        int64_t rest = static_cast<int64_t>(e);
        for (std::size_t d = sizes.size(); d-- > 0;) {
          index[d] = rest % sizes[d];
          rest /= sizes[d];
        }
        bool expected;
        if (names[k].first == "output") {
          expected = index[1] == b && index[0] >= t0;
        } else if (sizes.size() == 3) {  // hy, cy
          expected = index[1] == b;
        } else {  // saved (S, T, B, H)
          expected = index[2] == b && index[1] >= t0;
        }
        EXPECT_EQ(m[k][e], expected) << names[k].first << " " << lstmop::shape_string(index);
      }
    }
  }
}

TEST(NanPropagation, InputOfOneSequenceTwoLayersBidirectional) {
  for (DType dtype : kDtypes) {
    for (bool batch_first : {false, true}) {
      LstmConfig c = base(dtype, true, 2);
      c.batch_first = batch_first;
      SCOPED_TRACE(c.name());
      const int64_t b = 2;
      const LstmProblem clean = make_problem(c, 1710);
      const LstmGrads g = make_grads(clean, 1711);
      LstmProblem p = clean;
      p.input = contiguous_copy(clean.input);
      store(p.input, sequence_offset(c, 1, b, 0, c.I), kNaN);
      check_propagation(p, g, clean, g, b);
    }
  }
}

TEST(NanPropagation, InitialStateOfOneSlotAndSequence) {
  for (DType dtype : kDtypes) {
    const LstmConfig c = base(dtype, true, 2);
    SCOPED_TRACE(c.name());
    for (int which = 0; which < 2; ++which) {
      SCOPED_TRACE(which == 0 ? "h0" : "c0");
      const int64_t b = 0, slot = 1;  // layer 0, reverse
      const LstmProblem clean = make_problem(c, 1720);
      const LstmGrads g = make_grads(clean, 1721);
      LstmProblem p = clean;
      p.hx[which] = contiguous_copy(clean.hx[which]);
      store(p.hx[which], (slot * c.B + b) * c.H + 5, kNaN);
      check_propagation(p, g, clean, g, b);
    }
  }
}

TEST(NanPropagation, GradientOfOneStepOneLayerByHand) {
  for (DType dtype : kDtypes) {
    const LstmConfig c = base(dtype, false, 1);
    SCOPED_TRACE(c.name());
    const int64_t t0 = 3, b = 2;
    const LstmProblem p = make_problem(c, 1730);
    const LstmGrads clean_g = make_grads(p, 1731);
    LstmGrads g = clean_g;
    g.grad_y = contiguous_copy(clean_g.grad_y);
    store(g.grad_y, sequence_offset(c, t0, b, 4, c.H), kNaN);
    const std::vector<std::vector<bool>> m = check_propagation(p, g, p, clean_g, b);
    // Forward untouched; dx NaN iff sequence b and t <= t0; dh0, dc0 NaN for b.
    for (std::size_t k = 0; k < 10; ++k) {
      for (bool x : m[k]) EXPECT_FALSE(x) << "forward result " << k;
    }
    const std::vector<bool>& dx = m[10];
    for (int64_t t = 0; t < c.T; ++t) {
      for (int64_t bb = 0; bb < c.B; ++bb) {
        for (int64_t k = 0; k < c.I; ++k) {
          EXPECT_EQ(dx[(t * c.B + bb) * c.I + k], bb == b && t <= t0)
              << "dx t " << t << " b " << bb << " k " << k;
        }
      }
    }
  }
}

TEST(NanPropagation, GradientOfFinalStateTwoLayersBidirectional) {
  for (DType dtype : kDtypes) {
    const LstmConfig c = base(dtype, true, 2);
    SCOPED_TRACE(c.name());
    const int64_t b = 3;
    const LstmProblem p = make_problem(c, 1740);
    const LstmGrads clean_g = make_grads(p, 1741);
    for (int which = 0; which < 3; ++which) {
      SCOPED_TRACE(which);
      LstmGrads g = clean_g;
      if (which == 0) {
        g.grad_y = contiguous_copy(clean_g.grad_y);
        store(g.grad_y, sequence_offset(c, 0, b, c.H + 1, 2 * c.H), kNaN);  // reverse half
      } else {
        Tensor& t = which == 1 ? g.grad_hy : g.grad_cy;
        t = contiguous_copy(t);
        store(t, (2 * c.B + b) * c.H + 7, kNaN);  // slot 2: layer 1, forward
      }
      check_propagation(p, g, p, clean_g, b);
    }
  }
}

// Variable length: a NaN in a valid row of a short sequence propagates as in
// fixed length; NaN in every padding row of input and grad_y reaches nothing.
TEST(NanPropagation, VariableLengthValidRowAndPadding) {
  for (DType dtype : kDtypes) {
    LstmConfig c = base(dtype, true, 2);
    c.packed = true;
    c.lengths = {5, 4, 2, 1};
    SCOPED_TRACE(c.name());
    const LstmProblem clean = make_problem(c, 1750);
    const LstmGrads clean_g = make_grads(clean, 1751);
    {
      SCOPED_TRACE("valid row of sequence 2 at t = 1");
      LstmProblem p = clean;
      p.input = contiguous_copy(clean.input);
      store(p.input, sequence_offset(c, 1, 2, 2, c.I), kNaN);
      check_propagation(p, clean_g, clean, clean_g, 2);
    }
    SCOPED_TRACE("every padding row");
    LstmProblem p = clean;
    LstmGrads g = clean_g;
    p.input = contiguous_copy(clean.input);
    g.grad_y = contiguous_copy(clean_g.grad_y);
    int64_t padding = 0;
    for (int64_t t = 0; t < c.T; ++t) {
      for (int64_t b = 0; b < c.B; ++b) {
        if (t < c.lengths[b]) continue;
        ++padding;
        for (int64_t k = 0; k < c.I; ++k) store(p.input, sequence_offset(c, t, b, k, c.I), kNaN);
        for (int64_t k = 0; k < 2 * c.H; ++k) {
          store(g.grad_y, sequence_offset(c, t, b, k, 2 * c.H), kNaN);
        }
      }
    }
    ASSERT_GT(padding, 0);
    const Results got_run = run_all(p, g), want_run = run_all(clean, clean_g);
    const NamedViews got = all_results(got_run), want = all_results(want_run);
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_TRUE(bitwise_equal(got[k].second, want[k].second)) << got[k].first;
    }
  }
}

}  // namespace
}  // namespace lstmtest
