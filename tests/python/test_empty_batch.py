"""Empty batches (B = 0) and input_size = 0 through the op and lstmop.nn.LSTM, as torch.nn.LSTM
accepts them (its test_RNN_input_size_zero, and zero-batch inputs): the same output and state
shapes, a backward that works, zero parameter gradients for an empty batch, torch's results for
input_size = 0."""
import pytest
import torch

import lstmop


def pair(input_size, hidden, **kwargs):
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(input_size, hidden, **kwargs)
    ours = lstmop.nn.LSTM(input_size, hidden, **kwargs)
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def run(module, x, hx):
    x = x.clone().requires_grad_()
    hx = None if hx is None else tuple(h.clone().requires_grad_() for h in hx)
    y, (h, c) = module(x, hx)
    (y.sum() + h.sum() + c.sum()).backward()
    return x, hx, (y, h, c)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_hx", [False, True])
def test_empty_batch_like_torch(dtype, bidirectional, batch_first, with_hx):
    ours, theirs = pair(3, 5, num_layers=2, bidirectional=bidirectional, batch_first=batch_first)
    ours, theirs = ours.to(dtype), theirs.to(dtype)
    x = torch.zeros((0, 4, 3) if batch_first else (4, 0, 3), dtype=dtype)
    slots = 2 * (2 if bidirectional else 1)
    hx = (torch.zeros(slots, 0, 5, dtype=dtype),) * 2 if with_hx else None
    ox, ohx, (oy, oh, oc) = run(ours, x, hx)
    tx, thx, (ty, th, tc) = run(theirs, x, hx)
    assert oy.shape == ty.shape and oh.shape == th.shape and oc.shape == tc.shape
    assert ox.grad.shape == tx.grad.shape
    if with_hx:
        assert ohx[0].grad.shape == thx[0].grad.shape
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        assert p.grad is not None, name
        assert p.grad.shape == q.grad.shape, name
        assert torch.count_nonzero(p.grad) == 0, name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch", [1, 5])
def test_input_size_zero_like_torch(dtype, batch):
    ours, theirs = pair(0, 6, num_layers=2, bidirectional=True)
    ours, theirs = ours.to(dtype), theirs.to(dtype)
    x = torch.zeros(4, batch, 0, dtype=dtype)
    hx = (torch.randn(4, batch, 6, dtype=dtype), torch.randn(4, batch, 6, dtype=dtype))
    ox, ohx, ours_out = run(ours, x, hx)
    tx, thx, theirs_out = run(theirs, x, hx)
    tol = dict(rtol=0, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=2e-5)
    for a, b in zip(ours_out, theirs_out):
        torch.testing.assert_close(a, b, **tol)
    assert ox.grad.shape == (4, batch, 0)
    torch.testing.assert_close(ohx[0].grad, thx[0].grad, **tol)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **tol, msg=name)


def test_op_and_meta_kernel_with_an_empty_batch():
    m = lstmop.nn.LSTM(3, 4, bidirectional=True)
    params = list(m._flat_weights)
    x = torch.zeros(5, 0, 3)
    result = torch.ops.lstmop._lstm(x, [], params, True, 1, 0.0, True, True)
    assert result[0].shape == (5, 0, 8) and result[1].shape == (2, 0, 4)
    assert result[3].shape == (2, 5, 0, 4)
    meta = torch.ops.lstmop._lstm(x.to("meta"), [], [p.detach().to("meta") for p in params],
                                  True, 1, 0.0, True, True)
    assert [t.shape for t in meta] == [t.shape for t in result]
    grads = lstmop.lstm_backward(torch.ones(5, 0, 8), None, None, x, [], params, *result[3:],
                                 True, 1, 0.0, True, True)
    assert grads[0].shape == x.shape
    assert all(torch.count_nonzero(g) == 0 for g in grads[2])


def test_gradcheck_with_input_size_zero():
    torch.manual_seed(1)
    m = lstmop.nn.LSTM(0, 3).double()
    x = torch.zeros(3, 2, 0, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(1, 2, 3, dtype=torch.float64, requires_grad=True)
    c0 = torch.randn(1, 2, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda h, c: m(x, (h, c))[0], (h0, c0))
