"""The registered schemas equal the pinned ones (torch/schemas.txt) and the docs' prototypes;
importing the package registers the ops; core errors reach Python as RuntimeError (the class
torch's own aten::lstm raises, docs/lstm.md "Errors"), never ValueError."""
import contextlib
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

import lstmop

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
PIN_FILE = REPO_ROOT / "torch" / "schemas.txt"


def pinned_schemas():
    lines = [line for line in PIN_FILE.read_text().splitlines() if line.strip()]
    return {line.split("(", 1)[0]: line for line in lines}


def test_pin_holds_both_ops():
    assert sorted(pinned_schemas()) == ["lstmop::_lstm", "lstmop::_lstm_backward"]


@pytest.mark.parametrize("name", ["lstmop::_lstm", "lstmop::_lstm_backward"])
def test_registered_schema_equals_pin(name):
    registered = [str(s) for s in torch._C._jit_get_schemas_for_operator(name)]
    assert registered == [pinned_schemas()[name]]


@pytest.mark.parametrize("page, name", [("lstm.md", "lstmop::_lstm"),
                                        ("lstm_backward.md", "lstmop::_lstm_backward")])
def test_docs_prototype_equals_pin(page, name):
    text = (REPO_ROOT / "docs" / page).read_text()
    prototype = re.search(r"## Prototype\n\n```text\n(.*?)\n```", text, re.S).group(1)
    assert "lstmop::" + prototype == pinned_schemas()[name]


@pytest.mark.parametrize("page, name", [("nn.LSTM.md", "lstm"),
                                        ("lstm_backward.md", "_lstm_aten")])
def test_the_other_ops_schemas_are_documented(page, name):
    """The ops outside the contract (not pinned): their registered schema is the prototype
    their page shows."""
    text = (REPO_ROOT / "docs" / page).read_text()
    documented = re.search(r"^```text\n(" + re.escape(name) + r"\(.*?)\n```", text,
                           re.S | re.M).group(1)
    registered = [str(s) for s in torch._C._jit_get_schemas_for_operator("lstmop::" + name)]
    assert registered == ["lstmop::" + documented]


def test_import_registers_the_ops_from_the_repository_root():
    env = dict(os.environ, PYTHONPATH="python")
    result = subprocess.run(
        [sys.executable, "-c",
         "import lstmop, torch; print(torch.ops.lstmop._lstm); "
         "print(torch.ops.lstmop._lstm_backward)"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "_lstm" in result.stdout and "_lstm_backward" in result.stdout


def test_loading_twice_is_harmless():
    lstmop._library.load()
    assert torch.ops.lstmop._lstm is not None


@contextlib.contextmanager
def raises_runtime_error(match):
    """pytest.raises for exactly RuntimeError (a ValueError-derived class would not do)."""
    with pytest.raises(RuntimeError, match=match) as info:
        yield info
    assert type(info.value) is RuntimeError, type(info.value)


def small_args(dtype=torch.float32):
    x = torch.randn(5, 2, 3, dtype=dtype)
    params = [torch.randn(16, 3, dtype=dtype), torch.randn(16, 4, dtype=dtype)]
    return x, params


def test_core_error_is_a_runtime_error_naming_the_argument():
    x, params = small_args()
    params[1] = torch.randn(16, 5)
    with raises_runtime_error(match=r"params\[1\]"):
        torch.ops.lstmop._lstm(x, [], params, False, 1, 0.0, False, False)


def test_bad_num_layers_names_num_layers():
    x, params = small_args()
    with raises_runtime_error(match="num_layers"):
        torch.ops.lstmop._lstm(x, [], params, False, 0, 0.0, False, False)


def test_dropout_with_train_and_layers_points_to_the_module():
    x = torch.randn(5, 2, 3)
    params = [torch.randn(16, 3), torch.randn(16, 4), torch.randn(16, 4), torch.randn(16, 4)]
    with raises_runtime_error(match=r"dropout.*lstmop\.nn\.LSTM"):
        torch.ops.lstmop._lstm(x, [], params, False, 2, 0.5, True, False)


def test_unsupported_dtype_names_the_argument():
    x, params = small_args()
    with raises_runtime_error(match=r"input.*torch\.int32"):
        torch.ops.lstmop._lstm(x.to(torch.int32), [], params, False, 1, 0.0, False, False)


def test_mixed_dtypes_name_the_argument():
    x, params = small_args()
    params[0] = params[0].double()
    with raises_runtime_error(match=r"params\[0\]"):
        torch.ops.lstmop._lstm(x, [], params, False, 1, 0.0, False, False)


def test_meta_mixed_with_cpu_names_the_argument():
    x, params = small_args()
    params[1] = params[1].to("meta")
    with raises_runtime_error(match=r"input.*meta"):
        torch.ops.lstmop._lstm(x, [], params, False, 1, 0.0, False, False)


def test_float_batch_sizes_names_batch_sizes():
    x = torch.randn(10, 3)
    params = [torch.randn(16, 3), torch.randn(16, 4)]
    with raises_runtime_error(match="batch_sizes"):
        torch.ops.lstmop._lstm(x, [], params, False, 1, 0.0, False, False,
                               batch_sizes=torch.tensor([2.0, 2.0, 1.0, 1.0, 1.0]))


def test_backward_error_is_a_runtime_error():
    x, params = small_args()
    results = torch.ops.lstmop._lstm(x, [], params, False, 1, 0.0, True, False)
    with raises_runtime_error(match="grad_y"):
        torch.ops.lstmop._lstm_backward(torch.randn(5, 2, 7), torch.zeros(1, 2, 4),
                                        torch.zeros(1, 2, 4), x, [], params, *results[3:],
                                        False, 1, 0.0, True, False)


def test_error_raised_in_autograd_backward_is_a_runtime_error():
    # A train=False forward saves no activations: the backward reports it.
    x, params = small_args()
    x.requires_grad_()
    output = torch.ops.lstmop._lstm(x, [], params, False, 1, 0.0, False, False)[0]
    with raises_runtime_error(match="train"):
        output.sum().backward()
