"""Loads the op library (_lstmop_torch.so, built by CMake from torch/) into torch.

After this, torch.ops.lstmop._lstm and torch.ops.lstmop._lstm_backward exist.
"""
import pathlib

import torch

LIBRARY_NAME = "_lstmop_torch.so"
PACKAGE_DIR = pathlib.Path(__file__).resolve().parent


def _registered():
    # torch 1.13 raises RuntimeError for an unknown op, torch 2.x AttributeError.
    try:
        torch.ops.lstmop._lstm
    except (RuntimeError, AttributeError):
        return False
    return True


def load():
    """Loads the library once; a second load (or one from another path) is a no-op."""
    if _registered():
        return
    path = PACKAGE_DIR / LIBRARY_NAME
    if not path.is_file():
        raise ImportError(
            f"lstmop: the op library {LIBRARY_NAME} is not in {PACKAGE_DIR}; build it with "
            "CMake (the torch/ folder is built when Torch is found, see README.md)")
    torch.ops.load_library(str(path))
