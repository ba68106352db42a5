"""lstmop.nn.LSTM: a drop-in replacement for torch.nn.LSTM that runs on lstmop's ops.

The class derives from torch.nn.LSTM, so constructor arguments, parameter names, shapes,
initialisation, state_dict keys, .to()/.double()/.half(), repr and isinstance checks are
torch's own; only forward() differs: it calls torch.ops.lstmop._lstm (through
lstmop.functional.lstm). Its docstring is docs/nn.LSTM.md.
"""
import operator

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import PackedSequence

from . import _docs
from . import functional
from .errors import IndexValueError, RuntimeTypeError, RuntimeValueError


def _valid_rows(batch_sizes, batch, device):
    """Row indices t*B + b (b < batch_sizes[t]) of the padded (T*B, .) layout, in packed order.

    A PackedSequence's data rows are ordered time step by time step, and within a step by
    sequence, exactly like these indices: padded[valid_rows] == data. Shape (sum(batch_sizes),).
    """
    steps = batch_sizes.numel()
    mask = torch.arange(batch).unsqueeze(0) < batch_sizes.unsqueeze(1)  # (T, B)
    rows = torch.arange(steps * batch).masked_select(mask.reshape(-1))
    return rows.to(device)


def _pad_rows(data, valid_rows, total_rows):
    """(N, F) packed rows -> (total_rows, F) padded rows, zeros in the invalid rows."""
    padded = data.new_zeros((total_rows, data.size(1)))
    return padded.index_copy(0, valid_rows, data)


def _check_packed_batch_sizes(batch_sizes, rows):
    """A PackedSequence's batch_sizes must describe its data before the padded layout is built:
    1-D int64, non-empty, entries in [1, batch_sizes[0]], non-increasing, summing to rows.
    Empty: IndexError, as torch.nn.LSTM; otherwise RuntimeError, as torch's op."""
    if batch_sizes.dtype != torch.int64:
        raise RuntimeError(f"batch_sizes must have dtype torch.int64, got {batch_sizes.dtype}")
    if batch_sizes.dim() != 1:
        raise RuntimeError(f"batch_sizes must be 1-D, got {batch_sizes.dim()}-D "
                           f"{list(batch_sizes.shape)}")
    if batch_sizes.numel() == 0:
        raise IndexError("batch_sizes must have at least one entry, got an empty tensor")
    values = batch_sizes.tolist()
    batch = values[0]
    for t, size in enumerate(values):
        if size < 1 or size > max(batch, 1):
            raise RuntimeError(f"batch_sizes[{t}] must be in [1, {max(batch, 1)}], got {size}")
        if t > 0 and size > values[t - 1]:
            raise RuntimeError(f"batch_sizes must be non-increasing, got batch_sizes[{t - 1}] = "
                               f"{values[t - 1]} < batch_sizes[{t}] = {size}")
    if sum(values) != rows:
        raise RuntimeError(f"batch_sizes sums to {sum(values)} but the PackedSequence's data "
                           f"has {rows} rows")


# The module's own checks raise the exception class torch.nn.LSTM raises for the same input
# (lstmop.errors where torch 1.13 and 2.x differ).


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
    tensors, RuntimeError for more, and RuntimeError or TypeError for a non-tuple."""
    if hx is None:
        return
    if not isinstance(hx, (tuple, list)):
        raise RuntimeTypeError(f"hx must be a tuple (h_0, c_0) of 2 tensors, got a "
                               f"{type(hx).__name__}")
    message = f"hx must be a tuple (h_0, c_0) of 2 tensors, got {len(hx)}"
    if len(hx) < 2:
        raise IndexError(message)
    if len(hx) > 2:
        raise RuntimeError(message)


def _check_input_rank(input):
    """torch 1.13 fails with RuntimeError, torch 2.x with ValueError (this message)."""
    if input.dim() not in (2, 3):
        raise RuntimeValueError(
            f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")


def _check_input_dtype(input, weight):
    """The input's dtype is the parameters'. torch 1.13 fails with RuntimeError (from its op),
    torch 2.x with ValueError."""
    if input.dtype != weight.dtype:
        raise RuntimeValueError(f"input must have dtype {weight.dtype} (the parameters' dtype), "
                                f"got {input.dtype}")


class LSTM(torch.nn.LSTM):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        if proj_size > 0:
            raise NotImplementedError(
                "lstmop.nn.LSTM does not implement proj_size > 0 (LSTM with projections), "
                f"got proj_size={proj_size}; use torch.nn.LSTM for a projected LSTM")
        super().__init__(input_size, hidden_size, num_layers=_checked_num_layers(num_layers),
                         bias=bias, batch_first=batch_first, dropout=dropout,
                         bidirectional=bidirectional, proj_size=proj_size, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):
        _check_hx_container(hx)
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        return self._forward_tensor(input, hx)

    # -- input forms ------------------------------------------------------------------------

    def _forward_tensor(self, input, hx):
        _check_input_rank(input)
        _check_input_dtype(input, self._flat_weights[0])
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        if hx is not None:
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
            self.check_forward_args(input, hx, None)
        else:
            self.check_input(input, None)

        output, hy, cy = self._run(input, hx, batch_first=self.batch_first)
        if not is_batched:
            output = output.squeeze(batch_dim)
            hy, cy = hy.squeeze(1), cy.squeeze(1)
        return output, (hy, cy)

    def _forward_packed(self, packed, hx):
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        _check_packed_batch_sizes(batch_sizes, data.size(0) if data.dim() > 0 else 0)
        _check_input_dtype(data, self._flat_weights[0])
        batch = int(batch_sizes[0])
        if hx is not None:
            # Row b of hx belongs to sequence b as the caller numbers them; the op sees them in
            # the packed (sorted) order, and the results go back to the caller's order.
            hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(data, hx, batch_sizes)
        else:
            self.check_input(data, batch_sizes)
        steps = batch_sizes.numel()
        valid_rows = _valid_rows(batch_sizes, batch, data.device)
        # The op's variable-length mode wants (T*B, I) rows laid out like (T, B, I).
        padded = _pad_rows(data, valid_rows, steps * batch)
        output, hy, cy = self._run(padded, hx, batch_first=False, batch_sizes=batch_sizes,
                                   valid_rows=valid_rows)
        output = PackedSequence(output.index_select(0, valid_rows), batch_sizes, sorted_indices,
                                unsorted_indices)
        return output, self.permute_hidden((hy, cy), unsorted_indices)

    # -- the op calls -----------------------------------------------------------------------

    def _run(self, input, hx, batch_first, batch_sizes=None, valid_rows=None):
        """Runs all layers. Returns (output, hy, cy) in the op's layout for this input form.

        The op never applies dropout (it gets dropout=0); this module applies it between layers
        in training mode, which needs one op call per layer.
        """
        params = [getattr(self, name) for name in self._flat_weights_names]
        hx_list = [] if hx is None else [hx[0], hx[1]]  # [] = zero initial states
        # The op saves activations (train=True) only when autograd will need them.
        save_activations = torch.is_grad_enabled() and (
            input.requires_grad or any(p.requires_grad for p in params)
            or any(h.requires_grad for h in hx_list))
        if not (self.training and self.dropout > 0 and self.num_layers > 1):
            result = functional.lstm(input, hx_list, params, self.bias, self.num_layers, 0.0,
                                     save_activations, self.bidirectional,
                                     batch_first=batch_first, batch_sizes=batch_sizes)
            return result[0], result[1], result[2]

        # Dropout between layers. torch.nn.LSTM draws its masks on the time-major (T, B, D*H)
        # layer output, or on a PackedSequence's (N, D*H) data: the same shapes here, so the
        # same random stream gives the same masks.
        if batch_sizes is None and batch_first:
            input = input.transpose(0, 1)  # a view: the op reads any strides
        directions = 2 if self.bidirectional else 1
        per_layer = len(params) // self.num_layers
        layer_input = input
        hy, cy = [], []
        for layer in range(self.num_layers):
            slots = slice(layer * directions, (layer + 1) * directions)
            layer_hx = [] if hx is None else [hx_list[0][slots], hx_list[1][slots]]
            layer_params = params[layer * per_layer:(layer + 1) * per_layer]
            result = functional.lstm(layer_input, layer_hx, layer_params, self.bias, 1, 0.0,
                                     save_activations, self.bidirectional, batch_first=False,
                                     batch_sizes=batch_sizes)
            layer_input = result[0]
            hy.append(result[1])
            cy.append(result[2])
            if layer + 1 < self.num_layers:
                if batch_sizes is None:
                    layer_input = F.dropout(layer_input, self.dropout, training=True)
                else:
                    data = F.dropout(layer_input.index_select(0, valid_rows), self.dropout,
                                     training=True)
                    layer_input = _pad_rows(data, valid_rows, layer_input.size(0))
        output = layer_input
        if batch_sizes is None and batch_first:
            output = output.transpose(0, 1)
        return output, torch.cat(hy, 0), torch.cat(cy, 0)


LSTM.__doc__ = _docs.page("nn.LSTM.md")
