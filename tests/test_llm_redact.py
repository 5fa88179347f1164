"""`--redact` is complete: no string pa reads from a profile reaches a request body, for any provider.

The profile is the hostile synthetic one of tests/llm_world.py: every string in it carries the
token "q7z". The model's script calls every tool (every summary table, the scoped analyses, the
schema of every view, SQL over every view with string functions and a CAST that used to leak
strings in an error message); the test then enumerates every text column of every canonical
relation (what pa reads, through pa.profile.relations) and checks that none of their values
is in any recorded request body, only placeholders are, and that the secrets of the environment
never are, with or without --redact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLlmServer
from llm_world import HOME, PROVIDERS, SECRET, TOKEN, answer, provider_options, script, write_hostile
from testkit.scenarios import example

from pa.llm.model import LlmOptions
from pa.llm.stage import llm_stage
from pa.profile.canonical import (
    ALLOCATION_KINDS,
    ALLOCATION_LEVELS,
    API_KINDS,
    DIRECTIONS,
    KERNEL_CLASSES,
    MARKER_KINDS,
    MEMORY_KINDS,
    MIGRATION_CAUSES,
    MPI_KINDS,
    RELATIONS,
    SYNC_TYPES,
)
from pa.rules.evaluate import RuleResult
from pa.rules.hypothesis import Evidence, EvidenceValue, Hypothesis

# What may be sent under --redact because it is no user data (defined here, independently of pa):
_ENUMS = {*DIRECTIONS, *MEMORY_KINDS, *SYNC_TYPES, *API_KINDS, *MARKER_KINDS, *MPI_KINDS, *KERNEL_CLASSES,
          *ALLOCATION_KINDS, *ALLOCATION_LEVELS, *MIGRATION_CAUSES}
_PUBLIC = re.compile(r"(?:cuda|cu)[A-Z]\w*|NVIDIA [\w .()-]+|\d+(?:\.\d+)*|schema_layout|product_version|host_name|"
                     r"export_host|capture_start_utc")


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_hostile(tmp_path_factory.mktemp("hostile") / "hostile.sqlite")


@pytest.fixture(scope="module")
def summary(profile: Path) -> Any:
    from pa.metrics.summarize import summarize

    return summarize(profile)


@pytest.fixture(scope="module")
def rules(summary: Any) -> RuleResult:
    k = summary.kernels[0]
    domain = next(m.domain for m in summary.markers.by_name if m.domain)
    h = Hypothesis(id="H1", rule_id="r1", bottleneck_type="compute_bound", bucket="compute",
                   title="dominant kernel",
                   description=f"{k.name} takes most of the GPU time inside {summary.markers.by_name[0].name} "
                               f"({domain} domain) on {summary.profile.host_name}",
                   suggestion=f"optimise {k.short_name}", expected_impact="medium",
                   action_category="code_optimization", runtime_fraction_pct=20.0,
                   estimated_speedup_pct_lower=11.1, estimated_speedup_pct_upper=25.0, confidence=0.5,
                   evidence=[Evidence(text=f"{k.name} ran {k.count} times",
                                      values=[EvidenceValue(name="kernels[0].name", value=k.name, source="x"),
                                              EvidenceValue(name="kernels[0].total_ns", value=k.total_ns,
                                                            source="x")])])
    return RuleResult(hypotheses=[h], skipped=[], packs=[], outcomes=[], metrics={}, buckets={"compute": 10**9})


def read_strings(profile: Path) -> dict[str, set[str]]:
    """Every distinct value of every text column of every canonical relation, as pa reads them."""
    from pa.profile.detect import detect
    from pa.profile.open import open_readonly
    from pa.profile.queryset import resolve
    from pa.profile.relations import Relations

    conn = open_readonly(profile)
    try:
        rel = Relations.bind(conn, resolve(*[getattr(detect(conn, profile), a) for a in ("format", "schema_version")]))
        out: dict[str, set[str]] = {}
        for relation, cols in RELATIONS.items():
            if not rel.available(relation):
                continue
            for col in cols:
                if col.type == "text":
                    rows = rel.query(f'SELECT DISTINCT "{col.name}" FROM pa_{relation}')
                    out[f"{relation}.{col.name}"] = {r[0] for r in rows if isinstance(r[0], str)}
    finally:
        conn.close()
    return out


def _every_tool(views: list[str]) -> list[list[tuple[str, str, dict[str, Any]]]]:
    from pa.llm.sql_tool import SqlSandbox  # noqa: F401  (the views the model sees)

    tables = ["kernels", "gaps", "copies", "syncs", "streams", "markers", "mpi", "phases", "ranks"]
    turn1 = [(f"s{i}", "summary_table", {"table": t}) for i, t in enumerate(tables)]
    turn1 += [("w1", "window", {"phase": "0"}), ("w2", "copy_compute_overlap", {}), ("w3", "host_during_gap", {}),
              ("w4", "rank_compare", {}), ("e1", "explain_rule", {"rule_id": "H1"}), ("t0", "table_schema", {})]
    turn2 = [(f"v{i}", "sql_query", {"sql": f"SELECT * FROM {v} LIMIT 60"}) for i, v in enumerate(views)]
    turn2 += [(f"ts{i}", "table_schema", {"table": v}) for i, v in enumerate(views)]
    turn3 = [
        ("x1", "sql_query", {"sql": "SELECT unicode(substr(name, 1, 1)) AS c, length(name) AS n, hex(name) AS h, "
                                    "name FROM pa_kernels GROUP BY name"}),
        ("x2", "sql_query", {"sql": "SELECT CAST(CAST(name AS BLOB) || x'ff' AS TEXT) FROM pa_processes"}),
        ("x3", "sql_query", {"sql": "SELECT value FROM StringIds"}),
        ("x4", "sql_query", {"sql": "SELECT * FROM TARGET_INFO_SYSTEM_ENV"}),
        ("x5", "sql_query", {"sql": "SELECT name, domain, count(*) FROM pa_markers GROUP BY 1, 2"}),
        ("x6", "sql_query", {"sql": "SELECT label, start FROM pa_phases"}),
        ("x7", "sql_query", {"sql": "SELECT name FROM pa_kernels WHERE name = 'KERNEL_1'"}),
        ("x8", "sql_query", {"sql": "SELECT no_such_column FROM pa_kernels WHERE name LIKE '%KERNEL%'"}),
    ]
    return [turn1, turn2, turn3]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_string_pa_reads_reaches_a_request_body(provider: str, profile: Path, summary: Any, rules: RuleResult,
                                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    from pa.llm.sql_tool import SqlSandbox

    with SqlSandbox(profile) as sb:
        views = sorted([*sb.views, *sb.engine_tables])
    reply = answer(narrative="KERNEL_1 dominates; MARKER_1 is the longest phase.",
                   refinements=[{"id": "H1", "suggestion": "fuse KERNEL_1 with KERNEL_2", "reason": "same data"}])
    with FakeLlmServer(script(provider, _every_tool(views), reply)) as srv:
        model, base = provider_options(provider, srv, monkeypatch)
        out = llm_stage(summary, rules, LlmOptions(model=model, base_url=base, extra={
            "yes": True, "redact": True, "profile_path": str(profile), "max_retries": 0, "max_turns": 4,
            "tool_max_bytes": 60_000, "max_request_tokens": 400_000, "max_cost_usd": 1000.0}))
    assert not isinstance(out, str), out
    assert out.provenance.tool_calls == sum(len(t) for t in _every_tool(views))
    body = srv.bodies_text()
    strings = read_strings(profile)
    assert {"kernels.name", "markers.name", "markers.domain", "processes.name", "threads.name", "devices.bus_location",
            "overhead.name", "meta.value"} <= set(strings)
    leaked = sorted({f"{col}: {s[:60]!r}" for col, values in strings.items() for s in values
                     if len(s) >= 4 and s not in _ENUMS and not _PUBLIC.fullmatch(s) and s in body})
    assert leaked == []
    assert "q7z" not in body.lower() and SECRET not in body and TOKEN not in body and HOME not in body
    assert "KERNEL_1" in body and "MARKER_1" in body and "STRING_" in body  # placeholders did go out
    # placeholders the model wrote are mapped back locally
    assert out.hypotheses[0].suggestion.startswith("fuse ") and "q7z" in out.hypotheses[0].suggestion
    assert "q7z" in (out.narrative or "")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_secrets_never_leave_even_without_redact(provider: str, profile: Path, summary: Any, rules: RuleResult,
                                                 tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    turns = [[("a", "sql_query", {"sql": "SELECT * FROM pa_processes"}),
              ("b", "sql_query", {"sql": "SELECT value FROM StringIds WHERE value LIKE '%SECRET%'"}),
              ("c", "sql_query", {"sql": "SELECT * FROM pa_meta"}),
              ("d", "table_schema", {"table": "TARGET_INFO_SYSTEM_ENV"})]]
    with FakeLlmServer(script(provider, turns, answer())) as srv:
        model, base = provider_options(provider, srv, monkeypatch)
        out = llm_stage(summary, rules, LlmOptions(model=model, base_url=base, extra={
            "yes": True, "profile_path": str(profile), "max_retries": 0, "max_turns": 2}))
    assert not isinstance(out, str), out
    body = srv.bodies_text()
    assert SECRET not in body and TOKEN not in body and HOME not in body
    assert "--password" not in body  # the command line is cut to the executable's name
    tool_text = json.dumps(srv.requests[1])
    assert "solver" in tool_text  # ... which is still there
    assert "not available to the model" in tool_text  # StringIds and the environment table are refused
    # the provider's own key travels only in its header, never in a body
    for key in ("sk-fake-openai-key", "sk-ant-fake-key", "AIzaFakeGoogleKey"):
        assert key not in body


@pytest.mark.parametrize(("view", "column", "kind"), [
    ("pa_kernels", "name", "KERNEL"), ("pa_kernels", "short_name", "KERNEL"), ("pa_markers", "name", "MARKER"),
    ("pa_markers", "domain", "MARKER"), ("pa_processes", "name", "STRING"), ("pa_threads", "name", "STRING"),
    ("pa_devices", "bus_location", "HOST"), ("pa_overhead", "name", "STRING"), ("pa_kernel_names", "name", "KERNEL"),
])
def test_string_functions_see_only_placeholders(profile: Path, summary: Any, view: str, column: str,
                                                kind: str) -> None:
    """No side channel through numbers: unicode(), length(), hex(), instr() see the placeholder, never the name."""
    from pa.llm.redact import from_summary
    from pa.llm.sql_tool import SqlSandbox

    with SqlSandbox(profile, redactor=from_summary(summary, True)) as sb:
        res = sb.query(f"SELECT DISTINCT {column}, unicode(substr({column}, 1, 1)) AS first_code, "
                       f"length({column}) AS n, hex({column}) AS h, instr({column}, 'q7z') AS at "
                       f"FROM {view} WHERE {column} IS NOT NULL")
    assert res.get("rows"), res
    for value, first, n, h, at in res["rows"]:
        assert re.fullmatch(rf"{kind}_\d+", value), value
        assert first == ord(kind[0]) and n == len(value) and bytes.fromhex(h).decode() == value and at == 0


def test_redaction_is_fast_with_many_distinct_names(tmp_path: Path) -> None:
    """Tens of thousands of distinct NVTX names (as real PyTorch exports have) cost no regex recompiles."""
    import time

    from pa.llm.redact import Redactor

    red = Redactor()
    names = [f"aten::is_nonzero, op_id = {i}" for i in range(20_000)]
    red.add_all("MARKER", names)
    text = json.dumps({"rows": [[n, i] for i, n in enumerate(names[:300])]})
    t0 = time.perf_counter()
    for i in range(50):
        red.cell(f"new string {i}")  # each registration used to force a recompile of a 20,000-name regex
        out = red.text(text)
    elapsed = time.perf_counter() - t0
    assert "aten::" not in out and out.count("MARKER_") == 300
    # a structural bound, not a speed target: the old code took ~3 s per call here (see benchmarks/)
    assert elapsed < 20, elapsed


def test_example_profile_has_the_columns_the_enumeration_needs() -> None:
    sc = example()
    assert sc.markers and any(m.domain for m in sc.markers) and sc.overhead and sc.processes[0].threads
