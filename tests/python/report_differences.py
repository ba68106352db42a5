"""Prints the largest differences between lstmop and torch.nn.LSTM over the test sweeps
(the configurations of test_op_forward.py, test_op_backward.py and test_module.py).

    PYTHONPATH=python /usr/bin/python3 tests/python/report_differences.py
"""
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import lstm_cases as lc  # noqa: E402
import test_module  # noqa: E402
import test_op_backward  # noqa: E402
import test_op_forward  # noqa: E402


def worst(rows):
    return max(rows, key=lambda r: r[0]) if rows else (0.0, "-")


def main():
    table = {}

    def note(key, value, cfg):
        table.setdefault(key, []).append((value, str(cfg)))

    for cfg in test_op_forward.SWEEP:
        for dtype in (torch.float64, torch.float32):
            name = str(dtype).replace("torch.", "")
            _, params, x, hx, expected, got_eval, got_train = \
                test_op_forward.compare_with_torch(cfg, dtype)
            for k, label in enumerate(("output", "hy", "cy")):
                note(f"op forward {name} {label} vs torch {name}",
                     lc.max_abs_diff(got_train[k], expected[k]), cfg)
            if dtype == torch.float64:
                reference = lc.reference_forward(cfg, x, hx, params)
                note("op forward float64 saved i..tanhc vs contract reference",
                     max(lc.max_abs_diff(got_train[k], reference[k]) for k in range(3, 10)), cfg)
    for cfg in test_op_backward.SWEEP:
        for dtype in (torch.float64, torch.float32):
            name = str(dtype).replace("torch.", "")
            ours, theirs = test_op_backward.gradients(cfg, dtype)
            note(f"op gradients {name} vs torch {name} (dx, dhx, dparams)",
                 max(lc.max_abs_diff(a, b) for a, b in zip(ours, theirs)), cfg)
    for case in test_module.SWEEP:
        for dtype in (torch.float64, torch.float32):
            name = str(dtype).replace("torch.", "")
            ours = test_module.results_and_gradients(test_module.lstmop.nn.LSTM, case, dtype)
            theirs = test_module.results_and_gradients(torch.nn.LSTM, case, dtype)
            note(f"nn.LSTM {name} outputs vs torch {name}",
                 max(lc.max_abs_diff(a, b) for a, b in zip(ours[0], theirs[0])), case)
            note(f"nn.LSTM {name} gradients vs torch {name}",
                 max(lc.max_abs_diff(a, b) for a, b in zip(ours[1], theirs[1])), case)

    for key, rows in table.items():
        value, where = worst(rows)
        print(f"{key:62s} {len(rows):3d} configs  max |diff| {value:.3e}  ({where})")


if __name__ == "__main__":
    main()
