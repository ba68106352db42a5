"""Bad input through lstmop.nn.LSTM, class by class: the constructor and forward raise
RuntimeError or ValueError (never AssertionError, IndexError or a crash) that names what is wrong,
and no input tensor (input, hx, PackedSequence data, parameters) is ever written.

Module under test: LSTM(input_size=5, hidden_size=3, num_layers=2, bidirectional=True) unless a
test says otherwise; input (T=4, B=2, 5), hx (4, 2, 3) each."""
import math

import pytest
import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

import lstmop
from validation_support import digests, expect_error


def module(**kwargs):
    torch.manual_seed(0)
    args = dict(input_size=5, hidden_size=3, num_layers=2, bidirectional=True)
    args.update(kwargs)
    return lstmop.nn.LSTM(**args)


def inputs():
    g = torch.Generator().manual_seed(1)
    return (torch.randn(4, 2, 5, generator=g),
            (torch.randn(4, 2, 3, generator=g), torch.randn(4, 2, 3, generator=g)))


def rejected(m, x, hx, contains, seconds=None):
    return expect_error(lambda: m(x, hx), contains, (x, hx, list(m.parameters())), seconds)


# ------------------------------------------------------------------------------------------
# Constructor
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dropout", [-0.1, 1.5, math.nan])
def test_dropout_outside_zero_one(dropout):
    expect_error(lambda: module(dropout=dropout), ["dropout"])


@pytest.mark.parametrize("num_layers", [0, -1])
def test_num_layers_not_positive(num_layers):
    expect_error(lambda: module(num_layers=num_layers), ["num_layers"])


def test_hidden_size_zero():
    expect_error(lambda: module(hidden_size=0), ["hidden_size"])


def test_proj_size_is_not_implemented():
    # NotImplementedError is a RuntimeError.
    expect_error(lambda: module(proj_size=2), ["proj_size"])


# ------------------------------------------------------------------------------------------
# forward: input
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sizes", [(20,), (1, 4, 2, 5)])
def test_input_rank(sizes):
    m = module()
    rejected(m, torch.zeros(sizes), None, ["2D or 3D", f"{len(sizes)}D"])


def test_input_feature_size():
    m = module()
    rejected(m, torch.zeros(4, 2, 6), None, ["input.size(-1)", "5", "6"])


def test_input_dtype_other_than_the_parameters():
    m = module()
    rejected(m, torch.zeros(4, 2, 5, dtype=torch.float64), None, ["float64", "float32"])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
def test_input_dtype_not_floating(dtype):
    m = module()
    rejected(m, torch.zeros(4, 2, 5, dtype=dtype), None, ["input", str(dtype).replace("torch.", "")])


@pytest.mark.parametrize("sizes,contains", [((0, 2, 5), ["T >= 1"]), ((4, 0, 5), ["B >= 1"])])
def test_empty_time_or_batch(sizes, contains):
    rejected(module(), torch.zeros(sizes), None, ["input"] + contains)


def test_expanded_input_of_2_to_40_steps_is_refused_at_once():
    t = 2 ** 40
    m = module(num_layers=1, bidirectional=False)
    rejected(m, torch.zeros(1, 1, 5).expand(t, 1, 5), None, ["input", f"T = {t}"], seconds=2.0)
    m = module(num_layers=1, bidirectional=False, batch_first=True)
    rejected(m, torch.zeros(1, 1, 5).expand(t, 1, 5), None, ["input", f"B = {t}"], seconds=2.0)


# ------------------------------------------------------------------------------------------
# forward: hx
# ------------------------------------------------------------------------------------------

def test_hx_of_the_wrong_shape():
    m = module()
    x, (h, c) = inputs()
    rejected(m, x, (torch.zeros(2, 2, 3), c), ["hidden[0]", "(4, 2, 3)", "[2, 2, 3]"])
    rejected(m, x, (h, torch.zeros(4, 3, 3)), ["hidden[1]", "(4, 2, 3)", "[4, 3, 3]"])
    rejected(m, x, (h[0], c[0]), ["3-D", "2-D"])


def test_hx_of_the_wrong_dtype():
    m = module()
    x, (h, c) = inputs()
    rejected(m, x, (h.double(), c), ["hx[0]", "float32", "float64"])
    rejected(m, x, (h, c.long()), ["hx[1]", "float32", "int64"])


@pytest.mark.parametrize("count", [1, 3])
def test_hx_of_one_or_three_tensors(count):
    m = module()
    x, (h, c) = inputs()
    rejected(m, x, (h, c, h)[:count], ["hx"])


# ------------------------------------------------------------------------------------------
# forward: PackedSequence (B = 3 sequences of lengths 4, 2, 1: batch_sizes [3, 2, 1, 1])
# ------------------------------------------------------------------------------------------

def packed(batch_sizes, rows=None):
    batch_sizes = torch.as_tensor(batch_sizes)
    rows = int(batch_sizes.sum()) if rows is None else rows
    return PackedSequence(torch.randn(rows, 5, generator=torch.Generator().manual_seed(2)),
                          batch_sizes)


def test_packed_sequence_valid_reference_case_runs():
    x = pack_padded_sequence(torch.randn(4, 3, 5), [4, 2, 1])
    out, _ = module()(x)
    assert torch.equal(out.batch_sizes, torch.tensor([3, 2, 1, 1]))


@pytest.mark.parametrize("batch_sizes,rows,contains", [
    ([3, 0, 1], None, ["batch_sizes", "[1, 3]", "0"]),          # zero
    ([3, -1, 1], 4, ["batch_sizes", "-1"]),                     # negative
    ([1, 2, 1], None, ["batch_sizes"]),                         # increasing
    ([3, 2, 1], 7, ["batch_sizes"]),                            # rows do not match
    ([], 0, ["batch_sizes"]),                                   # empty
])
def test_packed_sequence_with_bad_batch_sizes(batch_sizes, rows, contains):
    x = packed(batch_sizes, rows)
    m = module()
    expect_error(lambda: m(x), contains, (x.data, x.batch_sizes, list(m.parameters())))


def test_packed_sequence_with_float_or_2d_batch_sizes():
    m = module()
    for bs in (torch.tensor([3.0, 2.0, 1.0]), torch.tensor([[3, 2, 1]])):
        x = PackedSequence(torch.randn(6, 5), bs)
        expect_error(lambda: m(x), ["batch_sizes"], (x.data, x.batch_sizes))


def test_packed_sequence_of_the_wrong_feature_size():
    x = pack_padded_sequence(torch.randn(4, 3, 6), [4, 2, 1])
    m = module()
    expect_error(lambda: m(x), ["input.size(-1)", "5", "6"], (x.data,))


# ------------------------------------------------------------------------------------------
# Inputs are never written (successful calls, forward and backward, train and eval)
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("training,dropout", [(True, 0.0), (True, 0.5), (False, 0.5)])
def test_forward_and_backward_write_no_input(training, dropout):
    m = module(dropout=dropout).train(training)
    x, (h, c) = inputs()
    x = torch.cat([x, x], -1)[..., ::2].requires_grad_(True)  # non-contiguous
    h = h[:, :1].expand(4, 2, 3)  # expanded (stride 0)
    before = digests(x, h, c, list(m.parameters()))
    out, (hy, cy) = m(x, (h, c))
    (out.sum() + hy.sum() + cy.sum()).backward()
    assert digests(x, h, c, list(m.parameters())) == before
    packed_x = pack_padded_sequence(torch.randn(4, 3, 5), [4, 2, 1])
    before = digests(packed_x.data, packed_x.batch_sizes, list(m.parameters()))
    out, _ = m(packed_x)
    out.data.sum().backward()
    assert digests(packed_x.data, packed_x.batch_sizes, list(m.parameters())) == before
