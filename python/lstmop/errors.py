"""Exception classes of lstmop.nn.LSTM for bad input that torch's versions report differently.

lstmop.nn.LSTM raises, for each bad input, the class torch.nn.LSTM raises for it, so that code
written against torch catches lstmop's errors too (docs/nn.LSTM.md, "Errors"). Where torch 1.13
and torch 2.x raise different classes for the same input, lstmop raises one of these, a subclass
of both; `except RuntimeError` and `except ValueError` alike catch a RuntimeValueError.
The messages are lstmop's: they name the argument, what was expected and what came.
"""


class RuntimeValueError(RuntimeError, ValueError):
    """torch 1.13 raises RuntimeError, torch 2.x ValueError (input rank, input dtype)."""


class IndexValueError(IndexError, ValueError):
    """torch 1.13 raises IndexError, torch 2.x ValueError (num_layers < 1)."""


class RuntimeTypeError(RuntimeError, TypeError):
    """torch raises RuntimeError or TypeError depending on the shape of what came (an hx that is
    not a tuple of two tensors)."""


class IndexRuntimeTypeError(IndexError, RuntimeError, TypeError):
    """A single tensor as hx whose first dimension has fewer than 2 entries (the mistake of
    passing h_0 alone, num_layers * directions being 1): torch.nn.LSTM indexes hx[1] and raises
    IndexError, or RuntimeError where its hidden-size check comes first (a PackedSequence)."""
