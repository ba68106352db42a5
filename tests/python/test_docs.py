"""Every ```python block of docs/*.md runs (each on its own, as a module of its own file), and
the op pages are the docstrings of lstmop.lstm, lstmop.lstm_backward and lstmop.nn.LSTM."""
import importlib.util
import pathlib
import re
import sys

import pytest
import torch

import lstmop

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks():
    blocks = []
    for page in sorted(DOCS.glob("*.md")):
        for k, match in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
            blocks.append(pytest.param(match.group(1), id=f"{page.name}-{k}"))
    return blocks


BLOCKS = python_blocks()


def test_the_op_pages_have_examples():
    ids = [b.id for b in BLOCKS]
    for page in ("lstm.md", "lstm_backward.md", "nn.LSTM.md"):
        assert any(i.startswith(page) for i in ids), page


@pytest.mark.parametrize("code", BLOCKS)
def test_example_runs(code, tmp_path, request):
    """The block runs as a module of its own file: TorchScript reads the source of the classes
    it compiles, which code exec'd from a string would not have."""
    name = "docs_example_" + re.sub(r"\W", "_", request.node.callspec.id)
    path = tmp_path / f"{name}.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]


@pytest.mark.parametrize("obj, page", [
    (lstmop.lstm, "lstm.md"), (lstmop.lstm_backward, "lstm_backward.md"),
    (torch.ops.lstmop._lstm, "lstm.md"), (torch.ops.lstmop._lstm_backward, "lstm_backward.md"),
    (torch.ops.lstmop._lstm.default, "lstm.md"), (lstmop.nn.LSTM, "nn.LSTM.md")])
def test_docstring_is_the_page(obj, page):
    assert obj.__doc__ == (DOCS / page).read_text(encoding="utf-8")
