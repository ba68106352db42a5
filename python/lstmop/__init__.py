"""lstmop: the LSTM operator pair `_lstm` / `_lstm_backward` for PyTorch on CPU.

Importing lstmop registers torch.ops.lstmop._lstm and torch.ops.lstmop._lstm_backward
(CPU, Meta and Autograd kernels; double backward), torch.ops.lstmop.lstm (the op lstmop.nn.LSTM
calls) and torch.ops.lstmop._lstm_aten (the forward in ATen operations). lstmop.lstm and
lstmop.lstm_backward are thin functions over the first two; lstmop.nn.LSTM replaces
torch.nn.LSTM, and lstmop.errors holds the exception classes it raises where torch's versions
differ. lstmop.set_flush_denormal / get_flush_denormal control subnormal numbers,
lstmop.set_fp32_precision / get_fp32_precision float32 on bfloat16 units,
lstmop.release_cached_memory / cached_memory_bytes the memory kept for the next calls. See docs/
(README.md lists the pages).
"""
from . import _library

_library.load()

from .functional import lstm, lstm_backward  # noqa: E402  (the ops must be loaded first)
from . import errors, nn  # noqa: E402
from .settings import (cached_memory_bytes, get_flush_denormal, get_fp32_precision,  # noqa: E402
                       release_cached_memory, set_flush_denormal, set_fp32_precision)

__version__ = "0.1.0"
__all__ = ["cached_memory_bytes", "errors", "get_flush_denormal", "get_fp32_precision", "lstm",
           "lstm_backward", "nn", "release_cached_memory", "set_flush_denormal",
           "set_fp32_precision"]
