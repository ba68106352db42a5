"""torch.ops.lstmop._lstm against torch.nn.LSTM (outputs 0-2) and against the float64 Python
reimplementation of the contract (all ten outputs), over a randomised sweep of configurations:
fixed length, batch_first and variable length, with and without biases and hx, 1-3 layers,
one or two directions."""
import pytest
import torch

import lstm_cases as lc
import lstmop  # noqa: F401  (registers the ops)

SWEEP = lc.random_configs(seed=2024, count=48) + lc.wide_configs()

# float64: both implementations are exact to a few ulps of the accumulation; 1e-12 leaves
# room for sums of up to ~1e3 terms of magnitude ~1.
TIGHT = dict(rtol=1e-12, atol=1e-12)


def compare_with_torch(cfg, dtype):
    module = lc.make_module(cfg, dtype)
    params = lc.flat_params(module)
    x, hx = lc.make_inputs(cfg, dtype)
    with torch.no_grad():
        expected = lc.run_torch(cfg, module, x, hx)
        got_eval = lc.run_op(cfg, x, hx, params, train=False)
        got_train = lc.run_op(cfg, x, hx, params, train=True)
    return module, params, x, hx, expected, got_eval, got_train


@pytest.mark.parametrize("cfg", SWEEP, ids=str)
def test_float64_matches_torch_and_the_contract(cfg):
    module, params, x, hx, expected, got_eval, got_train = compare_with_torch(cfg, torch.float64)
    for got in (got_eval, got_train):
        for k in range(3):
            torch.testing.assert_close(got[k], expected[k], **TIGHT)
    reference = lc.reference_forward(cfg, x, hx, params)
    for k in range(10):
        torch.testing.assert_close(got_train[k], reference[k], **TIGHT)
    # train=False: no saved gates, h and c are hy and cy.
    for k in (3, 4, 5, 6, 9):
        assert got_eval[k].shape == (0,)
    assert torch.equal(got_eval[7], got_eval[1]) and torch.equal(got_eval[8], got_eval[2])
    # The same call, train or not, gives bitwise the same results.
    for k in range(3):
        assert torch.equal(got_eval[k], got_train[k])


# float32: the op must be as accurate as torch's own float32 LSTM. Both are measured against
# float64 torch; the bound is 4x torch's float32 error plus 4 float32 ulps of the largest value.
@pytest.mark.parametrize("cfg", SWEEP, ids=str)
def test_float32_as_accurate_as_torch(cfg):
    module, params, x, hx, expected32, got_eval, got_train = compare_with_torch(cfg, torch.float32)
    module64 = lc.make_module(cfg, torch.float64)
    x64, hx64 = lc.make_inputs(cfg, torch.float64)
    with torch.no_grad():
        exact = lc.run_torch(cfg, module64, x64, hx64)
    eps = torch.finfo(torch.float32).eps
    for k in range(3):
        torch_error = lc.max_abs_diff(expected32[k], exact[k])
        bound = 4 * torch_error + 4 * eps * max(1.0, exact[k].abs().max().item())
        for got in (got_eval, got_train):
            assert lc.max_abs_diff(got[k], exact[k]) <= bound, (k, torch_error)


def test_reverse_direction_ends_at_t0_and_saved_are_time_major():
    cfg = lc.Config(T=4, B=2, I=3, H=2, L=1, bidirectional=True, bias=True, batch_first=True,
                    with_hx=True)
    module = lc.make_module(cfg)
    x, hx = lc.make_inputs(cfg)
    out = lc.run_op(cfg, x, hx, lc.flat_params(module), train=True)
    output, hy, h = out[0], out[1], out[7]
    assert output.shape == (2, 4, 4) and h.shape == (2, 4, 2, 2)
    assert torch.equal(hy[0], h[0, 3]) and torch.equal(hy[1], h[1, 0])
    assert torch.equal(output[:, :, :2], h[0].transpose(0, 1))
    assert torch.equal(output[:, :, 2:], h[1].transpose(0, 1))


def test_non_contiguous_inputs_give_bitwise_the_same_results():
    cfg = lc.Config(T=5, B=3, I=4, H=3, L=2, bidirectional=True, bias=True, batch_first=False,
                    with_hx=True)
    module = lc.make_module(cfg, torch.float32)
    params = lc.flat_params(module)
    x, hx = lc.make_inputs(cfg, torch.float32)
    with torch.no_grad():
        contiguous = lc.run_op(cfg, x, hx, params, train=True)
        # Strided views of the same values: batch-major storage read as time-major, every
        # other column of wider tensors, transposed weights.
        x_view = x.transpose(0, 1).contiguous().transpose(0, 1)
        hx_view = [torch.cat([h, h], -1)[..., ::2] for h in hx]
        for h, v in zip(hx, hx_view):
            v.copy_(h)
        params_view = [p.t().contiguous().t() if p.dim() == 2 else
                       torch.stack([p, p], 1)[:, 0] for p in params]
        assert not x_view.is_contiguous() and not hx_view[0].is_contiguous()
        assert not params_view[0].is_contiguous() and not params_view[2].is_contiguous()
        strided = lc.run_op(cfg, x_view, hx_view, params_view, train=True)
    for a, b in zip(contiguous, strided):
        assert torch.equal(a, b)


def test_inputs_are_not_written():
    cfg = lc.Config(T=3, B=2, I=3, H=2, L=2, bidirectional=True, bias=True, batch_first=False,
                    with_hx=True, lengths=[3, 2])
    module = lc.make_module(cfg)
    params = [p.detach().clone() for p in lc.flat_params(module)]
    x, hx = lc.make_inputs(cfg)
    before = [t.clone() for t in [x] + hx + params]
    lc.run_op(cfg, x, hx, params, train=True)
    for a, b in zip(before, [x] + hx + params):
        assert torch.equal(a, b)


def test_deterministic_whatever_the_thread_count():
    cfg = lc.Config(T=5, B=4, I=6, H=5, L=2, bidirectional=True, bias=True, batch_first=False,
                    with_hx=True)
    module = lc.make_module(cfg, torch.float32)
    params = lc.flat_params(module)
    x, hx = lc.make_inputs(cfg, torch.float32)
    threads = torch.get_num_threads()
    try:
        runs = []
        for n in (1, 2, 3, 1):
            torch.set_num_threads(n)
            with torch.no_grad():
                runs.append(lc.run_op(cfg, x, hx, params, train=True))
    finally:
        torch.set_num_threads(threads)
    for run in runs[1:]:
        for a, b in zip(runs[0], run):
            assert torch.equal(a, b)


def test_invalid_rows_of_input_do_not_affect_results():
    cfg = lc.Config(T=4, B=3, I=3, H=2, L=2, bidirectional=True, bias=True, batch_first=False,
                    with_hx=True, lengths=[4, 2, 1])
    module = lc.make_module(cfg)
    params = lc.flat_params(module)
    x, hx = lc.make_inputs(cfg)
    mask = lc.valid_mask(lc.batch_sizes_of(cfg.lengths), cfg.B)
    garbage = x.clone()
    garbage[~mask] = float("nan")
    with torch.no_grad():
        clean = lc.run_op(cfg, x, hx, params, train=True)
        dirty = lc.run_op(cfg, garbage, hx, params, train=True)
    for a, b in zip(clean, dirty):
        assert torch.equal(a, b)


def test_empty_batch_sizes_means_fixed_length():
    cfg = lc.Config(T=3, B=2, I=3, H=2, L=1, bidirectional=False, bias=True, batch_first=False,
                    with_hx=False)
    module = lc.make_module(cfg)
    params = lc.flat_params(module)
    x, _ = lc.make_inputs(cfg)
    with torch.no_grad():
        fixed = torch.ops.lstmop._lstm(x, [], params, True, 1, 0.0, True, False)
        empty = torch.ops.lstmop._lstm(x, [], params, True, 1, 0.0, True, False,
                                       batch_sizes=torch.empty(0, dtype=torch.int64))
    for a, b in zip(fixed, empty):
        assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_dtypes_compute_in_float32(dtype):
    # Inputs rounded to `dtype`; the exact result of the rounded inputs is float64 torch.
    # Computing in float32 and storing in `dtype` leaves about one rounding of the result:
    # the bound is 4 ulps of `dtype` at the result's magnitude.
    for cfg in lc.random_configs(seed=7, count=8):
        module = lc.make_module(cfg, dtype)
        params = lc.flat_params(module)
        x, hx = lc.make_inputs(cfg, dtype)
        module64 = lc.make_module(cfg, torch.float64)
        with torch.no_grad():
            for p64, p in zip(lc.flat_params(module64), params):
                p64.copy_(p.double())
            exact = lc.run_torch(cfg, module64, x.double(), [h.double() for h in hx])
            got = lc.run_op(cfg, x, hx, params, train=True)
        eps = torch.finfo(dtype).eps
        for k in range(3):
            assert got[k].dtype == dtype
            bound = 4 * eps * max(1.0, exact[k].abs().max().item())
            assert lc.max_abs_diff(got[k], exact[k]) <= bound, (str(cfg), k)
