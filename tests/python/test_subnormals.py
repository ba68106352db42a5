"""Subnormal numbers through the op (contract v2): float32 and bfloat16 flush them inside lstmop
by default, float64 and lstmop.set_flush_denormal(False) keep IEEE subnormals, and the caller's
own setting (torch.set_flush_denormal, the thread's MXCSR) is the same after a call and does not
change lstmop's results."""
import pytest
import torch

import lstmop


def problem(dtype, scale):
    torch.manual_seed(3)
    m = lstmop.nn.LSTM(6, 5, num_layers=2, bidirectional=True, bias=False).to(dtype)
    x = (torch.rand(7, 3, 6, dtype=torch.float64) * scale).to(dtype)
    return m, x


def forward_backward(m, x, grad_scale=1e-38):
    x = x.clone().requires_grad_()
    y, (h, c) = m(x)
    (y * grad_scale).sum().backward()  # 1e-38: subnormal upstream gradients in float32
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad(set_to_none=True)  # the next backward assigns, no arithmetic of torch
    return [y.detach(), h.detach(), c.detach(), x.grad] + grads


def subnormal_outputs(tensors):
    return sum(int(((t != 0) & (t.abs() < torch.finfo(t.dtype).tiny)).sum()) for t in tensors)


@pytest.mark.parametrize("dtype,scale", [(torch.float32, 1e-39), (torch.bfloat16, 1e-39),
                                         (torch.float64, 1e-310)])
def test_flush_by_default_ieee_on_request_and_for_float64(dtype, scale):
    m, x = problem(dtype, scale)
    zero = torch.zeros_like(x)
    assert lstmop.get_flush_denormal()
    flushed = forward_backward(m, x)
    as_zero = all(torch.equal(a, b) for a, b in zip(flushed, forward_backward(m, zero)))
    assert as_zero == (dtype != torch.float64)
    lstmop.set_flush_denormal(False)
    try:
        assert not lstmop.get_flush_denormal()
        ieee = forward_backward(m, x)
    finally:
        lstmop.set_flush_denormal(True)
    assert not all(torch.equal(a, b) for a, b in zip(ieee, forward_backward(m, zero)))
    if dtype != torch.bfloat16:
        assert subnormal_outputs(ieee) > 0


def test_callers_setting_unchanged_and_irrelevant():
    # Data whose lstmop results differ with and without flushing (subnormal input), and normal
    # upstream gradients (torch computes those itself, in the caller's environment).
    m, x = problem(torch.float32, 1e-39)
    reference = forward_backward(m, x, 1.0)
    lstmop.set_flush_denormal(False)
    reference_ieee = forward_backward(m, x, 1.0)
    lstmop.set_flush_denormal(True)
    assert not all(torch.equal(a, b) for a, b in zip(reference, reference_ieee))
    tiny = torch.tensor([1e-39])
    for caller_flushes in (True, False):
        torch.set_flush_denormal(caller_flushes)
        try:
            results = forward_backward(m, x, 1.0)
            lstmop.set_flush_denormal(False)
            results_ieee = forward_backward(m, x, 1.0)
            lstmop.set_flush_denormal(True)
            # The caller's FTZ/DAZ: torch's own arithmetic still flushes exactly when it asked.
            assert bool((tiny * 1.0 == 0).item()) == caller_flushes
        finally:
            torch.set_flush_denormal(False)
            lstmop.set_flush_denormal(True)
        assert all(torch.equal(a, b) for a, b in zip(results, reference))
        assert all(torch.equal(a, b) for a, b in zip(results_ieee, reference_ieee))


def test_setting_must_be_a_bool():
    with pytest.raises(TypeError, match="enabled"):
        lstmop.set_flush_denormal(1)
