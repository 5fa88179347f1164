"""`pa --help` imports click alone; the short help it lists is each command's own first help line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner
from conftest import needs_real_profile, real_nsys_profile

from pa.cli import COMMANDS, HIDDEN, main

ROOT = Path(__file__).resolve().parents[1]


def _modules_after(args: list[str]) -> set[str]:
    code = ("import sys; from pa.cli import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
            "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return set(proc.stderr.split())


def test_help_imports_no_engine_command_and_no_heavy_library():
    loaded = _modules_after(["--help"])
    assert "click" in loaded and "pa.cli" in loaded
    heavy = {"numpy", "pydantic", "jinja2", "rich", "yaml", "jsonschema", "sqlite3"}
    assert not heavy & loaded, heavy & loaded
    assert not {m for m in loaded if m.startswith("pa.") and m not in ("pa.cli", "pa.version")}


def test_summary_of_one_file_does_not_import_the_rank_statistics_or_the_rules(tmp_path):
    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import example

    prof = tmp_path / "one.sqlite"
    write_nsys(example(), prof)
    loaded = _modules_after(["summary", str(prof)])
    assert "pa.metrics.summarize" in loaded     # it did run
    assert not {"pa.ranks.cross", "pa.ranks.run", "pa.rules.engine", "pa.llm.stage",
                "pa.report.assemble", "jsonschema"} & loaded


NO_DEVICES = real_nsys_profile("nsys2026.2_h100_2proc_nvtx_slice.sqlite")   # a slice without TARGET_INFO_GPU
WITH_DEVICES = real_nsys_profile("nsys2024.5_cloverleaf_a100.sqlite")


@needs_real_profile(NO_DEVICES, WITH_DEVICES)
def test_yaml_loads_only_for_the_hardware_facts_of_a_profile_with_devices():
    """hardware.yaml is read (and yaml imported) only when a GPU's host link or bandwidth is looked up."""
    without = _modules_after(["summary", str(NO_DEVICES)])
    assert "pa.metrics.summarize" in without and "yaml" not in without
    assert "yaml" in _modules_after(["summary", str(WITH_DEVICES)])


def test_listed_help_matches_each_command():
    ctx = click.Context(main)
    for name, (_, short) in COMMANDS.items():
        cmd = main.get_command(ctx, name)
        assert cmd is not None, name
        if name in HIDDEN:
            assert cmd.hidden
            continue
        assert cmd.get_short_help_str(limit=200) == short, name


def test_help_lists_every_visible_command():
    out = CliRunner().invoke(main, ["--help"]).output
    for name in COMMANDS:
        assert (name in out) == (name not in HIDDEN), name
    assert CliRunner().invoke(main, ["nosuch"]).exit_code == 2


def test_redirected_summary_without_colours_skips_highlighting_and_prints_the_same(tmp_path, monkeypatch):
    """Highlighting off (output_console, no terminal, no colours) must not change a character."""
    import io

    from rich.console import Console
    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import example

    from pa.metrics.summarize import summarize
    from pa.summary_render import PIPE_WIDTH, output_console, print_summary

    prof = tmp_path / "one.sqlite"
    write_nsys(example(), prof)
    s = summarize(prof)
    outs = []
    for highlight in (True, False):
        buf = io.StringIO()
        print_summary(s, Console(file=buf, width=PIPE_WIDTH, highlight=highlight))
        outs.append(buf.getvalue())
    assert outs[0] == outs[1] and "kernels" in outs[0]
    monkeypatch.setattr("sys.stdout", io.StringIO())
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert output_console().color_system is None and not output_console()._highlight
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert output_console().color_system is not None and output_console()._highlight   # colours: highlighted


def test_only_the_executable_freezes_the_survivors_at_exit(tmp_path):
    """run() (the `pa` script, `python -m pa.cli`) freezes at exit, after the other exit handlers; main() never."""
    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import example

    prof = tmp_path / "one.sqlite"
    write_nsys(example(), prof)
    outs = {}
    for entry in ("run", "main"):
        code = ("import atexit, gc, sys\n"
                "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, file=sys.stderr))\n"
                f"from pa.cli import {entry}\nsys.argv = ['pa', 'summary', {str(prof)!r}]\n{entry}()")
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outs[entry] = (proc.stdout, proc.stderr.split()[-1])
    assert outs["run"][1] == "True" and outs["main"][1] == "False"
    assert outs["run"][0] == outs["main"][0] and "kernels" in outs["run"][0]
