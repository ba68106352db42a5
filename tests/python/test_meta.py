"""Both ops run on meta tensors (shape inference only) in every mode, with the shapes of the
CPU results; autograd works on meta tensors too."""
import itertools

import pytest
import torch

import lstm_cases as lc
import lstmop  # noqa: F401

MODES = list(itertools.product(
    [False, True],                     # train
    [False, True],                     # bidirectional
    ["time_major", "batch_first", "variable_length"],
    [False, True],                     # bias
    [False, True],                     # hx given
))


def config(bidirectional, mode, bias, with_hx):
    lengths = [4, 3, 1] if mode == "variable_length" else None
    return lc.Config(T=4, B=3, I=5, H=2, L=2, bidirectional=bidirectional, bias=bias,
                     batch_first=mode == "batch_first", with_hx=with_hx, lengths=lengths)


def to_meta(tensors):
    return [t.to("meta") for t in tensors]


@pytest.mark.parametrize("train, bidirectional, mode, bias, with_hx", MODES)
def test_forward_meta_shapes_equal_cpu_shapes(train, bidirectional, mode, bias, with_hx):
    cfg = config(bidirectional, mode, bias, with_hx)
    params = [p.detach() for p in lc.flat_params(lc.make_module(cfg))]
    x, hx = lc.make_inputs(cfg)
    cpu = lc.run_op(cfg, x, hx, params, train)
    # batch_sizes stays on the CPU (host data), everything else is meta.
    meta = lc.run_op(cfg, x.to("meta"), to_meta(hx), to_meta(params), train)
    assert len(meta) == 10
    for m, c in zip(meta, cpu):
        assert m.is_meta and m.shape == c.shape and m.dtype == c.dtype
    S, T, B, H = cfg.S, cfg.T, cfg.B, cfg.H
    expected_output = {"time_major": (T, B, cfg.D * H), "batch_first": (B, T, cfg.D * H),
                       "variable_length": (T * B, cfg.D * H)}[mode]
    assert meta[0].shape == expected_output
    assert meta[1].shape == meta[2].shape == (S, B, H)
    saved = (S, T, B, H) if train else (0,)
    for k in (3, 4, 5, 6, 9):
        assert meta[k].shape == saved
    for k in (7, 8):
        assert meta[k].shape == ((S, T, B, H) if train else (S, B, H))


@pytest.mark.parametrize("bidirectional, mode, bias, with_hx",
                         list(itertools.product([False, True],
                                                ["time_major", "batch_first", "variable_length"],
                                                [False, True], [False, True])))
def test_backward_meta_shapes_equal_cpu_shapes(bidirectional, mode, bias, with_hx):
    cfg = config(bidirectional, mode, bias, with_hx)
    params = [p.detach() for p in lc.flat_params(lc.make_module(cfg))]
    x, hx = lc.make_inputs(cfg)
    results = lc.run_op(cfg, x, hx, params, train=True)
    grads = [torch.ones_like(t) for t in results[:3]]

    def backward(grads, x, hx, params, saved):
        return torch.ops.lstmop._lstm_backward(*grads, x, hx, params, *saved, cfg.bias, cfg.L,
                                               0.0, True, cfg.bidirectional, **lc.op_kwargs(cfg))

    cpu = backward(grads, x, hx, params, results[3:])
    meta = backward(to_meta(grads), x.to("meta"), to_meta(hx), to_meta(params),
                    to_meta(results[3:]))
    assert meta[0].is_meta and meta[0].shape == cpu[0].shape == x.shape
    assert [t.shape for t in meta[1]] == [t.shape for t in cpu[1]] == [(cfg.S, cfg.B, cfg.H)] * 2
    assert [t.shape for t in meta[2]] == [t.shape for t in cpu[2]] == [p.shape for p in params]
    assert all(t.is_meta for t in meta[1] + meta[2])


def test_meta_batch_sizes_give_the_length_only():
    cfg = config(True, "variable_length", True, False)
    params = to_meta(p.detach() for p in lc.flat_params(lc.make_module(cfg)))
    x, _ = lc.make_inputs(cfg)
    meta = torch.ops.lstmop._lstm(x.to("meta"), [], params, True, cfg.L, 0.0, True, True,
                                  batch_sizes=lc.batch_sizes_of(cfg.lengths).to("meta"))
    assert meta[0].shape == (cfg.T * cfg.B, 2 * cfg.H)
    assert meta[3].shape == (cfg.S, cfg.T, cfg.B, cfg.H)


def test_autograd_on_meta_tensors():
    cfg = config(True, "batch_first", True, True)
    params = [p.detach().to("meta").requires_grad_()
              for p in lc.flat_params(lc.make_module(cfg))]
    x, hx = lc.make_inputs(cfg)
    x = x.to("meta").requires_grad_()
    hx = [h.to("meta").requires_grad_() for h in hx]
    output, hy, cy = lc.run_op(cfg, x, hx, params, train=True)[:3]
    grads = torch.autograd.grad(output.sum() + hy.sum() + cy.sum(), [x] + hx + params)
    for g, leaf in zip(grads, [x] + hx + params):
        assert g.is_meta and g.shape == leaf.shape


def test_meta_shape_errors_name_the_argument():
    x = torch.empty(5, 2, 3, device="meta")
    params = [torch.empty(16, 3, device="meta"), torch.empty(16, 5, device="meta")]
    with pytest.raises(RuntimeError, match=r"params\[1\]"):
        torch.ops.lstmop._lstm(x, [], params, False, 1, 0.0, False, False)


def test_module_on_meta_device():
    lstm = lstmop.nn.LSTM(3, 4, num_layers=2, bidirectional=True, device="meta")
    output, (hn, cn) = lstm(torch.empty(6, 2, 3, device="meta"))
    assert output.is_meta and output.shape == (6, 2, 8)
    assert hn.shape == cn.shape == (4, 2, 4)


@pytest.mark.parametrize("mode", ["time_major", "batch_first", "packed"])
@pytest.mark.parametrize("dropout_training", [False, True])
def test_lstm_op_meta_shapes_equal_cpu_shapes(mode, dropout_training):
    """torch.ops.lstmop.lstm (the module's op) on meta tensors: the CPU call's shapes, in the
    one-call and the layer-by-layer (dropout) forms; batch_sizes stays on the CPU."""
    cfg = config(True, "batch_first" if mode == "batch_first" else "time_major", True, True)
    params = [p.detach() for p in lc.flat_params(lc.make_module(cfg))]
    x, hx = lc.make_inputs(cfg)
    batch_sizes = None
    if mode == "packed":
        batch_sizes = torch.tensor([3, 3, 2, 1])
        x = x.reshape(-1, cfg.I)[:int(batch_sizes.sum())]
    args = (cfg.bias, cfg.L, 0.5, dropout_training, True)
    kwargs = dict(batch_first=cfg.batch_first, batch_sizes=batch_sizes)
    cpu = torch.ops.lstmop.lstm(x, hx, params, *args, **kwargs)
    meta = torch.ops.lstmop.lstm(x.to("meta"), to_meta(hx), to_meta(params), *args, **kwargs)
    for m, c in zip(meta, cpu):
        assert m.is_meta and m.shape == c.shape and m.dtype == c.dtype
