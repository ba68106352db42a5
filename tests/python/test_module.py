"""lstmop.nn.LSTM as a drop-in for torch.nn.LSTM: constructor, parameters, initialisation,
state_dict, every input form (batched, batch_first, unbatched, PackedSequence sorted and
unsorted) forward and backward, dropout, dtypes, and a short training loop."""
import dataclasses
import random
import subprocess
import sys

import pytest
import torch
from torch.nn.utils.rnn import pack_sequence

import lstm_cases as lc
import lstmop

FORMS = ["batched", "batch_first", "unbatched", "packed_sorted", "packed_unsorted"]
TIGHT = dict(rtol=1e-12, atol=1e-12)


@dataclasses.dataclass
class Case:
    form: str
    T: int
    B: int
    I: int
    H: int
    L: int
    bidirectional: bool
    bias: bool
    with_hx: bool
    lengths: list

    def __str__(self):
        return (f"{self.form} T{self.T} B{self.B} I{self.I} H{self.H} L{self.L} "
                f"D{2 if self.bidirectional else 1} bias={int(self.bias)} "
                f"hx={int(self.with_hx)} lengths={self.lengths}")

    def kwargs(self, **extra):
        return dict(num_layers=self.L, bias=self.bias, batch_first=self.form == "batch_first",
                    bidirectional=self.bidirectional, **extra)


def random_cases(seed, count):
    rng = random.Random(seed)
    cases = []
    for k in range(count):
        form = FORMS[k % len(FORMS)]
        T, B = rng.randint(1, 5), rng.randint(1, 4)
        if form == "unbatched":
            B = 1
        lengths = [rng.randint(1, T) for _ in range(B)]
        lengths[rng.randrange(B)] = T
        if form == "packed_sorted":
            lengths.sort(reverse=True)
        cases.append(Case(form, T, B, rng.randint(1, 6), rng.randint(1, 5), rng.randint(1, 3),
                          rng.random() < 0.5, rng.random() < 0.7, rng.random() < 0.6, lengths))
    return cases


def make_inputs(case, dtype, seed=11):
    """Leaf tensors: the input pieces and hx (as the caller gives them), all requiring grad."""
    g = torch.Generator().manual_seed(seed)
    rand = lambda *shape: torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)
    D = 2 if case.bidirectional else 1
    if case.form.startswith("packed"):
        pieces = [rand(n, case.I) for n in case.lengths]
    elif case.form == "unbatched":
        pieces = [rand(case.T, case.I)]
    elif case.form == "batch_first":
        pieces = [rand(case.B, case.T, case.I)]
    else:
        pieces = [rand(case.T, case.B, case.I)]
    hx = []
    if case.with_hx:
        shape = (D * case.L, case.H) if case.form == "unbatched" else (D * case.L, case.B, case.H)
        hx = [rand(*shape), rand(*shape)]
    for t in pieces + hx:
        t.requires_grad_()
    return pieces, hx


def forward(module, case, pieces, hx):
    """Returns (output tensor or packed data, hn, cn)."""
    if case.form.startswith("packed"):
        packed = pack_sequence(pieces, enforce_sorted=case.form == "packed_sorted")
        output, (hn, cn) = module(packed, tuple(hx) if hx else None)
        assert isinstance(output, torch.nn.utils.rnn.PackedSequence)
        assert torch.equal(output.batch_sizes, packed.batch_sizes)
        if packed.sorted_indices is None:
            assert output.sorted_indices is None
        else:
            assert torch.equal(output.sorted_indices, packed.sorted_indices)
            assert torch.equal(output.unsorted_indices, packed.unsorted_indices)
        return output.data, hn, cn
    output, (hn, cn) = module(pieces[0], tuple(hx) if hx else None)
    return output, hn, cn


def results_and_gradients(module_class, case, dtype, seed=0, **module_extra):
    torch.manual_seed(seed)
    module = module_class(case.I, case.H, **case.kwargs(**module_extra)).to(dtype)
    pieces, hx = make_inputs(case, dtype)
    results = forward(module, case, pieces, hx)
    g = torch.Generator().manual_seed(5)
    weights = [torch.randn(r.shape, generator=g, dtype=torch.float64).to(dtype) for r in results]
    loss = sum((w * r).sum() for w, r in zip(weights, results))
    leaves = pieces + hx + list(module.parameters())
    grads = torch.autograd.grad(loss, leaves)
    return [r.detach() for r in results], list(grads)


def max_diff(a, b):
    return (a.double() - b.double()).abs().max().item() if a.numel() else 0.0


SWEEP = random_cases(seed=31337, count=40) + [
    Case("packed_unsorted", T=4, B=18, I=21, H=17, L=2, bidirectional=True, bias=True,
         with_hx=True, lengths=[1 + (5 * b) % 4 for b in range(18)]),
    Case("batch_first", T=3, B=9, I=40, H=33, L=2, bidirectional=True, bias=True,
         with_hx=True, lengths=None),
]


@pytest.mark.parametrize("case", SWEEP, ids=str)
def test_float64_forward_and_gradients_match_torch(case):
    ours = results_and_gradients(lstmop.nn.LSTM, case, torch.float64)
    theirs = results_and_gradients(torch.nn.LSTM, case, torch.float64)
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, **TIGHT)


@pytest.mark.parametrize("case", SWEEP[::2], ids=str)
def test_float32_forward_and_gradients_as_accurate_as_torch(case):
    ours = results_and_gradients(lstmop.nn.LSTM, case, torch.float32)
    theirs = results_and_gradients(torch.nn.LSTM, case, torch.float32)
    exact = results_and_gradients(torch.nn.LSTM, case, torch.float64)
    eps = torch.finfo(torch.float32).eps
    for a, b, e in zip(ours[0] + ours[1], theirs[0] + theirs[1], exact[0] + exact[1]):
        bound = 4 * max_diff(b, e) + 4 * eps * max(1.0, e.abs().max().item())
        assert max_diff(a, e) <= bound


@pytest.mark.parametrize("kwargs", [
    dict(), dict(num_layers=3, bias=False), dict(batch_first=True, bidirectional=True),
    dict(num_layers=2, dropout=0.3, bidirectional=True)])
def test_parameters_initialisation_and_repr_are_torchs(kwargs):
    torch.manual_seed(3)
    ours = lstmop.nn.LSTM(5, 7, **kwargs)
    torch.manual_seed(3)
    theirs = torch.nn.LSTM(5, 7, **kwargs)
    assert isinstance(ours, torch.nn.LSTM)
    assert repr(ours) == repr(theirs)
    assert ours._flat_weights_names == theirs._flat_weights_names
    ours_params, theirs_params = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert list(ours_params) == list(theirs_params)
    for name, p in ours_params.items():
        assert torch.equal(p, theirs_params[name]), name


def test_keyword_and_positional_constructor_arguments():
    lstm = lstmop.nn.LSTM(input_size=3, hidden_size=4, num_layers=2, bias=False,
                          batch_first=True, dropout=0.1, bidirectional=True, proj_size=0,
                          device="cpu", dtype=torch.float64)
    assert (lstm.input_size, lstm.hidden_size, lstm.num_layers, lstm.bias, lstm.batch_first,
            lstm.dropout, lstm.bidirectional) == (3, 4, 2, False, True, 0.1, True)
    assert lstm.weight_ih_l1_reverse.dtype == torch.float64
    positional = lstmop.nn.LSTM(3, 4, 2, False, True, 0.1, True)
    assert repr(positional) == repr(lstm)


def test_state_dict_loads_both_ways():
    ours = lstmop.nn.LSTM(4, 3, num_layers=2, bidirectional=True)
    theirs = torch.nn.LSTM(4, 3, num_layers=2, bidirectional=True)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(5, 2, 4)
    torch.testing.assert_close(ours(x)[0], theirs(x)[0])
    fresh = torch.nn.LSTM(4, 3, num_layers=2, bidirectional=True)
    ours.load_state_dict(fresh.state_dict())
    assert list(ours.state_dict()) == list(fresh.state_dict())
    for (k, a), (_, b) in zip(ours.state_dict().items(), fresh.state_dict().items()):
        assert torch.equal(a, b), k
    torch.testing.assert_close(ours(x)[0], fresh(x)[0])


def test_proj_size_builds_torchs_projected_lstm():
    """proj_size > 0 is torch.nn.LSTM's LSTM with projections (tests/python/test_projections.py
    checks it in every mode); out-of-range values are torch's own ValueError."""
    lstm = lstmop.nn.LSTM(4, 8, proj_size=2)
    assert lstm.proj_size == 2 and lstm.weight_hr_l0.shape == (2, 8)
    output, (hn, cn) = lstm(torch.randn(3, 5, 4))
    assert output.shape == (3, 5, 2) and hn.shape == (1, 5, 2) and cn.shape == (1, 5, 8)
    for bad in (-1, 8):
        with pytest.raises(ValueError, match="proj_size"):  # torch's own check
            lstmop.nn.LSTM(4, 8, proj_size=bad)


def test_hidden_dimension_errors_are_torchs():
    lstm, reference = lstmop.nn.LSTM(3, 4), torch.nn.LSTM(3, 4)
    calls = [(torch.randn(5, 2, 3), (torch.zeros(2, 4), torch.zeros(2, 4))),
             (torch.randn(5, 3), (torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))),
             (torch.randn(5, 2, 3), (torch.zeros(1, 3, 4), torch.zeros(1, 3, 4))),
             (torch.randn(5, 2, 7), None)]
    for x, hx in calls:
        with pytest.raises(RuntimeError) as expected:
            reference(x, hx)
        with pytest.raises(RuntimeError) as got:
            lstm(x, hx)
        assert str(got.value) == str(expected.value)


def test_input_of_the_wrong_rank_is_rejected():
    # torch 1.13 raises RuntimeError, torch 2.x ValueError: lstmop raises a subclass of both.
    for error in (RuntimeError, ValueError):
        with pytest.raises(error, match="2D or 3D"):
            lstmop.nn.LSTM(3, 4)(torch.randn(2, 5, 2, 3))


@pytest.mark.parametrize("form", ["batched", "batch_first", "packed_unsorted"])
def test_dropout_in_training_matches_torch_exactly(form):
    """The module draws its masks on the tensors torch.nn.LSTM draws on, so with the same
    random state the results and gradients are torch's."""
    case = Case(form, T=5, B=3, I=4, H=3, L=3, bidirectional=True, bias=True, with_hx=True,
                lengths=[2, 5, 3])
    results = []
    for module_class in (lstmop.nn.LSTM, torch.nn.LSTM):
        torch.manual_seed(0)
        module = module_class(case.I, case.H, **case.kwargs(dropout=0.4)).double()
        pieces, hx = make_inputs(case, torch.float64)
        torch.manual_seed(42)
        out = forward(module, case, pieces, hx)
        grads = torch.autograd.grad(sum(r.sum() for r in out),
                                    pieces + hx + list(module.parameters()))
        results.append(list(out) + list(grads))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, **TIGHT)
    # And dropout did act: without it the output differs.
    torch.manual_seed(0)
    plain = lstmop.nn.LSTM(case.I, case.H, **case.kwargs()).double()
    pieces, hx = make_inputs(case, torch.float64)
    assert not torch.allclose(forward(plain, case, pieces, hx)[0], results[0][0])


def test_eval_mode_applies_no_dropout_and_still_differentiates():
    torch.manual_seed(0)
    ours = lstmop.nn.LSTM(3, 4, num_layers=2, dropout=0.5).double().eval()
    theirs = torch.nn.LSTM(3, 4, num_layers=2, dropout=0.5).double().eval()
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(4, 2, 3, dtype=torch.float64, requires_grad=True)
    a = ours(x)[0]
    b = theirs(x)[0]
    torch.testing.assert_close(a, b, **TIGHT)
    (ga,) = torch.autograd.grad(a.sum(), x)
    (gb,) = torch.autograd.grad(b.sum(), x)
    torch.testing.assert_close(ga, gb, **TIGHT)


def test_saved_activations_only_when_autograd_needs_them():
    """The op saves the activations (_lstm with train=True) only when grad mode is on and the
    input, hx or a parameter requires grad: decided at run time by its Autograd kernel."""
    T, B, H, L = 50, 2, 4, 2
    lstm = lstmop.nn.LSTM(3, H, num_layers=L)
    x = torch.randn(T, B, 3)
    h0 = torch.zeros(L, B, H, requires_grad=True)

    def no_grad():
        with torch.no_grad():
            lstm(x)

    def inference_mode():
        with torch.inference_mode():
            lstm(x)

    def frozen(*args):
        lstm.requires_grad_(False)
        try:
            lstm(*args)
        finally:
            lstm.requires_grad_(True)

    runs = [(no_grad, False), (inference_mode, False), (lambda: frozen(x), False),
            (lambda: frozen(x.requires_grad_()), True),                     # the input does
            (lambda: lstm(x.detach()), True),                               # the parameters do
            (lambda: frozen(x.detach(), (h0, torch.zeros(L, B, H))), True)]  # only hx does
    for run, train in runs:
        lc.assert_lstm_bytes(lc.lstm_op_calls(run), T, B, H, L, train)


def test_one_call_per_layer_only_with_dropout_in_training():
    lstm = lstmop.nn.LSTM(3, 4, num_layers=3, dropout=0.2)
    x = torch.randn(5, 2, 3)
    names = [name for name, _ in lc.lstm_op_calls(lambda: lstm(x))]
    assert names == ["lstmop::lstm"] + ["lstmop::_lstm"] * 3
    lstm.eval()
    names = [name for name, _ in lc.lstm_op_calls(lambda: lstm(x))]
    assert names == ["lstmop::lstm", "lstmop::_lstm"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_to_dtype(dtype):
    torch.manual_seed(0)
    lstm = lstmop.nn.LSTM(4, 5, num_layers=2, bidirectional=True)
    exact_module = torch.nn.LSTM(4, 5, num_layers=2, bidirectional=True).double()
    lstm = lstm.to(dtype)
    with torch.no_grad():
        for p, q in zip(exact_module.parameters(), lstm.parameters()):
            p.copy_(q.double())
    assert all(p.dtype == dtype for p in lstm.parameters())
    x = torch.randn(6, 3, 4).to(dtype).requires_grad_()
    output, (hn, cn) = lstm(x)
    assert output.dtype == hn.dtype == cn.dtype == dtype
    exact, _ = exact_module(x.detach().double())
    # One float32 computation rounded into `dtype` per layer: 4 ulps of `dtype` per layer.
    eps = torch.finfo(dtype).eps if dtype != torch.float64 else 1e-14
    assert max_diff(output, exact) <= 2 * 4 * eps
    output.sum().backward()
    assert x.grad.dtype == dtype and torch.isfinite(x.grad.float()).all()
    assert all(p.grad.dtype == dtype for p in lstm.parameters())


def test_bfloat16_matches_torch_bfloat16():
    torch.manual_seed(0)
    ours = lstmop.nn.LSTM(4, 5).to(torch.bfloat16)
    theirs = torch.nn.LSTM(4, 5).to(torch.bfloat16)
    theirs.load_state_dict(ours.state_dict())
    exact = torch.nn.LSTM(4, 5).double()
    exact.load_state_dict({k: v.double() for k, v in ours.state_dict().items()})
    x = torch.randn(6, 3, 4).to(torch.bfloat16)
    a, b, e = ours(x)[0], theirs(x)[0], exact(x.double())[0]
    # lstmop computes in float32 and rounds once: at least as accurate as torch's bfloat16.
    assert max_diff(a, e) <= max(max_diff(b, e), 4 * torch.finfo(torch.bfloat16).eps)


def test_short_training_loop_tracks_torch():
    """Ten SGD steps on a small sequence task: the losses (and the final weights) of
    lstmop.nn.LSTM and torch.nn.LSTM agree step for step."""
    losses = []
    finals = []
    for module_class in (lstmop.nn.LSTM, torch.nn.LSTM):
        torch.manual_seed(0)
        lstm = module_class(3, 6, num_layers=2, batch_first=True, bidirectional=True).double()
        head = torch.nn.Linear(12, 1).double()
        optimizer = torch.optim.SGD(list(lstm.parameters()) + list(head.parameters()), lr=0.1)
        g = torch.Generator().manual_seed(1)
        run = []
        for step in range(10):
            x = torch.randn(4, 7, 3, generator=g, dtype=torch.float64)
            target = x.sum(dim=(1, 2)).unsqueeze(1).tanh()
            output, _ = lstm(x)
            loss = torch.nn.functional.mse_loss(head(output[:, -1]), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            run.append(loss.item())
        losses.append(run)
        finals.append([p.detach().clone() for p in lstm.parameters()])
    ours, theirs = losses
    assert ours[-1] < ours[0]  # it learns
    for a, b in zip(ours, theirs):
        assert abs(a - b) <= 1e-12 * max(1.0, abs(b))
    for a, b in zip(*finals):
        torch.testing.assert_close(a, b, **TIGHT)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_hx", [False, True])
def test_unbatched_input_matches_torch(batch_first, with_hx):
    results = []
    for module_class in (lstmop.nn.LSTM, torch.nn.LSTM):
        torch.manual_seed(0)
        module = module_class(3, 4, num_layers=2, bidirectional=True,
                              batch_first=batch_first).double()
        g = torch.Generator().manual_seed(1)
        x = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
        hx = None
        if with_hx:
            hx = tuple(torch.randn(4, 4, generator=g, dtype=torch.float64, requires_grad=True)
                       for _ in range(2))
        output, (hn, cn) = module(x, hx)
        assert output.shape == (5, 8) and hn.shape == cn.shape == (4, 4)
        leaves = [x] + (list(hx) if hx else [])
        grads = torch.autograd.grad(output.sum() + hn.sum() + 2 * cn.sum(), leaves)
        results.append([output, hn, cn] + list(grads))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, **TIGHT)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_packed_sequences_run_on_the_packed_rows_with_the_padded_results(dtype):
    """A PackedSequence reaches the core as its packed rows, in inference and in training (one
    lstmop::lstm event, no _lstm call on padded copies); the outputs and every gradient are
    bitwise those of _lstm and its backward on the padded rows."""
    torch.manual_seed(0)
    L, H, I = 2, 12, 5
    lstm = lstmop.nn.LSTM(I, H, num_layers=L, bidirectional=True).to(dtype)
    lengths = [7, 6, 6, 3, 1]
    pieces = [torch.randn(n, I).to(dtype) for n in lengths]
    packed = pack_sequence(pieces, enforce_sorted=False)
    h0 = torch.randn(2 * L, len(lengths), H).to(dtype).requires_grad_()
    c0 = torch.randn(2 * L, len(lengths), H).to(dtype).requires_grad_()
    data = packed.data.detach().requires_grad_()
    inp = torch.nn.utils.rnn.PackedSequence(data, packed.batch_sizes, packed.sorted_indices,
                                            packed.unsorted_indices)

    def infer():
        with torch.no_grad():
            return lstm(inp, (h0, c0))

    assert [name for name, _ in lc.lstm_op_calls(infer)] == ["lstmop::lstm"]
    assert [name for name, _ in lc.lstm_op_calls(lambda: lstm(inp, (h0, c0)))] == ["lstmop::lstm"]
    output, (hn, cn) = infer()
    train_output, (train_hn, train_cn) = lstm(inp, (h0, c0))
    g = torch.Generator().manual_seed(1)
    weights = [torch.randn(t.shape, generator=g).to(dtype) for t in (output.data, hn, cn)]
    leaves = [data, h0, c0] + list(lstm.parameters())
    grads = torch.autograd.grad([train_output.data, train_hn, train_cn], leaves, weights)

    # _lstm on the padded rows, in the packed (sorted) order of the sequences.
    T, B = len(packed.batch_sizes), int(packed.batch_sizes[0])
    valid = torch.tensor([t * B + b for t in range(T) for b in range(int(packed.batch_sizes[t]))])
    padded_data = packed.data.detach().requires_grad_()
    padded = torch.zeros(T * B, I, dtype=dtype).index_copy(0, valid, padded_data)
    order, back = packed.sorted_indices, packed.unsorted_indices
    expected = torch.ops.lstmop._lstm(padded, [h0[:, order], c0[:, order]],
                                      list(lstm._flat_weights), True, L, 0.0, True, True,
                                      batch_sizes=packed.batch_sizes)
    expected_results = (expected[0][valid], expected[1][:, back], expected[2][:, back])
    for actual, exp in zip((output.data, hn, cn), expected_results):
        assert torch.equal(actual, exp.detach())
    for actual, exp in zip((train_output.data, train_hn, train_cn), expected_results):
        assert torch.equal(actual.detach(), exp.detach())
    expected_grads = torch.autograd.grad(
        expected_results, [padded_data, h0, c0] + list(lstm.parameters()), weights)
    for actual, exp in zip(grads, expected_grads):
        assert torch.equal(actual, exp)


def test_packed_sequence_gradients_are_differentiable_again():
    """The packed path's backward with create_graph=True goes through _lstm_backward's
    differentiable path: gradcheck and gradgradcheck hold on the packed data and hx."""
    torch.manual_seed(0)
    lstm = lstmop.nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
    pieces = [torch.randn(n, 3, dtype=torch.float64) for n in (4, 3, 1)]
    packed = pack_sequence(pieces, enforce_sorted=False)
    x = packed.data.detach().requires_grad_()
    h0 = torch.randn(4, 3, 4, dtype=torch.float64, requires_grad=True)

    def f(x, h0):
        inp = torch.nn.utils.rnn.PackedSequence(x, packed.batch_sizes, packed.sorted_indices,
                                                packed.unsorted_indices)
        output, (hn, cn) = lstm(inp, (h0, torch.zeros_like(h0)))
        return output.data, hn, cn

    assert torch.autograd.gradcheck(f, (x, h0))
    assert torch.autograd.gradgradcheck(f, (x, h0))


FORKED_CHILD_SCRIPT = r"""
import hashlib, os, sys, torch, lstmop.nn
torch.set_num_threads(2)
torch.manual_seed(0)
modules = [lstmop.nn.LSTM(256, 256), lstmop.nn.LSTM(64, 64, bidirectional=True)]
inputs = [torch.randn(20, 32, 256), torch.randn(20, 16, 64)]
def digest():
    with torch.no_grad():
        return [hashlib.sha256(m(x)[0].numpy().tobytes()).hexdigest()
                for m, x in zip(modules, inputs)]
parent = digest()
pid = os.fork()
if pid == 0:
    # No torch operation of its own here: torch's parallel operations wait forever in a child
    # forked after any OpenMP team ran in the parent (torch.nn.LSTM's as well as lstmop's).
    os._exit(0 if digest() == parent else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_runs_lstmop_after_two_thread_calls_in_the_parent():
    """The parent's 2-thread calls ran their second part on an OpenMP team; a child forked from
    it has libgomp's state but not its threads, so its calls take lstmop's helper thread (a team
    there would wait forever) and give the parent's bits."""
    result = subprocess.run([sys.executable, "-c", FORKED_CHILD_SCRIPT], timeout=120,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("hx_dtype", [None, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("packed", [False, True])
def test_autocast_runs_a_bfloat16_input_as_torch_does(hx_dtype, packed):
    """Inside torch.autocast("cpu"), a bfloat16 input into float32 parameters: the output and
    state dtypes are torch.nn.LSTM's (bfloat16, float32 with float32 hx), the values within
    bfloat16 rounding of torch's, the parameters' gradients float32 and close to torch's."""
    torch.manual_seed(0)
    m = lstmop.nn.LSTM(4, 5, num_layers=2, bidirectional=True)
    ref = torch.nn.LSTM(4, 5, num_layers=2, bidirectional=True)
    ref.load_state_dict(m.state_dict())
    x = torch.randn(6, 3, 4).bfloat16()
    hx = None if hx_dtype is None else tuple(torch.randn(4, 3, 5).to(hx_dtype) for _ in range(2))
    if packed:
        x = torch.nn.utils.rnn.pack_padded_sequence(x, [6, 5, 3])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, (h, c) = m(x, hx)
        ref_out, (ref_h, ref_c) = ref(x, hx)
    if packed:
        out, ref_out = out.data, ref_out.data
    for mine, theirs in ((out, ref_out), (h, ref_h), (c, ref_c)):
        assert mine.dtype == theirs.dtype
        torch.testing.assert_close(mine.float(), theirs.float(), rtol=0, atol=2e-2)
    out.float().sum().backward()
    ref_out.float().sum().backward()
    # The gradients against float64 on the same values (the parameters as the products take
    # them: rounded to bfloat16 where the call computes in bfloat16): lstmop's error at most
    # 1.25x torch's (bfloat16 gradients differ by a few of their units in the last place).
    compute = out.dtype
    exact = torch.nn.LSTM(4, 5, num_layers=2, bidirectional=True).double()
    with torch.no_grad():
        for e, p in zip(exact.parameters(), m.parameters()):
            e.copy_(p.to(compute).double())
    x64 = x.data.double() if packed else x.double()
    if packed:
        x64 = torch.nn.utils.rnn.PackedSequence(x64, x.batch_sizes)
    hx64 = None if hx is None else tuple(h.to(compute).double() for h in hx)
    exact_out = exact(x64, hx64)[0]
    (exact_out.data if packed else exact_out).sum().backward()
    for p, q, e in zip(m.parameters(), ref.parameters(), exact.parameters()):
        assert p.grad.dtype == torch.float32
        mine = (p.grad.double() - e.grad).abs().max().item()
        theirs = (q.grad.double() - e.grad).abs().max().item()
        assert mine <= 1.25 * theirs + 1e-3 * e.grad.abs().max().item(), (mine, theirs)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # a float32 input: no cast, in both
        assert m(torch.randn(6, 3, 4))[0].dtype == ref(torch.randn(6, 3, 4))[0].dtype


# ------------------------------------------------------------------------------------------
# What the backward keeps of the parameters, and the gradients torch leaves None
# ------------------------------------------------------------------------------------------

def _run_pair(build, forward, loss_of):
    """(torch's, lstmop's) parameter gradients after build(cls) then loss_of(forward(m)).backward(),
    each under the same seed (same weights, same dropout masks)."""
    results = []
    for cls in (torch.nn.LSTM, lstmop.nn.LSTM):
        torch.manual_seed(0)
        m = build(cls)
        torch.manual_seed(1)
        loss_of(forward(m), m).backward()
        results.append({name: p.grad for name, p in m.named_parameters()})
    return results


def _sequences(packed, T, B=3, I=3):
    g = torch.Generator().manual_seed(5)
    if packed:
        # Lengths T, T-1, ... (at most B sequences, at least one).
        return pack_sequence([torch.randn(n, I, dtype=torch.float64, generator=g)
                              for n in range(T, max(T - B, 0), -1)])
    return torch.randn(T, B, I, dtype=torch.float64, generator=g)


BACKWARD_FORMS = [  # (constructor kwargs, packed input)
    (dict(), False), (dict(proj_size=2), False), (dict(), True), (dict(proj_size=2), True),
    (dict(num_layers=2, dropout=0.5, proj_size=2), False),  # one call per layer
    (dict(num_layers=2, bidirectional=True, proj_size=2), True),
]


@pytest.mark.parametrize("kwargs,packed", BACKWARD_FORMS)
def test_a_bias_changed_in_place_before_the_backward_is_fine_as_in_torch(kwargs, packed):
    """torch.nn.LSTM's backward never reads the biases, so e.g. an optimizer step on the biases
    alone between forward and backward does not fail there; lstmop saves the weights (an
    in-place change of one of them fails in both) but not the biases, and its gradients are
    torch's."""
    x = _sequences(packed, T=4)

    def loss_of(result, m):
        with torch.no_grad():
            for name, p in m.named_parameters():
                if name.startswith("bias"):
                    p.add_(0.25)
        out = result[0].data if packed else result[0]
        return out.square().sum() + result[1][1].sum()

    theirs, ours = _run_pair(lambda cls: cls(3, 4, **kwargs).double(), lambda m: m(x), loss_of)
    assert theirs.keys() == ours.keys()
    for name in theirs:
        torch.testing.assert_close(ours[name], theirs[name], **TIGHT, msg=name)


@pytest.mark.parametrize("packed", [False, True])
def test_a_weight_changed_in_place_before_the_backward_fails_as_in_torch(packed):
    x = _sequences(packed, T=4)
    for cls in (torch.nn.LSTM, lstmop.nn.LSTM):
        m = cls(3, 4).double()
        out = m(x)[0]
        with torch.no_grad():
            m.weight_hh_l0.add_(0.25)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (out.data if packed else out).sum().backward()


@pytest.mark.parametrize("packed", [False, True])
def test_create_graph_after_a_bias_changed_in_place_is_refused(packed):
    """A backward with create_graph=True recomputes the forward, from the biases too: after an
    in-place change it refuses (torch's version-check message) instead of differentiating other
    gates than the forward's. torch.nn.LSTM, which saves the gates, runs it (docs/nn.LSTM.md,
    "How it differs")."""
    x = _sequences(packed, T=4)
    m = lstmop.nn.LSTM(3, 4).double()
    out = m(x)[0]
    with torch.no_grad():
        m.bias_ih_l0.add_(0.25)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*bias"):
        torch.autograd.grad((out.data if packed else out).sum(), list(m.parameters()),
                            create_graph=True)


def _none_gradients(grads):
    return sorted(name for name, g in grads.items() if g is None)


@pytest.mark.parametrize("kwargs,packed", BACKWARD_FORMS)
@pytest.mark.parametrize("T", [1, 2])
@pytest.mark.parametrize("through", ["c_n", "h_n", "output"])
def test_gradients_torch_leaves_none_are_none(kwargs, packed, T, through):
    """With projections, one step and a loss through c_n alone, the last layer's w_hr takes no
    part (it only makes h, which no later step reads): torch leaves its grad None (so an
    optimizer skips it, weight decay included); so does lstmop. Every other gradient is a
    tensor in both, equal to torch's."""
    x = _sequences(packed, T=T)

    def loss_of(result, m):
        out, (hn, cn) = result
        picked = {"c_n": cn, "h_n": hn, "output": out.data if packed else out}[through]
        return picked.square().sum()

    theirs, ours = _run_pair(lambda cls: cls(3, 4, **kwargs).double(), lambda m: m(x), loss_of)
    assert _none_gradients(ours) == _none_gradients(theirs)
    if kwargs.get("proj_size") and T == 1 and through == "c_n":
        layers = kwargs.get("num_layers", 1)
        assert any(name.startswith(f"weight_hr_l{layers - 1}") for name in _none_gradients(ours))
    for name, g in theirs.items():
        if g is not None:
            torch.testing.assert_close(ours[name], g, **TIGHT, msg=name)


def test_a_direct_lstm_op_call_keeps_the_contracts_zero_gradient():
    """The None of the test above is the module's (torch.nn.LSTM's graph); _lstm called directly
    gives the contract's derivative: a tensor for every parameter, zeros for that w_hr."""
    torch.manual_seed(0)
    m = torch.nn.LSTM(3, 4, num_layers=2, proj_size=2).double()
    params = [p.detach().requires_grad_() for p in m._flat_weights]
    x = torch.randn(1, 2, 3, dtype=torch.float64)
    result = torch.ops.lstmop._lstm(x, [], params, True, 2, 0.0, True, False)
    grads = torch.autograd.grad(result[2].sum(), params)  # allow_unused=False: none is None
    assert m._flat_weights_names[-1] == "weight_hr_l1"
    assert torch.count_nonzero(grads[-1]) == 0
    assert grads[-1].shape == params[-1].shape and torch.count_nonzero(grads[0]) > 0


# ------------------------------------------------------------------------------------------
# Where torch.nn.LSTM goes: FX, ONNX export, a narrower c_0
# ------------------------------------------------------------------------------------------

class _Head(torch.nn.Module):
    def __init__(self, cls, **kwargs):
        super().__init__()
        self.lstm = cls(4, 6, **kwargs)
        self.head = torch.nn.Linear(12 if kwargs.get("bidirectional") else 6, 2)

    def forward(self, x):
        result = self.lstm(x)  # indexed: FX cannot unpack a node's result (torch 1.13, Python 3.11)
        return self.head(result[0]) + result[1][1].sum()


@pytest.mark.parametrize("kwargs", [dict(), dict(num_layers=2, bidirectional=True)])
def test_fx_symbolic_trace_keeps_the_module_whole_as_for_torch(kwargs):
    """torch.fx's tracer keeps torch.nn's modules whole (one call_module node); lstmop.nn.LSTM
    is such a node too, and the GraphModule computes what the module computes."""
    import torch.fx
    torch.manual_seed(0)
    ours = _Head(lstmop.nn.LSTM, **kwargs)
    theirs = _Head(torch.nn.LSTM, **kwargs)
    theirs.load_state_dict(ours.state_dict())
    graph_ours, graph_theirs = torch.fx.symbolic_trace(ours), torch.fx.symbolic_trace(theirs)
    nodes = [(n.op, str(n.target)) for n in graph_ours.graph.nodes]
    assert nodes == [(n.op, str(n.target)) for n in graph_theirs.graph.nodes]
    assert ("call_module", "lstm") in nodes
    x = torch.randn(5, 3, 4)
    assert torch.equal(graph_ours(x), ours(x))
    torch.testing.assert_close(graph_ours(x), graph_theirs(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [dict(), dict(num_layers=2, bidirectional=True,
                                                 batch_first=True)])
def test_onnx_export_is_torchs_own(kwargs):
    """ONNX has no lstmop op: under torch.onnx.export the module records torch.nn.LSTM's forward,
    so the file is byte for byte the one torch.nn.LSTM with the same weights exports."""
    import io
    import warnings
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(4, 6, **kwargs)
    ours = lstmop.nn.LSTM(4, 6, **kwargs)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(5, 3, 4)
    files = []
    for m in (theirs, ours):
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's own export warnings (batch sizes, ...)
            torch.onnx.export(m, (x,), buffer, input_names=["x"])
        files.append(buffer.getvalue())
    assert len(files[0]) > 1000 and files[0] == files[1]
    # Outside the export the op runs again.
    assert torch.equal(ours(x)[0], ours(x)[0])


@pytest.mark.parametrize("module_dtype,c0_dtype", [(torch.float64, torch.float32),
                                                   (torch.float32, torch.float16),
                                                   (torch.float32, torch.bfloat16)])
@pytest.mark.parametrize("packed", [False, True])
def test_a_narrower_c0_is_promoted_as_torch_does(module_dtype, c0_dtype, packed):
    """torch.nn.LSTM's cell promotes c_0 with its gates: a c_0 of a narrower floating dtype runs,
    c_n comes in the module's dtype, c_0's gradient in its own; lstmop alike."""
    torch.manual_seed(0)
    results = []
    for cls in (torch.nn.LSTM, lstmop.nn.LSTM):
        torch.manual_seed(0)
        m = cls(4, 6).to(module_dtype)
        g = torch.Generator().manual_seed(3)
        x = torch.randn(5, 3, 4, generator=g).to(module_dtype)
        if packed:
            x = pack_sequence([x[:, 0], x[:4, 1], x[:2, 2]])
        h0 = torch.randn(1, 3, 6, generator=g).to(module_dtype)
        c0 = torch.randn(1, 3, 6, generator=g).to(c0_dtype).requires_grad_()
        out, (hn, cn) = m(x, (h0, c0))
        out = out.data if packed else out
        (out.sum() + cn.sum()).backward()
        results.append((out, hn, cn, c0.grad, m.weight_hh_l0.grad))
    for theirs, ours in zip(*results):
        assert ours.dtype == theirs.dtype
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
