"""LSTM with projections (proj_size, "LSTMP"): the ops and lstmop.nn.LSTM(proj_size=P) against
torch.nn.LSTM(proj_size=P).

Checked here: every one of PyTorch's own nn.LSTM module test inputs
(torch.testing._internal.common_modules.module_inputs_torch_nn_LSTM, with and without
proj_size) agrees with torch.nn.LSTM, outputs and gradients (float64 to 1e-9, float32 to 2e-5);
a sweep of every input form (batched, batch_first, unbatched, PackedSequence sorted and
unsorted) forward and backward, weight_hr's gradient included; the op's ten outputs against an
independent float64 reimplementation; gradcheck and gradgradcheck in float64; state_dict both
ways; dropout between layers; 16-bit dtypes; meta shapes; TorchScript (script, trace) with
proj_size.
"""
import io
import json
import random
import subprocess
import sys

import pytest
import torch
from torch.nn.utils.rnn import pack_sequence

import lstm_cases as lc
import lstmop

TIGHT = dict(rtol=1e-12, atol=1e-12)
FORMS = ["batched", "batch_first", "unbatched", "packed_sorted", "packed_unsorted"]


# ------------------------------------------------------------------------------------------
# PyTorch's own module test inputs
# ------------------------------------------------------------------------------------------

# torch's test helpers import `expecttest` (not a Debian package) and patch TorchScript and
# global flags when imported: the samples' constructor arguments and input shapes are read in a
# child process, with a stand-in for expecttest where it is missing.
_READ_MODULE_INPUTS = """
import json, sys, types, unittest
stub = types.ModuleType("expecttest")
stub.TestCase, stub.ACCEPT = unittest.TestCase, False
sys.modules.setdefault("expecttest", stub)
sys.argv = sys.argv[:1]
import torch
from torch.testing._internal.common_modules import module_inputs_torch_nn_LSTM
def shapes(a):
    return [shapes(x) for x in a] if isinstance(a, (tuple, list)) else list(a.shape)
samples = module_inputs_torch_nn_LSTM(None, "cpu", torch.float64, requires_grad=True,
                                      training=True)
print(json.dumps([[list(s.constructor_input.args), s.constructor_input.kwargs,
                   shapes(s.forward_input.args)] for s in samples]))
"""


def torch_module_inputs(dtype, seed=0):
    """(constructor args, kwargs, forward args) of every sample of torch's
    module_inputs_torch_nn_LSTM, the inputs made as torch makes them (make_tensor), leaves
    requiring grad."""
    child = subprocess.run([sys.executable, "-c", _READ_MODULE_INPUTS], check=True,
                           capture_output=True, text=True)
    torch.manual_seed(seed)
    make = lambda shape: torch.testing.make_tensor(shape, dtype=dtype, device="cpu",
                                                   requires_grad=True)
    samples = []
    for args, kwargs, shapes in json.loads(child.stdout):
        forward_args = [make(shapes[0])]  # the input, then hx (h_0, c_0) if given
        if len(shapes) > 1:
            forward_args.append(tuple(make(s) for s in shapes[1]))
        samples.append((args, kwargs, forward_args))
    return samples


def module_results_and_gradients(module, forward_args):
    """Outputs (output, h_n, c_n) and the gradients of a random linear loss of them with respect
    to every input tensor and every parameter."""
    args = [a if isinstance(a, torch.Tensor) else tuple(a) for a in forward_args]
    inputs = [args[0]] + (list(args[1]) if len(args) > 1 else [])
    output, (hn, cn) = module(*args)
    results = [output, hn, cn]
    g = torch.Generator().manual_seed(5)
    weights = [torch.randn(r.shape, generator=g, dtype=torch.float64).to(r.dtype)
               for r in results]
    loss = sum((w * r).sum() for w, r in zip(weights, results))
    grads = torch.autograd.grad(loss, inputs + list(module.parameters()))
    return [r.detach() for r in results] + list(grads)


@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-9), (torch.float32, 2e-5)],
                         ids=["float64", "float32"])
def test_every_torch_module_input_agrees_with_torch(dtype, tolerance):
    samples = torch_module_inputs(dtype)
    assert len(samples) == 32 and sum(k["proj_size"] > 0 for _, k, _ in samples) == 16
    for args, kwargs, forward_args in samples:
        torch.manual_seed(0)
        ours = lstmop.nn.LSTM(*args, **kwargs).to(dtype)
        theirs = torch.nn.LSTM(*args, **kwargs).to(dtype)
        theirs.load_state_dict(ours.state_dict())
        ours_results = module_results_and_gradients(ours, forward_args)
        theirs_results = module_results_and_gradients(theirs, forward_args)
        assert len(ours_results) == len(theirs_results)
        for a, b in zip(ours_results, theirs_results):
            assert a.shape == b.shape and a.dtype == b.dtype, kwargs
            torch.testing.assert_close(a, b, rtol=tolerance, atol=tolerance, msg=str(kwargs))


# ------------------------------------------------------------------------------------------
# The module in every input form
# ------------------------------------------------------------------------------------------

def random_cases(seed, count):
    rng = random.Random(seed)
    cases = []
    for k in range(count):
        form = FORMS[k % len(FORMS)]
        T, B = rng.randint(1, 5), 1 if form == "unbatched" else rng.randint(1, 4)
        H = rng.randint(2, 7)
        lengths = [rng.randint(1, T) for _ in range(B)]
        lengths[rng.randrange(B)] = T
        if form == "packed_sorted":
            lengths.sort(reverse=True)
        cases.append(dict(form=form, T=T, B=B, I=rng.randint(1, 6), H=H,
                          P=rng.randint(1, H - 1), L=rng.randint(1, 3),
                          bidirectional=rng.random() < 0.5, bias=rng.random() < 0.7,
                          with_hx=rng.random() < 0.6, lengths=lengths))
    return cases


def case_id(c):
    return (f"{c['form']} T{c['T']} B{c['B']} I{c['I']} H{c['H']} P{c['P']} L{c['L']} "
            f"D{2 if c['bidirectional'] else 1} bias={int(c['bias'])} hx={int(c['with_hx'])}")


def make_case_inputs(c, dtype, seed=11):
    """Leaf tensors: the input pieces and hx ([h0 (.., P), c0 (.., H)]), all requiring grad."""
    g = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)
    S = (2 if c["bidirectional"] else 1) * c["L"]
    if c["form"].startswith("packed"):
        pieces = [rand(n, c["I"]) for n in c["lengths"]]
    elif c["form"] == "unbatched":
        pieces = [rand(c["T"], c["I"])]
    elif c["form"] == "batch_first":
        pieces = [rand(c["B"], c["T"], c["I"])]
    else:
        pieces = [rand(c["T"], c["B"], c["I"])]
    hx = []
    if c["with_hx"]:
        batch = () if c["form"] == "unbatched" else (c["B"],)
        hx = [rand(S, *batch, c["P"]), rand(S, *batch, c["H"])]
    for t in pieces + hx:
        t.requires_grad_()
    return pieces, hx


def case_results_and_gradients(module_class, c, dtype, seed=0, **extra):
    torch.manual_seed(seed)
    module = module_class(c["I"], c["H"], num_layers=c["L"], bias=c["bias"],
                          batch_first=c["form"] == "batch_first",
                          bidirectional=c["bidirectional"], proj_size=c["P"], **extra).to(dtype)
    pieces, hx = make_case_inputs(c, dtype)
    hx_arg = tuple(hx) if hx else None
    if c["form"].startswith("packed"):
        packed = pack_sequence(pieces, enforce_sorted=c["form"] == "packed_sorted")
        output, (hn, cn) = module(packed, hx_arg)
        output = output.data
    else:
        output, (hn, cn) = module(pieces[0], hx_arg)
    results = [output, hn, cn]
    g = torch.Generator().manual_seed(5)
    weights = [torch.randn(r.shape, generator=g, dtype=torch.float64).to(dtype) for r in results]
    loss = sum((w * r).sum() for w, r in zip(weights, results))
    grads = torch.autograd.grad(loss, pieces + hx + list(module.parameters()))
    return [r.detach() for r in results], list(grads), [n for n, _ in module.named_parameters()]


SWEEP = random_cases(seed=2718, count=30) + [
    dict(form="packed_unsorted", T=4, B=18, I=21, H=37, P=19, L=2, bidirectional=True,
         bias=True, with_hx=True, lengths=[1 + (5 * b) % 4 for b in range(18)]),
    dict(form="batch_first", T=3, B=9, I=40, H=33, P=16, L=2, bidirectional=True, bias=True,
         with_hx=True, lengths=None),
]


@pytest.mark.parametrize("case", SWEEP, ids=case_id)
def test_float64_forward_and_gradients_match_torch(case):
    ours = case_results_and_gradients(lstmop.nn.LSTM, case, torch.float64)
    theirs = case_results_and_gradients(torch.nn.LSTM, case, torch.float64)
    assert ours[2] == theirs[2] and sum("weight_hr" in n for n in ours[2]) == (
        (2 if case["bidirectional"] else 1) * case["L"])
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, **TIGHT)


@pytest.mark.parametrize("case", SWEEP[::2], ids=case_id)
def test_float32_forward_and_gradients_as_accurate_as_torch(case):
    ours = case_results_and_gradients(lstmop.nn.LSTM, case, torch.float32)
    theirs = case_results_and_gradients(torch.nn.LSTM, case, torch.float32)
    exact = case_results_and_gradients(torch.nn.LSTM, case, torch.float64)
    eps = torch.finfo(torch.float32).eps
    for a, b, e in zip(ours[0] + ours[1], theirs[0] + theirs[1], exact[0] + exact[1]):
        bound = 4 * lc.max_abs_diff(b, e) + 4 * eps * max(1.0, e.abs().max().item())
        assert lc.max_abs_diff(a, e) <= bound


def test_parameters_state_dict_and_repr_are_torchs():
    torch.manual_seed(3)
    ours = lstmop.nn.LSTM(5, 7, num_layers=2, bidirectional=True, proj_size=3)
    torch.manual_seed(3)
    theirs = torch.nn.LSTM(5, 7, num_layers=2, bidirectional=True, proj_size=3)
    assert repr(ours) == repr(theirs) and "proj_size=3" in repr(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.weight_hr_l1_reverse.shape == (3, 7) and ours.weight_hh_l0.shape == (28, 3)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert torch.equal(p, q), name
    x = torch.randn(4, 2, 5)
    fresh = torch.nn.LSTM(5, 7, num_layers=2, bidirectional=True, proj_size=3)
    ours.load_state_dict(fresh.state_dict())
    torch.testing.assert_close(ours(x)[0], fresh(x)[0])
    fresh.load_state_dict(lstmop.nn.LSTM(5, 7, num_layers=2, bidirectional=True,
                                         proj_size=3).state_dict())
    ours.load_state_dict(fresh.state_dict())
    torch.testing.assert_close(ours(x)[1][0], fresh(x)[1][0])


@pytest.mark.parametrize("proj_size", [-1, 4, 5])
def test_bad_proj_size_is_torchs_error(proj_size):
    with pytest.raises(ValueError, match="proj_size"):
        torch.nn.LSTM(3, 4, proj_size=proj_size)
    with pytest.raises(ValueError, match="proj_size"):
        lstmop.nn.LSTM(3, 4, proj_size=proj_size)


def test_dropout_between_layers_draws_torchs_masks():
    torch.manual_seed(1)
    ours = lstmop.nn.LSTM(4, 6, num_layers=3, dropout=0.5, proj_size=2)
    theirs = torch.nn.LSTM(4, 6, num_layers=3, dropout=0.5, proj_size=2)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(7, 2, 4, requires_grad=True)
    results = []
    for module in (ours, theirs):
        torch.manual_seed(2)
        output, (hn, cn) = module(x)
        grads = torch.autograd.grad(output.sum() + hn.sum(), [x] + list(module.parameters()))
        results.append([output, hn, cn] + list(grads))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("dtype, tolerance", [(torch.float16, 1e-2), (torch.bfloat16, 5e-2)])
def test_sixteen_bit_dtypes(dtype, tolerance):
    torch.manual_seed(0)
    lstm = lstmop.nn.LSTM(4, 9, num_layers=2, bidirectional=True, proj_size=5)
    x = torch.randn(6, 3, 4)
    exact, (exact_hn, exact_cn) = lstm.double()(x.double())
    output, (hn, cn) = lstm.to(dtype)(x.to(dtype))
    assert output.dtype == hn.dtype == cn.dtype == dtype
    assert output.shape == (6, 3, 10) and hn.shape == (4, 3, 5) and cn.shape == (4, 3, 9)
    for a, e in ((output, exact), (hn, exact_hn), (cn, exact_cn)):
        assert lc.max_abs_diff(a, e) < tolerance


# ------------------------------------------------------------------------------------------
# The ops
# ------------------------------------------------------------------------------------------

OP_CASES = [
    lc.Config(T=4, B=3, I=2, H=5, L=2, bidirectional=True, bias=True, batch_first=False,
              with_hx=True, proj_size=2),
    lc.Config(T=3, B=2, I=3, H=4, L=1, bidirectional=False, bias=False, batch_first=True,
              with_hx=False, proj_size=3),
    lc.Config(T=4, B=3, I=2, H=6, L=2, bidirectional=True, bias=True, batch_first=False,
              with_hx=True, lengths=[4, 2, 1], proj_size=1),
]


@pytest.mark.parametrize("cfg", OP_CASES, ids=str)
def test_op_outputs_equal_an_independent_reimplementation(cfg):
    params = [p.detach() for p in lc.flat_params(lc.make_module(cfg))]
    assert len(params) == cfg.S * (5 if cfg.bias else 3)
    x, hx = lc.make_inputs(cfg)
    ours = lc.run_op(cfg, x, hx, params, train=True)
    expected = lc.reference_forward(cfg, x, hx, params)
    for a, b in zip(ours, expected):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, **TIGHT)


@pytest.mark.parametrize("cfg", OP_CASES, ids=str)
def test_gradcheck_and_gradgradcheck(cfg):
    params = [p.detach().clone().requires_grad_() for p in lc.flat_params(lc.make_module(cfg))]
    x, hx = lc.make_inputs(cfg)
    inputs = [x.requires_grad_()] + [h.requires_grad_() for h in hx] + params
    n_hx = len(hx)

    def outputs(x, *rest):
        return lc.run_op(cfg, x, list(rest[:n_hx]), list(rest[n_hx:]), train=True)[:3]

    assert torch.autograd.gradcheck(outputs, inputs)
    assert torch.autograd.gradgradcheck(outputs, inputs)


@pytest.mark.parametrize("cfg", OP_CASES, ids=str)
def test_meta_shapes_equal_cpu_shapes(cfg):
    params = [p.detach() for p in lc.flat_params(lc.make_module(cfg))]
    x, hx = lc.make_inputs(cfg)
    for train in (False, True):
        cpu = lc.run_op(cfg, x, hx, params, train)
        meta = lc.run_op(cfg, x.to("meta"), [h.to("meta") for h in hx],
                         [p.to("meta") for p in params], train)
        for m, c in zip(meta, cpu):
            assert m.is_meta and m.shape == c.shape
        assert cpu[1].shape == (cfg.S, cfg.B, cfg.proj_size) and cpu[2].shape[-1] == cfg.H
        assert cpu[0].shape[-1] == cfg.D * cfg.proj_size
    grads = torch.ops.lstmop._lstm_backward(
        torch.ones_like(cpu[0]), None, None, x, hx, params, *cpu[3:], cfg.bias, cfg.L, 0.0, True,
        cfg.bidirectional, **lc.op_kwargs(cfg))
    assert [tuple(g.shape) for g in grads[2]] == [tuple(p.shape) for p in params]
    assert grads[1][0].shape == (cfg.S, cfg.B, cfg.proj_size)


@pytest.mark.parametrize("cfg", OP_CASES, ids=str)
def test_functional_backward_reads_none_as_zeros_of_the_projected_shapes(cfg):
    """lstmop.lstm_backward builds the zeros for None: grad_y (.., D*P), grad_hy (S, B, P),
    grad_cy (S, B, H)."""
    params = [p.detach() for p in lc.flat_params(lc.make_module(cfg))]
    x, hx = lc.make_inputs(cfg)
    out = lstmop.lstm(x, hx, params, cfg.bias, cfg.L, 0.0, True, cfg.bidirectional,
                      **lc.op_kwargs(cfg))
    saved = out[3:]
    args = (x, hx, params, *saved, cfg.bias, cfg.L, 0.0, True, cfg.bidirectional)
    for which in range(3):
        grads = [torch.randn_like(t) for t in out[:3]]
        with_none = list(grads)
        with_none[which] = None
        grads[which] = torch.zeros_like(out[which])
        got = lstmop.lstm_backward(*with_none, *args, **lc.op_kwargs(cfg))
        want = lstmop.lstm_backward(*grads, *args, **lc.op_kwargs(cfg))
        for a, b in zip([got[0]] + got[1] + got[2], [want[0]] + want[1] + want[2]):
            assert torch.equal(a, b)


def test_op_errors_name_the_argument():
    """Bad arguments of a projected call: RuntimeError naming the argument, with the expected
    and the actual value (tests/validation/test_bad_projections.cpp has every case)."""
    cfg = OP_CASES[0]  # H = 5, P = 2, 2 layers, bidirectional, biases: 20 params
    params = [p.detach() for p in lc.flat_params(lc.make_module(cfg))]
    x, hx = lc.make_inputs(cfg)
    cases = [
        (params[:-1], hx, ["params must hold", "20", "19"]),
        (params[:4] + [torch.zeros(5, 5, dtype=torch.float64)] + params[5:], hx,
         ["params[4] (weight_hr, layer 0, forward)", "proj_size", "[5, 5]"]),
        (params, [torch.zeros(4, 3, 5, dtype=torch.float64), hx[1]],
         ["hx[0]", "[4, 3, 2]", "[4, 3, 5]"]),
    ]
    for bad_params, bad_hx, pieces in cases:
        with pytest.raises(RuntimeError) as error:
            lc.run_op(cfg, x, bad_hx, bad_params, train=False)
        assert type(error.value) is RuntimeError
        for piece in pieces:
            assert piece in str(error.value), str(error.value)
    lstm = lstmop.nn.LSTM(2, 5, num_layers=2, bidirectional=True, proj_size=2).double()
    with pytest.raises(RuntimeError):  # torch's own check: h_0 must be proj_size wide
        lstm(x, (torch.zeros(4, 3, 5, dtype=torch.float64), hx[1]))


def test_module_gradient_penalty_matches_torch():
    """Double backward through the module with projections, weight_hr included."""
    torch.manual_seed(0)
    ours = lstmop.nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2).double()
    theirs = torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2).double()
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(6, 2, 3, dtype=torch.float64, requires_grad=True)
    for module in (ours, theirs):
        output, _ = module(x)
        loss = output.pow(2).mean()
        (dx,) = torch.autograd.grad(loss, x, create_graph=True)
        (loss + dx.pow(2).sum()).backward()
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-11, atol=1e-11, msg=name)


@pytest.mark.parametrize("sizes", [(5, 0, 3), (5, 2, 0)], ids=["B0", "I0"])
def test_empty_batch_and_zero_input_size(sizes):
    torch.manual_seed(0)
    ours = lstmop.nn.LSTM(sizes[2], 6, num_layers=2, bidirectional=True, proj_size=2).double()
    theirs = torch.nn.LSTM(sizes[2], 6, num_layers=2, bidirectional=True, proj_size=2).double()
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(*sizes, dtype=torch.float64, requires_grad=True)
    results = []
    for module in (ours, theirs):
        output, (hn, cn) = module(x)
        loss = output.sum() + hn.sum() + cn.sum()
        results.append([output, hn, cn] + list(torch.autograd.grad(
            loss, [x] + list(module.parameters()), allow_unused=True)))
    assert results[0][0].shape == (5, sizes[1], 4) and results[0][1].shape == (4, sizes[1], 2)
    for a, b in zip(*results):
        b = torch.zeros_like(a) if b is None else b   # torch: no gradient reaches an empty x
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, **TIGHT)


# ------------------------------------------------------------------------------------------
# TorchScript
# ------------------------------------------------------------------------------------------

class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = lstmop.nn.LSTM(4, 8, num_layers=2, dropout=0.1, batch_first=True,
                                   bidirectional=True, proj_size=3)
        self.head = torch.nn.Linear(6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _ = self.lstm(x)
        return self.head(output)


def test_script_trace_save_load_and_train():
    torch.manual_seed(0)
    model = Tagger().eval()
    x = torch.randn(2, 5, 4)
    scripted = torch.jit.script(model)
    traced = torch.jit.trace(model, x)
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    for compiled in (scripted, traced, loaded):
        assert torch.equal(compiled(x), model(x))
    loaded.train()
    loaded(x).pow(2).mean().backward()
    assert loaded.lstm.weight_hr_l1_reverse.grad is not None
    assert loaded.lstm.weight_hr_l1_reverse.grad.abs().sum() > 0
