"""Per-call cost of lstmop.nn.LSTM against torch.nn.LSTM on problems too small to measure
anything else (T=1, B=1, I=H=8): what a streaming caller, one step at a time, pays above the
arithmetic. Prints microseconds a call (the best of --rounds rounds of --calls calls), under
torch.no_grad() and torch.inference_mode(), for the module, the op lstmop._lstm called
directly, and torch.nn.LSTM with the same weights.

    taskset -c 1 /usr/bin/python3 bench/call_overhead.py

Run it pinned to one core; compare the columns of one run (the machines are shared).
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import lstmop  # noqa: E402

SHAPES = [("1 layer", dict()), ("2 layers bidirectional", dict(num_layers=2, bidirectional=True)),
          ("4 layers bidirectional", dict(num_layers=4, bidirectional=True))]


def best_microseconds(call, context, rounds, calls):
    with context():
        for _ in range(min(calls, 50)):
            call()
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(calls):
                call()
            best = min(best, (time.perf_counter() - start) / calls * 1e6)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{'model (T=1 B=1 I=H=8)':26s} {'caller':14s} {'no_grad us':>10s} "
          f"{'inference_mode us':>18s}")
    for label, kwargs in SHAPES:
        torch.manual_seed(0)
        reference = torch.nn.LSTM(8, 8, **kwargs)
        module = lstmop.nn.LSTM(8, 8, **kwargs)
        module.load_state_dict(reference.state_dict())
        x = torch.rand(1, 1, 8)
        weights = [w.detach() for w in module._flat_weights]
        layers = kwargs.get("num_layers", 1)
        bidirectional = kwargs.get("bidirectional", False)
        callers = [
            ("lstmop.nn.LSTM", lambda: module(x)),
            ("lstmop._lstm", lambda: torch.ops.lstmop._lstm(x, [], weights, True, layers, 0.0,
                                                             False, bidirectional)),
            ("torch.nn.LSTM", lambda: reference(x)),
        ]
        for name, call in callers:
            no_grad = best_microseconds(call, torch.no_grad, args.rounds, args.calls)
            inference = best_microseconds(call, torch.inference_mode, args.rounds, args.calls)
            print(f"{label:26s} {name:14s} {no_grad:10.2f} {inference:18.2f}")


if __name__ == "__main__":
    main()
