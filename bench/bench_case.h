// lstmop bench: the case description and the command protocol shared by the
// C++ peers (onednn_lstm_peer, lstmop_runner) that bench/lstm_bench.py drives.
//
// A peer binary is started once per case with the case on its command line:
//   --T 100 --B 64 --I 512 --H 512 --layers 2 --bidirectional 1
//   --dtype float32|bfloat16|float16 --mode infer|train
//   [--proj P]       LSTM with projections (proj_size P, 1 <= P < H; 0 = none)
//   [--lengths 100,97,...]  per-sequence lengths, non-increasing (variable length)
//   [--threads N] [--seed S] [--fp32-precision ieee|bf16]
// and then one of:
//   --serve          print "ready <key=value ...>", then answer stdin lines
//                    "run K" with "times <ms> ... cpu <ms> ..." (K timed runs:
//                    wall-clock, then this process's CPU time) and stop at
//                    "quit" or end of input. The driver keeps every peer of a
//                    case open and interleaves their runs one by one.
//   --reps K         run K times and print the "times" line (manual use).
//   --verify-dir D   read D/*.bin, compute once, write D/<peer>_*.bin (see
//                    bench/lstm_bench.py: verify_peer), print "verified".
// Errors go to stderr as "error: <why>" with exit code 2; a configuration the
// peer cannot compute (e.g. bfloat16 on a CPU without it) prints
// "unsupported: <why>" and exits 3.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lstmbench {

struct BenchCase {
  int64_t T = 0, B = 0, I = 0, H = 0;
  int64_t layers = 1;
  int64_t proj = 0;  // proj_size: 0 without projections
  bool bidirectional = false;
  std::string dtype = "float32";
  std::string mode = "infer";    // infer | train
  std::vector<int64_t> lengths;  // empty: fixed length T for every sequence
  int threads = 1;
  uint64_t seed = 1;
  std::string fp32_precision = "ieee";  // lstmop_runner only: lstmop::set_fp32_precision

  int64_t directions() const { return bidirectional ? 2 : 1; }
  // The width of h: proj with projections, else H.
  int64_t hidden_width() const { return proj > 0 ? proj : H; }
  bool train() const { return mode == "train"; }
  // batch_sizes[t] = number of sequences with length > t (PackedSequence order).
  std::vector<int64_t> batch_sizes() const;
};

enum class Action { Serve, Reps, Verify };

struct Command {
  BenchCase c;
  Action action = Action::Reps;
  int reps = 1;
  // --pause-ms: idle time before each timed run of --reps (a cold call: on a
  // shared VM the caches and predictors lose a call's state within ~10 ms).
  int pause_ms = 0;
  // --flush-mb: writes and reads that many MiB of other memory before each
  // timed run (another program's data in the caches and TLBs, as after the
  // other peers' runs in bench/lstm_bench.py's rounds).
  int flush_mb = 0;
  std::string verify_dir;
};

// Parses argv; throws std::runtime_error with a message naming the bad flag.
Command parse_command(int argc, char** argv);

// Deterministic uniform floats in [lo, hi) (splitmix64), so every peer can
// build the same data from the seed without files.
void fill_uniform(float* data, int64_t n, float lo, float hi, uint64_t seed);

// Times run_once K times, milliseconds: wall-clock (steady_clock) and the
// process's CPU time (all its threads; on one thread it leaves out the time
// other processes of a shared machine took).
struct Timings {
  std::vector<double> wall_ms, cpu_ms;
};
// pause_ms > 0: sleeps that long before each run; flush_mb > 0: sweeps that
// many MiB of other memory before it (neither timed).
Timings time_runs(const std::function<void()>& run_once, int k, int pause_ms = 0,
                  int flush_mb = 0);

// "times <wall ms> ... cpu <cpu ms> ..." on stdout.
void print_timings(const Timings& t);

// The --serve loop on stdin/stdout. `ready_info` is appended to "ready".
void serve(const std::function<void()>& run_once, const std::string& ready_info);

// Raw little-endian float32 files for --verify-dir.
std::vector<float> read_floats(const std::string& path, int64_t expected_count);
void write_floats(const std::string& path, const float* data, int64_t count);

// Runs `body` and maps exceptions to the exit codes above.
int run_main(const std::function<int()>& body);

// Thrown by a peer for a configuration it cannot compute (exit code 3).
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace lstmbench
