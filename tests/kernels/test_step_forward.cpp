// The fused forward step's k in chunks (kernels/step_forward.h,
// ForwardStepArgs::k_chunk), called directly whatever LSTMOP_KERNEL_ISA says:
// the AVX2 body over a group's k in chunks, each row block's partial sums
// kept between them, gives the bits of the same body over the whole k (the
// same FMAs in the same order), in the concatenated form (the input's columns
// and h's, chunks across their border), the projection form (h's alone, the
// gates from gx) and the chained form (the split layout), for hidden sizes
// with and without a partial last group, row counts of one to several super
// blocks of rows, unit ranges (split mode's halves), and the saved tensors;
// likewise the chained form's input chains before a layer's steps.
// The whole-k step is itself held to the reference by the API suites (and
// their `isa_avx2_*` reruns).
//
// A test that needs an instruction set the CPU lacks says so with
// GTEST_SKIP (visible in the output) instead of passing silently.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/workspace.h"
#include "kernels/cpu_features.h"
#include "kernels/step_forward.h"

namespace lstmop {
namespace detail {
namespace {

using kernels::Isa;

enum class Form { Concatenated, Projection, Chained };

const char* form_name(Form f) {
  switch (f) {
    case Form::Concatenated: return "concatenated";
    case Form::Projection: return "projection";
    case Form::Chained: return "chained";
  }
  return "?";
}

std::vector<float> uniform(int64_t n, float scale, std::mt19937& gen) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& e : v) e = d(gen);
  return v;
}

// Everything one step writes: c, the layer output, h for the next step and
// the seven saved tensors.
struct Outputs {
  std::vector<float> c, out, next;
  std::vector<float> saved[7];
};

struct Case {
  Form form;
  int64_t rows, H, K0;  // K0: the input's columns (concatenated and chained forms)
  int64_t u_begin, u_end;
};

std::string describe(const Case& c, int64_t chunk) {
  return std::string(form_name(c.form)) + " rows " + std::to_string(c.rows) + " H " +
         std::to_string(c.H) + " K0 " + std::to_string(c.K0) + " units [" +
         std::to_string(c.u_begin) + ", " + std::to_string(c.u_end) + ") chunk " +
         std::to_string(chunk);
}

Outputs run_step(const Case& c, int64_t chunk) {
  std::mt19937 gen(static_cast<unsigned>(c.rows * 131 + c.H * 7 + c.K0));
  const int64_t H = c.H, G = 4 * H, K0 = c.form == Form::Projection ? 0 : c.K0;
  const std::vector<float> w_ih = uniform(G * (K0 > 0 ? K0 : 1), 0.2f, gen);
  const std::vector<float> w_hh = uniform(G * H, 0.2f, gen);
  const std::vector<float> x = uniform(c.rows * (K0 > 0 ? K0 : 1), 1.0f, gen);
  const std::vector<float> h = uniform(c.rows * H, 1.0f, gen);
  const std::vector<float> gx = uniform(c.rows * G, 1.0f, gen);
  const std::vector<float> bias = uniform(G, 0.5f, gen);
  Outputs o;
  o.c = uniform(c.rows * H, 1.0f, gen);
  const int64_t ld_out = H + 3;  // a gap after each output row
  o.out.assign(static_cast<std::size_t>(c.rows * ld_out), -7.0f);
  o.next.assign(static_cast<std::size_t>(c.rows * H), -7.0f);
  for (auto& s : o.saved) s.assign(static_cast<std::size_t>(c.rows * H), -7.0f);

  WorkspaceArena arena;
  ForwardStepWeights weights;
  weights.allocate(arena, Isa::Avx2, H, K0, H);
  arena.commit();
  weights.set_k_input(K0, c.form == Form::Chained);
  weights.pack_units(w_ih.data(), K0, w_hh.data(), H, 0, H);

  ForwardStepArgs a;
  a.rows = c.rows;
  a.u_begin = c.u_begin;
  a.u_end = c.u_end;
  if (c.form == Form::Concatenated) {
    a.x = x.data();
    a.ld_x = K0;
  } else {
    a.gx = gx.data();
    a.gx_chained = c.form == Form::Chained;
  }
  a.h_prev = h.data();
  a.ld_h = H;
  a.k_chunk = chunk;
  a.bias = bias.data();
  a.c_state = o.c.data();
  a.h_out = o.out.data();
  a.ld_out = ld_out;
  a.h_next = o.next.data();
  StepSaved<float> saved{o.saved[0].data(), o.saved[1].data(), o.saved[2].data(),
                         o.saved[3].data(), o.saved[4].data(), o.saved[5].data(),
                         o.saved[6].data()};
  step_forward<float>(weights, a, &saved);
  return o;
}

void expect_same_bits(const std::vector<float>& whole, const std::vector<float>& chunked,
                      const std::string& what) {
  ASSERT_EQ(whole.size(), chunked.size()) << what;
  for (std::size_t k = 0; k < whole.size(); ++k) {
    if (std::memcmp(&whole[k], &chunked[k], sizeof(float)) != 0) {
      ADD_FAILURE() << what << ": element " << k << " whole k " << whole[k] << ", chunked "
                    << chunked[k];
      return;
    }
  }
}

TEST(StepForwardKChunks, Avx2GivesTheWholeKsBits) {
  if (!kernels::isa_supported(Isa::Avx2)) {
    GTEST_SKIP() << "this CPU has no AVX2 + FMA: the AVX2 step cannot run here";
  }
  std::vector<Case> cases;
  for (Form form : {Form::Concatenated, Form::Projection, Form::Chained}) {
    for (int64_t rows : {4, 7, 9, 50, 100}) {
      for (int64_t H : {20, 48}) {
        cases.push_back({form, rows, H, 40, 0, H});
      }
    }
    // Split mode's halves: units [0, 16) and [16, 40) of H = 40.
    cases.push_back({form, 11, 40, 33, 0, 16});
    cases.push_back({form, 11, 40, 33, 16, 40});
  }
  int compared = 0;
  for (const Case& c : cases) {
    const Outputs whole = run_step(c, 0);
    // Chunks inside the input's columns, across their border with h's, and
    // in h's; one larger than K (the whole k again).
    for (int64_t chunk : {1, 7, 16, 32, 45, 1000}) {
      const Outputs chunked = run_step(c, chunk);
      const std::string what = describe(c, chunk);
      expect_same_bits(whole.c, chunked.c, what + " c");
      expect_same_bits(whole.out, chunked.out, what + " layer output");
      expect_same_bits(whole.next, chunked.next, what + " h");
      for (int s = 0; s < 7; ++s) {
        expect_same_bits(whole.saved[s], chunked.saved[s],
                         what + " saved tensor " + std::to_string(s));
      }
      ++compared;
    }
  }
  EXPECT_EQ(compared, 6 * static_cast<int>(cases.size()));
}

// The chunked steps did compute: the whole-k step's outputs differ from the
// state they start from (a chunked step that returned early would leave the
// initial values and still match a whole-k step that did the same).
TEST(StepForwardKChunks, Avx2ChunkedStepWritesEveryOutput) {
  if (!kernels::isa_supported(Isa::Avx2)) {
    GTEST_SKIP() << "this CPU has no AVX2 + FMA: the AVX2 step cannot run here";
  }
  const Case c{Form::Concatenated, 50, 48, 40, 0, 48};
  const Outputs o = run_step(c, 16);
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t u = 0; u < c.H; ++u) {
      ASSERT_NE(o.out[r * (c.H + 3) + u], -7.0f) << "row " << r << " unit " << u;
      ASSERT_EQ(o.out[r * (c.H + 3) + u], o.next[r * c.H + u]) << "row " << r << " unit " << u;
    }
    for (int64_t g = c.H; g < c.H + 3; ++g) {
      ASSERT_EQ(o.out[r * (c.H + 3) + g], -7.0f) << "the gap after row " << r << " was written";
    }
  }
}

// The chained form's input chains before a layer's steps (step_input_chains)
// with the input's columns in chunks: the bits of the whole columns, for
// layers whose steps' batches shrink to single rows (those run whole), more
// than one super block of rows, and partial last groups.
TEST(StepForwardKChunks, Avx2InputChainsGiveTheWholeKsBits) {
  if (!kernels::isa_supported(Isa::Avx2)) {
    GTEST_SKIP() << "this CPU has no AVX2 + FMA: the AVX2 step cannot run here";
  }
  const std::vector<std::vector<int64_t>> layers = {
      {8, 8, 7, 5, 1, 1}, {30, 30, 30}, {2, 2}, {3}};
  int compared = 0;
  for (const auto& step_rows : layers) {
    for (int64_t H : {20, 48}) {
      for (int64_t K0 : {1, 40, 77}) {
        int64_t rows = 0;
        for (int64_t n : step_rows) rows += n;
        std::mt19937 gen(static_cast<unsigned>(rows * 31 + H * 7 + K0));
        const int64_t G = 4 * H;
        const std::vector<float> w_ih = uniform(G * K0, 0.2f, gen);
        const std::vector<float> w_hh = uniform(G * H, 0.2f, gen);
        const std::vector<float> x = uniform(rows * K0, 1.0f, gen);
        const std::vector<float> bias = uniform(G, 0.5f, gen);
        WorkspaceArena arena;
        ForwardStepWeights weights;
        weights.allocate(arena, Isa::Avx2, H, K0, H);
        arena.commit();
        weights.set_k_input(K0, true);
        weights.pack_units(w_ih.data(), K0, w_hh.data(), H, 0, H);
        const auto chains = [&](int64_t chunk) {
          std::vector<float> gx(static_cast<std::size_t>(rows * G), -7.0f);
          step_input_chains(weights, x.data(), K0, step_rows.data(),
                            static_cast<int64_t>(step_rows.size()), bias.data(), gx.data(), 0,
                            H, chunk);
          return gx;
        };
        const std::vector<float> whole = chains(0);
        for (std::size_t k = 0; k < whole.size(); ++k) {
          ASSERT_NE(whole[k], -7.0f) << "gx element " << k << " not written";
        }
        for (int64_t chunk : {1, 16, 32, 39}) {
          expect_same_bits(whole, chains(chunk),
                           "input chains, " + std::to_string(step_rows.size()) + " steps, " +
                               std::to_string(rows) + " rows, H " + std::to_string(H) +
                               ", K0 " + std::to_string(K0) + ", chunk " + std::to_string(chunk));
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 4 * 2 * 3 * 4);
}

}  // namespace
}  // namespace detail
}  // namespace lstmop
