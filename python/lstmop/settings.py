"""Process-wide settings of lstmop's computation (docs/lstm.md, "Subnormal numbers")."""
import torch


def set_flush_denormal(enabled):
    """float32 and 16-bit calls treat subnormal numbers as zero inside lstmop (x86 FTZ + DAZ,
    set on entry and restored on exit on every thread a call uses) when `enabled` (the
    default); False keeps IEEE subnormals in every dtype. float64 always keeps them. The
    caller's floating-point environment is never changed (unlike torch.set_flush_denormal)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"set_flush_denormal: enabled must be a bool, got {type(enabled).__name__}")
    torch.ops.lstmop.set_flush_denormal(enabled)


def get_flush_denormal():
    """Whether float32 and 16-bit calls flush subnormal numbers (set_flush_denormal)."""
    return torch.ops.lstmop.get_flush_denormal()
