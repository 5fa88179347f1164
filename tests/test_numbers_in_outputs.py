"""Every number a person reads goes through pa.formatting (issue 30, item 1), checked on the outputs.

What the user guide's "Numbers and units" promises, read from what pa prints on every shared
profile: `pa summary` (whole rows, every column), `pa analyze --no-llm` as text (with the audit
trail) and Markdown, and `pa compare` of two real captures. No number is written in scientific
notation ('1e+05/s', '4.823e+07 ns', '1.51e+03 GB/s'), and no count of five digits or more lacks
its separators ('1000000 kernels', '1590 gaps', '39525.712 ms').

Launch configurations ('[115200, 1, 1]') are vectors written as the profilers write them, not
counts: they are taken out before the check. Hashes, times of day and file names never match the
pattern (a digit run inside a word is not a number).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import NSYS_PROFILES, missing_reason, real_nsys_profile, real_nsys_profiles, real_rocpd_profiles
from rich.console import Console
from testkit.cache import Summaries

from pa.pipeline import CompareRequest, compare, render_comparison
from pa.report.render import render
from pa.summary_render import PIPE_WIDTH, print_summary

PROFILES = real_nsys_profiles() + real_rocpd_profiles()
SCIENTIFIC = re.compile(r"\d(?:\.\d+)?[eE][+-]\d")
UNSEPARATED = re.compile(r"(?<![\w.,#/:+-])\d{5,}(?:\.\d+)?(?![\w,:]|\.\d)")
LAUNCH_CONFIG = re.compile(r"\[\d+(?:, \d+)*\]")


def unformatted_numbers(text: str) -> list[str]:
    """The numbers in `text` that bypassed the formatter: scientific notation, or a long count without separators."""
    text = LAUNCH_CONFIG.sub("[dims]", text)
    found = [m.group(0) for m in SCIENTIFIC.finditer(text)] + [m.group(0) for m in UNSEPARATED.finditer(text)]
    return [f"{n!r} in …{text[max(text.find(n) - 60, 0):text.find(n) + 20]!r}…" for n in found]


def test_the_check_catches_what_the_issue_quotes() -> None:
    """The check itself, on the outputs issue 30 quotes, and on what it must let through."""
    for bad in ("GPU: 1000000 kernels", "in 15900 gaps", "1.51e+03 GB/s", "(1e+05/s)", "= 4.823e+07 ns",
                "39525.712 ms"):
        assert unformatted_numbers(bad), bad
    for good in ("GPU: 1,000,000 kernels", "1,590 gaps", "1.51 TB/s", "(100,000/s)", "grid [115200, 1, 1]",
                 "sha256 6ee860b228433993c371", "generated 2026-11-29T02:54:58+00:00", "nsys2024.5_cloverleaf",
                 "0.00229", "12,345.6 s"):
        assert not unformatted_numbers(good), good


def _summary_text(s: Any) -> str:
    console = Console(width=PIPE_WIDTH, record=True, file=io.StringIO(), color_system=None)
    print_summary(s, console, wide=True)
    return console.export_text()


@pytest.mark.skipif(not PROFILES, reason=missing_reason(NSYS_PROFILES))
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_summary_and_reports_format_every_number(profile: Path, summary_of: Summaries,
                                                 real_report: Callable[[Path, str], str]) -> None:
    assert unformatted_numbers(_summary_text(summary_of(profile))) == []
    doc = json.loads(real_report(profile, "json"))   # `pa analyze --no-llm`, shared with the other report tests
    assert unformatted_numbers(render(doc, "text", evidence=True)) == []
    assert unformatted_numbers(render(doc, "markdown")) == []


PAIRS = [(real_nsys_profile("mfu_before.sqlite"), real_nsys_profile("mfu_after.sqlite")),
         (real_nsys_profile("nvfuser_h100node.sqlite"), real_nsys_profile("nvfuser_h200.sqlite"))]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0].stem}-{p[1].stem}")
def test_compare_formats_every_number(pair: tuple[Path, Path]) -> None:
    before, after = pair
    if not (before.is_file() and after.is_file()):
        pytest.skip(missing_reason(before if not before.is_file() else after))
    doc = compare(before, after, CompareRequest())
    for fmt in ("text", "markdown"):
        assert unformatted_numbers(render_comparison(doc, fmt)) == []
