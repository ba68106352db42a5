"""float32 on bfloat16 units by choice (lstmop.set_fp32_precision, contract v2): "ieee" by
default; "bf16" rounds the products' operands to bfloat16 where the CPU has AVX512-BF16 (results
float32, near IEEE's, gradients too), and is IEEE float32 bit for bit elsewhere; bad values are
refused with torch's class for a bad value."""
import pytest
import torch

import lstmop


def has_bf16_units():
    flags = open("/proc/cpuinfo").read()
    return " avx512_bf16" in flags and " avx512bw" in flags


def run(m, x):
    x = x.clone().requires_grad_()
    y, (h, c) = m(x)
    (y.sum() + h.sum()).backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad(set_to_none=True)
    return [y.detach(), h.detach(), c.detach(), x.grad] + grads


def test_default_is_ieee_and_bad_values_are_refused():
    assert lstmop.get_fp32_precision() == "ieee"
    with pytest.raises(ValueError, match='"tf32"'):
        lstmop.set_fp32_precision("tf32")
    with pytest.raises(TypeError, match="precision"):
        lstmop.set_fp32_precision(None)
    assert lstmop.get_fp32_precision() == "ieee"


def test_bf16_precision_rounds_the_products_operands():
    torch.manual_seed(2)
    m = lstmop.nn.LSTM(24, 40, num_layers=2, bidirectional=True)
    x = torch.randn(12, 5, 24)
    ieee = run(m, x)
    lstmop.set_fp32_precision("bf16")
    try:
        assert lstmop.get_fp32_precision() == "bf16"
        fast = run(m, x)
    finally:
        lstmop.set_fp32_precision("ieee")
    assert all(t.dtype == torch.float32 for t in fast)
    same = all(torch.equal(a, b) for a, b in zip(ieee, fast))
    if not has_bf16_units():
        print("no AVX512-BF16: fp32_precision bf16 stays IEEE float32")
        assert same
        return
    assert not same
    # bfloat16 operands (2^-8 relative): outputs and gradients within ~1e-2 of IEEE float32's.
    for a, b in zip(ieee, fast):
        scale = max(1.0, a.abs().max().item())
        assert (a - b).abs().max().item() <= 3e-2 * scale
