"""Thin functions over torch.ops.lstmop._lstm and torch.ops.lstmop._lstm_backward.

Their docstrings are docs/lstm.md and docs/lstm_backward.md.
"""
import torch

from . import _docs


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, *,
         batch_first=False, batch_sizes=None):
    return torch.ops.lstmop._lstm(input, list(hx), list(params), has_biases, num_layers,
                                  dropout, train, bidirectional, batch_first=batch_first,
                                  batch_sizes=batch_sizes)


def _zeros_for_missing_gradient(which, input, hx, params, h, has_biases, num_layers,
                                bidirectional):
    # The op reads an undefined gradient as zeros; Python cannot pass an undefined tensor
    # for a `Tensor` argument, so None becomes explicit zeros of the gradient's shape.
    if len(params) == 0 or input.dim() < 2:
        return input.new_empty((0,))  # let the op report the real problem
    hidden_size = params[0].size(0) // 4
    directions = 2 if bidirectional else 1
    # With projections (one more tensor per slot, w_hr (P, H) last) h is P wide, c H wide.
    plain = 4 if has_biases else 2
    projected = len(params) == (plain + 1) * directions * num_layers and params[plain].dim() == 2
    hidden_width = params[plain].size(0) if projected else hidden_size
    if which == "grad_y":
        return input.new_zeros(tuple(input.shape[:-1]) + (directions * hidden_width,))
    batch = hx[0].size(1) if len(hx) > 0 and hx[0].dim() == 3 else h.size(-2)
    width = hidden_width if which == "grad_hy" else hidden_size
    return input.new_zeros((directions * num_layers, batch, width))


def lstm_backward(grad_y, grad_hy, grad_cy, input, hx, params, i, j, f, o, h, c, tanhc,
                  has_biases, num_layers, dropout, train, bidirectional, *, batch_first=False,
                  batch_sizes=None):
    hx = list(hx)
    params = list(params)
    grads = {"grad_y": grad_y, "grad_hy": grad_hy, "grad_cy": grad_cy}
    for name, grad in grads.items():
        if grad is None:
            grads[name] = _zeros_for_missing_gradient(name, input, hx, params, h, has_biases,
                                                      num_layers, bidirectional)
    return torch.ops.lstmop._lstm_backward(
        grads["grad_y"], grads["grad_hy"], grads["grad_cy"], input, hx, params, i, j, f, o, h,
        c, tanhc, has_biases, num_layers, dropout, train, bidirectional,
        batch_first=batch_first, batch_sizes=batch_sizes)


lstm.__doc__ = _docs.page("lstm.md")
lstm_backward.__doc__ = _docs.page("lstm_backward.md")
# The ops themselves carry the same text (help(torch.ops.lstmop._lstm)).
for _op, _function in ((torch.ops.lstmop._lstm, lstm),
                       (torch.ops.lstmop._lstm_backward, lstm_backward)):
    for _target in (_op, _op.default):
        try:
            _target.__doc__ = _function.__doc__
        except (AttributeError, TypeError):  # a torch whose op objects refuse attributes
            pass
