// Internal: split mode's division of one direction's hidden units between its
// two threads, moved to follow the threads' speeds.
//
// Split mode (lstm_plan.h) runs a direction's steps on two threads in
// lockstep, each on a range of hidden units, with a barrier per step: a step
// takes as long as the slower thread's share. The plan's fixed halves are
// right when both cores run at the same speed; on a shared machine they often
// do not (a core whose sibling hyperthread or host neighbour is busy: one
// vCPU of this project's 2-vCPU VMs ran dnnl_sgemm at 125 GFLOP/s for minutes
// while the other ran it at 200). Each thread times its own share of every
// step; every kWindow steps both read both threads' median step time of the
// window (after the barrier that ends it) and move the boundary, in whole
// groups of 16 units, to where the shares would take equal time at the
// speeds just measured. The median ignores a step in which a thread lost its
// core for a while (another task on it): that is not a slower core, and
// moving units away and back would cost more than it saves.
//
// No value depends on the boundary: every element of a step is computed the
// same way by whichever thread owns its unit (the fused forward steps, the
// backward's cell passes and the columns of its dh product give the same bits
// for any unit or column range), so results stay bitwise identical for 1, 2,
// 3 threads. The forward moves the boundary between steps; the backward at
// its mid-step barrier, so that a step's dh product and the next step's cell
// pass take the same units (backward_driver.cpp, time_loop).
//
// Use (two threads, part 0 and part 1, each with its own Local):
//   for each step n (between two barriers):
//     [begin, end) = balance.units(local, part); work on them, timed with now():
//     UnitBalance::record(local, that time);
//     balance.publish(local, part, n);    // before the barrier
//     barrier.wait();
//     balance.update(local, part, n);     // after it: the same boundary on both
// Nothing is shared but the two medians (and, from call to call, where the
// last balance of the same H ended). test_unit_balance makes every window
// move the boundary (test_cycle) and checks the bits.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace lstmop {
namespace detail {

class UnitBalance {
 public:
  static constexpr int64_t kGroup = 16;  // units moved at a time (every body's width divides it)
  static constexpr int64_t kWindow = 8;  // steps between moves

  // A thread's own view: the boundary (the same on both threads after every
  // update) and its step times in the current window.
  struct Local {
    int64_t boundary = 0;
    int64_t steps = 0;
    int64_t step_time[kWindow] = {};
  };

  // H hidden units, part 0 starting with [0, plan_boundary) (a multiple of
  // kGroup, 0 < plan_boundary < H), or where the last balance of H units in
  // this process ended (the cores' speeds change over minutes, calls take
  // milliseconds: a call starts where the last one found the balance).
  UnitBalance(int64_t H, int64_t plan_boundary) : H_(H), first_(remembered(H, plan_boundary)) {}

  // After the last step (part 0): the boundary the next balance of H units starts from.
  void finish(const Local& local, int part) const {
    if (part == 0) last().store(pack(H_, local.boundary), std::memory_order_relaxed);
  }

  // Where the last balance of H units in this process ended (part 0's
  // units), or 0 when the last balance was of another H.
  static int64_t last_boundary(int64_t H) { return remembered(H, 0); }

  Local start() const {
    Local local;
    local.boundary = first_;
    return local;
  }

  // Part `part`'s units under the local boundary.
  void units(const Local& local, int part, int64_t* begin, int64_t* end) const {
    *begin = part == 0 ? 0 : local.boundary;
    *end = part == 0 ? local.boundary : H_;
  }

  // A clock for the step times (only their ratios matter): the time-stamp
  // counter on x86-64 (a few nanoseconds to read, against ~30 for
  // steady_clock: 0.75% of a small step, S5's), else steady_clock.
  static int64_t now() {
#if defined(__x86_64__)
    return static_cast<int64_t>(__rdtsc());
#else
    return std::chrono::steady_clock::now().time_since_epoch().count();
#endif
  }

  // The time of this thread's share of a step.
  static void record(Local& local, int64_t time) {
    local.step_time[local.steps++ % kWindow] = time;
  }

  // Before step n's barrier: at a window's last step, the window's median
  // step time for the other thread to read.
  void publish(Local& local, int part, int64_t n) {
    if ((n + 1) % kWindow != 0) return;
    int64_t* first = local.step_time;
    std::nth_element(first, first + kWindow / 2, first + kWindow);
    busy_[part].value.store(first[kWindow / 2], std::memory_order_relaxed);
  }

  // After step n's barrier: at a window's last step, both threads move their
  // boundary the same way from the same two medians. (A thread writes its
  // median again only at the next window's end, after a barrier the other
  // passes only once it has read this one: kWindow >= 2.)
  void update(Local& local, int part, int64_t n) const {
    if ((n + 1) % kWindow != 0) return;
    const int64_t moved =
        test_cycle().load(std::memory_order_relaxed)
            ? cycled(local.boundary)
            : rebalanced(local.boundary, busy_[0].value.load(std::memory_order_relaxed),
                         busy_[1].value.load(std::memory_order_relaxed));
    if (moved != local.boundary && part == 0) moves().fetch_add(1, std::memory_order_relaxed);
    local.boundary = moved;
  }

  // Tests: while set, every window moves the boundary to the next position
  // of a cycle through all of them, whatever the times (units change threads
  // mid-call on any machine); moves() counts the moves.
  static std::atomic<bool>& test_cycle() {
    static std::atomic<bool> on{false};
    return on;
  }
  static std::atomic<int64_t>& moves() {
    static std::atomic<int64_t> count{0};
    return count;
  }
  int64_t cycled(int64_t boundary) const {
    const int64_t groups = (H_ + kGroup - 1) / kGroup;
    return (boundary / kGroup % (groups - 1) + 1) * kGroup;
  }

  // The boundary the two medians ask for: part 0's groups g0 of all groups g
  // ran in t0 a step, part 1's in t1; at those speeds equal times need
  // g * r0 / (r0 + r1) groups for part 0 (r = groups / time). Moved only when
  // that is at least 3/4 of a group away (noise of a few percent never moves
  // it), by at most a quarter of the groups a window, each part keeping one.
  int64_t rebalanced(int64_t boundary, int64_t t0, int64_t t1) const {
    const int64_t groups = (H_ + kGroup - 1) / kGroup;
    const int64_t g0 = boundary / kGroup, g1 = groups - g0;
    if (t0 <= 0 || t1 <= 0 || g0 <= 0 || g1 <= 0) return boundary;
    const double r0 = static_cast<double>(g0) / static_cast<double>(t0);
    const double r1 = static_cast<double>(g1) / static_cast<double>(t1);
    const double ideal = static_cast<double>(groups) * r0 / (r0 + r1);
    if (ideal > static_cast<double>(g0) - 0.75 && ideal < static_cast<double>(g0) + 0.75) {
      return boundary;
    }
    const int64_t limit = std::max<int64_t>(1, groups / 4);
    int64_t target = static_cast<int64_t>(ideal + 0.5);
    target = std::clamp(target, g0 - limit, g0 + limit);
    target = std::clamp<int64_t>(target, 1, groups - 1);
    return target * kGroup;
  }

 private:
  // The last balance's H and boundary, in one word.
  static std::atomic<uint64_t>& last() {
    static std::atomic<uint64_t> word{0};
    return word;
  }
  static uint64_t pack(int64_t H, int64_t boundary) {
    return (static_cast<uint64_t>(H) << 32) | static_cast<uint64_t>(boundary);
  }
  static int64_t remembered(int64_t H, int64_t plan_boundary) {
    const uint64_t word = last().load(std::memory_order_relaxed);
    const int64_t boundary = static_cast<int64_t>(word & 0xffffffffu);
    const bool same = static_cast<int64_t>(word >> 32) == H && H < (int64_t{1} << 31);
    return same && boundary > 0 && boundary < H && boundary % kGroup == 0 ? boundary
                                                                         : plan_boundary;
  }

  struct alignas(64) Slot {
    std::atomic<int64_t> value{0};
  };
  const int64_t H_, first_;
  Slot busy_[2];
};

}  // namespace detail
}  // namespace lstmop
