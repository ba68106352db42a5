"""One suite case's training step through the plugin, in a loop, with and without large frees
in between: how lstmop's memory fares when the process unmaps a large block between two calls
(torch code frees tensors of 32 MiB and more every step; glibc unmaps them).

    /usr/bin/python3 bench/page_churn.py --case S4 [--pattern lllclcl] [--hints 1,0] [--rounds 2]

Pattern letters: l = one training step of lstmop.nn.LSTM (forward + backward, the benchmark's
ModulePeer), t = one of torch.nn.LSTM, c = a 256 MiB tensor filled and freed (a large unmap).
Each hint value (LSTMOP_HUGE_PAGES: 1 on, 0 off, "default" unset) runs in a fresh process, pinned
to one core; every step's wall milliseconds are printed, so the steps after a "c" or "t" show
what the unmap cost the next call (docs/performance.md, the eighth session)."""
import argparse
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

CHILD = r"""
import os, sys
sys.path.insert(0, sys.argv[3]); sys.path.insert(0, sys.argv[4])
import torch, lstm_bench_problems as problems, lstm_bench_peers as peers
import lstmop.nn
case, pattern = sys.argv[1], sys.argv[2]
problem = [p for p in problems.suite() if p.name == case][0]
make = {"l": lambda: peers.ModulePeer("lstmop", lstmop.nn.LSTM, problem, "train", 1),
        "t": lambda: peers.ModulePeer("torch", torch.nn.LSTM, problem, "train", 1)}
runners = {}
for letter in sorted(set(pattern) - {"c"}):
    runners[letter] = make[letter]()
    why_not = runners[letter].start()
    if why_not:
        raise SystemExit(f"{letter}: {why_not}")
times = []
for letter in pattern:
    if letter == "c":
        block = torch.empty(64 << 20).fill_(1)  # 256 MiB: a fresh mapping, unmapped when freed
        del block
        times.append("c")
    else:
        wall, _ = runners[letter].run_once()
        times.append(f"{letter}:{wall:.1f}")
print(" ".join(times))
"""


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="S4", help="a suite case (bench/lstm_bench_problems.py)")
    ap.add_argument("--pattern", default="lllclcl")
    ap.add_argument("--hints", default="1,0", help="LSTMOP_HUGE_PAGES values; 'default': unset")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    if set(args.pattern) - set("ltc"):
        ap.error("--pattern takes the letters l, t and c")
    allowed = sorted(os.sched_getaffinity(0))
    for _ in range(args.rounds):
        for hint in args.hints.split(","):
            env = dict(os.environ)
            env.pop("LSTMOP_HUGE_PAGES", None)
            if hint != "default":
                env["LSTMOP_HUGE_PAGES"] = hint
            command = ["taskset", "-c", str(allowed[-1]), sys.executable, "-c", CHILD, args.case,
                       args.pattern, str(HERE), str(HERE.parent / "python")]
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            print(f"{args.case} LSTMOP_HUGE_PAGES={hint}: {out.stdout.strip()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
