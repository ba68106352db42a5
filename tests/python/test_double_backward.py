"""Double backward: _lstm_backward is differentiable (contract v2).

With grad mode on and a differentiable argument requiring grad (any backward with
create_graph=True), _lstm_backward's results come from autograd through the forward written in
ATen operations (torch.ops.lstmop._lstm_aten, the "recomputation"); otherwise from the op's own
kernel. Checked here: the recomputation against torch.nn.LSTM (with projections too) and against
_lstm in every mode and dtype; first derivatives on the recomputation path against the kernel's;
gradgradcheck in float64 in every mode; second derivatives and a gradient-penalty training run
against torch.nn.LSTM's.
"""
import pytest
import torch
from torch.nn.utils.rnn import pack_sequence

import lstm_cases as lc
import lstmop

TIGHT = dict(rtol=1e-12, atol=1e-12)
# Second derivatives sum more terms (products of first-derivative chains, magnitudes up to
# ~300 here): the largest difference to torch's measured 3e-14; 1e-11 leaves a 300x margin.
SECOND = dict(rtol=1e-11, atol=1e-11)


def leaves(cfg, dtype=torch.float64, seed=0):
    """x, hx and params (all requiring grad) of a random problem."""
    module = lc.make_module(cfg, dtype, seed=seed)
    params = [p.detach().clone().requires_grad_() for p in lc.flat_params(module)]
    x, hx = lc.make_inputs(cfg, dtype)
    return x.requires_grad_(), [h.requires_grad_() for h in hx], params


def loss_weights(outputs, cfg, seed=7):
    """Random weights for a linear loss of (output, hy, cy); zero on invalid output rows (a
    constant 0 there, in torch's packed output they do not exist)."""
    g = torch.Generator().manual_seed(seed)
    weights = [torch.randn(t.shape, generator=g, dtype=torch.float64).to(t.dtype)
               for t in outputs]
    if cfg.variable_length:
        valid = lc.valid_mask(lc.batch_sizes_of(cfg.lengths), cfg.B).unsqueeze(1)
        weights[0] = weights[0] * valid.to(weights[0].dtype)
    return weights


def op_outputs(cfg, x, hx, params):
    return lc.run_op(cfg, x, hx, params, train=True)[:3]


def aten_outputs(cfg, x, hx, params):
    return torch.ops.lstmop._lstm_aten(x, hx, params, cfg.bias, cfg.L, cfg.bidirectional,
                                       **lc.op_kwargs(cfg))


# ------------------------------------------------------------------------------------------
# The recomputation (torch.ops.lstmop._lstm_aten)
# ------------------------------------------------------------------------------------------

SWEEP = lc.random_configs(seed=1515, count=24) + lc.wide_configs()[:2]


@pytest.mark.parametrize("cfg", SWEEP, ids=str)
def test_recomputation_equals_the_op_and_torch_float64(cfg):
    x, hx, params = leaves(cfg)
    with torch.no_grad():
        ours = aten_outputs(cfg, x, hx, params)
        op = op_outputs(cfg, x, hx, params)
        theirs = lc.run_torch(cfg, lc.make_module(cfg), x, hx)
    for a, b, c in zip(ours, op, theirs):
        assert a.shape == b.shape == c.shape
        torch.testing.assert_close(a, b, **TIGHT)
        torch.testing.assert_close(a, c, **TIGHT)
    if cfg.variable_length:
        invalid = ~lc.valid_mask(lc.batch_sizes_of(cfg.lengths), cfg.B)
        assert torch.count_nonzero(ours[0][invalid]) == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("cfg", lc.random_configs(seed=77, count=6) + lc.wide_configs()[3:],
                         ids=str)
def test_recomputation_follows_the_ops_dtype_rules(cfg, dtype):
    """float32 computes in float32; float16/bfloat16 in float32 on the 16-bit values, h rounded
    as the op stores it: the recomputation and the op then differ by float32 rounding (other
    summation orders: measured <= 1.9 float32 ulps of the largest value), which may move a
    16-bit result by one of its own ulps (measured <= 0.5 ulp of the largest value)."""
    x, hx, params = leaves(cfg, dtype)
    with torch.no_grad():
        ours = aten_outputs(cfg, x, hx, params)
        op = op_outputs(cfg, x, hx, params)
    eps = torch.finfo(dtype).eps
    for a, b in zip(ours, op):
        assert a.dtype == b.dtype == dtype and a.shape == b.shape
        scale = max(1.0, b.double().abs().max().item())
        assert lc.max_abs_diff(a, b) <= (8 * eps if dtype == torch.float32 else eps) * scale


PROJECTION_CASES = [
    lc.Config(T=4, B=3, I=3, H=5, L=2, bidirectional=True, bias=True, batch_first=False,
              with_hx=True),
    lc.Config(T=3, B=2, I=4, H=4, L=1, bidirectional=False, bias=False, batch_first=True,
              with_hx=False),
    lc.Config(T=4, B=3, I=2, H=5, L=2, bidirectional=True, bias=True, batch_first=False,
              with_hx=True, lengths=[4, 2, 1]),
]


def projected_problem(cfg, proj_size, seed=0):
    """torch.nn.LSTM(proj_size=P) in float64 and leaves for it: x, hx ([h0 (S, B, P),
    c0 (S, B, H)] or []), params (5 or 3 per slot, w_hr last)."""
    torch.manual_seed(seed)
    module = torch.nn.LSTM(cfg.I, cfg.H, num_layers=cfg.L, bias=cfg.bias,
                           batch_first=cfg.batch_first, bidirectional=cfg.bidirectional,
                           proj_size=proj_size).double()
    params = [p.detach().clone().requires_grad_() for p in lc.flat_params(module)]
    x, _ = lc.make_inputs(cfg)
    g = torch.Generator().manual_seed(3)
    hx = []
    if cfg.with_hx:
        hx = [torch.randn(cfg.S, cfg.B, proj_size, generator=g, dtype=torch.float64),
              torch.randn(cfg.S, cfg.B, cfg.H, generator=g, dtype=torch.float64)]
    return module, x.requires_grad_(), [h.requires_grad_() for h in hx], params


def torch_with_params(module, cfg, x, hx, params):
    """torch.nn.LSTM's results as functions of `params` (its parameters replaced by them)."""
    for name, p in zip(module._flat_weights_names, params):
        delattr(module, name)
        setattr(module, name, p)
    return lc.run_torch(cfg, module, x, hx)


@pytest.mark.parametrize("cfg", PROJECTION_CASES, ids=str)
def test_recomputation_with_projections_matches_torch(cfg):
    """First and second derivatives too: the projection's w_hr (P, H), h of width P."""
    proj_size = 2
    module, x, hx, params = projected_problem(cfg, proj_size)
    assert len(params) == cfg.S * (5 if cfg.bias else 3)
    ours = aten_outputs(cfg, x, hx, params)
    theirs = torch_with_params(module, cfg, x, hx, params)
    assert ours[0].shape[-1] == cfg.D * proj_size and ours[1].shape == (cfg.S, cfg.B, proj_size)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, **TIGHT)

    inputs = [x] + hx + params
    weights = loss_weights(ours, cfg)
    results = []
    for outputs in (ours, theirs):
        loss = sum((w * t).sum() for w, t in zip(weights, outputs))
        first = torch.autograd.grad(loss, inputs, create_graph=True)
        penalty = sum((g * g).sum() for g in first)
        second = torch.autograd.grad(penalty, inputs)
        results.append((first, second))
    for a, b in zip(results[0][0], results[1][0]):
        torch.testing.assert_close(a, b, **TIGHT)
    for a, b in zip(results[0][1], results[1][1]):
        torch.testing.assert_close(a, b, **SECOND)


@pytest.mark.parametrize("sizes", [(5, 0, 3), (5, 2, 0)], ids=["B0", "I0"])
def test_recomputation_of_empty_batches_and_inputs(sizes):
    """Ready for the contract's B = 0 and I = 0 (the core refuses them for now): empty results,
    or the input product of zero, and their first and second derivatives, as torch.nn.LSTM's."""
    cfg = lc.Config(T=sizes[0], B=sizes[1], I=sizes[2], H=4, L=2, bidirectional=True,
                    bias=True, batch_first=False, with_hx=False)
    module = lc.make_module(cfg)
    params = [p.detach().clone().requires_grad_() for p in lc.flat_params(module)]
    x = torch.randn(*sizes, dtype=torch.float64, requires_grad=True)
    ours = second_derivatives(cfg, lambda x, hx, p: aten_outputs(cfg, x, hx, p), x, [], params)
    theirs = second_derivatives(
        cfg, lambda x, hx, p: torch_with_params(module, cfg, x, hx, p), x, [], params)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, **SECOND)


def test_recomputation_names_bad_arguments():
    cfg = PROJECTION_CASES[0]
    _, x, hx, params = projected_problem(cfg, 2)
    with pytest.raises(RuntimeError, match=r"params must hold 4 \(or 5 with projections\)"):
        aten_outputs(cfg, x, hx, params[:-1])
    params[4] = torch.zeros(5, 4, dtype=torch.float64)  # w_hr must be (P, H) with P < H
    with pytest.raises(RuntimeError, match=r"params\[4\] \(w_hr\)"):
        aten_outputs(cfg, x, hx, params)


# ------------------------------------------------------------------------------------------
# _lstm_backward's two paths
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", SWEEP, ids=str)
def test_first_derivatives_on_the_recomputation_path_equal_the_kernels(cfg):
    """create_graph=True takes the recomputation, create_graph=False the kernel: the same
    gradients (float64, to rounding), dh0/dc0 included."""
    x, hx, params = leaves(cfg)
    inputs = [x] + hx + params
    outputs = op_outputs(cfg, x, hx, params)
    weights = loss_weights(outputs, cfg)
    kernel = torch.autograd.grad(outputs, inputs, weights, retain_graph=True)
    recomputed = torch.autograd.grad(outputs, inputs, weights, create_graph=True)
    assert all(g.requires_grad for g in recomputed)  # differentiable results
    for a, b in zip(recomputed, kernel):
        torch.testing.assert_close(a, b, **TIGHT)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_recomputation_path_in_other_dtypes(dtype):
    """Any dtype: the recomputation path's first derivatives are the kernel's to the dtype's
    rounding: both compute in float32 in other orders and round once (measured <= 1.9 float32
    ulps, <= 0.66 16-bit ulps of the largest gradient)."""
    cfg = lc.Config(T=4, B=3, I=3, H=4, L=2, bidirectional=True, bias=True, batch_first=True,
                    with_hx=True)
    x, hx, params = leaves(cfg, dtype)
    inputs = [x] + hx + params
    outputs = op_outputs(cfg, x, hx, params)
    weights = loss_weights(outputs, cfg)
    kernel = torch.autograd.grad(outputs, inputs, weights, retain_graph=True)
    recomputed = torch.autograd.grad(outputs, inputs, weights, create_graph=True)
    eps = torch.finfo(dtype).eps
    tolerance = 8 * eps if dtype == torch.float32 else 2 * eps
    for a, b in zip(recomputed, kernel):
        assert a.dtype == b.dtype == dtype
        assert lc.max_abs_diff(a, b) <= tolerance * max(1.0, b.double().abs().max().item())


def test_direct_call_with_empty_hx_returns_differentiable_initial_state_gradients():
    cfg = lc.Config(T=3, B=2, I=3, H=2, L=2, bidirectional=True, bias=False, batch_first=False,
                    with_hx=False, lengths=[3, 1])
    x, _, params = leaves(cfg)
    results = lc.run_op(cfg, x.detach(), [], [p.detach() for p in params], train=True)
    grads = [torch.randn(t.shape, dtype=torch.float64) for t in results[:3]]
    args = (x, [], params, *[t.detach() for t in results[3:]], cfg.bias, cfg.L, 0.0, True,
            cfg.bidirectional)
    kwargs = lc.op_kwargs(cfg)
    with torch.no_grad():
        plain = torch.ops.lstmop._lstm_backward(*grads, *args, **kwargs)
    differentiable = torch.ops.lstmop._lstm_backward(*grads, *args, **kwargs)
    flat = lambda r: [r[0]] + list(r[1]) + list(r[2])
    assert not any(t.requires_grad for t in flat(plain))
    assert all(t.requires_grad for t in flat(differentiable))
    assert [t.shape for t in differentiable[1]] == [(cfg.S, cfg.B, cfg.H)] * 2
    for a, b in zip(flat(differentiable), flat(plain)):
        torch.testing.assert_close(a, b, **TIGHT)


def test_unused_outputs_and_tied_weights():
    """Only output reaches the loss (undefined incoming gradients for hy, cy), and one tensor
    is passed for both directions' w_hh: every params position still gets its own gradient."""
    cfg = lc.Config(T=3, B=2, I=2, H=3, L=1, bidirectional=True, bias=True, batch_first=False,
                    with_hx=True)
    x, hx, params = leaves(cfg)
    params[5] = params[1]  # w_hh reverse is w_hh forward
    output = op_outputs(cfg, x, hx, params)[0]
    kernel = torch.autograd.grad(output.sum(), [x] + hx + params, retain_graph=True)
    recomputed = torch.autograd.grad(output.sum(), [x] + hx + params, create_graph=True)
    for a, b in zip(recomputed, kernel):
        torch.testing.assert_close(a, b, **TIGHT)


def test_bad_arguments_are_refused_alike_on_both_paths():
    from validation_support import Problem, backward, backward_args
    a = backward_args(Problem(dtype=torch.float64))
    a["grad_hy"] = a["grad_hy"][:2]
    messages = []
    for requires_grad in (False, True):
        b = dict(a, params=[p.detach().requires_grad_(requires_grad) for p in a["params"]])
        with pytest.raises(RuntimeError) as info:
            backward(b)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and messages[0].startswith("grad_hy")


# ------------------------------------------------------------------------------------------
# gradgradcheck and second derivatives against torch.nn.LSTM
# ------------------------------------------------------------------------------------------

GRADGRADCHECK_CASES = [
    lc.Config(T=3, B=2, I=2, H=2, L=1, bidirectional=False, bias=True, batch_first=False,
              with_hx=True),
    lc.Config(T=2, B=2, I=2, H=2, L=2, bidirectional=True, bias=True, batch_first=False,
              with_hx=True),
    lc.Config(T=3, B=2, I=3, H=2, L=1, bidirectional=True, bias=False, batch_first=True,
              with_hx=False),
    lc.Config(T=3, B=3, I=2, H=2, L=2, bidirectional=True, bias=True, batch_first=False,
              with_hx=True, lengths=[3, 2, 1]),
    lc.Config(T=3, B=2, I=2, H=2, L=1, bidirectional=True, bias=False, batch_first=False,
              with_hx=False, lengths=[3, 1]),
]


@pytest.mark.parametrize("cfg", GRADGRADCHECK_CASES, ids=str)
def test_gradgradcheck_float64(cfg):
    x, hx, params = leaves(cfg)
    inputs = [x] + hx + params
    n_hx = len(hx)

    def op(x, *rest):
        return op_outputs(cfg, x, list(rest[:n_hx]), list(rest[n_hx:]))

    assert torch.autograd.gradgradcheck(op, inputs, eps=1e-6, atol=1e-6, rtol=1e-5)


def second_derivatives(cfg, outputs_of, x, hx, params):
    """Gradient penalty ||d loss / d (x, hx, params)||^2 differentiated again."""
    inputs = [x] + hx + params
    outputs = outputs_of(x, hx, params)
    weights = loss_weights(outputs, cfg)
    loss = sum((w * t).sum() for w, t in zip(weights, outputs))
    first = torch.autograd.grad(loss, inputs, create_graph=True)
    penalty = sum((g * g).sum() for g in first)
    return list(first) + list(torch.autograd.grad(penalty, inputs))


@pytest.mark.parametrize("cfg", GRADGRADCHECK_CASES + lc.random_configs(seed=202, count=6),
                         ids=str)
def test_second_derivatives_match_torch(cfg):
    x, hx, params = leaves(cfg)
    ours = second_derivatives(cfg, lambda x, hx, p: op_outputs(cfg, x, hx, p), x, hx, params)
    module = lc.make_module(cfg)
    theirs = second_derivatives(
        cfg, lambda x, hx, p: torch_with_params(module, cfg, x, hx, p), x, hx, params)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, **SECOND)


# ------------------------------------------------------------------------------------------
# Through lstmop.nn.LSTM: gradient penalties train as with torch.nn.LSTM
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("form", ["batch_first", "packed_unsorted"])
def test_gradient_penalty_training_matches_torch(form):
    """Five SGD steps on loss + ||d loss / d input||^2 (a gradient penalty, as in WGAN-GP),
    with dropout between layers: the losses and final weights of lstmop.nn.LSTM and
    torch.nn.LSTM agree."""
    runs = []
    for module_class in (lstmop.nn.LSTM, torch.nn.LSTM):
        torch.manual_seed(0)
        lstm = module_class(3, 4, num_layers=2, bidirectional=True, dropout=0.25,
                            batch_first=True).double()
        head = torch.nn.Linear(8, 1).double()
        optimizer = torch.optim.SGD(list(lstm.parameters()) + list(head.parameters()), lr=0.05)
        g = torch.Generator().manual_seed(1)
        losses = []
        for step in range(5):
            pieces = [torch.randn(n, 3, generator=g, dtype=torch.float64).requires_grad_()
                      for n in (4, 2, 3)]
            torch.manual_seed(100 + step)  # the same dropout masks for both modules
            if form == "packed_unsorted":
                output = lstm(pack_sequence(pieces, enforce_sorted=False))[0].data
            else:
                output = lstm(torch.stack([p[:2] for p in pieces]))[0]
            loss = head(output).pow(2).mean()
            grads = torch.autograd.grad(loss, pieces, create_graph=True, allow_unused=True)
            penalty = sum((gr * gr).sum() for gr in grads if gr is not None)
            optimizer.zero_grad()
            (loss + penalty).backward()
            optimizer.step()
            losses.append((loss + penalty).item())
        runs.append((losses, [p.detach().clone() for p in lstm.parameters()]))
    (ours, our_weights), (theirs, their_weights) = runs
    assert ours[-1] < ours[0]
    for a, b in zip(ours, theirs):
        assert abs(a - b) <= 1e-10 * max(1.0, abs(b))
    for a, b in zip(our_weights, their_weights):
        torch.testing.assert_close(a, b, **SECOND)
