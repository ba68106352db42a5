// Internal: how a bidirectional layer uses two threads, chosen from the speeds
// the last calls measured.
//
// Two ways, the same bits (every element is computed the same way by
// whichever thread owns it; test_bidirectional_threads checks 2 threads
// against 1 both ways):
//
// - directions in parallel (the default): each thread runs one direction of
//   the layer from its first step to its last; the layer ends when the
//   slower thread does. No barrier inside the layer. On cores of the same
//   speed the fastest way: split mode (below) measured 0.93x on T=100 B=64
//   H=256 inference and 0.95x on S1's training (this project's Zen 5 VM).
// - split mode, one direction after the other (lstm_plan.h, SplitUnits):
//   both threads on every step of one direction, the hidden units divided
//   between them and moved to follow their speeds (driver/unit_balance.h),
//   a barrier per step.
//
// On a shared machine the two cores often do not run at the same speed (a
// busy host neighbour on one core's sibling: one vCPU of this project's VMs
// ran dnnl_sgemm at 62% of the other's rate for minutes). Directions in
// parallel then take the slower core's time for the whole layer, r times the
// faster one's for a speed ratio r; split mode about 2r / (1 + r) of it plus
// its barriers (r = 1.6: 1.23 against 1.6).
//
// The choice, process-wide: every call in parallel mode reports the two
// directions' thread CPU times (time-sliced or preempted periods do not
// count: another task on a core is not a slower core); two calls in a row
// with a ratio of at least kSplitRatio switch to split mode. Every call of a
// bidirectional problem in split mode reports where its unit balance ended;
// two calls in a row whose boundary implies a ratio below kParallelRatio
// switch back. The state only picks the threading of later calls, never a
// value.
#pragma once

#include <atomic>
#include <cstdint>

namespace lstmop {
namespace detail {

class BidirectionalThreads {
 public:
  // Directions in parallel -> split mode from this ratio of the directions'
  // times, split mode -> directions in parallel below this ratio of the two
  // parts' unit counts (relative to the plan's division). Split mode's
  // boundary moves in groups of 16 units (H = 256: halves, then 9:7 = 1.29;
  // H = 512: 17:15 = 1.13): a speed ratio below 1.25 leaves it below 1.2,
  // so the two thresholds do not chase each other. At a ratio r directions
  // in parallel take r times the faster core's time, split mode about
  // 2r / (1 + r) of it plus 4-7% for its barriers: even near 1.2.
  static constexpr double kSplitRatio = 1.25;
  static constexpr double kParallelRatio = 1.2;
  static constexpr int kCallsToSwitch = 2;

  enum class Mode : int { Adaptive = 0, Parallel = 1, Split = 2 };

  // Whether the next bidirectional call that could run in split mode should.
  static bool split();

  // After a call in parallel mode: the CPU times of the threads that ran
  // direction 0 and direction 1 (any unit; 0 when not measured: ignored).
  static void record_parallel(int64_t time0, int64_t time1);
  // After a bidirectional call in split mode: part 0's share of H units
  // where its balance ended, and where the plan put it (split_units(H): the
  // halves, or as near as groups of 16 allow). The speed ratio it implies is
  // that of the two parts' unit counts over the plan's.
  static void record_split(int64_t boundary, int64_t H, int64_t plan_boundary);

  // Tests: force one way (Parallel, Split) or go back to Adaptive; reset()
  // clears the measured state (parallel mode, no pending calls).
  static void set_mode(Mode mode);
  static void reset();
  // Switches so far, and the reports received (tests).
  static int64_t switches();
  static int64_t parallel_reports();
  static int64_t split_reports();
};

// The calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID); 0
// where there is none.
int64_t thread_cpu_ns();

}  // namespace detail
}  // namespace lstmop
