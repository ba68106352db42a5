"""Helpers of the Python bad-input suites (test_validation_*.py): a valid problem whose every
argument a test can break, storage digests (to prove no input is ever written), and the check
that a call raises exactly the expected exception class (never AssertionError or a crash) with a
message holding the argument's name and the expected and actual values.

The ops raise RuntimeError for every bad argument (docs/lstm.md, "Errors"); lstmop.nn.LSTM
raises the class torch.nn.LSTM raises for the same input (docs/nn.LSTM.md, "Errors")."""
import dataclasses
import hashlib
import re
import time

import pytest
import torch

import lstmop  # noqa: F401  (registers torch.ops.lstmop)


def digest(tensor):
    """sha256 of every byte of the tensor's storage (padding and gaps included), or None."""
    if not isinstance(tensor, torch.Tensor) or tensor.is_meta or tensor.layout != torch.strided:
        return None
    return hashlib.sha256(bytes(tensor.storage().untyped())).hexdigest()


def all_tensors(value):
    """Every tensor inside nested lists, tuples and dicts."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in all_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in all_tensors(v)]
    if dataclasses.is_dataclass(value):
        return all_tensors(dataclasses.asdict(value))
    return []


def digests(*values):
    return [digest(t) for v in values for t in all_tensors(v)]


def expect_error(call, contains, inputs=(), seconds=None, error=RuntimeError):
    """call() must raise exactly `error` (not a subclass: a ValueError-derived class where
    RuntimeError is expected fails) whose message contains every string of `contains`, leave
    every tensor of `inputs` byte for byte as it was, and (when given) return within `seconds`.
    Returns the exception."""
    before = digests(*inputs)
    start = time.monotonic()
    with pytest.raises(Exception) as info:
        call()
    elapsed = time.monotonic() - start
    message = str(info.value)
    assert type(info.value) is error, f"raised {type(info.value).__name__}, not " \
        f"{error.__name__}: {message}"
    for piece in contains:
        assert piece in message, f"message lacks {piece!r}: {message}"
    assert digests(*inputs) == before, "an input was written by a refused call"
    if seconds is not None:
        assert elapsed < seconds, f"refusing took {elapsed:.2f} s: {message}"
    return info.value


def shape(sizes):
    """The core's shape notation: [2, 3, 4]."""
    return "[" + ", ".join(str(s) for s in sizes) + "]"


@dataclasses.dataclass
class Problem:
    """T = 3, B = 2, I = 5, H = 3 (4H = 12), L = 2, bidirectional (4 slots), biases: 16 params;
    distinct sizes, so that a message's numbers say which is which."""
    T: int = 3
    B: int = 2
    I: int = 5
    H: int = 3
    L: int = 2
    bidirectional: bool = True
    bias: bool = True
    with_hx: bool = True
    batch_first: bool = False
    lengths: list = None  # variable length when given (sorted, lengths[0] == T)
    dtype: torch.dtype = torch.float32
    seed: int = 0

    @property
    def D(self):
        return 2 if self.bidirectional else 1

    @property
    def S(self):
        return self.D * self.L

    def args(self):
        """The forward's arguments as a dict (fresh tensors)."""
        g = torch.Generator().manual_seed(self.seed)
        rand = lambda *s: (torch.rand(*s, generator=g, dtype=torch.float64) * 2 - 1).to(self.dtype)
        if self.lengths is not None:
            x = rand(self.T * self.B, self.I)
            batch_sizes = torch.tensor([sum(1 for n in self.lengths if n > t) for t in range(self.T)],
                                       dtype=torch.int64)
        else:
            x = rand(self.B, self.T, self.I) if self.batch_first else rand(self.T, self.B, self.I)
            batch_sizes = None
        hx = [rand(self.S, self.B, self.H), rand(self.S, self.B, self.H)] if self.with_hx else []
        params = []
        for layer in range(self.L):
            in_size = self.I if layer == 0 else self.D * self.H
            for _ in range(self.D):
                params += [rand(4 * self.H, in_size) * 0.5, rand(4 * self.H, self.H) * 0.5]
                if self.bias:
                    params += [rand(4 * self.H) * 0.5, rand(4 * self.H) * 0.5]
        return dict(input=x, hx=hx, params=params, has_biases=self.bias, num_layers=self.L,
                    dropout=0.0, train=True, bidirectional=self.bidirectional,
                    batch_first=self.batch_first, batch_sizes=batch_sizes)


def forward(a):
    return torch.ops.lstmop._lstm(a["input"], a["hx"], a["params"], a["has_biases"],
                                  a["num_layers"], a["dropout"], a["train"], a["bidirectional"],
                                  batch_first=a["batch_first"], batch_sizes=a["batch_sizes"])


def backward_args(problem):
    """A valid backward call: the forward's arguments, random gradients and the saved tensors
    3..9 of a train=True forward."""
    a = problem.args()
    out = forward(a)
    g = torch.Generator().manual_seed(problem.seed + 1)
    a["grad_y"] = torch.rand(out[0].shape, generator=g).to(problem.dtype)
    a["grad_hy"] = torch.rand(out[1].shape, generator=g).to(problem.dtype)
    a["grad_cy"] = torch.rand(out[2].shape, generator=g).to(problem.dtype)
    a["saved"] = list(out[3:10])
    return a


SAVED_NAMES = ["i", "j", "f", "o", "h", "c", "tanhc"]


def backward(a):
    s = a["saved"]
    return torch.ops.lstmop._lstm_backward(
        a["grad_y"], a["grad_hy"], a["grad_cy"], a["input"], a["hx"], a["params"], s[0], s[1],
        s[2], s[3], s[4], s[5], s[6], a["has_biases"], a["num_layers"], a["dropout"], a["train"],
        a["bidirectional"], batch_first=a["batch_first"], batch_sizes=a["batch_sizes"])


def on_meta(a):
    """The same arguments as meta tensors (batch_sizes stays on the CPU)."""
    out = {}
    for k, v in a.items():
        if isinstance(v, torch.Tensor) and k != "batch_sizes":
            out[k] = v.to("meta")
        elif isinstance(v, list):
            out[k] = [t.to("meta") for t in v]
        else:
            out[k] = v
    return out


def requiring_grad(a):
    """The same arguments with params requiring grad (the call goes through the Autograd kernel)."""
    out = dict(a)
    out["params"] = [p.detach().clone().requires_grad_(True) for p in a["params"]]
    return out


def argument_pattern(name):
    """A regex matching a message that starts with the argument's name."""
    return re.compile(r"^" + re.escape(name) + r"\b")
