"""Bad input through torch.ops.lstmop._lstm, _lstm_backward and lstm, class by class: each call
raises RuntimeError (the ops' rule, docs/lstm.md "Errors": never ValueError, IndexError,
AssertionError or a crash) whose message names the argument and gives the expected and the actual
value, and leaves every input tensor byte for byte as it was (storage digests). Forward errors
are checked through the CPU kernel, the Autograd kernel (params requiring grad) and, for errors
visible in shapes, the Meta kernel.

The valid problem (validation_support.Problem): T = 3, B = 2, I = 5, H = 3 (4H = 12), L = 2,
bidirectional (4 slots), with biases (16 params), hx given."""
import math

import pytest
import torch

from validation_support import (SAVED_NAMES, Problem, backward, backward_args, expect_error,
                                forward, on_meta, requiring_grad, shape)


def rejected(a, contains, meta=True):
    """The forward with arguments `a` is refused by the CPU, Autograd and (meta) Meta kernels."""
    inputs = (a["input"], a["hx"], a["params"], a["batch_sizes"])
    expect_error(lambda: forward(a), contains, inputs)
    expect_error(lambda: forward(requiring_grad(a)), contains, inputs)
    if meta:
        expect_error(lambda: forward(on_meta(a)), contains)


def zeros(*sizes, dtype=torch.float32):
    return torch.zeros(tuple(sizes), dtype=dtype)


# ------------------------------------------------------------------------------------------
# params
# ------------------------------------------------------------------------------------------

def test_params_count():
    a = Problem().args()
    a["params"] = a["params"][:-1]
    rejected(a, ["params", "16", "15"])
    a = Problem().args()
    a["has_biases"] = False
    rejected(a, ["params", "8", "16"])
    a = Problem().args()
    a["params"] = []
    rejected(a, ["params", "16", "got 0"])
    a = Problem().args()
    a["params"] = a["params"] + [a["params"][0]]
    rejected(a, ["params", "16", "17"])


@pytest.mark.parametrize("bias", [True, False])
def test_every_param_shape(bias):
    p = Problem(bias=bias)
    count = len(p.args()["params"])
    for k in range(1, count):
        for change in ("column", "row", "rank"):
            a = p.args()
            expected = list(a["params"][k].shape)
            wrong = list(expected)
            if change == "column":
                wrong[-1] += 1
            elif change == "row":
                wrong[0] += 4
            else:
                wrong.append(1)
            a["params"][k] = zeros(*wrong)
            rejected(a, [f"params[{k}]", shape(expected), shape(wrong)])


def test_params_in_the_wrong_order():
    a = Problem().args()
    a["params"][0], a["params"][1] = a["params"][1], a["params"][0]  # w_hh before w_ih
    rejected(a, ["params[0]", "[12, 5]", "[12, 3]"])
    a = Problem().args()
    a["params"] = a["params"][2:4] + a["params"][0:2] + a["params"][4:]  # biases first
    rejected(a, ["params[0]", "2-D", "[12]"])
    a = Problem().args()
    a["params"] = a["params"][8:] + a["params"][:8]  # layer 1 before layer 0
    rejected(a, ["params[0]", "[12, 5]", "[12, 6]"])


def test_gate_rows_not_a_multiple_of_four_or_zero_hidden_size():
    a = Problem().args()
    a["params"][0] = zeros(10, 5)
    rejected(a, ["params[0]", "4", "[10, 5]"])
    a = Problem().args()
    a["params"][0] = zeros(0, 5)
    rejected(a, ["params[0]", "4", "[0, 5]"])


def test_undefined_param():
    a = Problem().args()
    a["params"][5] = None
    # A list of tensors cannot hold None: the dispatcher refuses it, naming the argument.
    expect_error(lambda: forward(a), ["params"])


# ------------------------------------------------------------------------------------------
# num_layers, input, dtypes
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, -1, -(2 ** 40)])
def test_num_layers_not_positive(n):
    a = Problem().args()
    a["num_layers"] = n
    rejected(a, ["num_layers", ">= 1", str(n)])


def test_num_layers_not_matching_params():
    a = Problem().args()
    a["num_layers"] = 3
    rejected(a, ["params", "24", "16"])
    a["num_layers"] = 2 ** 62  # the count would overflow int64
    rejected(a, ["params", str(2 ** 62), "16"])


@pytest.mark.parametrize("sizes", [(6, 5), (3, 2, 5, 1), (30,), ()])
def test_input_rank(sizes):
    a = Problem().args()
    a["input"] = zeros(*sizes)
    rejected(a, ["input", "3-D", shape(sizes)])


def test_input_rank_with_batch_sizes():
    a = Problem().args()
    a["batch_sizes"] = torch.tensor([2, 2, 1])
    rejected(a, ["input", "2-D", "[3, 2, 5]"])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool, torch.uint8,
                                   torch.complex64])
def test_input_dtype_not_floating(dtype):
    a = Problem().args()
    a["input"] = zeros(3, 2, 5, dtype=dtype)
    name = str(dtype).replace("torch.", "")
    rejected(a, ["input", "float32", name])


def test_mixed_dtypes():
    a = Problem().args()
    a["params"][1] = a["params"][1].double()
    rejected(a, ["params[1]", "float32", "float64"])
    a = Problem().args()
    a["params"][15] = a["params"][15].bfloat16()
    rejected(a, ["params[15]", "float32", "bfloat16"])
    a = Problem().args()
    a["hx"][1] = a["hx"][1].half()
    rejected(a, ["hx[1]", "float32", "float16"])
    a = Problem().args()
    a["input"] = a["input"].double()
    rejected(a, ["params[0]", "float64", "float32"])


# ------------------------------------------------------------------------------------------
# hx
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("count", [1, 3])
def test_hx_count(count):
    a = Problem().args()
    a["hx"] = (a["hx"] * 2)[:count]
    rejected(a, ["hx", "2", str(count)])


@pytest.mark.parametrize("k,sizes", [(0, (4, 2, 4)), (1, (2, 2, 3)), (0, (2, 3)), (1, (4, 3, 3)),
                                     (0, (2, 4, 3))])
def test_hx_shape(k, sizes):
    a = Problem().args()
    a["hx"][k] = zeros(*sizes)
    rejected(a, [f"hx[{k}]", "[4, 2, 3]", shape(sizes)])


def test_hx_dtype():
    a = Problem().args()
    a["hx"][0] = a["hx"][0].long()
    rejected(a, ["hx[0]", "float32", "int64"])
    a = Problem().args()
    a["hx"][1] = a["hx"][1].int()
    rejected(a, ["hx[1]", "torch.int32"])


# ------------------------------------------------------------------------------------------
# batch_sizes: T = 3, B = 2, lengths 3, 2 -> [2, 2, 1], input (6, 5)
# ------------------------------------------------------------------------------------------

def packed_args(values):
    a = Problem(lengths=[3, 2]).args()
    a["batch_sizes"] = values if isinstance(values, torch.Tensor) else torch.tensor(values)
    return a


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float64])
def test_batch_sizes_dtype(dtype):
    a = packed_args(torch.tensor([2, 2, 1], dtype=dtype))
    rejected(a, ["batch_sizes", "int64", str(dtype).replace("torch.", "")], meta=False)


def test_batch_sizes_rank():
    rejected(packed_args(torch.tensor([[2, 2, 1]])), ["batch_sizes", "1-D", "[1, 3]"], meta=False)
    rejected(packed_args(torch.tensor(2)), ["batch_sizes", "1-D", "0-D"], meta=False)


@pytest.mark.parametrize("values", [[2, 2, 1, 1], [1] * 7])
def test_batch_sizes_length_does_not_divide_the_rows(values):
    rejected(packed_args(values), ["batch_sizes", str(len(values)), "6"], meta=False)


@pytest.mark.parametrize("values,contains", [
    ([2, 1, 2], ["non-increasing", "batch_sizes[2] = 2"]),      # increasing
    ([1, 1, 1], ["batch_sizes[0] = 1", "2"]),                   # first != B
    ([2, 1, 0], ["[1, 2]", "batch_sizes[2] = 0"]),              # zero
    ([2, -1, -1], ["[1, 2]", "batch_sizes[1] = -1"]),           # negative
    ([3, 1, 1], ["batch_sizes[0] = 3", "2"]),                   # > B
    ([2, 2, 2 ** 62], ["[1, 2]", str(2 ** 62)]),                # huge
])
def test_batch_sizes_values(values, contains):
    # Values are read by the CPU kernel only; the Meta kernel needs the length alone.
    rejected(packed_args(values), ["batch_sizes"] + contains, meta=False)


def test_empty_batch_sizes_means_fixed_length():
    a = Problem().args()
    expected = forward(a)
    a["batch_sizes"] = torch.empty(0, dtype=torch.int64)
    got = forward(a)
    for x, y in zip(got, expected):
        assert torch.equal(x, y)
    b = Problem(lengths=[3, 2]).args()
    b["batch_sizes"] = torch.empty(0, dtype=torch.int64)  # 2-D input in fixed-length mode
    rejected(b, ["input", "3-D", "[6, 5]"], meta=False)


# ------------------------------------------------------------------------------------------
# dropout, empty sizes, layouts and devices
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value,text", [(-0.1, "-0.1"), (1.5, "1.5"), (math.nan, "nan"),
                                        (math.inf, "inf"), (-math.inf, "-inf")])
def test_dropout_outside_zero_one(value, text):
    for train in (True, False):
        a = Problem().args()
        a["dropout"], a["train"] = value, train
        rejected(a, ["dropout", "[0, 1]", text])


def test_dropout_refused_with_train_and_several_layers():
    a = Problem().args()
    a["dropout"] = 0.5
    rejected(a, ["dropout", "lstmop.nn.LSTM", "0.5"])


# An empty batch (B = 0) and input_size = 0 are accepted (test_empty_batch.py); T = 0 is not,
# nor B = 0 with batch_sizes (whose first entry must be B and every entry >= 1).
def test_empty_time_is_refused():
    a = Problem(with_hx=False).args()
    a["input"] = zeros(0, 2, 5)
    rejected(a, ["input", "T >= 1", "[0, 2, 5]"])


def test_empty_batch_with_batch_sizes_is_refused():
    a = Problem(with_hx=False).args()
    a["input"] = zeros(0, 5)
    a["batch_sizes"] = torch.tensor([1, 1, 1])
    rejected(a, ["input", "B >= 1", "[0, 5]"])


def test_sparse_input_is_refused():
    # The dispatcher refuses it (no sparse kernel), naming the backend it got.
    a = Problem().args()
    a["input"] = a["input"].to_sparse()
    expect_error(lambda: forward(a), ["lstmop::_lstm", "Sparse"], (a["hx"], a["params"]),
                 error=NotImplementedError)  # a RuntimeError


def test_meta_param_with_cpu_input_is_refused():
    # One meta tensor sends the call to the Meta kernel, which names the first CPU tensor.
    a = Problem().args()
    a["params"][3] = a["params"][3].to("meta")
    expect_error(lambda: forward(a), ["input", "meta", "cpu"], (a["input"], a["hx"]))


# ------------------------------------------------------------------------------------------
# Sizes past what can exist: stride-0 (expanded) inputs, refused at once
# ------------------------------------------------------------------------------------------

def huge_args(input, batch_sizes=None):
    a = Problem(I=1, H=1, L=1, bidirectional=False, bias=True, with_hx=False).args()
    a["input"], a["batch_sizes"] = input, batch_sizes
    return a


def test_expanded_input_of_2_to_40_steps():
    t = 2 ** 40
    for train in (False, True):
        a = huge_args(torch.zeros(1, 1, 1).expand(t, 1, 1))
        a["train"] = train
        expect_error(lambda: forward(a), ["input", f"T = {t}", "too large"], (a["input"],),
                     seconds=2.0)
    a = huge_args(torch.zeros(1, 1, 1).expand(1, t, 1))
    expect_error(lambda: forward(a), ["input", f"B = {t}"], seconds=2.0)
    a = huge_args(torch.zeros(1, 1, 1).expand(1, t, 1))
    expect_error(lambda: forward(on_meta(a)), ["input", f"B = {t}"], seconds=2.0)


def test_expanded_batch_sizes_of_2_to_40_entries():
    t = 2 ** 40
    a = huge_args(torch.zeros(1, 1).expand(t, 1), torch.ones(1, dtype=torch.int64).expand(t))
    expect_error(lambda: forward(a), ["input", f"T = {t}"], seconds=2.0)


def test_expanded_input_longer_than_memory_holds():
    # Within the core's absolute bound but beyond this machine: the float32 output alone would
    # be twice the RAM. Refused by validation (naming input), before the binding allocates
    # anything.
    import os
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    t = 1 << math.ceil(math.log2(2 * ram / 4))
    a = huge_args(torch.zeros(1, 1, 1).expand(t, 1, 1))
    expect_error(lambda: forward(a), ["input", f"T = {t}"], seconds=2.0)


def test_element_count_overflowing_int64_is_refused():
    # torch itself refuses to describe such a tensor; whoever refuses, it is an error.
    expect_error(lambda: forward(huge_args(
        torch.zeros(1, 1, 1).as_strided((2 ** 32, 2 ** 32, 1), (0, 0, 0)))), [], seconds=2.0)


# ------------------------------------------------------------------------------------------
# Backward
# ------------------------------------------------------------------------------------------

def backward_rejected(a, contains):
    inputs = (a["input"], a["hx"], a["params"], a["batch_sizes"], a["saved"], a["grad_y"],
              a["grad_hy"], a["grad_cy"])
    expect_error(lambda: backward(a), contains, inputs)


def test_backward_with_train_false():
    a = backward_args(Problem())
    a["train"] = False
    backward_rejected(a, ["train", "true", "false"])


@pytest.mark.parametrize("k", range(7))
def test_backward_saved_tensor_missing(k):
    a = backward_args(Problem())
    a["saved"][k] = None
    backward_rejected(a, [SAVED_NAMES[k], "undefined"])


@pytest.mark.parametrize("k", range(7))
def test_backward_saved_tensor_of_the_wrong_shape(k):
    a = backward_args(Problem())
    a["saved"][k] = zeros(3, 2, 12)  # the seed document's (T, B, D*L*H)
    backward_rejected(a, [SAVED_NAMES[k], "[4, 3, 2, 3]", "[3, 2, 12]"])
    a = backward_args(Problem())
    a["saved"][k] = zeros(4, 2, 2, 3)  # one step short
    backward_rejected(a, [SAVED_NAMES[k], "[4, 3, 2, 3]", "[4, 2, 2, 3]"])
    a = backward_args(Problem())
    a["saved"][k] = a["saved"][k].double()
    backward_rejected(a, [SAVED_NAMES[k], "float32", "float64"])


def test_backward_saved_tensors_of_a_train_false_forward():
    a = backward_args(Problem())
    eval_args = Problem().args()
    eval_args["train"] = False
    a["saved"] = list(forward(eval_args)[3:10])
    backward_rejected(a, ["i", "[4, 3, 2, 3]", "[0]"])


@pytest.mark.parametrize("name,sizes,expected", [("grad_y", (3, 2, 3), "[3, 2, 6]"),
                                                 ("grad_y", (6, 6), "[3, 2, 6]"),
                                                 ("grad_hy", (2, 2, 3), "[4, 2, 3]"),
                                                 ("grad_cy", (4, 2, 4), "[4, 2, 3]")])
def test_backward_gradient_of_the_wrong_shape(name, sizes, expected):
    a = backward_args(Problem())
    a[name] = zeros(*sizes)
    backward_rejected(a, [name, expected, shape(sizes)])


def test_backward_gradient_of_the_wrong_dtype():
    a = backward_args(Problem())
    a["grad_hy"] = a["grad_hy"].bfloat16()
    backward_rejected(a, ["grad_hy", "float32", "bfloat16"])
    a = backward_args(Problem())
    a["grad_y"] = a["grad_y"].long()
    backward_rejected(a, ["grad_y", "float32", "int64"])


def test_backward_flags_that_disagree_with_the_forward():
    a = backward_args(Problem())
    a["bidirectional"] = False
    backward_rejected(a, ["params", "8", "16"])
    a = backward_args(Problem())
    a["has_biases"] = False
    backward_rejected(a, ["params", "8", "16"])
    a = backward_args(Problem())
    a["num_layers"] = 1
    backward_rejected(a, ["params", "8", "16"])
    a = backward_args(Problem(with_hx=False))
    a["batch_first"] = True  # (3, 2, 5) read as B = 3, T = 2
    backward_rejected(a, ["i", "[4, 2, 3, 3]", "[4, 3, 2, 3]"])
    a = backward_args(Problem(lengths=[3, 1]))
    a["batch_sizes"] = None  # the (6, 5) input is 2-D
    backward_rejected(a, ["input", "3-D", "[6, 5]"])
    a = backward_args(Problem())
    a["batch_sizes"] = torch.tensor([2, 2, 1])  # the (3, 2, 5) input is 3-D
    backward_rejected(a, ["input", "2-D", "[3, 2, 5]"])


def test_backward_batch_sizes_values():
    a = backward_args(Problem(lengths=[3, 2]))
    a["batch_sizes"] = torch.tensor([2, 1, 2])
    backward_rejected(a, ["batch_sizes", "non-increasing"])


def test_backward_dropout_refused_like_the_forward():
    a = backward_args(Problem())
    a["dropout"] = 0.25
    backward_rejected(a, ["dropout", "lstmop.nn.LSTM", "0.25"])


def test_error_raised_inside_autograd_backward():
    # An incoming gradient of the wrong shape cannot reach the op through autograd (autograd
    # checks it first, with a RuntimeError); the saved tensors' checks run there too.
    a = Problem().args()
    a["input"] = a["input"].clone().requires_grad_(True)
    out = forward(a)
    with pytest.raises(RuntimeError):
        out[0].backward(torch.ones(3, 2, 5))


# ------------------------------------------------------------------------------------------
# Successful calls never write an input
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("problem", [Problem(), Problem(lengths=[3, 1], with_hx=False),
                                     Problem(batch_first=True, dtype=torch.bfloat16),
                                     Problem(dtype=torch.float16, bias=False)])
def test_successful_calls_write_no_input(problem):
    a = problem.args()
    # Non-contiguous and expanded views: their storages hold bytes outside the view too.
    a["input"] = torch.cat([a["input"], a["input"]], -1)[..., ::2]
    if a["hx"]:
        a["hx"][0] = a["hx"][0][:, :1].expand_as(a["hx"][1])
    a["params"] = [p.t().contiguous().t() if p.dim() == 2 else p for p in a["params"]]
    from validation_support import digests
    before = digests(a["input"], a["hx"], a["params"], a["batch_sizes"])
    out = forward(a)
    b = dict(a)
    b["saved"] = list(out[3:10])
    b["grad_y"], b["grad_hy"], b["grad_cy"] = (torch.ones_like(out[0]), torch.ones_like(out[1]),
                                               torch.ones_like(out[2]))
    saved_before = digests(b["saved"], b["grad_y"], b["grad_hy"], b["grad_cy"])
    backward(b)
    # Through autograd as well.
    c = requiring_grad(a)
    r = forward(c)
    (r[0].float().sum() + r[1].float().sum() + r[2].float().sum()).backward()
    assert digests(a["input"], a["hx"], a["params"], a["batch_sizes"]) == before
    assert digests(b["saved"], b["grad_y"], b["grad_hy"], b["grad_cy"]) == saved_before


# ------------------------------------------------------------------------------------------
# lstmop::lstm (the op lstmop.nn.LSTM calls): its own checks, and _lstm's on the whole call
# ------------------------------------------------------------------------------------------

def lstm_op(a, dropout=0.0, training=False, packed_data=None, batch_sizes=None):
    """torch.ops.lstmop.lstm on the problem's arguments; packed mode when packed_data is
    given (the PackedSequence's (N, I) rows with `batch_sizes`)."""
    return torch.ops.lstmop.lstm(a["input"] if packed_data is None else packed_data, a["hx"],
                                 a["params"], a["has_biases"], a["num_layers"], dropout,
                                 training, a["bidirectional"], batch_first=a["batch_first"],
                                 batch_sizes=batch_sizes)


@pytest.mark.parametrize("dropout", [-0.5, 1.5, math.nan])
def test_lstm_dropout_outside_zero_one(dropout):
    """Checked where dropout applies (training, L > 1), as aten::lstm checks it; elsewhere the
    value is not read: the results are those of dropout 0."""
    a = Problem().args()
    expect_error(lambda: lstm_op(a, dropout, True), ["dropout", "[0, 1]", "training"],
                 (a["input"], a["hx"], a["params"]))
    expected = lstm_op(a, 0.0, False)
    for result, want in zip(lstm_op(a, dropout, False), expected):
        assert torch.equal(result, want)
    one_layer = Problem(L=1).args()
    for training in (False, True):
        for result, want in zip(lstm_op(one_layer, dropout, training),
                                lstm_op(one_layer, 0.0, training)):
            assert torch.equal(result, want)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_lstm_errors_name_the_callers_arguments_also_layer_by_layer(requires_grad):
    """With dropout in training the op calls _lstm once per layer, but the whole call is checked
    first: params[12] is the caller's index (layer 1, reverse), not the layer's."""
    a = Problem().args()
    a["params"][12] = zeros(12, 7)
    if requires_grad:
        a = requiring_grad(a)
    for dropout, training in ((0.0, False), (0.5, True)):
        expect_error(lambda: lstm_op(a, dropout, training),
                     ["params[12] (weight_ih, layer 1, reverse)", "[12, 6]", "[12, 7]"])


PACKED_DATA = torch.zeros(6, 5)  # lengths 3, 2, 1: batch_sizes [3, 2, 1]


@pytest.mark.parametrize("batch_sizes,contains", [
    (torch.tensor([3, 2, 1], dtype=torch.int32), ["batch_sizes", "torch.int64", "torch.int32"]),
    (torch.tensor([[3, 2, 1]]), ["batch_sizes", "1-D", "[1, 3]"]),
    (torch.tensor([], dtype=torch.int64), ["batch_sizes", "at least one entry"]),
    (torch.tensor([3, 0, 1]), ["batch_sizes", "[1, 3]", "batch_sizes[1] = 0"]),
    (torch.tensor([2, 3, 1]), ["batch_sizes", "[1, 2]", "batch_sizes[1] = 3"]),
    (torch.tensor([3, 1, 2]), ["batch_sizes", "non-increasing", "batch_sizes[2] = 2"]),
    (torch.tensor([3, 2, 2]), ["batch_sizes sums to 7", "6 rows"]),
    (torch.tensor([3, 2, 1], device="meta"), ["batch_sizes", "CPU", "meta"]),
])
def test_lstm_packed_batch_sizes(batch_sizes, contains):
    a = Problem(L=1, bidirectional=False, with_hx=False).args()
    expect_error(lambda: lstm_op(a, packed_data=PACKED_DATA, batch_sizes=batch_sizes), contains,
                 (PACKED_DATA, a["params"]))


def test_lstm_packed_data_must_be_2d():
    a = Problem(L=1, bidirectional=False, with_hx=False).args()
    expect_error(lambda: lstm_op(a, packed_data=torch.zeros(6, 1, 5),
                                 batch_sizes=torch.tensor([3, 2, 1])),
                 ["input", "2-D", "PackedSequence", "[6, 1, 5]"])


def test_lstm_packed_hx_of_the_wrong_batch():
    a = Problem(L=1, bidirectional=False).args()  # hx for B = 2; the packed batch has 3
    expect_error(lambda: lstm_op(a, packed_data=PACKED_DATA, batch_sizes=torch.tensor([3, 2, 1])),
                 ["hx[0]", "[1, 3, 3]", "[1, 2, 3]"], (PACKED_DATA, a["hx"], a["params"]))
