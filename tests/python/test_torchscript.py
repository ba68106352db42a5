"""TorchScript: models containing lstmop.nn.LSTM under torch.jit.script and torch.jit.trace
(default arguments, so the trace checks itself), saved and loaded; every input form; results
and gradients bitwise equal to eager (the same op calls), and as close to torch.nn.LSTM's as
eager's; training through scripted, traced and loaded models; the op's run-time decision to save
activations inside a trace or script. The C++ deployment path is tests/torchscript/."""
import io
import warnings
from typing import Optional, Tuple

import pytest
import torch
from torch import Tensor
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import lstm_cases as lc
import lstmop


class TensorModel(torch.nn.Module):
    """LSTM on a Tensor (batched or not, hx optional), then a linear head."""

    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm
        self.head = torch.nn.Linear(lstm.hidden_size * (2 if lstm.bidirectional else 1), 2)

    def forward(self, x: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tensor, Tensor]:
        output, (hn, cn) = self.lstm(x, hx)
        return self.head(output), hn, cn


class PackedModel(torch.nn.Module):
    """Padded sequences of the given lengths (unsorted) packed, through the LSTM as a
    PackedSequence, padded again."""

    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm

    def forward(self, x: Tensor, lengths: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tensor, Tensor]:
        packed = pack_padded_sequence(x, lengths, batch_first=self.lstm.batch_first,
                                      enforce_sorted=False)
        output, (hn, cn) = self.lstm(packed, hx)
        padded, _ = pad_packed_sequence(output, batch_first=self.lstm.batch_first)
        return padded, hn, cn


FORMS = ["batched", "batch_first", "unbatched", "batched_hx", "unbatched_hx", "packed",
         "packed_hx", "packed_batch_first"]


def build(form, module_class=lstmop.nn.LSTM, dropout=0.0, seed=0):
    """(model, inputs) in float64: T = 5, B = 3, I = 3, H = 4, 2 layers, bidirectional."""
    torch.manual_seed(seed)
    lstm = module_class(3, 4, num_layers=2, bidirectional=True, dropout=dropout,
                        batch_first="batch_first" in form)
    g = torch.Generator().manual_seed(1)
    rand = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64)
    unbatched = form.startswith("unbatched")
    x = rand(5, 3) if unbatched else (rand(3, 5, 3) if "batch_first" in form else rand(5, 3, 3))
    hx = None
    if form.endswith("_hx"):
        shape = (4, 4) if unbatched else (4, 3, 4)
        hx = (rand(*shape), rand(*shape))
    if form.startswith("packed"):
        return PackedModel(lstm).double(), (x, torch.tensor([2, 5, 3]), hx)
    return TensorModel(lstm).double(), (x, hx)


def run(model, inputs, seed=42):
    """Outputs and the gradients of a weighted sum of them w.r.t. the input, hx and every
    parameter; dropout masks from `seed`. inputs: (x, [lengths,] hx or None)."""
    x = inputs[0].detach().requires_grad_()
    hx = inputs[-1]
    if hx is not None:
        hx = tuple(h.detach().requires_grad_() for h in hx)
    args = [x] + list(inputs[1:-1]) + ([hx] if hx is not None else [])
    torch.manual_seed(seed)
    outputs = model(*args)
    g = torch.Generator().manual_seed(5)
    loss = sum((torch.randn(o.shape, generator=g, dtype=o.dtype) * o).sum() for o in outputs)
    wrt = [x] + (list(hx) if hx is not None else []) + list(model.parameters())
    return [o.detach() for o in outputs] + list(torch.autograd.grad(loss, wrt))


def scripted(model):
    return torch.jit.script(model)


def traced(model, inputs):
    """torch.jit.trace with its default arguments (check_trace=True: it reruns the model and
    compares graphs and results) and no TracerWarning from lstmop's code."""
    example = tuple(t for t in inputs if t is not None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = torch.jit.trace(model, example)
    ours = [w for w in caught if "lstmop" in str(w.filename)]
    assert not ours, [str(w.message) for w in ours]
    return result


def saved_and_loaded(module):
    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    buffer.seek(0)
    return torch.jit.load(buffer)


def assert_equal(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert a.shape == b.shape and torch.equal(a, b)


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train_dropout"])
@pytest.mark.parametrize("form", FORMS)
def test_scripted_model_equals_eager(form, training):
    model, inputs = build(form, dropout=0.3)
    model.train(training)
    expected = run(model, inputs)
    script = scripted(model)
    assert_equal(run(script, inputs), expected)
    assert_equal(run(saved_and_loaded(script), inputs), expected)


@pytest.mark.parametrize("form", FORMS)
def test_scripted_results_are_as_close_to_torch_as_eager(form):
    ours = run(scripted(build(form)[0]), build(form)[1])
    theirs = run(scripted(build(form, torch.nn.LSTM)[0]), build(form, torch.nn.LSTM)[1])
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("form", ["batched", "batch_first", "unbatched", "batched_hx",
                                  "unbatched_hx"])
def test_traced_model_equals_eager(form):
    model, inputs = build(form)
    model.eval()  # a trace records the module's mode; eval: no dropout
    expected = run(model, inputs)
    trace = traced(model, inputs)
    assert_equal(run(trace, inputs), expected)
    assert_equal(run(saved_and_loaded(trace), inputs), expected)


def test_model_traced_under_no_grad_trains():
    """The trace holds lstmop::lstm, whose Autograd kernel decides at run time to save
    activations: a model traced under no_grad gets the gradients eager gets."""
    model, inputs = build("batch_first")
    with torch.no_grad():
        trace = traced(model, inputs)
    assert_equal(run(trace, inputs), run(model, inputs))


@pytest.mark.parametrize("kind", ["script", "trace"])
def test_the_op_decides_at_run_time_whether_to_save(kind):
    T, B, H, L = 50, 2, 4, 2
    torch.manual_seed(0)
    model = TensorModel(lstmop.nn.LSTM(3, H, num_layers=L).eval())
    x = torch.randn(T, B, 3)
    compiled = scripted(model) if kind == "script" else traced(model, (x,))

    def inference():
        with torch.no_grad():
            compiled(x)

    for call, train in ((inference, False), (lambda: compiled(x), True)):
        lc.assert_lstm_bytes(lc.lstm_op_calls(call), T, B, H, L, train)


@pytest.mark.parametrize("kind", ["eager", "script", "trace", "loaded_script"])
def test_training_through_compiled_models(kind):
    """Ten SGD steps with dropout between layers (training mode) on the compiled model: the
    losses and weights are eager's, bit for bit, and the loaded model's own parameters learn."""
    def train(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(3)
        losses = []
        for step in range(10):
            x = torch.randn(4, 6, 3, generator=g, dtype=torch.float64)
            torch.manual_seed(step)
            output, _, _ = model(x)
            loss = (output - 0.5 * x[..., :2]).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses, [p.detach().clone() for p in model.parameters()]

    reference, _ = build("batch_first", dropout=0.3)
    expected_losses, expected_weights = train(reference)
    assert expected_losses[-1] < expected_losses[0]
    model, inputs = build("batch_first", dropout=0.3)
    before = [p.detach().clone() for p in model.parameters()]
    if kind == "script":
        model = scripted(model)
    elif kind == "trace":
        torch.manual_seed(0)
        model = torch.jit.trace(model, (inputs[0],), check_trace=False)  # dropout: random
    elif kind == "loaded_script":
        model = saved_and_loaded(scripted(model))
    losses, weights = train(model)
    assert losses == expected_losses
    assert_equal(weights, expected_weights)
    assert not torch.equal(weights[0], before[0])


def test_scripted_model_raises_for_bad_input():
    """A scripted model reports errors as TorchScript does for a scripted torch.nn.LSTM: a
    check's `raise` as torch.jit.Error, an op's error as RuntimeError; the messages are torch's
    checks' and lstmop's."""
    script = scripted(build("batched")[0])
    with pytest.raises(torch.jit.Error, match="input.size\\(-1\\) must be equal to input_size"):
        script(torch.zeros(5, 3, 4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="params\\[0\\].*float32, got float64"):
        script(torch.zeros(5, 3, 3))  # float32 input, float64 parameters
