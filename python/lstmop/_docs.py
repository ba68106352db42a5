"""The docstrings of lstmop's public functions are the pages of docs/ (one source of truth).

A page is looked for in the package's own docs/ folder (an installed package) and then in the
repository's docs/ folder (python/lstmop/ -> ../../docs).
"""
import pathlib

_PACKAGE_DIR = pathlib.Path(__file__).resolve().parent
SEARCH_DIRS = (_PACKAGE_DIR / "docs", _PACKAGE_DIR.parent.parent / "docs")


def page(name):
    """The text of docs/<name>, or a pointer to it when the page is not shipped."""
    for folder in SEARCH_DIRS:
        path = folder / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return f"See docs/{name} in the lstmop sources."
