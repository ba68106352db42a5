// lstmop bench: case parsing, deterministic data, timing and the serve loop.
#include "bench_case.h"

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace lstmbench {

std::vector<int64_t> BenchCase::batch_sizes() const {
  std::vector<int64_t> sizes(static_cast<std::size_t>(T), 0);
  for (int64_t len : lengths)
    for (int64_t t = 0; t < len; ++t) ++sizes[static_cast<std::size_t>(t)];
  return sizes;
}

namespace {

int64_t parse_int(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') throw std::runtime_error(flag + " expects an integer, got '" + text + "'");
  return v;
}

std::vector<int64_t> parse_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(parse_int(flag, item));
  return out;
}

void validate(const BenchCase& c) {
  if (c.T < 1 || c.B < 1 || c.I < 1 || c.H < 1 || c.layers < 1)
    throw std::runtime_error("--T, --B, --I, --H, --layers must all be >= 1");
  if (c.dtype != "float32" && c.dtype != "bfloat16" && c.dtype != "float16")
    throw std::runtime_error("--dtype must be float32, bfloat16 or float16, got '" + c.dtype + "'");
  if (c.mode != "infer" && c.mode != "train")
    throw std::runtime_error("--mode must be infer or train, got '" + c.mode + "'");
  if (c.threads < 1) throw std::runtime_error("--threads must be >= 1");
  if (c.proj < 0 || (c.proj > 0 && c.proj >= c.H))
    throw std::runtime_error("--proj must be 0 or lie in [1, H)");
  if (!c.lengths.empty()) {
    if (static_cast<int64_t>(c.lengths.size()) != c.B)
      throw std::runtime_error("--lengths must have --B entries");
    for (std::size_t b = 0; b < c.lengths.size(); ++b) {
      if (c.lengths[b] < 1 || c.lengths[b] > c.T)
        throw std::runtime_error("--lengths entries must lie in [1, T]");
      if (b > 0 && c.lengths[b] > c.lengths[b - 1])
        throw std::runtime_error("--lengths must be non-increasing");
    }
    if (c.lengths[0] != c.T) throw std::runtime_error("--lengths[0] must equal --T");
  }
}

}  // namespace

Command parse_command(int argc, char** argv) {
  Command cmd;
  BenchCase& c = cmd.c;
  bool have_action = false;
  for (int k = 1; k < argc; ++k) {
    std::string flag = argv[k];
    auto value = [&]() -> std::string {
      if (k + 1 >= argc) throw std::runtime_error(flag + " needs a value");
      return argv[++k];
    };
    if (flag == "--T") c.T = parse_int(flag, value());
    else if (flag == "--B") c.B = parse_int(flag, value());
    else if (flag == "--I") c.I = parse_int(flag, value());
    else if (flag == "--H") c.H = parse_int(flag, value());
    else if (flag == "--layers") c.layers = parse_int(flag, value());
    else if (flag == "--proj") c.proj = parse_int(flag, value());
    else if (flag == "--bidirectional") c.bidirectional = parse_int(flag, value()) != 0;
    else if (flag == "--dtype") c.dtype = value();
    else if (flag == "--mode") c.mode = value();
    else if (flag == "--lengths") c.lengths = parse_list(flag, value());
    else if (flag == "--threads") c.threads = static_cast<int>(parse_int(flag, value()));
    else if (flag == "--seed") c.seed = static_cast<uint64_t>(parse_int(flag, value()));
    else if (flag == "--fp32-precision") c.fp32_precision = value();
    else if (flag == "--serve") { cmd.action = Action::Serve; have_action = true; }
    else if (flag == "--reps") { cmd.action = Action::Reps; cmd.reps = static_cast<int>(parse_int(flag, value())); have_action = true; }
    else if (flag == "--pause-ms") cmd.pause_ms = static_cast<int>(parse_int(flag, value()));
    else if (flag == "--flush-mb") cmd.flush_mb = static_cast<int>(parse_int(flag, value()));
    else if (flag == "--verify-dir") { cmd.action = Action::Verify; cmd.verify_dir = value(); have_action = true; }
    else throw std::runtime_error("unknown flag '" + flag + "'");
  }
  if (!have_action) throw std::runtime_error("one of --serve, --reps K, --verify-dir D is required");
  if (cmd.action == Action::Reps && cmd.reps < 1) throw std::runtime_error("--reps must be >= 1");
  if (cmd.pause_ms < 0) throw std::runtime_error("--pause-ms must be >= 0");
  if (cmd.flush_mb < 0 || cmd.flush_mb > 4096) throw std::runtime_error("--flush-mb must lie in [0, 4096]");
  validate(c);
  return cmd;
}

void fill_uniform(float* data, int64_t n, float lo, float hi, uint64_t seed) {
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (int64_t k = 0; k < n; ++k) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    double u = static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    data[k] = static_cast<float>(lo + (hi - lo) * u);
  }
}

static double process_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

Timings time_runs(const std::function<void()>& run_once, int k, int pause_ms, int flush_mb) {
  Timings t;
  std::vector<uint64_t> other(static_cast<std::size_t>(flush_mb) << 17);
  uint64_t sum = 0;
  for (int r = 0; r < k; ++r) {
    if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    for (uint64_t& v : other) sum += v++;
    const double c0 = process_cpu_ms();
    auto t0 = std::chrono::steady_clock::now();
    run_once();
    auto t1 = std::chrono::steady_clock::now();
    t.cpu_ms.push_back(process_cpu_ms() - c0);
    t.wall_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  if (sum == 1) std::printf(" ");  // keeps the sweep
  return t;
}

void print_timings(const Timings& t) {
  std::printf("times");
  for (double v : t.wall_ms) std::printf(" %.6f", v);
  std::printf(" cpu");
  for (double v : t.cpu_ms) std::printf(" %.6f", v);
  std::printf("\n");
  std::fflush(stdout);
}

void serve(const std::function<void()>& run_once, const std::string& ready_info) {
  std::printf("ready %s\n", ready_info.c_str());
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "quit") break;
    if (line.rfind("run ", 0) == 0) {
      print_timings(time_runs(run_once, static_cast<int>(parse_int("run", line.substr(4)))));
    } else {
      std::printf("error: unknown command '%s'\n", line.c_str());
      std::fflush(stdout);
    }
  }
}

std::vector<float> read_floats(const std::string& path, int64_t expected_count) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<float> data(static_cast<std::size_t>(expected_count));
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(expected_count * 4));
  if (in.gcount() != expected_count * 4 || in.peek() != EOF)
    throw std::runtime_error(path + " does not hold exactly " + std::to_string(expected_count) + " floats");
  return data;
}

void write_floats(const std::string& path, const float* data, int64_t count) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * 4));
  if (!out) throw std::runtime_error("cannot write " + path);
}

int run_main(const std::function<int()>& body) {
  try {
    return body();
  } catch (const Unsupported& e) {
    std::printf("unsupported: %s\n", e.what());
    std::fflush(stdout);
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}

}  // namespace lstmbench
