"""Gradients of torch.ops.lstmop._lstm (through its autograd registration) against
torch.nn.LSTM's, over a randomised sweep; _lstm_backward called directly equals autograd;
undefined incoming gradients are zeros; gradcheck in float64 on the op itself."""
import pytest
import torch

import lstm_cases as lc
import lstmop

SWEEP = lc.random_configs(seed=4048, count=36) + lc.wide_configs()
TIGHT = dict(rtol=1e-12, atol=1e-12)


def gradients(cfg, dtype, seed=3):
    """Gradients of a random linear function of (output, hy, cy) w.r.t. x, hx and every param,
    through the op and through torch.nn.LSTM. Returns (ours, torch's) lists of tensors."""
    module = lc.make_module(cfg, dtype)
    params = lc.flat_params(module)
    x, hx = lc.make_inputs(cfg, dtype)
    x.requires_grad_()
    for h in hx:
        h.requires_grad_()
    leaves = [x] + hx + params
    g = torch.Generator().manual_seed(seed)

    ours = lc.run_op(cfg, x, hx, params, train=True)[:3]
    weights = [torch.randn(t.shape, generator=g, dtype=torch.float64).to(dtype) for t in ours]
    if cfg.variable_length:  # invalid rows of output are constant 0: no gradient to compare
        weights[0] = weights[0] * lc.valid_mask(lc.batch_sizes_of(cfg.lengths), cfg.B
                                                ).unsqueeze(1).to(dtype)
    loss = sum((w * t).sum() for w, t in zip(weights, ours))
    ours_grads = torch.autograd.grad(loss, leaves)

    theirs = lc.run_torch(cfg, module, x, hx)
    loss = sum((w * t).sum() for w, t in zip(weights, theirs))
    theirs_grads = torch.autograd.grad(loss, leaves)
    return ours_grads, theirs_grads


@pytest.mark.parametrize("cfg", SWEEP, ids=str)
def test_float64_gradients_match_torch(cfg):
    ours, theirs = gradients(cfg, torch.float64)
    assert len(ours) == len(theirs) == 1 + (2 if cfg.with_hx else 0) + \
        cfg.S * (4 if cfg.bias else 2)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, **TIGHT)


@pytest.mark.parametrize("cfg", SWEEP, ids=str)
def test_float32_gradients_as_accurate_as_torch(cfg):
    ours, theirs = gradients(cfg, torch.float32)
    _, exact = gradients(cfg, torch.float64)
    eps = torch.finfo(torch.float32).eps
    for a, b, e in zip(ours, theirs, exact):
        torch_error = lc.max_abs_diff(b, e)
        bound = 4 * torch_error + 4 * eps * max(1.0, e.abs().max().item())
        assert lc.max_abs_diff(a, e) <= bound, torch_error


@pytest.mark.parametrize("cfg", lc.random_configs(seed=99, count=9), ids=str)
def test_direct_backward_equals_autograd(cfg):
    module = lc.make_module(cfg)
    params = [p.detach().requires_grad_() for p in lc.flat_params(module)]
    x, hx = lc.make_inputs(cfg)
    x.requires_grad_()
    for h in hx:
        h.requires_grad_()
    results = lc.run_op(cfg, x, hx, params, train=True)
    g = torch.Generator().manual_seed(5)
    grads = [torch.randn(t.shape, generator=g, dtype=torch.float64) for t in results[:3]]
    expected = torch.autograd.grad(results[:3], [x] + hx + params, grads)

    dx, dhx, dparams = torch.ops.lstmop._lstm_backward(
        *grads, x.detach(), [h.detach() for h in hx], [p.detach() for p in params],
        *[t.detach() for t in results[3:]], cfg.bias, cfg.L, 0.0, True, cfg.bidirectional,
        **lc.op_kwargs(cfg))
    assert len(dhx) == 2 and len(dparams) == len(params)
    assert dx.shape == x.shape
    assert all(d.shape == (cfg.S, cfg.B, cfg.H) for d in dhx)
    assert all(d.shape == p.shape for d, p in zip(dparams, params))
    got = [dx] + (dhx if hx else []) + list(dparams)
    for a, b in zip(got, expected):
        assert torch.equal(a, b)  # autograd calls the very same op
    if cfg.variable_length:
        invalid = ~lc.valid_mask(lc.batch_sizes_of(cfg.lengths), cfg.B)
        assert torch.count_nonzero(dx[invalid]).item() == 0
    if cfg.bias:
        for k in range(cfg.S):
            assert torch.equal(dparams[4 * k + 2], dparams[4 * k + 3])


@pytest.mark.parametrize("used", [(0,), (1,), (2,), (0, 2), (1, 2)])
def test_undefined_incoming_gradients_are_zeros(used):
    """Only some of output, hy, cy reach the loss: autograd passes undefined gradients for the
    others, which must act as zeros (checked against explicit zeros and against torch)."""
    cfg = lc.Config(T=4, B=3, I=3, H=2, L=2, bidirectional=True, bias=True, batch_first=False,
                    with_hx=True)
    module = lc.make_module(cfg)
    params = lc.flat_params(module)
    x, hx = lc.make_inputs(cfg)
    x.requires_grad_()
    leaves = [x] + params
    results = lc.run_op(cfg, x, hx, params, train=True)
    loss = sum(results[k].sum() for k in used)
    got = torch.autograd.grad(loss, leaves)

    explicit = [torch.ones_like(results[k]) if k in used else torch.zeros_like(results[k])
                for k in range(3)]
    dx, _, dparams = torch.ops.lstmop._lstm_backward(
        *explicit, x.detach(), hx, [p.detach() for p in params],
        *[t.detach() for t in results[3:]], True, cfg.L, 0.0, True, True)
    for a, b in zip(got, [dx] + list(dparams)):
        assert torch.equal(a, b)

    theirs = lc.run_torch(cfg, module, x, hx)
    expected = torch.autograd.grad(sum(theirs[k].sum() for k in used), leaves)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, **TIGHT)


def test_lstm_backward_none_means_zeros():
    cfg = lc.Config(T=3, B=2, I=2, H=3, L=1, bidirectional=False, bias=False, batch_first=True,
                    with_hx=False)
    module = lc.make_module(cfg)
    params = [p.detach() for p in lc.flat_params(module)]
    x, _ = lc.make_inputs(cfg)
    results = lstmop.lstm(x, [], params, False, 1, 0.0, True, False, batch_first=True)
    grad_y = torch.randn_like(results[0])
    with_none = lstmop.lstm_backward(grad_y, None, None, x, [], params, *results[3:], False, 1,
                                     0.0, True, False, batch_first=True)
    with_zeros = lstmop.lstm_backward(grad_y, torch.zeros_like(results[1]),
                                      torch.zeros_like(results[2]), x, [], params,
                                      *results[3:], False, 1, 0.0, True, False,
                                      batch_first=True)
    assert torch.equal(with_none[0], with_zeros[0])
    for a, b in zip(with_none[1] + with_none[2], with_zeros[1] + with_zeros[2]):
        assert torch.equal(a, b)


GRADCHECK_CASES = [
    lc.Config(T=3, B=2, I=2, H=2, L=1, bidirectional=False, bias=True, batch_first=False,
              with_hx=True),
    lc.Config(T=2, B=2, I=2, H=2, L=2, bidirectional=True, bias=True, batch_first=False,
              with_hx=True),
    lc.Config(T=3, B=2, I=3, H=2, L=1, bidirectional=True, bias=False, batch_first=True,
              with_hx=False),
    lc.Config(T=3, B=3, I=2, H=2, L=2, bidirectional=True, bias=True, batch_first=False,
              with_hx=True, lengths=[3, 2, 1]),
]


@pytest.mark.parametrize("cfg", GRADCHECK_CASES, ids=str)
def test_gradcheck_float64(cfg):
    module = lc.make_module(cfg)
    params = [p.detach().clone().requires_grad_() for p in lc.flat_params(module)]
    x, hx = lc.make_inputs(cfg)
    inputs = [x.requires_grad_()] + [h.requires_grad_() for h in hx] + params
    n_hx = len(hx)

    # Variable length: the invalid rows of x do not affect the result, so both the numerical
    # and the analytical gradient must be 0 there.
    def op(x, *rest):
        hx, params = list(rest[:n_hx]), list(rest[n_hx:])
        return lc.run_op(cfg, x, hx, params, train=True)[:3]

    assert torch.autograd.gradcheck(op, inputs, eps=1e-6, atol=1e-7, rtol=1e-6)


def test_only_outputs_0_to_2_are_differentiable():
    cfg = GRADCHECK_CASES[1]
    module = lc.make_module(cfg)
    x, hx = lc.make_inputs(cfg)
    results = lc.run_op(cfg, x, hx, lc.flat_params(module), train=True)
    assert [r.requires_grad for r in results] == [True] * 3 + [False] * 7
    with torch.no_grad():
        results = lc.run_op(cfg, x, hx, lc.flat_params(module), train=True)
    assert not any(r.requires_grad for r in results)
