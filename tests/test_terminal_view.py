"""The terminal view (issue 29): at 80, 100 and 160 columns no number wraps, no header is cut, every
kernel name stays distinguishable; the text report keeps the audit trail for `--evidence`.

`pa summary` is rendered on rich's recorded console at each width from the session's cached
summaries; `pa analyze --no-llm` is the session's JSON report of each real profile, rendered as
text at each width as the CLI does on a terminal. The checks read the rendered characters, not
pa's own layout decisions: a table row must be one line with no empty cell (a wrapped cell leaves
a continuation line of blanks), a header one line with no ellipsis, a line break never falls
between a number and its unit.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import NSYS_PROFILES, missing_reason, real_nsys_profile, real_nsys_profiles, real_rocpd_profiles
from rich.cells import cell_len
from rich.console import Console
from testkit.cache import Summaries
from testkit.terminal import pa_on_a_terminal

from pa.cli import main
from pa.formatting import duration
from pa.metrics.model import ProfileSummary
from pa.report.render import render
from pa.report.terminal import shorten_name, shorten_names, wrap_line, wrap_text
from pa.summary_render import print_summary

WIDTHS = (80, 100, 160)
PROFILES = real_nsys_profiles() + real_rocpd_profiles()
CLOVERLEAF = real_nsys_profile("nsys2024.5_cloverleaf_a100.sqlite")
UNIT = r"(?:ns|µs|ms|s|%|B|kB|MB|GB|TB|[kMGT]?B/s)"
# A line break inside a number or between a number and its unit: '19.4' / 'ms', '1,' / '312'.
SPLIT_NUMBER = re.compile(rf"(?<![\w.,])\d[\d,.]*\n\s*(?:{UNIT}(?![\w/])|\d)")
EVIDENCE_VALUE = re.compile(r"^ {15}- \S+ = .*\[", re.M)   # '- summary.x = 3 ms  [summary.x ← q.sql]'


def _summary_text(s: ProfileSummary, width: int, wide: bool = False) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    print_summary(s, console, wide=wide)
    return console.export_text()


def _tables(text: str) -> list[tuple[list[str], list[str]]]:
    """(header lines, body lines) of every table drawn with rich's heavy-head box."""
    out, header, body, part = [], [], [], ""
    for line in text.splitlines():
        if line.startswith("┏"):
            header, body, part = [], [], "head"
        elif line.startswith("┡"):
            part = "body"
        elif line.startswith("└"):
            out.append((header, body))
            part = ""
        elif part == "head":
            header.append(line)
        elif part == "body":
            body.append(line)
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]


def check_summary_view(s: ProfileSummary, width: int) -> None:
    """The acceptance checks of issue 29, item 1-2, on one rendering."""
    text = _summary_text(s, width)
    assert max(cell_len(line) for line in text.splitlines()) <= width
    tables = _tables(text)
    assert tables, "no table drawn"
    for header, body in tables:
        assert len(header) == 1, f"a header wraps:\n{chr(10).join(header)}"
        assert all(c and "…" not in c for c in _cells(header[0])), f"a header is cut: {header[0]}"
        for line in body:
            cells = _cells(line)
            assert all(cells), f"a cell wraps onto a line of its own (at {width} columns): {line}"
    assert not SPLIT_NUMBER.search(text), f"a number breaks across lines at {width} columns"
    if s.kernels:
        kernels = next(body for header, body in tables if _cells(header[0])[0] == "kernel")
        names = [_cells(line)[0] for line in kernels]
        assert len(names) == min(15, len(s.kernels)) and len(set(names)) == len(names), names
        totals = [_cells(line)[2] for line in kernels]   # kernel, count, total: whole, as pa.formatting writes them
        assert totals == [duration(k.total_ns) for k in s.kernels[:15]]


@pytest.mark.skipif(not PROFILES, reason=missing_reason(NSYS_PROFILES))
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_summary_fits_every_width(profile: Path, summary_of: Summaries) -> None:
    s = summary_of(profile)
    for width in WIDTHS:
        check_summary_view(s, width)


@pytest.mark.skipif(not CLOVERLEAF.is_file(), reason=missing_reason(CLOVERLEAF))
def test_cloverleaf_at_80_columns_keeps_names_and_drops_optional_columns(summary_of: Summaries) -> None:
    """The issue's example: `par_r…` at 80 columns, '19.4' over 'ms', the suffix '#1' on a line of its own."""
    s = summary_of(CLOVERLEAF)
    text = _summary_text(s, 80)
    assert "par_ranged2d_kernel<PdV_kernel> #1" in text and "│    10 │ 19.4 ms │" in text
    assert "more columns with --wide: std, grid, block, wave fill" in text
    assert "NVIDIA A100-SXM4-80GB" in text and "concurrency: " not in text
    # the idle-gap facts are one line above their table, not a title wrapped to its three columns
    assert "Idle gaps, device 0: 1,590 gaps, idle 38.6 ms of window 342 ms; leading 486 ms," in text
    wide = _summary_text(s, 80, wide=True)
    assert all(h in wide for h in ("std", "grid", "block", "wave fill", "concurrency", "% of peak"))
    assert "[115200, 1, 1]" in wide and "more columns" not in wide


def test_names_are_shortened_in_the_middle_and_stay_apart() -> None:
    assert shorten_name("par_ranged2d_kernel<advec_cell_kernel> #12", 36) == "par_ra…kernel<advec_cell_kernel> #12"
    assert shorten_name("void foo<int>(float*, int)", 14) == "void foo<int>…"
    cublas = [f"sm80_xmma_gemm_f32f32_f32f32_f32_{t}_n_tilesize{s}_stage3_warpsize1x4x1_ffma_aligna4_alignc4_"
              f"execute_{k}kernel__5x_cublas" for t, s, k in (("tn", "64x256x8", ""), ("tn", "128x128x8", ""),
                                                                ("tn", "64x256x8", "split_k_"), ("nn", "32x32x8", ""),
                                                                ("tn", "32x32x8", ""))]
    for width in (24, 30, 39, 60):
        short = shorten_names(cublas, width)
        assert len(set(short)) == len(cublas) and all(cell_len(n) <= width for n in short), short
    for width in range(1, 40):   # however narrow, never wider than asked (a site template's width is data)
        assert all(cell_len(n) <= width for n in shorten_names([*cublas, "x", "", "a<b> #3"], width))


def test_lines_wrap_between_words_never_inside_a_number() -> None:
    line = "  idle in window by cause: sync 19.9 ms, cpu_stall 8.71 ms, copy_wait 8.57 ms, launch 1.11 ms"
    for width in range(20, 90):
        pieces = wrap_line(line, width)
        assert all(cell_len(p) <= width for p in pieces)
        assert not SPLIT_NUMBER.search("\n".join(pieces))
        assert " ".join(p.strip() for p in pieces) == line.strip()
    assert wrap_line("   evidence:   " + "word " * 20, 40)[1].startswith(" " * 15 + "word")   # under its label
    assert wrap_text("x" * 50, 20) == "x" * 50   # a word longer than the line is left whole


@pytest.fixture(scope="module")
def report_doc(real_report: Callable[[Path, str], str]) -> Callable[[Path], dict[str, Any]]:
    """The JSON report of a real profile (`pa analyze --no-llm`, shared with the other report tests)."""
    return lambda p: json.loads(real_report(p, "json"))


@pytest.mark.skipif(not PROFILES, reason=missing_reason(NSYS_PROFILES))
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_text_report_fits_every_width(profile: Path, report_doc: Callable[[Path], dict[str, Any]]) -> None:
    doc = report_doc(profile)
    for width in WIDTHS:
        text = render(doc, "text", width=width)
        for line in text.splitlines():
            assert cell_len(line) <= width or " " not in line.strip(), line
        assert not SPLIT_NUMBER.search(text), f"a number breaks across lines at {width} columns"
    plain = render(doc, "text")
    rows = plain.split("  top kernels (")[1].split("\n\n")[0].splitlines()[1:] if "  top kernels (" in plain else []
    names = [row[4:38].rstrip() for row in rows]
    assert len(set(names)) == len(names) == len(doc["summary"]["top_kernels"]), names


@pytest.mark.skipif(not PROFILES, reason=missing_reason(NSYS_PROFILES))
def test_text_report_keeps_the_audit_trail_for_evidence(report_doc: Callable[[Path], dict[str, Any]]) -> None:
    """The default text has the sentences, `--evidence` the values and their sources; the other formats keep them."""
    doc = next(d for d in map(report_doc, PROFILES) if any(e["values"] for h in d["hypotheses"] for e in h["evidence"]))
    values = [v for h in doc["hypotheses"] for e in h["evidence"] for v in e["values"]]
    default, trail = render(doc, "text"), render(doc, "text", evidence=True)
    assert not EVIDENCE_VALUE.search(default) and "←" not in default
    assert "--evidence (-v)" in default
    assert len(EVIDENCE_VALUE.findall(trail)) == len(values)
    assert all(f"- {v['name']} = " in trail for v in values)
    assert all(e["text"] in default for h in doc["hypotheses"] for e in h["evidence"])
    for fmt in ("markdown", "html"):
        assert render(doc, fmt) == render(doc, fmt, evidence=True)
        assert all(v["source"] in render(doc, fmt) for v in values)


def test_cli_wide_and_evidence(tmp_path: Path) -> None:
    """`pa summary --wide` keeps every column on a narrow terminal; `pa analyze -v` prints the trail."""
    prof = tmp_path / "demo.sqlite"
    runner = CliRunner()
    assert runner.invoke(main, ["example", str(prof)]).exit_code == 0
    wide = runner.invoke(main, ["summary", str(prof), "--wide"])
    assert wide.exit_code == 0 and "wave fill" in wide.output
    plain = runner.invoke(main, ["analyze", str(prof), "--no-llm"])
    trail = runner.invoke(main, ["analyze", str(prof), "--no-llm", "-v"])
    assert plain.exit_code == trail.exit_code == 0
    assert not EVIDENCE_VALUE.search(plain.output) and EVIDENCE_VALUE.search(trail.output)
    long = runner.invoke(main, ["analyze", str(prof), "--no-llm", "--evidence"])
    assert EVIDENCE_VALUE.findall(long.output) == EVIDENCE_VALUE.findall(trail.output)


def _on_a_terminal(args: list[str], columns: int) -> str:
    """What `pa ARGS` prints on a pseudo-terminal `columns` wide (colour codes removed)."""
    text = pa_on_a_terminal(args, columns=columns, timeout=60).decode("utf-8", "replace").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_cli_on_an_80_column_terminal(tmp_path: Path) -> None:
    """The CLI, not only the renderers: on a terminal both commands keep to its width."""
    prof = tmp_path / "demo.sqlite"
    assert CliRunner().invoke(main, ["example", str(prof)]).exit_code == 0
    seen = {}
    for command, args in (("summary", ["summary", str(prof)]), ("analyze", ["analyze", str(prof), "--no-llm"])):
        text = seen[command] = _on_a_terminal(args, 80)
        lines = text.splitlines()
        assert len(lines) > 20, text
        assert all(cell_len(line) <= 80 or " " not in line.strip() for line in lines), args
        assert not SPLIT_NUMBER.search(text)
    assert "more columns with --wide: grid, block, wave fill" in seen["summary"]
    assert "--evidence (-v)" in seen["analyze"] and "←" not in seen["analyze"]
