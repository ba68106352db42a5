// lstmop bench: the reference rate every LSTM time is compared with: dnnl_sgemm
// on one large row-major product, min over reps, on --threads threads.
//   sgemm_probe [--threads N] [--m M] [--n N] [--k K] [--reps R]
// prints "sgemm m=.. n=.. k=.. threads=.. best_ms=.. gflops=.. cpu_gflops=..":
// the rate on the wall clock and on the process's CPU time (see bench_case.h).
#include <omp.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.h>
#include <vector>

int main(int argc, char** argv) {
  long m = 2048, n = 2048, k = 1024, threads = 1, reps = 5;
  for (int a = 1; a + 1 < argc; a += 2) {
    long v = std::strtol(argv[a + 1], nullptr, 10);
    if (!std::strcmp(argv[a], "--m")) m = v;
    else if (!std::strcmp(argv[a], "--n")) n = v;
    else if (!std::strcmp(argv[a], "--k")) k = v;
    else if (!std::strcmp(argv[a], "--threads")) threads = v;
    else if (!std::strcmp(argv[a], "--reps")) reps = v;
    else {
      std::fprintf(stderr, "error: unknown flag %s\n", argv[a]);
      return 2;
    }
  }
  if (m < 1 || n < 1 || k < 1 || threads < 1 || reps < 1) {
    std::fprintf(stderr, "error: every value must be >= 1\n");
    return 2;
  }
  omp_set_num_threads(static_cast<int>(threads));
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), c(static_cast<size_t>(m * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.125f - 0.375f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  double best = 1e30, best_cpu = 1e30;
  auto cpu_seconds = []() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  for (long r = 0; r <= reps; ++r) {  // r == 0: warm-up
    const double c0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    if (dnnl_sgemm('N', 'N', m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n) != dnnl_success) {
      std::fprintf(stderr, "error: dnnl_sgemm failed\n");
      return 2;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cs = cpu_seconds() - c0;
    if (r > 0 && s < best) best = s;
    if (r > 0 && cs < best_cpu) best_cpu = cs;
  }
  std::printf("sgemm m=%ld n=%ld k=%ld threads=%ld best_ms=%.4f gflops=%.2f cpu_gflops=%.2f\n", m, n,
              k, threads, best * 1e3, 2.0 * m * n * k / best * 1e-9, 2.0 * m * n * k / best_cpu * 1e-9);
  return 0;
}
