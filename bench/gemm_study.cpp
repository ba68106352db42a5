// lstmop bench: which GEMM for which LSTM call, measured side by side.
//
//   gemm_study [--quick] [--section peak|step|proj|bwd|det|bf16|bf16bwd|cell]...
//
// Sections (all on one thread unless said; min over batches of calls; times
// are the thread's CPU time, see Clock):
//   peak  the FMA peak of one core (independent 8-wide fma chains)
//   step  recurrent step C (M, 4H) += A (M, H) * w_hh^T, M = batch, the weight
//         pre-packed where the candidate allows: dnnl_sgemm NN (w^T stored) and
//         NT (w stored), OpenBLAS NN, oneDNN matmul with packed weights (format
//         any, sum post-op), lstmop's recurrent product (w_hh packed once)
//   proj  the input projection (T*B, 4H) = x (T*B, I) * w_ih^T, same candidates
//   bwd   the backward's big products: dW (4H, K) = dG^T (4H, TB) * X (TB, K)
//         and dX (TB, I) = dG (TB, 4H) * W (4H, I)
//   det   bitwise equality of dnnl_sgemm and matmul results on 1 vs 2 threads
//   bf16  bf16 GEMM (oneDNN matmul bf16 -> f32): available on this CPU? rate vs sgemm
//   cell  one recurrent step end to end: product + lstmop's forward cell pass
#include <cblas.h>
#include <immintrin.h>
#include <omp.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <set>
#include <string>
#include <vector>

// lstmop's internal kernels (src/): the production per-step product and cell pass.
#include "kernels/cpu_features.h"
#include "kernels/cell_pass.h"
#include "kernels/recurrent_product.h"
#include "common/workspace.h"
#include "gemm/gemm.h"
#include "gemm/transpose.h"
#include "plan/lstm_plan.h"

extern "C" void openblas_set_num_threads(int);

namespace {

bool g_quick = false;

// Everything here runs on the calling thread (OpenMP and OpenBLAS set to 1
// thread), so its CPU time is the measure: unlike wall time it does not count
// the time the thread waits while other processes on this shared machine run.
struct Clock {
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock, duration>;
  static time_point now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return time_point(duration(static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec));
  }
};

// Seconds per call of each candidate, measured interleaved so that all of
// them see the same machine load: each gets batches of calls lasting >= 10 ms
// (1 ms in --quick); 5 rounds, each round one batch of every candidate in
// turn; the minimum per candidate.
std::vector<double> seconds_per_call(const std::vector<std::function<void()>>& calls) {
  std::vector<int> reps(calls.size(), 1);
  for (std::size_t c = 0; c < calls.size(); ++c) {
    calls[c]();
    for (;;) {
      auto t0 = Clock::now();
      for (int r = 0; r < reps[c]; ++r) calls[c]();
      if (std::chrono::duration<double>(Clock::now() - t0).count() >= (g_quick ? 0.001 : 0.01)) break;
      reps[c] *= 2;
    }
  }
  std::vector<double> best(calls.size(), 1e30);
  for (int round = 0; round < (g_quick ? 2 : 5); ++round)
    for (std::size_t c = 0; c < calls.size(); ++c) {
      auto t0 = Clock::now();
      for (int r = 0; r < reps[c]; ++r) calls[c]();
      best[c] = std::min(best[c], std::chrono::duration<double>(Clock::now() - t0).count() / reps[c]);
    }
  return best;
}

double seconds_per_call(const std::function<void()>& call) { return seconds_per_call(std::vector<std::function<void()>>{call})[0]; }

std::vector<float> random_floats(int64_t n, unsigned seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
  return v;
}

__attribute__((target("avx2,fma"))) double fma_peak_avx2() {
  const int64_t iters = g_quick ? 2000000 : 20000000;
  __m256 acc[10];
  for (int k = 0; k < 10; ++k) acc[k] = _mm256_set1_ps(0.0f + k);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  auto t0 = Clock::now();
  for (int64_t it = 0; it < iters; ++it)
    for (int k = 0; k < 10; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  float sink = 0;
  for (int k = 0; k < 10; ++k) sink += _mm256_cvtss_f32(acc[k]);
  if (sink == 12345.0f) std::printf(" ");
  return static_cast<double>(iters) * 10 * 16 / s * 1e-9;
}

// oneDNN matmul C (m, n) (+)= A (m, k) * B (k, n) with B in oneDNN's preferred
// (packed) layout, reordered once.
struct DnnlMatmul {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  dnnl::matmul prim;
  dnnl::memory a, b, c;
  DnnlMatmul(int64_t m, int64_t n, int64_t k, float* a_data, const float* b_rowmajor, float* c_data,
             bool accumulate) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory::desc a_md({m, k}, dt::f32, tag::ab), b_any({k, n}, dt::f32, tag::any),
        c_md({m, n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_any, c_md), attr, eng);
    prim = dnnl::matmul(pd);
    a = dnnl::memory(a_md, eng, a_data);
    c = dnnl::memory(c_md, eng, c_data);
    dnnl::memory b_user({{k, n}, dt::f32, tag::ab}, eng, const_cast<float*>(b_rowmajor));
    b = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(b_user, b).execute(stream, b_user, b);
    stream.wait();
    impl = pd.impl_info_str();
  }
  void run() {
    prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
  std::string impl;
};

void print_rate(const char* what, const char* candidate, double flop, double s, double base_s) {
  std::printf("  %-34s %-22s %8.2f GFLOP/s %10.2f us  x%.2f vs the first\n", what, candidate,
              flop / s * 1e-9, s * 1e6, base_s / s);
}

// C (m, n) += A (m, k) * B (k, n), B = W^T with W (n, k) the PyTorch weight.
void compare_products(const char* what, int64_t m, int64_t n, int64_t k, bool with_kernel) {
  std::vector<float> a = random_floats(m * k, 1), w = random_floats(n * k, 2), c(static_cast<std::size_t>(m * n));
  std::vector<float> wt(static_cast<std::size_t>(k * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t kk = 0; kk < k; ++kk) wt[static_cast<std::size_t>(kk * n + j)] = w[static_cast<std::size_t>(j * k + kk)];
  const double flop = 2.0 * m * n * k;
  std::fill(c.begin(), c.end(), 0.0f);
  std::vector<std::string> names = {"dnnl_sgemm NN", "dnnl_sgemm NT", "openblas NN"};
  std::vector<std::function<void()>> calls = {
      [&]() { dnnl_sgemm('N', 'N', m, n, k, 1.0f, a.data(), k, wt.data(), n, 1.0f, c.data(), n); },
      [&]() { dnnl_sgemm('N', 'T', m, n, k, 1.0f, a.data(), k, w.data(), k, 1.0f, c.data(), n); },
      [&]() {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                    static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k), wt.data(),
                    static_cast<int>(n), 1.0f, c.data(), static_cast<int>(n));
      }};
  DnnlMatmul mm(m, n, k, a.data(), wt.data(), c.data(), true);
  names.push_back(("dnnl matmul " + mm.impl).substr(0, 22));
  calls.push_back([&]() { mm.run(); });
  lstmop::detail::WorkspaceArena arena;
  lstmop::detail::RecurrentProduct product;
  product.allocate(arena, k, n);
  arena.commit();
  product.set_b_from_rows(w.data(), k);
  if (with_kernel) {
    names.push_back(std::string("packed kernel ") +
                    lstmop::kernels::isa_name(lstmop::kernels::kernel_choice().recurrent_product));
    calls.push_back([&]() { product.accumulate(m, a.data(), k, c.data(), n); });
  }
  std::vector<double> t = seconds_per_call(calls);
  for (std::size_t i = 0; i < t.size(); ++i) print_rate(what, names[i].c_str(), flop, t[i], t[0]);
}

void section_step() {
  std::printf("step: recurrent C (M, 4H) += h (M, H) * w_hh^T, beta = 1, weight hot in cache\n");
  std::vector<int64_t> batches = g_quick ? std::vector<int64_t>{1, 8} : std::vector<int64_t>{1, 8, 32, 64};
  std::vector<int64_t> hiddens = g_quick ? std::vector<int64_t>{128} : std::vector<int64_t>{128, 256, 512};
  for (int64_t h : hiddens)
    for (int64_t m : batches) {
      char what[64];
      std::snprintf(what, sizeof what, "M=%lld N=%lld K=%lld", static_cast<long long>(m),
                    static_cast<long long>(4 * h), static_cast<long long>(h));
      compare_products(what, m, 4 * h, h, true);
    }
}

void section_proj() {
  std::printf("proj: input projection (T*B, 4H) = x (T*B, I) * w_ih^T (beta = 1: bias preloaded)\n");
  struct Shape { const char* name; int64_t m, n, k; };
  std::vector<Shape> shapes = {{"S1 layer 0", 6400, 2048, 512}, {"S1 layer 1", 6400, 2048, 1024},
                               {"S2", 1600, 1024, 256},         {"S3", 200, 512, 128},
                               {"S4 (valid rows ~4800)", 4800, 1024, 256}, {"S5", 1600, 512, 128}};
  if (g_quick) shapes = {{"S3", 200, 512, 128}};
  for (const Shape& s : shapes) {
    char what[80];
    std::snprintf(what, sizeof what, "%s M=%lld N=%lld K=%lld", s.name, static_cast<long long>(s.m),
                  static_cast<long long>(s.n), static_cast<long long>(s.k));
    compare_products(what, s.m, s.n, s.k, true);
  }
}

void section_bwd() {
  std::printf("bwd: weight gradient dW (4H, K) += dG^T (4H, TB) * X (TB, K); input gradient dX = dG * W\n");
  struct Shape { const char* name; int64_t tb, g, k; };
  std::vector<Shape> shapes = {{"S1 l0", 6400, 2048, 512}, {"S1 l1", 6400, 2048, 1024}, {"S2", 1600, 1024, 256},
                               {"S5", 1600, 512, 128}, {"S3", 200, 512, 128}};
  if (g_quick) shapes = {{"S3", 200, 512, 128}};
  for (const Shape& s : shapes) {
    std::vector<float> dg = random_floats(s.tb * s.g, 3), x = random_floats(s.tb * s.k, 4),
                       w = random_floats(s.g * s.k, 5), dw(static_cast<std::size_t>(s.g * s.k)),
                       dx(static_cast<std::size_t>(s.tb * s.k));
    const double flop = 2.0 * s.tb * s.g * s.k;
    char what[80];
    std::snprintf(what, sizeof what, "%s dW M=%lld N=%lld K=%lld", s.name, static_cast<long long>(s.g),
                  static_cast<long long>(s.k), static_cast<long long>(s.tb));
    std::vector<double> t = seconds_per_call(std::vector<std::function<void()>>{
        [&]() { dnnl_sgemm('T', 'N', s.g, s.k, s.tb, 1.0f, dg.data(), s.g, x.data(), s.k, 1.0f, dw.data(), s.k); },
        [&]() {
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(s.g), static_cast<int>(s.k),
                      static_cast<int>(s.tb), 1.0f, dg.data(), static_cast<int>(s.g), x.data(),
                      static_cast<int>(s.k), 1.0f, dw.data(), static_cast<int>(s.k));
        },
        [&]() { dnnl_sgemm('N', 'N', s.tb, s.k, s.g, 1.0f, dg.data(), s.g, w.data(), s.k, 0.0f, dx.data(), s.k); },
        [&]() {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.tb), static_cast<int>(s.k),
                      static_cast<int>(s.g), 1.0f, dg.data(), static_cast<int>(s.g), w.data(),
                      static_cast<int>(s.k), 0.0f, dx.data(), static_cast<int>(s.k));
        }});
    print_rate(what, "dnnl_sgemm TN", flop, t[0], t[0]);
    print_rate(what, "openblas TN", flop, t[1], t[0]);
    std::snprintf(what, sizeof what, "%s dX M=%lld N=%lld K=%lld", s.name, static_cast<long long>(s.tb),
                  static_cast<long long>(s.k), static_cast<long long>(s.g));
    print_rate(what, "dnnl_sgemm NN", flop, t[2], t[2]);
    print_rate(what, "openblas NN", flop, t[3], t[2]);
    // As the backward driver computes dW: two halves of the 4H rows (lda 4H), each
    // one TN product, or its transpose dW^T = X^T dG then copied transposed into dW
    // (the plan's weight_gradient_result_transposed form; the copy included).
    const int64_t half = s.g / 2, ld = half + lstmop::detail::kTransposePad;
    std::vector<float> dwt(static_cast<std::size_t>(s.k * ld));
    std::vector<double> h = seconds_per_call(std::vector<std::function<void()>>{
        [&]() {
          for (int64_t part = 0; part < 2; ++part) {
            dnnl_sgemm('T', 'N', half, s.k, s.tb, 1.0f, dg.data() + part * half, s.g, x.data(), s.k,
                       0.0f, dw.data() + part * half * s.k, s.k);
          }
        },
        [&]() {
          for (int64_t part = 0; part < 2; ++part) {
            dnnl_sgemm('T', 'N', s.k, half, s.tb, 1.0f, x.data(), s.k, dg.data() + part * half, s.g,
                       0.0f, dwt.data(), ld);
            lstmop::detail::transpose(s.k, half, dwt.data(), ld, dw.data() + part * half * s.k, s.k);
          }
        }});
    std::snprintf(what, sizeof what, "%s dW halves %lld x %lld K=%lld%s", s.name,
                  static_cast<long long>(half), static_cast<long long>(s.k),
                  static_cast<long long>(s.tb),
                  lstmop::detail::weight_gradient_result_transposed(half, s.k, s.tb) ? " (taken)" : "");
    print_rate(what, "dnnl_sgemm TN", flop, h[0], h[0]);
    print_rate(what, "transposed + copy", flop, h[1], h[0]);
  }
}

// Bitwise comparison of the same product on 1 and 2 OpenMP threads.
void section_det() {
  std::printf("det: dnnl_sgemm / matmul results, 1 vs 2 threads (and 2 vs 2 again)\n");
  struct Shape { const char* name; char ta, tb; int64_t m, n, k; };
  std::vector<Shape> shapes = {
      {"step M=1 N=512 K=128", 'N', 'N', 1, 512, 128},     {"step M=8 N=512 K=128", 'N', 'N', 8, 512, 128},
      {"step M=32 N=1024 K=256", 'N', 'N', 32, 1024, 256}, {"step M=64 N=2048 K=512", 'N', 'N', 64, 2048, 512},
      {"step NT M=64 N=2048 K=512", 'N', 'T', 64, 2048, 512},
      {"proj M=6400 N=2048 K=512", 'N', 'N', 6400, 2048, 512},
      {"proj M=200 N=512 K=128", 'N', 'N', 200, 512, 128},
      {"dW TN M=2048 N=512 K=6400", 'T', 'N', 2048, 512, 6400},
      {"dW TN M=512 N=128 K=200", 'T', 'N', 512, 128, 200},
      {"dW TN M=512 N=128 K=1600", 'T', 'N', 512, 128, 1600},
      {"dX NN M=6400 N=512 K=2048", 'N', 'N', 6400, 512, 2048},
      {"dh NN M=1 N=128 K=512", 'N', 'N', 1, 128, 512},
      {"dh NN M=8 N=128 K=512", 'N', 'N', 8, 128, 512}};
  if (g_quick) shapes.resize(3);
  for (const Shape& s : shapes) {
    const int64_t lda = s.ta == 'N' ? s.k : s.m, ldb = s.tb == 'N' ? s.n : s.k;
    std::vector<float> a = random_floats(s.m * s.k, 6), b = random_floats(s.k * s.n, 7);
    auto product = [&](int threads) {
      omp_set_num_threads(threads);
      std::vector<float> c = random_floats(s.m * s.n, 8);
      dnnl_sgemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 1.0f, c.data(), s.n);
      return c;
    };
    std::vector<float> one = product(1), two = product(2), two_again = product(2);
    int64_t differ = 0;
    for (std::size_t i = 0; i < one.size(); ++i) differ += std::memcmp(&one[i], &two[i], 4) != 0;
    std::printf("  %-30s dnnl_sgemm %c%c: 1 vs 2 threads %s (%lld of %zu differ); 2 vs 2 %s\n", s.name, s.ta,
                s.tb, differ ? "DIFFER" : "identical", static_cast<long long>(differ), one.size(),
                std::memcmp(two.data(), two_again.data(), two.size() * 4) ? "DIFFER" : "identical");
    if (s.ta == 'N' && s.tb == 'N') {
      auto matmul = [&](int threads) {
        omp_set_num_threads(threads);
        std::vector<float> c(static_cast<std::size_t>(s.m * s.n), 0.0f);
        DnnlMatmul mm(s.m, s.n, s.k, a.data(), b.data(), c.data(), false);
        mm.run();
        return c;
      };
      std::vector<float> m1 = matmul(1), m2 = matmul(2);
      std::printf("  %-30s dnnl matmul:   1 vs 2 threads %s\n", s.name,
                  std::memcmp(m1.data(), m2.data(), m1.size() * 4) ? "DIFFER" : "identical");
    }
  }
  omp_set_num_threads(1);
}

// oneDNN 2.6 has no public dnnl_gemm_bf16bf16f32 (only dnnl_sgemm and the
// int8 GEMMs); the public bf16 product is the matmul primitive.
void section_bf16() {
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  std::printf("bf16: oneDNN matmul bf16 x bf16 -> f32 (public API; isa %d)\n",
              static_cast<int>(dnnl::get_effective_cpu_isa()));
  const int64_t m = g_quick ? 64 : 1600, n = 1024, k = 256;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  dnnl::memory::desc a_md({m, k}, dt::bf16, tag::ab), b_md({k, n}, dt::bf16, tag::any),
      c_md({m, n}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), eng, true);
  if (!pd) {
    std::printf("  M=%lld N=%lld K=%lld: no bf16 matmul on this CPU (unimplemented)\n",
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k));
    return;
  }
  dnnl::matmul prim(pd);
  dnnl::memory a(a_md, eng), b(pd.weights_desc(), eng), c(c_md, eng);
  std::memset(a.get_data_handle(), 0, a_md.get_size());
  std::memset(b.get_data_handle(), 0, pd.weights_desc().get_size());
  const double flop = 2.0 * m * n * k;
  std::vector<float> af(static_cast<std::size_t>(m * k), 1.0f), bf(static_cast<std::size_t>(k * n), 0.5f),
      cf(static_cast<std::size_t>(m * n));
  std::vector<double> t = seconds_per_call(std::vector<std::function<void()>>{
      [&]() {
        prim.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
        stream.wait();
      },
      [&]() { dnnl_sgemm('N', 'N', m, n, k, 1.0f, af.data(), k, bf.data(), n, 0.0f, cf.data(), n); }});
  const double s = t[0], sf = t[1];
  std::printf("  M=%lld N=%lld K=%lld: bf16 matmul (%s) %.2f GFLOP/s, sgemm %.2f GFLOP/s (x%.2f)\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
              pd.impl_info_str(), flop / s * 1e-9, flop / sf * 1e-9, sf / s);
}

// The bfloat16 backward's products through gemm_bf16 (oneDNN's matmul): each
// half of dW as TN on the bits as stored (d_gates^T x, K = the rows), as NT on
// operands given transposed (their transposition not counted: a float-to-bits
// transpose of d_gates made that form 0.64-0.94x the TN one on Zen 5), and
// as dW^T = x^T d_gates copied transposed (as the float products' rule,
// weight_gradient_result_transposed; for the bits it measured 1.02-1.11x here
// where the result is narrower than tall, but S6 and B5 training in the
// runner moved by under 1%, so the driver keeps TN); a row half of dX as the
// driver issues it (NN on w_ih's bits).
void section_bf16_bwd() {
  using lstmop::detail::Transpose;
  std::printf("bf16bwd: the bfloat16 backward's products on gemm_bf16, as the driver issues them\n");
  struct Shape { const char* name; int64_t tb, g, k; };
  std::vector<Shape> shapes = {{"B1 l0", 6400, 2048, 512}, {"B1 l1", 6400, 2048, 1024},
                               {"S6", 1600, 1024, 256},       {"B5", 1600, 512, 128},
                               {"H=256 I=512", 1600, 1024, 512}, {"H=512 I=256", 1600, 2048, 256},
                               {"H=256 TB=6400", 6400, 1024, 256}, {"H=128 TB=400", 400, 512, 128}};
  if (g_quick) shapes = {{"B5", 1600, 512, 128}};
  auto bits = [](int64_t n, unsigned seed) {
    std::vector<float> f = random_floats(n, seed);
    std::vector<uint16_t> b(f.size());
    for (std::size_t i = 0; i < f.size(); ++i) b[i] = lstmop::float_to_bfloat16(f[i]);
    return b;
  };
  for (const Shape& s : shapes) {
    const int64_t half = s.g / 2;
    std::vector<uint16_t> dg = bits(s.tb * s.g, 3), x = bits(s.tb * s.k, 4), w = bits(s.g * s.k, 5);
    std::vector<uint16_t> dgt = bits(s.g * s.tb, 6), xt = bits(s.k * s.tb, 7);
    const int64_t ld = half + lstmop::detail::kTransposePad;
    std::vector<float> dwt(static_cast<std::size_t>(s.k * ld));
    std::vector<float> dw(static_cast<std::size_t>(s.g * s.k)), dx(static_cast<std::size_t>(s.tb * s.k));
    std::vector<double> t = seconds_per_call(std::vector<std::function<void()>>{
        [&]() {  // TN on d_gates as stored
          for (int64_t part = 0; part < 2; ++part)
            lstmop::detail::gemm_bf16(Transpose::Yes, Transpose::No, half, s.k, s.tb, dg.data() + part * half,
                                      s.g, x.data(), s.k, 0.0f, dw.data() + part * half * s.k, s.k);
        },
        [&]() {  // both transposed: d_gates^T (4H, TB) x x^T (K, TB): NT
          for (int64_t part = 0; part < 2; ++part)
            lstmop::detail::gemm_bf16(Transpose::No, Transpose::Yes, half, s.k, s.tb, dgt.data() + part * half * s.tb,
                                      s.tb, xt.data(), s.tb, 0.0f, dw.data() + part * half * s.k, s.k);
        },
        [&]() {  // dW^T = x^T d_gates (K, half): TN the other way, then copied transposed
          for (int64_t part = 0; part < 2; ++part) {
            lstmop::detail::gemm_bf16(Transpose::Yes, Transpose::No, s.k, half, s.tb, x.data(), s.k,
                                      dg.data() + part * half, s.g, 0.0f, dwt.data(), ld);
            lstmop::detail::transpose(s.k, half, dwt.data(), ld, dw.data() + part * half * s.k, s.k);
          }
        },
        [&]() {  // dX row half as the driver: NN on w_ih's bits
          for (int64_t part = 0; part < 2; ++part)
            lstmop::detail::gemm_bf16(Transpose::No, Transpose::No, s.tb / 2, s.k, s.g, dg.data() + part * (s.tb / 2) * s.g,
                                      s.g, w.data(), s.k, 0.0f, dx.data() + part * (s.tb / 2) * s.k, s.k);
        }});
    const double flop = 2.0 * s.tb * s.g * s.k;
    char what[80];
    std::snprintf(what, sizeof what, "%s dW halves %lld x %lld K=%lld", s.name,
                  static_cast<long long>(half), static_cast<long long>(s.k), static_cast<long long>(s.tb));
    print_rate(what, "TN as stored (driver)", flop, t[0], t[0]);
    print_rate(what, "NT, given transposed", flop, t[1], t[0]);
    print_rate(what, "dW^T TN + copy", flop, t[2], t[0]);
    std::snprintf(what, sizeof what, "%s dX halves %lld x %lld K=%lld", s.name, static_cast<long long>(s.tb / 2),
                  static_cast<long long>(s.k), static_cast<long long>(s.g));
    print_rate(what, "NN (driver)", flop, t[3], t[3]);
  }
}

// One recurrent step: gates (M, 4H) += h (M, H) * w_hh^T, then the forward
// cell pass (training: saved activations written), for the step shapes of
// S2/S3/S5: lstmop's kernels against dnnl_sgemm + the same cell pass.
void section_cell() {
  std::printf("cell: one recurrent step = product + forward cell pass (training outputs), per step\n");
  struct Shape { const char* name; int64_t m, h; };
  std::vector<Shape> shapes = {{"S3", 1, 128}, {"S5", 8, 128}, {"S2", 32, 256}, {"S1/S4", 64, 512}};
  if (g_quick) shapes.resize(2);
  for (const Shape& s : shapes) {
    const int64_t m = s.m, h = s.h, n = 4 * h;
    // h_prev tiny: every timed call adds its product into the same gates, which must stay in
    // the range a real step sees ([-1, 1] here), else exp/tanh run on huge arguments.
    std::vector<float> hp = random_floats(m * h, 9), w = random_floats(n * h, 10), gates = random_floats(m * n, 11);
    for (float& v : hp) v *= 1e-7f;
    std::vector<float> wt(static_cast<std::size_t>(h * n));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t kk = 0; kk < h; ++kk) wt[static_cast<std::size_t>(kk * n + j)] = w[static_cast<std::size_t>(j * h + kk)];
    std::vector<float> bias = random_floats(n, 12), cstate(static_cast<std::size_t>(m * h), 0.1f),
        hstate(static_cast<std::size_t>(m * h)), hout(static_cast<std::size_t>(m * h)),
        saved(static_cast<std::size_t>(7 * m * h));
    lstmop::detail::WorkspaceArena arena;
    lstmop::detail::RecurrentProduct product;
    product.allocate(arena, h, n);
    arena.commit();
    product.set_b_from_rows(w.data(), h);
    lstmop::detail::StepSaved<float> sv;
    float* const sp = saved.data();
    sv.i = sp; sv.j = sp + m * h; sv.f = sp + 2 * m * h; sv.o = sp + 3 * m * h;
    sv.h = sp + 4 * m * h; sv.c = sp + 5 * m * h; sv.tanhc = sp + 6 * m * h;
    auto cell_pass = [&]() {
      lstmop::detail::cell_pass_forward<float, float>(m, h, 0, h, gates.data(), bias.data(),
                                                      cstate.data(), hstate.data(), hout.data(), h, &sv);
    };
    std::vector<double> t = seconds_per_call(std::vector<std::function<void()>>{
        [&]() { dnnl_sgemm('N', 'N', m, n, h, 1.0f, hp.data(), h, wt.data(), n, 1.0f, gates.data(), n); },
        [&]() { product.accumulate(m, hp.data(), h, gates.data(), n); },
        cell_pass,
        [&]() {
          dnnl_sgemm('N', 'N', m, n, h, 1.0f, hp.data(), h, wt.data(), n, 1.0f, gates.data(), n);
          cell_pass();
        },
        [&]() {
          product.accumulate(m, hp.data(), h, gates.data(), n);
          cell_pass();
        }});
    const double t_sgemm = t[0], t_kernel = t[1], t_cell = t[2], t_step_dnnl = t[3], t_step_kernel = t[4];
    std::printf("  %-6s M=%-3lld H=%-4lld product: dnnl_sgemm %.2f us, packed %.2f us | cell pass %.2f us"
                " (%.2f ns/unit) | step: sgemm+cell %.2f us, packed+cell %.2f us (x%.2f)\n",
                s.name, static_cast<long long>(m), static_cast<long long>(h), t_sgemm * 1e6, t_kernel * 1e6,
                t_cell * 1e6, t_cell * 1e9 / static_cast<double>(m * h), t_step_dnnl * 1e6,
                t_step_kernel * 1e6, t_step_dnnl / t_step_kernel);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::set<std::string> sections;
  for (int k = 1; k < argc; ++k) {
    std::string arg = argv[k];
    if (arg == "--quick") g_quick = true;
    else if (arg == "--section" && k + 1 < argc) sections.insert(argv[++k]);
    else {
      std::fprintf(stderr, "usage: gemm_study [--quick] [--section peak|step|proj|bwd|det|bf16|bf16bwd|cell]...\n");
      return 2;
    }
  }
  if (sections.empty()) sections = {"peak", "step", "proj", "bwd", "det", "bf16", "bf16bwd", "cell"};
  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  std::printf("gemm_study: oneDNN isa %d, lstmop kernels: %s; 1 thread unless said\n",
              static_cast<int>(dnnl::get_effective_cpu_isa()),
              lstmop::kernels::describe(lstmop::kernels::kernel_choice()).c_str());
  if (sections.count("peak")) {
    if (lstmop::kernels::isa_supported(lstmop::kernels::Isa::Avx2))
      std::printf("peak: AVX2 FMA, 10 chains: %.1f GFLOP/s\n", fma_peak_avx2());
    std::vector<float> a = random_floats(2048 * 1024, 1), b = random_floats(1024 * 2048, 2), c(2048 * 2048);
    const int64_t m = g_quick ? 256 : 2048;
    const double s = seconds_per_call([&]() {
      dnnl_sgemm('N', 'N', m, 2048, 1024, 1.0f, a.data(), 1024, b.data(), 2048, 0.0f, c.data(), 2048);
    });
    std::printf("peak: dnnl_sgemm M=%lld N=2048 K=1024: %.1f GFLOP/s\n", static_cast<long long>(m),
                2.0 * m * 2048 * 1024 / s * 1e-9);
  }
  if (sections.count("step")) section_step();
  if (sections.count("proj")) section_proj();
  if (sections.count("bwd")) section_bwd();
  if (sections.count("det")) section_det();
  if (sections.count("bf16")) section_bf16();
  if (sections.count("bf16bwd")) section_bf16_bwd();
  if (sections.count("cell")) section_cell();
  return 0;
}
