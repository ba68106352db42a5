"""lstmop.nn.LSTM where users take a torch.nn.LSTM besides calling it: copied (copy.deepcopy),
pickled, saved whole with torch.save, with its weights reparametrized (weight_norm,
torch.nn.utils.parametrize), called with other weights (functional_call) and with a parameter
replaced, under activation checkpointing and saved-tensor hooks. docs/nn.LSTM.md says the parameters are read by name at every call; these tests hold
it to that: every result is compared, in float64, with a plain torch.nn.LSTM that holds the
weights the call should use."""
import copy
import io
import pickle

import pytest
import torch
import torch.nn.utils.parametrize as parametrize

import lstmop

TIGHT = dict(rtol=1e-12, atol=1e-12)
CONFIG = dict(input_size=3, hidden_size=5, num_layers=2, bidirectional=True)


def _pair(seed=0):
    """lstmop.nn.LSTM and torch.nn.LSTM with the same float64 weights."""
    torch.manual_seed(seed)
    reference = torch.nn.LSTM(**CONFIG).double()
    module = lstmop.nn.LSTM(**CONFIG).double()
    module.load_state_dict(reference.state_dict())
    return module, reference


def _input(seed=1):
    torch.manual_seed(seed)
    return torch.randn(4, 2, CONFIG["input_size"], dtype=torch.float64)


def _plain_with(weights):
    """A torch.nn.LSTM holding `weights` (name -> tensor) as its parameters."""
    plain = torch.nn.LSTM(**CONFIG).double()
    with torch.no_grad():
        for name, value in weights.items():
            getattr(plain, name).copy_(value)
    return plain


def _effective_weights(module):
    """What the module's parameter names give now (parametrizations applied)."""
    return {name: getattr(module, name).detach().clone() for name in module._flat_weights_names}


def _assert_outputs_equal(got, want):
    out, (h, c) = got
    want_out, (want_h, want_c) = want
    torch.testing.assert_close(out, want_out, **TIGHT)
    torch.testing.assert_close(h, want_h, **TIGHT)
    torch.testing.assert_close(c, want_c, **TIGHT)


def test_deepcopy_computes_the_same_and_is_independent():
    module, reference = _pair()
    x = _input()
    twin = copy.deepcopy(module)
    assert type(twin) is lstmop.nn.LSTM
    _assert_outputs_equal(twin(x), reference(x))
    with torch.no_grad():
        twin.weight_hh_l0.mul_(2.0)  # the copy's parameters are its own
    _assert_outputs_equal(module(x), reference(x))
    assert not torch.allclose(twin(x)[0], module(x)[0])


def test_pickle_round_trip():
    module, reference = _pair()
    x = _input()
    restored = pickle.loads(pickle.dumps(module))
    assert type(restored) is lstmop.nn.LSTM
    _assert_outputs_equal(restored(x), reference(x))


def test_torch_save_of_the_whole_module():
    module, reference = _pair()
    x = _input()
    buffer = io.BytesIO()
    torch.save(module, buffer)
    buffer.seek(0)
    try:  # torch >= 2.6 loads weights only unless told otherwise; 1.13 has the argument too
        restored = torch.load(buffer, weights_only=False)
    except TypeError:
        restored = torch.load(buffer)
    assert type(restored) is lstmop.nn.LSTM
    _assert_outputs_equal(restored(x), reference(x))


def test_weight_norm_forward_and_gradients_as_torch():
    module, reference = _pair()
    module = torch.nn.utils.weight_norm(module, "weight_hh_l0")
    reference = torch.nn.utils.weight_norm(reference, "weight_hh_l0")
    module.load_state_dict(reference.state_dict())
    with torch.no_grad():  # a g other than the norm, so that the reparametrization shows
        module.weight_hh_l0_g.mul_(0.5)
        reference.weight_hh_l0_g.mul_(0.5)
    x = _input()
    got, want = module(x), reference(x)
    _assert_outputs_equal(got, want)
    _assert_outputs_equal(got, _plain_with(_effective_weights(reference))(x))
    grads = torch.autograd.grad(got[0].sum(), [module.weight_hh_l0_g, module.weight_hh_l0_v])
    want_grads = torch.autograd.grad(want[0].sum(),
                                     [reference.weight_hh_l0_g, reference.weight_hh_l0_v])
    for g, w in zip(grads, want_grads):
        torch.testing.assert_close(g, w, **TIGHT)


class _Scale(torch.nn.Module):
    def forward(self, weight):
        return 0.5 * weight


def test_parametrization_is_applied_and_its_gradient_reaches_the_original():
    module, _ = _pair()
    parametrize.register_parametrization(module, "weight_hh_l1_reverse", _Scale())
    effective = _effective_weights(module)
    original = module.parametrizations.weight_hh_l1_reverse.original
    torch.testing.assert_close(effective["weight_hh_l1_reverse"], 0.5 * original.detach(), **TIGHT)
    x = _input()
    plain = _plain_with(effective)
    got, want = module(x), plain(x)
    _assert_outputs_equal(got, want)
    (grad,) = torch.autograd.grad(got[0].sum(), [original])
    (want_grad,) = torch.autograd.grad(want[0].sum(), [plain.weight_hh_l1_reverse])
    torch.testing.assert_close(grad, 0.5 * want_grad, **TIGHT)


def _functional_call():
    try:
        from torch.func import functional_call  # torch >= 2.0
    except ImportError:
        from torch.nn.utils.stateless import functional_call  # torch 1.13
    return functional_call


def test_functional_call_uses_the_weights_it_is_given():
    module, reference = _pair()
    torch.manual_seed(3)
    given = {"weight_ih_l1": torch.randn(4 * 5, 10, dtype=torch.float64),
             "bias_hh_l0_reverse": torch.randn(4 * 5, dtype=torch.float64)}
    x = _input()
    got = _functional_call()(module, given, (x,))
    weights = _effective_weights(module)
    weights.update(given)
    _assert_outputs_equal(got, _plain_with(weights)(x))
    _assert_outputs_equal(module(x), reference(x))  # the module's own weights untouched


def test_a_replaced_parameter_takes_effect():
    module, _ = _pair()
    torch.manual_seed(4)
    module.weight_ih_l0 = torch.nn.Parameter(torch.randn(4 * 5, 3, dtype=torch.float64))
    x = _input()
    _assert_outputs_equal(module(x), _plain_with(_effective_weights(module))(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_deepcopy_keeps_the_dtype(dtype):
    module, _ = _pair()
    module = module.to(dtype)
    twin = copy.deepcopy(module)
    x = _input().to(dtype)
    assert all(p.dtype == dtype for p in twin.parameters())
    assert torch.equal(twin(x)[0], module(x)[0])


def _gradients(module, x, run):
    """Gradients of the input and every parameter of sum(run(module, x)^2)."""
    module.zero_grad()
    leaf = x.clone().requires_grad_()
    run(module, leaf).pow(2).sum().backward()
    return [leaf.grad] + [p.grad.clone() for p in module.parameters()]


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_activation_checkpointing_gives_torchs_gradients(reentrant, dropout):
    """torch.utils.checkpoint recomputes the forward in the backward (reentrant: a second
    forward; non-reentrant: saved-tensor hooks); with dropout, the RNG state it restores gives
    the forward's masks again."""
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(0)
    reference = torch.nn.LSTM(**CONFIG, dropout=dropout).double()
    module = lstmop.nn.LSTM(**CONFIG, dropout=dropout).double()
    module.load_state_dict(reference.state_dict())
    x = _input()

    def run(m, leaf):
        torch.manual_seed(5)
        try:
            return checkpoint(lambda a: m(a)[0], leaf, use_reentrant=reentrant)
        except TypeError:  # a torch whose checkpoint has no use_reentrant: reentrant only
            if not reentrant:
                pytest.fail("torch.utils.checkpoint without use_reentrant")
            return checkpoint(lambda a: m(a)[0], leaf)

    for got, want in zip(_gradients(module, x, run), _gradients(reference, x, run)):
        torch.testing.assert_close(got, want, **TIGHT)


def test_saved_tensor_hooks_see_lstmops_saved_tensors():
    """torch.autograd.graph.saved_tensors_hooks (what save_on_cpu and offloading use) apply
    to what the op saves for its backward, and the backward uses what unpack returns."""
    module, reference = _pair()
    x = _input()
    packed, unpacked = [], []

    def pack(t):
        packed.append(t)
        return t.clone()

    def unpack(t):
        unpacked.append(t)
        return t

    def run(m, leaf):
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            return m(leaf)[0]

    got = _gradients(module, x, run)
    assert packed and len(unpacked) == len(packed)
    for g, w in zip(got, _gradients(reference, x, lambda m, leaf: m(leaf)[0])):
        torch.testing.assert_close(g, w, **TIGHT)
    with torch.autograd.graph.save_on_cpu():
        got = _gradients(module, x, lambda m, leaf: m(leaf)[0])
    for g, w in zip(got, _gradients(reference, x, lambda m, leaf: m(leaf)[0])):
        torch.testing.assert_close(g, w, **TIGHT)


def test_pruning_and_spectral_norm_weights_are_used():
    """torch.nn.utils.prune and spectral_norm set the weight as a plain attribute before each
    call (a forward pre-hook): the call uses it, and the gradient reaches weight_orig."""
    import torch.nn.utils.prune as prune
    module, reference = _pair()
    x = _input()
    for m in (module, reference):
        prune.l1_unstructured(m, "weight_hh_l0", amount=0.4)
    got, want = module(x), reference(x)
    _assert_outputs_equal(got, want)
    got[0].sum().backward()
    want[0].sum().backward()
    assert module.weight_hh_l0.eq(0).any()
    torch.testing.assert_close(module.weight_hh_l0_orig.grad, reference.weight_hh_l0_orig.grad,
                               **TIGHT)
    for m in (module, reference):
        prune.remove(m, "weight_hh_l0")
    _assert_outputs_equal(module(x), reference(x))

    module, reference = _pair()
    for m in (module, reference):
        torch.manual_seed(3)  # the power iteration's starting vectors
        torch.nn.utils.spectral_norm(m, "weight_hh_l0")
        m.eval()
    got = module(x)  # the pre-hook sets the normalised weight, the call uses it
    assert not torch.allclose(module.weight_hh_l0, module.weight_hh_l0_orig)
    _assert_outputs_equal(got, _plain_with(_effective_weights(module))(x))
    _assert_outputs_equal(got, reference(x))
