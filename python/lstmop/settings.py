"""Process-wide settings of lstmop's computation (docs/lstm.md, "Subnormal numbers" and "float32
on bfloat16 units")."""
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


def set_fp32_precision(precision):
    """The internal precision of float32 calls, PyTorch 2.x's
    torch.backends.mkldnn.rnn.fp32_precision convention: "ieee" (the default) computes in IEEE
    float32; "bf16" rounds the operands of the matrix products to bfloat16 (the input, the
    weights, h as the next step multiplies it; products exact, sums and everything else float32,
    results float32) where the CPU has a bfloat16 dot-product instruction (AVX512-BF16) and
    subnormals are flushed, and stays IEEE float32 elsewhere. Any other value raises
    ValueError."""
    if not isinstance(precision, str):
        raise TypeError(f"set_fp32_precision: precision must be a str, got "
                        f"{type(precision).__name__}")
    torch.ops.lstmop.set_fp32_precision(precision)


def get_fp32_precision():
    """The internal precision of float32 calls: "ieee" or "bf16" (set_fp32_precision)."""
    return torch.ops.lstmop.get_fp32_precision()


def release_cached_memory():
    """Frees the memory lstmop keeps for its next calls: the blocks of dead outputs of 64 KiB and
    more (kept, up to the most such outputs have held at once, so that a loop's next call reuses
    them instead of fresh pages) and the calling thread's scratch block."""
    torch.ops.lstmop.release_cached_memory()


def cached_memory_bytes():
    """Bytes of dead outputs' blocks lstmop keeps for reuse (release_cached_memory)."""
    return torch.ops.lstmop.cached_memory_bytes()
