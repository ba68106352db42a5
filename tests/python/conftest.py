"""Makes `import lstmop` work from a plain `pytest tests/python` in the repository root (ctest
also sets PYTHONPATH=python)."""
import os
import pathlib
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
_PYTHON_DIR = str(REPO_ROOT / "python")
if _PYTHON_DIR not in sys.path:
    sys.path.insert(0, _PYTHON_DIR)

# The tests run their small shapes on the threads they ask for (lstmop's plan gives a call of
# little work one thread unless LSTMOP_MIN_PARALLEL_WORK says otherwise; src/plan/lstm_plan.h).
os.environ.setdefault("LSTMOP_MIN_PARALLEL_WORK", "0")
