"""Side-by-side timing of C++ peer binaries on one case: builds of lstmop_runner before and
after a change, or the runner against onednn_lstm_peer. Each round runs every binary once, in
turn, as a fresh process with the same case flags and `--reps K`; a binary's figure for the
round is the least of its K calls. Prints per binary the least and the median of its round
figures and the median over the first binary's (below 1: faster).

    /usr/bin/python3 bench/ab_runs.py --rounds 6 --case "--T 200 --B 8 --I 128 --H 128
        --dtype bfloat16 --mode infer --threads 1 --reps 20" /tmp/runner_before
        build/bench/lstmop_runner

One-thread cases are pinned to one core (by default the last one this process may use) and
read on the CPU clock; give
--cpus 0,1 --clock wall for two threads. Interleaving the binaries round by round is what
makes the ratio mean something on a shared machine whose speed drifts by minutes.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys


def call_times(binary, case, cpus, clock):
    """The K call times (ms) of one run: the peer's "times <wall> ... cpu <cpu> ..." line."""
    command = ["taskset", "-c", cpus, binary] + case
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if not line.startswith("times ") or " cpu " not in line:
        raise SystemExit(f"{binary}: expected a 'times ... cpu ...' line, got {line!r}")
    wall, cpu = line[len("times "):].split(" cpu ")
    return [float(v) for v in (cpu if clock == "cpu" else wall).split()]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binaries", nargs="+", help="peer binaries (bench_case.h protocol)")
    parser.add_argument("--case", required=True,
                        help="the case's flags, --reps K included (one string)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--cpus", default=str(max(os.sched_getaffinity(0))),
                        help="taskset's CPU list (default: the last CPU this process may use)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    case = shlex.split(args.case)
    if "--reps" not in case:
        parser.error("--case needs --reps K (the calls a run times)")
    figures = {b: [] for b in args.binaries}
    for _ in range(args.rounds):
        for binary in args.binaries:
            figures[binary].append(min(call_times(binary, case, args.cpus, args.clock)))
    base = statistics.median(figures[args.binaries[0]])
    print(f"{args.rounds} rounds of: {args.case} ({args.clock} clock, cpus {args.cpus})")
    for binary in args.binaries:
        runs = figures[binary]
        print(f"{binary:40s} least {min(runs):10.4f} ms  median {statistics.median(runs):10.4f} ms"
              f"  median / first's {statistics.median(runs) / base:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
