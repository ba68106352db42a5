"""Makes `import lstmop` work from a plain `pytest tests/python` in the repository root (ctest
also sets PYTHONPATH=python)."""
import pathlib
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
_PYTHON_DIR = str(REPO_ROOT / "python")
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)
