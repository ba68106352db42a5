#!/usr/bin/python3
"""Peak memory of training steps: lstmop.nn.LSTM (the plugin) against torch.nn.LSTM.

    /usr/bin/python3 bench/peak_memory.py                 # S1, 1 thread
    /usr/bin/python3 bench/peak_memory.py --cases S1,S4 --steps 2

Each peer runs in a fresh process: the module, its weights and the input are created, the
process's peak resident set (VmHWM) is reset (/proc/self/clear_refs), then `--steps` training
steps run (forward with saved activations + full backward, as in lstm_bench.py). The figure is
VmHWM - VmRSS before the steps: the most memory the steps needed beyond the weights and the
input, including whatever a peer keeps between steps (lstmop's scratch block, the allocator's
free lists), since the second step starts with it held.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
sys.path.insert(0, str(HERE))


def status_kib(field):
    return int(re.search(rf"{field}:\s+(\d+)", open("/proc/self/status").read()).group(1))


def child(case, peer_name, steps, threads):
    import torch
    import lstm_bench_problems as problems
    from lstm_bench_peers import ModulePeer

    problem = {p.name: p for p in problems.suite()}[case]
    if peer_name == "lstmop":
        import lstmop.nn
        module_class = lstmop.nn.LSTM
    else:
        module_class = torch.nn.LSTM
    peer = ModulePeer(peer_name, module_class, problem, "train", threads)
    why_not = peer.start(warm_up=False)
    if why_not:
        print(json.dumps({"error": why_not}))
        return
    before = status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    for _ in range(steps):
        peer.run_once()
    print(json.dumps({"before_kib": before, "peak_kib": status_kib("VmHWM")}))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="S1")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--child", nargs=2, metavar=("CASE", "PEER"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], args.steps, args.threads)
        return 0
    print(f"{'case':>4}  {'peer':>7}  {'before MiB':>10}  {'peak MiB':>9}  {'step peak MiB':>13}")
    extra = {}
    for case in args.cases.split(","):
        for peer in ("torch", "lstmop"):
            out = subprocess.run([sys.executable, __file__, "--child", case, peer,
                                  "--steps", str(args.steps), "--threads", str(args.threads)],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            if "error" in r:
                print(f"{case:>4}  {peer:>7}  {r['error']}")
                continue
            extra[(case, peer)] = (r["peak_kib"] - r["before_kib"]) / 1024
            print(f"{case:>4}  {peer:>7}  {r['before_kib'] / 1024:10.1f}  "
                  f"{r['peak_kib'] / 1024:9.1f}  {extra[(case, peer)]:13.1f}")
        if (case, "torch") in extra and (case, "lstmop") in extra:
            print(f"{case:>4}  lstmop / torch step peak: "
                  f"{extra[(case, 'lstmop')] / extra[(case, 'torch')]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
