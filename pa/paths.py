"""Where the bundled data directories (queries, rules, schemas, templates) live.

In a source checkout (editable install, tests) they sit at the repository root next to pa/;
in an installed wheel they are copied into pa/_data/ by setup.py. Looking up both places here,
and nowhere else, keeps a single answer to "which query files am I running".
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the bundled data directory `name` (queries, rules, schemas or templates)."""
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    # Only trust the parent directory when it is this project's checkout: in site-packages a
    # sibling called "queries" would belong to some other distribution.
    if (_PACKAGE.parent / "pyproject.toml").is_file() and (_PACKAGE.parent / name).is_dir():
        return _PACKAGE.parent / name
    raise FileNotFoundError(f"bundled data directory {name!r} not found (broken installation?)")
