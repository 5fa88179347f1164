"""The scoped tools and canned analyses, checked against direct SQL on the export and a plain interval sweep;
and what the pre-seeded context tells the model (glossary, capture status, candidate fields, kernel names)."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from reference import reference_union
from testkit import scenarios
from testkit.nsys_writer import write_nsys

from pa.llm.context import build_context, kernel_label
from pa.llm.redact import Redactor
from pa.llm.sql_tool import SqlSandbox
from pa.llm.stage import engine_tables
from pa.llm.tools import ToolBox
from pa.rules.evaluate import RuleResult

EMPTY = RuleResult(hypotheses=[], skipped=[], packs=[], outcomes=[], metrics={}, buckets={})


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    from pa.metrics.summarize import summarize

    sc = scenarios.example()
    # two specialisations of one template share a short name: the model must still tell them apart
    sc.kernels = [dataclasses.replace(k, name=k.name.replace("stencil3d_kernel<double, 4>",
                                                             f"stencil3d_kernel<double, {4 + i % 2}>"),
                                      short_name="stencil3d_kernel") if "stencil3d" in k.name else k
                  for i, k in enumerate(sc.kernels)]
    path = write_nsys(sc, tmp_path_factory.mktemp("tools") / "example.sqlite")
    return path, summarize(path)


@pytest.fixture()
def box(world: tuple[Path, Any]) -> Any:
    path, summary = world
    sb = SqlSandbox(path, engine_tables=engine_tables(summary, Redactor(False)))
    yield ToolBox(summary, EMPTY, Redactor(False), sb, max_bytes=100_000)
    sb.close()


def _raw(path: Path, sql: str, params: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_window_on_a_phase_matches_direct_sql(world: tuple[Path, Any], box: Any) -> None:
    path, summary = world
    phase = max(summary.phases, key=lambda p: p.kernel_count)
    lo, hi = summary.span_start_ns + phase.start_ns, summary.span_start_ns + phase.end_ns
    res = json.loads(box.run("w", "window", {"phase": phase.label}))
    (count, clipped), = _raw(path, "SELECT count(*), sum(min(end, ?) - max(start, ?)) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                                   "WHERE start < ? AND end > ?", (hi, lo, hi, lo))
    assert res["kernels"]["kernel_count"] == count and res["kernels"]["kernel_time_in_window_ns"] == clipped
    assert res["duration_ns"] == phase.duration_ns and res["start_offset_ns"] == phase.start_ns
    top = res["kernels"]["top"][0]
    names = dict(_raw(path, "SELECT id, value FROM StringIds"))
    per_name: dict[str, int] = {}
    for name_id, s, e in _raw(path, "SELECT demangledName, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL "
                                    "WHERE start < ? AND end > ?", (hi, lo)):
        per_name[names[name_id]] = per_name.get(names[name_id], 0) + min(e, hi) - max(s, lo)
    assert top["time_in_window_ns"] == max(per_name.values()) and top["name"] in per_name
    assert res["api_calls"] and all(r["time_in_window_ns"] > 0 for r in res["api_calls"])


def test_window_by_offsets_and_bad_scopes(box: Any, world: tuple[Path, Any]) -> None:
    _, summary = world
    half = summary.span_ns // 2
    res = json.loads(box.run("w1", "window", {"start_offset_ns": 0, "end_offset_ns": half}))
    assert res["duration_ns"] == half and res["scope"] == "window"
    assert "error" in json.loads(box.run("w2", "window", {"start_offset_ns": 10, "end_offset_ns": 5}))
    assert "no phase" in json.loads(box.run("w3", "window", {"phase": "nope"}))["error"]


def test_copy_compute_overlap_matches_a_plain_sweep(world: tuple[Path, Any], box: Any) -> None:
    path, _ = world
    res = json.loads(box.run("o", "copy_compute_overlap", {}))
    for row in res["devices"]:
        dev = row["device"]
        copies = _raw(path, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = ?", (dev,))
        kernels = _raw(path, "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = ?", (dev,))
        c, k = reference_union(copies), reference_union(kernels)
        both = c + k - reference_union(copies + kernels)  # |C ∩ K| = |C| + |K| − |C ∪ K|
        assert (row["copy_time_ns"], row["overlapped_by_kernels_ns"], row["exposed_copy_ns"]) == (c, both, c - both)
        assert row["kernel_busy_ns"] == k
    assert res["devices"], "the example profile has copies"


def test_host_during_the_largest_gap_matches_direct_sql(world: tuple[Path, Any], box: Any) -> None:
    path, summary = world
    res = json.loads(box.run("g", "host_during_gap", {}))
    gap = max((g for d in summary.idle_gaps for g in d.largest), key=lambda g: g.duration_ns)
    assert res["gap"]["duration_ns"] == gap.duration_ns
    lo = summary.span_start_ns + gap.start_ns
    hi = lo + gap.duration_ns
    (clipped,), = _raw(path, "SELECT coalesce(sum(min(end, ?) - max(start, ?)), 0) FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                             "WHERE start < ? AND end > ?", (hi, lo, hi, lo))
    assert sum(r["time_in_window_ns"] for r in res["api_calls"]) == clipped
    assert json.loads(box.run("g2", "host_during_gap", {"rank": 999})).get("error")


def test_rank_compare_against_the_median(world: tuple[Path, Any]) -> None:
    _, summary = world
    box = ToolBox(summary, EMPTY, Redactor(False))
    assert "only one profile" in json.loads(box.run("r", "rank_compare", {}))["note"]
    box.ranks = [{"rank": r, "file_name": f"rank{r}.sqlite", "span_ns": s, "busy_ns": b}
                 for r, s, b in ((0, 100, 50), (1, 120, 60), (2, 200, 40))]
    res = json.loads(box.run("r2", "rank_compare", {}))
    assert res["median"] == {"span_ns": 120.0, "busy_ns": 50.0} and res["longest_span_rank"] == 2
    assert [r["span_vs_median_pct"] for r in res["ranks"]] == [-16.7, 0.0, 66.7]
    assert [r["busy_vs_median_pct"] for r in res["ranks"]] == [0.0, 20.0, -20.0]


def test_tool_facts_come_from_engine_tools_and_measured_sql_only(box: Any) -> None:
    box.run("a", "window", {"phase": "0"})
    box.run("b", "sql_query", {"sql": "SELECT 42.5 AS share_pct"})
    box.run("c", "sql_query", {"sql": "SELECT count(*) AS kernel_count FROM pa_kernels"})
    assert box.facts("a") and box.facts("b") == []
    assert [f.kind for f in box.facts("c")] == ["count"]


def test_context_tells_the_model_what_the_numbers_mean(world: tuple[Path, Any]) -> None:
    _, summary = world
    ctx = build_context(summary, EMPTY)
    assert ctx["glossary"]["gpu.utilization_pct"].startswith("busy /")
    assert set(ctx["glossary"]) <= set(ctx["key_metrics"])
    assert "mpi_calls" in ctx["capture"]["skipped"] and "kernels" in ctx["capture"]["captured"]
    assert "runtime_fraction_pct" in ctx["candidate_fields"] and "speedup_pct_bounds" in ctx["candidate_fields"]
    names = [k["name"] for k in ctx["top_kernels"]]
    stencils = [n for n in names if "stencil3d" in n]
    assert len(stencils) == 2 and len(set(stencils)) == 2 and all("<double," in n for n in stencils)
    axpy = next(k for k in summary.kernels if "axpy" in k.name)
    from collections import Counter

    assert kernel_label(axpy, Counter([axpy.short_name])) == axpy.short_name  # unique: the short name


def test_redacted_tool_errors_leak_no_name_in_any_quoting_and_are_no_oracle(world: tuple[Path, Any]) -> None:
    """Issue 26.3: a phase label with backslashes (repr doubles them), one longer than the old 200-character
    cut, and a placeholder passed back as an argument: the error text holds placeholders only."""
    from pa.llm.redact import from_summary

    path, summary = world
    odd = "init C:\\Projects\\Nightjar\\solver 'v2'"
    long = "phase " + "x" * 300 + " Nightjarlong"
    phases = list(summary.phases or [])
    assert len(phases) >= 2
    phases[0] = phases[0].model_copy(update={"label": odd})
    phases[1] = phases[1].model_copy(update={"label": long})
    s = summary.model_copy(update={"phases": phases})
    red = from_summary(s, True)
    sb = SqlSandbox(path, engine_tables=engine_tables(s, red))
    box = ToolBox(s, EMPTY, red, sb, max_bytes=100_000)
    sent = box.run("c1", "window", {"phase": "no such phase"})
    assert "Nightjar" not in sent and "Projects" not in sent and "xxxxxxxxxx" not in sent
    assert red.placeholder(odd) is not None and red.placeholder(odd) in sent
    # the model hands a placeholder back as an argument it is not: the error must not spell the name
    ph = red.placeholder(odd)
    for name, args in (("summary_table", {"table": ph}), ("explain_rule", {"rule_id": ph}),
                       ("window", {"phase": ph + " and more"})):
        sent = box.run(f"c-{name}", name, args)
        assert "Nightjar" not in sent and "Projects" not in sent, (name, sent)
    sb.close()
