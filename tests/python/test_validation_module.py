"""Bad input through lstmop.nn.LSTM, class by class: the constructor and forward raise the
exception class torch.nn.LSTM raises for the same input (checked against torch.nn.LSTM itself
where torch raises at all; where torch 1.13 and 2.x differ, a subclass of both, lstmop.errors),
with lstmop's message that names what is wrong, and no input tensor (input, hx, PackedSequence
data, parameters) is ever written.

Module under test: LSTM(input_size=5, hidden_size=3, num_layers=2, bidirectional=True) unless a
test says otherwise; input (T=4, B=2, 5), hx (4, 2, 3) each."""
import math

import numpy as np
import pytest
import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

import lstmop
from lstmop.errors import IndexRuntimeTypeError, IndexValueError, RuntimeTypeError, RuntimeValueError
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


def rejected(m, x, hx, contains, seconds=None, error=RuntimeError):
    return expect_error(lambda: m(x, hx), contains, (x, hx, list(m.parameters())), seconds,
                        error)


# ------------------------------------------------------------------------------------------
# Constructor
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dropout", [-0.1, 1.5, math.nan])
def test_dropout_outside_zero_one(dropout):
    expect_error(lambda: module(dropout=dropout), ["dropout"], error=ValueError)  # torch's own


@pytest.mark.parametrize("dropout", [-0.1, 1.5, math.nan])
def test_dropout_attribute_set_out_of_range_later(dropout):
    """torch.nn.LSTM checks the value where it applies dropout (training, num_layers > 1): in
    eval mode, or with one layer, the module runs, as lstmop's does (with torch's results)."""
    x = torch.randn(4, 2, 5, dtype=torch.float64)
    for layers in (1, 2):
        m = module(num_layers=layers).double()
        ref = torch.nn.LSTM(5, 3, num_layers=layers, bidirectional=True).double()
        ref.load_state_dict(m.state_dict())
        m.dropout = ref.dropout = dropout
        for training in (False, True):
            m.train(training)
            ref.train(training)
            if training and layers > 1:
                with pytest.raises(RuntimeError):
                    ref(x)
                expect_error(lambda: m(x), ["dropout", "[0, 1]", f"got {dropout}"], (x,))
                continue
            out, (h, c) = m(x)
            ref_out, (ref_h, ref_c) = ref(x)
            torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(h, ref_h, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(c, ref_c, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("num_layers", [0, -1])
def test_num_layers_not_positive(num_layers):
    # torch 1.13: IndexError, torch 2.x: ValueError.
    expect_error(lambda: module(num_layers=num_layers), ["num_layers", ">= 1", str(num_layers)],
                 error=IndexValueError)


@pytest.mark.parametrize("num_layers", [2.0, "2", True, None])
def test_num_layers_not_an_integer(num_layers):
    expect_error(lambda: module(num_layers=num_layers), ["num_layers", repr(num_layers)],
                 error=TypeError)


def test_num_layers_of_an_integer_type_other_than_int():
    lstm = module(num_layers=torch.tensor(2))  # has __index__, as range() accepts
    assert lstm.num_layers == 2 and type(lstm.num_layers) is int


def test_hidden_size_zero():
    expect_error(lambda: module(hidden_size=0), ["hidden_size"], error=ValueError)  # torch's own


@pytest.mark.parametrize("proj_size", [-1, 3, 9])
def test_proj_size_out_of_range(proj_size):
    # torch's own check (hidden_size is 3 here): ValueError naming proj_size.
    expect_error(lambda: module(proj_size=proj_size), ["proj_size"], error=ValueError)


# ------------------------------------------------------------------------------------------
# The classes torch.nn.LSTM raises, side by side
# ------------------------------------------------------------------------------------------

def _call(build, run):
    """What build() then run(module) raises (None if nothing), built and run under one seed."""
    torch.manual_seed(0)
    try:
        run(build())
    except Exception as error:  # noqa: BLE001  (any class: that is what is compared)
        return error
    return None


X, (H0, C0) = inputs()
# (case, constructor kwargs, forward, torch 2.x's class where it differs from 1.13's). torch 2.x
# (torch/nn/modules/rnn.py): "LSTM: Expected input to be 2D or 3D" and the input/weight dtype
# check are ValueError, "num_layers must be greater than zero" is ValueError.
TORCH_CASES = [
    ("0-D input", {}, lambda m: m(torch.tensor(1.0)), ValueError),
    ("0-D input, batch_first", dict(batch_first=True), lambda m: m(torch.tensor(1.0)),
     ValueError),
    ("1-D input", {}, lambda m: m(torch.zeros(20)), ValueError),
    ("4-D input", {}, lambda m: m(torch.zeros(1, 4, 2, 5)), ValueError),
    ("integer input", {}, lambda m: m(torch.zeros(4, 2, 5, dtype=torch.int64)), ValueError),
    ("float64 input", {}, lambda m: m(X.double()), ValueError),
    ("float64 h0", {}, lambda m: m(X, (H0.double(), C0)), None),
    ("T = 0", {}, lambda m: m(torch.zeros(0, 2, 5)), None),
    ("3-tensor hx", {}, lambda m: m(X, (H0, C0, H0)), None),
    ("1-tensor hx", {}, lambda m: m(X, (H0,)), None),
    ("hx a tensor", {}, lambda m: m(X, H0), None),
    ("num_layers=0", dict(num_layers=0), lambda m: None, ValueError),
    ("num_layers=-1", dict(num_layers=-1), lambda m: None, ValueError),
    ("num_layers=2.0", dict(num_layers=2.0), lambda m: None, None),
    ("wrong input_size", {}, lambda m: m(torch.zeros(4, 2, 6)), None),
    ("wrong h0 shape", {}, lambda m: m(X, (torch.zeros(2, 2, 3), C0)), None),
    ("empty PackedSequence", {}, lambda m: m(packed([], 0)), None),
    ("sparse input", {}, lambda m: m(X.to_sparse()), None),
    # The constructor stores these as given; torch's forward refuses all but a Python bool.
    ("bias=0", dict(bias=0), lambda m: m(X), None),
    ("batch_first=1", dict(batch_first=1), lambda m: m(X.transpose(0, 1)), None),
    ("bidirectional=1", dict(bidirectional=1), lambda m: m(X), None),
    ("bias a numpy bool", dict(bias=np.bool_(True)), lambda m: m(X), None),
    ("bidirectional a bool tensor", dict(bidirectional=torch.tensor(True)), lambda m: m(X), None),
]


@pytest.mark.parametrize("case,kwargs,run,torch2_class", TORCH_CASES,
                         ids=[c[0] for c in TORCH_CASES])
def test_exception_class_is_torchs(case, kwargs, run, torch2_class):
    args = dict(input_size=5, hidden_size=3, num_layers=2, bidirectional=True)
    args.update(kwargs)
    theirs = _call(lambda: torch.nn.LSTM(**args), run)
    ours = _call(lambda: lstmop.nn.LSTM(**args), run)
    assert theirs is not None and ours is not None, (theirs, ours)
    assert isinstance(ours, type(theirs)), f"torch raises {type(theirs).__name__}, lstmop " \
        f"{type(ours).__name__}: {ours}"
    if torch2_class is not None:
        assert isinstance(ours, torch2_class)
    # lstmop's message names what is wrong (torch's own checks keep torch's message).
    assert str(ours) and "mat1 and mat2" not in str(ours)


# ------------------------------------------------------------------------------------------
# forward: input
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sizes", [(20,), (1, 4, 2, 5)])
def test_input_rank(sizes):
    m = module()
    rejected(m, torch.zeros(sizes), None, ["2D or 3D", f"{len(sizes)}D"],
             error=RuntimeValueError)


def test_input_feature_size():
    m = module()
    rejected(m, torch.zeros(4, 2, 6), None, ["input.size(-1)", "5", "6"])


def test_input_dtype_other_than_the_parameters():
    m = module()
    rejected(m, torch.zeros(4, 2, 5, dtype=torch.float64), None,
             ["input", "torch.float32", "torch.float64"], error=RuntimeValueError)
    x = pack_padded_sequence(torch.zeros(4, 3, 5, dtype=torch.float64), [4, 2, 1])
    expect_error(lambda: m(x), ["input", "torch.float32", "torch.float64"], (x.data,),
                 error=RuntimeValueError)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
def test_input_dtype_not_floating(dtype):
    m = module()
    rejected(m, torch.zeros(4, 2, 5, dtype=dtype), None, ["input", str(dtype)],
             error=RuntimeValueError)


def test_empty_time_is_refused():  # B = 0 is accepted (test_empty_batch.py)
    rejected(module(), torch.zeros(0, 2, 5), None, ["input", "T >= 1", "[0, 2, 5]"])


@pytest.mark.parametrize("batch_first", [False, True])
def test_empty_time_of_an_unbatched_input_names_the_shape_given(batch_first):
    """The caller's (0, input_size), not the (0, 1, input_size) the op would see."""
    m = module(batch_first=batch_first)
    rejected(m, torch.zeros(0, 5), None, ["input", "T >= 1", "got T = 0 in shape [0, 5]"])
    hx = (torch.zeros(4, 3), torch.zeros(4, 3))
    rejected(m, torch.zeros(0, 5), hx, ["input", "T >= 1", "[0, 5]"])


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


@pytest.mark.parametrize("count,error", [(0, IndexError), (1, IndexError), (3, RuntimeError)])
def test_hx_of_zero_one_or_three_tensors(count, error):
    m = module()
    x, (h, c) = inputs()
    rejected(m, x, (h, c, h)[:count], ["hx", "2 tensors", f"got {count}"], error=error)


def test_hx_that_is_not_a_tuple():
    m = module()
    x, (h, c) = inputs()
    rejected(m, x, h, ["hx", "tuple", "Tensor"], error=RuntimeTypeError)
    rejected(m, x, 3, ["hx", "tuple", "int"], error=RuntimeTypeError)


@pytest.mark.parametrize("packed_input", [False, True])
def test_h0_alone_as_hx_raises_what_torch_raises(packed_input):
    """lstm(x, h0) with h0 (1, B, H), the mistake of passing h_0 alone: torch indexes hx[1] of a
    1-row tensor (IndexError), or first checks hx[0]'s size (RuntimeError, PackedSequence
    input); a tensor of 2 rows gets RuntimeError. lstmop's class is (a subclass of) torch's."""
    m = module(num_layers=1, bidirectional=False)
    ref = torch.nn.LSTM(5, 3)
    x = torch.randn(4, 2, 5)
    if packed_input:
        x = torch.nn.utils.rnn.pack_padded_sequence(x, [4, 4])
    for rows in (1, 2):
        hx = torch.randn(rows, 2, 3)
        with pytest.raises(Exception) as expected:
            ref(x, hx)
        error = expect_error(lambda: m(x, hx), ["hx", "tuple", "Tensor", f"shape (1, 2, 3)"
                                                 if rows == 1 else "shape (2, 2, 3)"],
                             (x, hx), error=IndexRuntimeTypeError if rows == 1
                             else RuntimeTypeError)
        assert isinstance(error, type(expected.value)), (type(error), type(expected.value))


# ------------------------------------------------------------------------------------------
# forward: PackedSequence (B = 3 sequences of lengths 4, 2, 1: batch_sizes [3, 2, 1, 1])
# ------------------------------------------------------------------------------------------

def packed(batch_sizes, rows=None):
    batch_sizes = torch.as_tensor(batch_sizes, dtype=torch.int64)
    rows = int(batch_sizes.sum()) if rows is None else rows
    return PackedSequence(torch.randn(rows, 5, generator=torch.Generator().manual_seed(2)),
                          batch_sizes)


def test_packed_sequence_valid_reference_case_runs():
    x = pack_padded_sequence(torch.randn(4, 3, 5), [4, 2, 1])
    out, _ = module()(x)
    assert torch.equal(out.batch_sizes, torch.tensor([3, 2, 1, 1]))


@pytest.mark.parametrize("batch_sizes,rows,contains,error", [
    ([3, 0, 1], None, ["batch_sizes", "[1, 3]", "0"], RuntimeError),             # zero
    ([3, -1, 1], 4, ["batch_sizes", "-1"], RuntimeError),                        # negative
    ([1, 2, 1], None, ["batch_sizes", "[1, 1]", "2"], RuntimeError),             # increasing
    ([3, 2, 1], 7, ["batch_sizes", "sums to 6", "7 rows"], RuntimeError),        # rows differ
    ([], 0, ["batch_sizes", "at least one entry"], IndexError),                  # empty
])
def test_packed_sequence_with_bad_batch_sizes(batch_sizes, rows, contains, error):
    x = packed(batch_sizes, rows)
    m = module()
    expect_error(lambda: m(x), contains, (x.data, x.batch_sizes, list(m.parameters())),
                 error=error)


def test_packed_sequence_with_float_or_2d_batch_sizes():
    m = module()
    for bs, contains in ((torch.tensor([3.0, 2.0, 1.0]), ["torch.int64", "torch.float32"]),
                         (torch.tensor([[3, 2, 1]]), ["1-D", "[1, 3]"])):
        x = PackedSequence(torch.randn(6, 5), bs)
        expect_error(lambda: m(x), ["batch_sizes"] + contains, (x.data, x.batch_sizes))


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
