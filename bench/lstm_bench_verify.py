"""--verify: the C++ peers compute the same model as torch.nn.LSTM.

For a few small problems, torch.nn.LSTM in float64 computes the forward (with random h0, c0)
and the gradients of x, h0, c0 and every parameter for a random output gradient. The peer gets
the same data as float32 files (bench_case.h, --verify-dir), computes forward + backward twice
(the second pass must not see the first: diff weights that accumulate would show here), and
every result must match within a float32 tolerance. A wrong gate order, weight transpose or
bias would be off by O(1). V4 has projections (proj_size): the peers that run no projections
answer "unsupported" there, which is no failure.
"""
import pathlib
import subprocess

import numpy as np
import torch

from lstm_bench_problems import Problem

PROBLEMS = [
    Problem("V1", 7, 3, 5, 4),
    Problem("V2", 6, 5, 3, 8, layers=2, bidirectional=True, seed=2),
    Problem("V3", 4, 2, 9, 6, layers=3, bidirectional=False, seed=3),
    Problem("V4", 5, 3, 4, 7, layers=2, bidirectional=True, seed=4, proj=3),
]


def _write(path, tensor):
    np.ascontiguousarray(tensor.detach().to(torch.float32).numpy()).tofile(path)


def _read(path):
    return torch.from_numpy(np.fromfile(path, dtype=np.float32)).double()


def reference(problem):
    """Random data, rounded to float32 (what the peer reads), and torch.nn.LSTM's forward and
    gradients on it in float64."""
    p = problem
    gen = torch.Generator().manual_seed(p.seed)

    def draw(shape, lo, hi):
        values = torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo
        return values.float().double()

    module = torch.nn.LSTM(p.I, p.H, p.layers, bidirectional=p.bidirectional,
                           proj_size=p.proj).double()
    with torch.no_grad():
        for w in module._flat_weights:
            w.copy_(draw(w.shape, -0.6, 0.6))
    slots = p.layers * p.directions
    x = draw((p.T, p.B, p.I), -1, 1).requires_grad_()
    h0 = draw((slots, p.B, p.hidden_width), -0.5, 0.5).requires_grad_()
    c0 = draw((slots, p.B, p.H), -0.5, 0.5).requires_grad_()
    y, (hy, cy) = module(x, (h0, c0))
    gy = draw(y.shape, -1, 1)
    params = list(module._flat_weights)
    grads = torch.autograd.grad(y, [x, h0, c0] + params, gy)
    return {"x": x, "h0": h0, "c0": c0, "params": torch.cat([w.reshape(-1) for w in params]),
            "gy": gy, "y": y, "hy": hy, "cy": cy, "dx": grads[0], "dh0": grads[1],
            "dc0": grads[2], "dparams": torch.cat([g.reshape(-1) for g in grads[3:]])}


def verify_peer(name, binary, problem, out_dir, prefix):
    """Returns (failure strings, worst error / scale); no failures = matches torch.nn.LSTM.
    A peer that cannot compute the problem: ([], "unsupported: ...")."""
    ref = reference(problem)
    folder = pathlib.Path(out_dir) / f"{name}_{problem.name}"
    folder.mkdir(parents=True, exist_ok=True)
    for key in ("x", "h0", "c0", "params", "gy"):
        _write(folder / f"{key}.bin", ref[key])
    args = [binary] + problem.peer_args() + ["--mode", "train", "--verify-dir", str(folder)]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode == 3 and run.stdout.startswith("unsupported:"):
        return [], run.stdout.strip()
    if run.returncode != 0 or not run.stdout.startswith("verified"):
        return [f"{name} {problem.name}: {' '.join(args)} -> rc {run.returncode}: "
                f"{run.stdout.strip()} {run.stderr.strip()}"], None
    failures, worst = [], 0.0
    for key in ("y", "hy", "cy", "dx", "dh0", "dc0", "dparams"):
        expected = ref[key].detach().reshape(-1)
        got = _read(folder / f"{prefix}_{key}.bin")
        if got.numel() != expected.numel():
            failures.append(f"{name} {problem.name} {key}: {got.numel()} values, "
                            f"expected {expected.numel()}")
            continue
        scale = max(1.0, float(expected.abs().max()))
        error = float((got - expected).abs().max())
        worst = max(worst, error / scale)
        # float32 with sums over at most T*B*(I+H) ~ 100 terms: errors ~1e-6 * scale.
        if not error <= 2e-5 * scale:
            failures.append(f"{name} {problem.name} {key}: max |error| {error:.3g} "
                            f"(scale {scale:.3g})")
    return failures, worst


def verify(peers, out_dir, log):
    """peers: [(name, binary, output prefix)]. Returns the number of failures."""
    failures = []
    for name, binary, prefix in peers:
        for problem in PROBLEMS:
            found, worst = verify_peer(name, binary, problem, out_dir, prefix)
            if isinstance(worst, str):
                log.write(f"verify {name} {problem.name} ({problem.describe()}): {worst}\n")
                continue
            log.write(f"verify {name} {problem.name} ({problem.describe()}): "
                      f"{'ok' if not found else 'FAILED'}, max error / scale "
                      f"{worst if worst is None else f'{worst:.2g}'} (limit 2e-5)\n")
            failures += found
    for f in failures:
        log.write(f"  {f}\n")
    return len(failures)
