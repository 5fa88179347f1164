"""CLI edges a tool user meets: -o into a missing or unwritable place, an unknown -o extension,
redirected output at full width, `pa example --list` without OUT, progress only on a terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from testkit.nsys_writer import write_nsys
from testkit.scenarios import example

from pa.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("edges") / "ex.sqlite"
    write_nsys(example(), p)
    return p


def _one_line(res, code: int = 2) -> str:
    assert res.exit_code == code, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.output, res.output
    return lines[0]


@pytest.mark.parametrize("command", ["analyze", "compare"])
def test_o_into_missing_directory_or_under_a_file(tmp_path, profile, command):
    extra = [str(profile)] if command == "compare" else ["--no-llm"]
    line = _one_line(CliRunner().invoke(main, [command, str(profile), *extra, "-o",
                                                str(tmp_path / "missing" / "r.html")]))
    assert "does not exist" in line
    line = _one_line(CliRunner().invoke(main, [command, str(profile), *extra, "-o", str(profile / "r.html")]))
    assert "Not a directory" in line or "does not exist" in line


def test_o_into_an_unwritable_place(profile):
    line = _one_line(CliRunner().invoke(main, ["analyze", "--no-llm", str(profile), "-o", "/proc/pa-test.html"]))
    assert "/proc/pa-test.html" in line


def test_o_with_an_unknown_extension_is_refused_before_any_work(tmp_path, profile):
    out = tmp_path / "x.pdf"
    line = _one_line(CliRunner().invoke(main, ["analyze", "--no-llm", str(profile), "-o", str(out)]))
    assert "'.pdf'" in line and not out.exists()
    res = CliRunner().invoke(main, ["analyze", "--no-llm", "-f", "html", str(profile), "-o", str(out)])
    assert res.exit_code == 0 and out.read_text().lstrip().lower().startswith("<!doctype html")


def test_redirected_summary_keeps_full_width(tmp_path):
    from testkit.scenarios import ALL_SCENARIOS

    prof = tmp_path / "long.sqlite"
    write_nsys(ALL_SCENARIOS["launch_bound"](), prof)
    proc = subprocess.run([sys.executable, "-m", "pa.cli", "summary", str(prof)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines()) > 80
    assert "…" not in proc.stdout   # rich's ellipsis: at 80 columns the kernel table was cut
    assert proc.stderr == ""     # no progress or spinner when not on a terminal


def test_example_list_needs_no_output_path():
    res = CliRunner().invoke(main, ["example", "--list"])
    assert res.exit_code == 0 and res.output.startswith("example: ")
    res = CliRunner().invoke(main, ["example"])
    assert res.exit_code == 2 and "OUT" in res.output


def test_spinner_only_for_a_large_file_on_a_terminal(tmp_path, monkeypatch):
    import io

    from pa import cli_ranks

    small = tmp_path / "small.sqlite"
    small.write_bytes(b"x" * 10)
    big = tmp_path / "big.sqlite"
    with big.open("wb") as fh:
        fh.truncate(cli_ranks.LARGE_FILE_BYTES)
    shown: list[str] = []

    class FakeStatus:
        def __init__(self, text: str) -> None:
            shown.append(text)

        def __enter__(self) -> FakeStatus:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    class FakeConsole:
        def __init__(self, **kw: object) -> None:
            pass

        def status(self, text: str) -> FakeStatus:
            return FakeStatus(text)

    monkeypatch.setattr("rich.console.Console", FakeConsole)
    tty = io.StringIO()
    tty.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stderr", tty)
    for path in (small, big, None):
        with cli_ranks.working_on(path):
            pass
    assert len(shown) == 1 and "big.sqlite" in shown[0]
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with cli_ranks.working_on(big):
        pass
    assert len(shown) == 1
