"""lstmop.nn.LSTM: a drop-in replacement for torch.nn.LSTM that runs on lstmop's ops.

The class derives from torch.nn.LSTM, so constructor arguments, parameter names, shapes,
initialisation, state_dict keys, .to()/.double()/.half(), repr and isinstance checks are
torch's own; only forward() differs: it calls torch.ops.lstmop.lstm where torch calls
aten::lstm. forward() is written like torch's, in the subset of Python TorchScript compiles, so
torch.jit.script and torch.jit.trace work on models containing the module. Its docstring is
docs/nn.LSTM.md.
"""
import operator
from typing import List, Optional, Tuple, overload

import torch
from torch import Tensor
from torch.fx import Proxy
from torch.nn.utils.rnn import PackedSequence

from . import _docs
from .errors import IndexRuntimeTypeError, IndexValueError, RuntimeTypeError, RuntimeValueError

# Checks run in eager mode only (under `if not torch.jit.is_scripting()`): they use Python that
# TorchScript does not compile, and raise the exception classes torch.nn.LSTM raises for the
# same input (lstmop.errors). A scripted module checks the same things through torch's own
# checks and the op's, whose errors TorchScript reports as torch.jit.Error, as for torch.nn.LSTM.


def _checked_num_layers(num_layers):
    """num_layers as a Python int >= 1. torch.nn.LSTM fails with TypeError for a non-integer
    and with IndexError (torch 1.13) or ValueError (torch 2.x) for one below 1."""
    try:
        if isinstance(num_layers, bool):
            raise TypeError
        value = operator.index(num_layers)
    except TypeError:
        raise TypeError(f"num_layers must be an integer >= 1, got {num_layers!r}") from None
    if value < 1:
        raise IndexValueError(f"num_layers must be an integer >= 1, got {value}")
    return value


def _check_hx_container(hx):
    """hx is None or a tuple (h_0, c_0). torch.nn.LSTM fails with IndexError for fewer than two
    tensors, RuntimeError for more, and RuntimeError or TypeError for a non-tuple (IndexError
    too for a single tensor of fewer than 2 rows, whose hx[1] it indexes)."""
    if hx is None:
        return
    if not isinstance(hx, (tuple, list)):
        message = f"hx must be a tuple (h_0, c_0) of 2 tensors, got a {type(hx).__name__}"
        if isinstance(hx, torch.Tensor):
            message += f" of shape {tuple(hx.shape)}"
            if hx.dim() == 0 or hx.size(0) < 2:
                raise IndexRuntimeTypeError(message)
        raise RuntimeTypeError(message)
    message = f"hx must be a tuple (h_0, c_0) of 2 tensors, got {len(hx)}"
    if len(hx) < 2:
        raise IndexError(message)
    if len(hx) > 2:
        raise RuntimeError(message)


def _check_input_rank(input, batch_first):
    """torch 1.13 fails with RuntimeError, torch 2.x with ValueError (this message); for a 0-D
    input and batch_first False torch 1.13 fails with IndexError (its unsqueeze(1))."""
    if input.dim() not in (2, 3):
        error = IndexValueError if input.dim() == 0 and not batch_first else RuntimeValueError
        raise error(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")


def _check_unbatched_steps(input):
    """An unbatched input (L, input_size) needs L >= 1, as the op checks for batched ones; here,
    before the batch dimension is added, so that the message shows the shape the caller passed.
    torch.nn.LSTM fails with RuntimeError. (Not while tracing, where sizes are tensors: the op's
    own check stands there.)"""
    if not torch.jit.is_tracing() and input.size(0) == 0:
        raise RuntimeError("input must have at least one time step (T >= 1), got T = 0 in "
                           f"shape {list(input.shape)} (unbatched: (L, input_size))")


def _check_flags(module):
    """torch.nn.LSTM's op takes bias, batch_first and bidirectional as Python bools only: its
    constructor stores them as given and forward fails with TypeError for anything else (an
    int, a numpy bool, a tensor)."""
    for name in ("bias", "batch_first", "bidirectional"):
        value = getattr(module, name)
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool (True or False), got "
                            f"{type(value).__name__} {value!r}")


def _check_input_dtype(input, weight):
    """The input's dtype is the parameters'. torch 1.13 fails with RuntimeError (from its op),
    torch 2.x with ValueError."""
    if input.dtype != weight.dtype:
        raise RuntimeValueError(f"input must have dtype {weight.dtype} (the parameters' dtype), "
                                f"got {input.dtype}")


def _autocast_takes_a_device():
    """torch >= 2.4 asks torch.is_autocast_enabled for a device; earlier ones have
    torch.is_autocast_cpu_enabled (decided once: a failed call per forward costs an exception)."""
    try:
        torch.is_autocast_enabled("cpu")
    except TypeError:
        return False
    return True


_AUTOCAST_TAKES_A_DEVICE = _autocast_takes_a_device()
_OBJECT_GETATTRIBUTE = object.__getattribute__


def _autocast_dtype(input, hx, weight):
    """Inside torch.autocast on the CPU, an input of the autocast dtype into float32 parameters
    runs as torch.nn.LSTM runs it there: in the widest dtype of the input and hx (the autocast
    dtype without hx or with hx of that dtype, float32 with float32 hx), the parameters, hx and
    input cast to it (the gradients reach the float32 parameters through the casts). That
    dtype, else None."""
    if input.device.type != "cpu" or weight.dtype != torch.float32:
        return None
    if _AUTOCAST_TAKES_A_DEVICE:  # torch >= 2.4
        enabled = torch.is_autocast_enabled("cpu")
        dtype = torch.get_autocast_dtype("cpu") if enabled else None
    else:
        enabled = torch.is_autocast_cpu_enabled()
        dtype = torch.get_autocast_cpu_dtype() if enabled else None
    if not enabled or input.dtype != dtype:
        return None
    for h in hx if hx is not None else ():
        if torch.is_tensor(h) and h.is_floating_point():
            dtype = torch.promote_types(dtype, h.dtype)
    return dtype


def _check_packed_batch_sizes(batch_sizes):
    """What torch's own checks need of a PackedSequence's batch_sizes before they read
    batch_sizes[0]; the op checks its values. Empty: IndexError, as torch.nn.LSTM."""
    if batch_sizes.dtype != torch.int64:
        raise RuntimeError(f"batch_sizes must have dtype torch.int64, got {batch_sizes.dtype}")
    if batch_sizes.dim() != 1:
        raise RuntimeError(f"batch_sizes must be 1-D (T,), got {batch_sizes.dim()}-D "
                           f"{list(batch_sizes.shape)}")
    if batch_sizes.numel() == 0:
        raise IndexError("batch_sizes must have at least one entry (T >= 1), got an empty tensor")


def _widened_c0(input, hx):
    """torch.nn.LSTM's cell promotes c_0 with its float32 or float64 gates, so it accepts a c_0 of
    a narrower floating dtype than the input (float32 into float64, float16 or bfloat16 into
    float32) and returns c_n in the input's dtype: the same here, c_0 cast to the input's dtype
    (its gradient cast back). Any other dtype goes on to the op's check."""
    data = input.data if isinstance(input, PackedSequence) else input
    if hx is None or not torch.is_tensor(data) or not torch.is_tensor(hx[1]):
        return hx
    c0 = hx[1]
    if (c0.dtype != data.dtype and c0.is_floating_point() and data.is_floating_point()
            and torch.promote_types(c0.dtype, data.dtype) == data.dtype):
        return (hx[0], c0.to(data.dtype))
    return hx


def _fx_leaf_call(module, input, hx):
    """Under torch.fx.symbolic_trace the module is one call_module node, as torch.nn.LSTM is
    (FX's tracer keeps torch.nn's modules whole and would otherwise trace into this forward,
    whose checks branch on the input): that node's Proxy, or None where the module is the
    traced root itself (traced into, which fails as torch.nn.LSTM's forward fails)."""
    tracer = input.tracer
    try:
        path = tracer.path_of_module(module)
    except NameError:
        return None
    if not path:
        return None
    args = (input,) if hx is None else (input, hx)
    return tracer.create_proxy("call_module", path, args, {})


class LSTM(torch.nn.LSTM):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        # proj_size > 0 (LSTM with projections): torch.nn.LSTM's constructor checks it and
        # adds weight_hr_l{k}[_reverse] to every layer and direction, last in _flat_weights,
        # the order the op's params take (docs/lstm.md, "Projections").
        super().__init__(input_size, hidden_size, num_layers=_checked_num_layers(num_layers),
                         bias=bias, batch_first=batch_first, dropout=dropout,
                         bidirectional=bidirectional, proj_size=proj_size, device=device,
                         dtype=dtype)

    # The two forms of forward, for TorchScript (as torch.nn.LSTM declares them).
    @overload  # type: ignore[override]
    @torch._jit_internal._overload_method  # noqa: F811
    def forward(self, input: Tensor, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:  # noqa: F811
        pass

    @overload
    @torch._jit_internal._overload_method  # noqa: F811
    def forward(self, input: PackedSequence, hx: Optional[Tuple[Tensor, Tensor]] = None
                ) -> Tuple[PackedSequence, Tuple[Tensor, Tensor]]:  # noqa: F811
        pass

    def forward(self, input, hx=None):  # noqa: F811
        if not torch.jit.is_scripting():
            if torch.onnx.is_in_onnx_export():
                # ONNX has no lstmop op: the export records torch.nn.LSTM's own forward
                # (aten::lstm, the same model), which the exporter maps to ONNX's LSTM.
                return super().forward(input, hx)
            if isinstance(input, Proxy):
                traced = _fx_leaf_call(self, input, hx)
                if traced is not None:
                    return traced
        # The parameters as the module holds them now: in eager mode read by name, so that a
        # parameter replaced from outside (torch.func.functional_call, weight sharing) is used.
        weights = self._flat_weights
        if not torch.jit.is_scripting():
            _check_hx_container(hx)
            # A registered parameter straight from _parameters (what getattr finds there, without
            # Module.__getattr__'s Python call per parameter); otherwise what getattr gives:
            # parametrize's property, a weight_norm / prune / spectral_norm attribute. Not where
            # the class's attribute lookup is replaced (torch 1.13's functional_call swaps it).
            if type(self).__getattribute__ is _OBJECT_GETATTRIBUTE:
                registered = self._parameters
                weights = [registered[name] if name in registered else getattr(self, name)
                           for name in self._flat_weights_names]
            else:
                weights = [getattr(self, name) for name in self._flat_weights_names]
            data = input.data if isinstance(input, PackedSequence) else input
            autocast = _autocast_dtype(data, hx, weights[0]) if torch.is_tensor(data) else None
            if autocast is not None:
                weights = [w.to(autocast) for w in weights]
                if hx is not None:
                    hx = tuple(h.to(autocast) if torch.is_tensor(h) and h.is_floating_point()
                               else h for h in hx)
                input = input.to(autocast)  # a PackedSequence too
            hx = _widened_c0(input, hx)
        orig_input = input
        # isinstance must be tested in a conditional for TorchScript (as in torch.nn.LSTM).
        batch_sizes = None
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if not torch.jit.is_scripting():
                _check_packed_batch_sizes(batch_sizes)
                _check_input_dtype(input, weights[0])
            is_batched = True
            batch_dim = 1
        else:
            if not torch.jit.is_scripting():
                _check_input_rank(input, self.batch_first)
                _check_input_dtype(input, weights[0])
            if input.dim() not in (2, 3):
                raise ValueError(
                    f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                if not torch.jit.is_scripting():
                    _check_unbatched_steps(input)
                input = input.unsqueeze(batch_dim)
            sorted_indices = None
            unsorted_indices = None

        hx_list: List[Tensor] = []  # [] = zero initial states, without building them
        if hx is not None:
            if batch_sizes is None:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError(
                            "For batched 3-D input, hx and cx should also be 3-D but got "
                            f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError(
                            "For unbatched 2-D input, hx and cx should also be 2-D but got "
                            f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            # Row b of hx belongs to sequence b as the caller numbers them; the op sees the
            # sequences in the packed (sorted) order.
            hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(input, hx, batch_sizes)
            hx_list = [hx[0], hx[1]]
        else:
            self.check_input(input, batch_sizes)

        if not torch.jit.is_scripting():
            _check_flags(self)
        output, hy, cy = torch.ops.lstmop.lstm(
            input, hx_list, weights, self.bias, self.num_layers, self.dropout, self.training,
            self.bidirectional, batch_first=self.batch_first, batch_sizes=batch_sizes)

        if isinstance(orig_input, PackedSequence):
            output_packed = PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices)
            return output_packed, self.permute_hidden((hy, cy), unsorted_indices)
        else:
            if not is_batched:
                output = output.squeeze(batch_dim)
                hy = hy.squeeze(1)
                cy = cy.squeeze(1)
            return output, (hy, cy)


LSTM.__doc__ = _docs.page("nn.LSTM.md")
