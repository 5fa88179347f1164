"""pa/heap.py: the glibc heap setting is made for large inputs only, and only through the CLI."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pytest

from pa.heap import LARGE_INPUT_BYTES

GLIBC = platform.libc_ver()[0] == "glibc"


def _keep(files: list[Path]) -> list[str]:
    """keep_freed_blocks in a child process (the setting lasts for the whole process), and whether
    ctypes got imported."""
    code = ("import sys; from pathlib import Path; from pa.heap import keep_freed_blocks; "
            f"r = keep_freed_blocks([Path(p) for p in {[str(f) for f in files]!r}]); "
            "print(r, 'ctypes' in sys.modules)")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def test_small_inputs_leave_the_heap_and_ctypes_alone(tmp_path: Path) -> None:
    small = tmp_path / "small.sqlite"
    small.write_bytes(b"x" * 4096)
    assert _keep([small, tmp_path / "missing.sqlite"]) == ["False", "False"]


@pytest.mark.skipif(not GLIBC, reason="the setting exists on glibc only")
def test_large_inputs_together_make_the_setting(tmp_path: Path) -> None:
    # Two sparse files, each below the threshold, above it together (no disk space used).
    halves = []
    for name in ("a.sqlite", "b.sqlite"):
        f = tmp_path / name
        with f.open("wb") as fh:
            fh.truncate(LARGE_INPUT_BYTES // 2 + 1)
        halves.append(f)
    assert _keep(halves[:1]) == ["False", "False"]
    assert _keep(halves) == ["True", "True"]


def test_the_library_path_never_makes_it() -> None:
    # Only the CLI commands call keep_freed_blocks: the pipeline and the summary a notebook imports
    # leave the caller's process as it was.
    root = Path(__file__).resolve().parents[1] / "pa"
    callers = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                     if "keep_freed_blocks(" in p.read_text(encoding="utf-8") and p.name != "heap.py")
    assert callers == ["cli_analyze.py", "cli_compare.py", "cli_summary.py"]
