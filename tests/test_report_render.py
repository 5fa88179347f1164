"""Rendering: every format from the validated document, escaping, colours, site templates, charts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from test_report_fixtures import HOSTILE, make_report

from pa.errors import UserError
from pa.report.charts import all_charts
from pa.report.render import fmt_ns, fmt_pct, render
from pa.report.schema import validate_report
from pa.report.sources import resolve_section

ANSI = re.compile(r"\x1b\[")


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return validate_report(make_report(n_profiles=2))


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_each_format_shows_the_findings(doc: dict[str, Any], fmt: str) -> None:
    out = render(doc, fmt)
    for h in doc["hypotheses"]:
        assert h["title"] in out
    assert "Remove the synchronisation after each launch" in out
    assert "needs mpi, not captured" in out          # skipped analyses are visible
    assert "--no-llm" in out or "rules_only" in out   # rules only is said
    if fmt != "json":
        assert "Primary bottleneck" in out
        # a cited value traced to its query file: in the text report only with --evidence (issue 29, item 3)
        assert "nsys/base/api_calls.sql" in render(doc, fmt, evidence=True)
        assert ("nsys/base/api_calls.sql" in out) == (fmt != "text")
        # the gain as an engineer writes it: F = 30 % → 1/0.7 = 1.43×, half removed 1/0.85 = 1.18×
        assert "up to 1.43× faster (−30 % time)" in out and "about 1.18× if half of it is removed" in out
        assert not re.search(r"gains? at most \d", out)


def test_text_colours_only_when_asked(doc: dict[str, Any]) -> None:
    assert not ANSI.search(render(doc, "text"))
    assert ANSI.search(render(doc, "text", color=True))
    assert not ANSI.search(render(doc, "markdown", color=True))


def test_html_escapes_profile_strings(doc: dict[str, Any]) -> None:
    html = render(doc, "html")
    assert "<script>alert" not in html
    assert "&lt;script&gt;" in html
    assert "<script" not in html.lower()              # self-contained and script-free
    assert "http://" not in html and "https://" not in html.replace("https://json-schema", "")


def test_markdown_table_cells_escaped(doc: dict[str, Any]) -> None:
    md = render(doc, "markdown")
    assert HOSTILE not in md
    assert "\\|pipe" in md


def test_evidence_values_are_traced(doc: dict[str, Any]) -> None:
    v = doc["hypotheses"][0]["evidence"][0]["values"]
    assert v[0]["section"] == "summary.sync"
    assert "nsys/base/api_calls.sql" in v[0]["query_files"]
    assert v[1]["section"] is None and v[1]["relations"] == []   # a rule metric: traced by the pack hash
    assert doc["sources"]["summary.sync"]["query_files"][0]["sha256"] == "cd" * 32


@pytest.mark.parametrize(("source", "section"), [
    ("summary.sync.cpu_blocked_ns", "summary.sync"), ("devices[0].busy_ns", "summary.devices"),
    ("metric:launch_ratio", None), ("param:min_gap_ns", None), ("span_ns", "summary.span_ns")])
def test_resolve_section(source: str, section: str | None) -> None:
    assert resolve_section(source) == section


def test_charts_bar_counts(doc: dict[str, Any]) -> None:
    charts = all_charts(doc)
    assert len(charts["speedup"]["rows"]) == 2
    assert [len(h["bars"]) for h in charts["gaps"]] == [3, 3]
    assert len(charts["ranks"]["rows"]) == 2
    strip = charts["timeline"]["rows"][0]["segments"]
    assert [s["cls"] for s in strip] == ["seg-idle", "seg-active", "seg-idle", "seg-gap"]
    html = render(doc, "html")
    assert html.count('class="bar speedup-bar"') == 2
    assert html.count('class="bar gap-bar"') == 6
    assert html.count('class="bar rank-bar"') == 2


def test_timeline_tolerates_future_series(doc: dict[str, Any]) -> None:
    future = dict(doc, timeline={"devices": []})
    assert all_charts(future)["timeline"]["approximate"] is False


def test_site_templates_override_one_format(doc: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "report.md.j2").write_text("SITE {{ report.headline.text }}\n", encoding="utf-8")
    assert render(doc, "markdown", templates_dir=tmp_path).startswith("SITE Primary bottleneck")
    assert "Key metrics" in render(doc, "text", templates_dir=tmp_path)   # others stay built-in
    (tmp_path / "report.txt.j2").write_text("{{ report.nope }}", encoding="utf-8")
    with pytest.raises(UserError, match=r"report\.txt\.j2"):
        render(doc, "text", templates_dir=tmp_path)


def test_number_formatting() -> None:
    assert fmt_ns(None) == "n/a"
    assert fmt_ns(1_500_000_000) == "1.5 s"
    assert fmt_ns(999) == "999 ns"
    assert fmt_pct(0.001) == "<0.1 %"       # tiny but real never reads as 0.0 %
    assert fmt_pct(0.0) == "0.0 %"
    assert fmt_pct(None) == "n/a"


def test_no_findings_is_not_healthy() -> None:
    from test_report_fixtures import make_rule_result

    rr = make_rule_result()
    rr.hypotheses = []
    doc = validate_report(make_report(rule_result=rr))
    assert "No bottleneck found" in doc["headline"]["text"]
    assert "see what was not analysed" in render(doc, "text")


def test_a_string_evidence_value_is_inert_in_markdown(doc: dict[str, Any]) -> None:
    """Issue 26.4: a kernel name quoted as an evidence value cannot become a link, an image, raw HTML or a heading."""
    import copy

    hostile = ("gemm [click here](https://evil.example/p) ![px](https://evil.example/t.png) "
               "<img src=x onerror=alert(1)>\n# Fake heading")
    d = copy.deepcopy(doc)
    d["hypotheses"][0]["evidence"][0]["values"][0]["value"] = hostile
    md = render(d, "markdown")
    line = next(ln for ln in md.splitlines() if "evil.example/p" in ln)
    assert "`" in line and line.index("`") < line.index("[click here]")      # inside a code span
    assert "](https://evil.example/p)" not in md.replace("`gemm [click here](https://evil.example/p)", "")
    assert not any(ln.startswith("# Fake heading") for ln in md.splitlines())
