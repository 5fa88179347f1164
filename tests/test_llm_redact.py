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

import dataclasses
import itertools
import json
import re
import sqlite3
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


# ---- host work and MPI names (issue 26 item 2) ---------------------------------------------------

HOSTILE_CPU = "AcmeCorp::ProjectNightjar::assembleStiffnessMatrix"   # a sampled host function
HOSTILE_OS = "nightjar_checkpoint_write"                              # an OS runtime call
HOSTILE_MPI = "AcmeNightjarHaloSwap"                                 # an MPI call (a wrapper's name)
PUBLIC_OS = ("pthread_cond_wait", "ioctl")                            # on the allow-list: may be sent


def _gtid(pid: int, tid: int) -> int:
    return (1 << 48) | (pid << 24) | tid


def _plant_host_work(path: Path) -> None:
    """OS runtime calls and CPU samples inside every GPU idle gap of `path`, on the launching thread."""
    with sqlite3.connect(path) as conn:  # our own generated file
        gtid = conn.execute("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1").fetchone()[0]
        ends = conn.execute('SELECT start, "end" FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start').fetchall()
        gaps = [(a[1], b[0]) for a, b in itertools.pairwise(ends) if b[0] - a[1] > 1_000_000]
        assert len(gaps) >= 10
        base = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM StringIds").fetchone()[0]
        names = [HOSTILE_OS, *PUBLIC_OS, HOSTILE_CPU]
        sid = {n: base + i for i, n in enumerate(names)}
        conn.executemany("INSERT INTO StringIds (id, value) VALUES (?, ?)", [(i, n) for n, i in sid.items()])
        conn.execute('CREATE TABLE OSRT_API (start INTEGER NOT NULL, "end" INTEGER NOT NULL, '
                     "eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, "
                     "returnValue INTEGER, nestingLevel INTEGER)")
        conn.execute("CREATE TABLE COMPOSITE_EVENTS (id INTEGER PRIMARY KEY, start INTEGER NOT NULL, "
                     "cpu INTEGER, threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL)")
        conn.execute("CREATE TABLE SAMPLING_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, "
                     "module INTEGER, unwindMethod INTEGER, stackDepth INTEGER NOT NULL)")
        osrt, samples = [], []
        for s, e in gaps:
            d = e - s
            osrt.append((s + d // 20, s + d * 12 // 20, 27, gtid, 0, sid[HOSTILE_OS], 0, 0))
            osrt.append((s + d * 13 // 20, s + d * 16 // 20, 27, gtid, 0, sid["pthread_cond_wait"], 0, 0))
            osrt.append((s + d * 17 // 20, s + d * 18 // 20, 27, gtid, 0, sid["ioctl"], 0, 0))
            for k in range(1, 20):
                samples.append((s + d * k // 20, sid["ioctl"] if k % 5 == 0 else sid[HOSTILE_CPU]))
        conn.executemany("INSERT INTO OSRT_API VALUES (?, ?, ?, ?, ?, ?, ?, ?)", osrt)
        for i, (t, sym) in enumerate(samples, start=1):
            conn.execute("INSERT INTO COMPOSITE_EVENTS VALUES (?, ?, 0, 1, ?, 0)", (i, t, gtid))
            conn.execute("INSERT INTO SAMPLING_CALLCHAINS VALUES (?, ?, 0, 0, 0)", (i, sym))


def _hostile_host_work(tmp_path: Path) -> Path:
    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import ALL_SCENARIOS

    path = write_nsys(ALL_SCENARIOS["host_idle_gaps"](), tmp_path / "nightjar.sqlite")
    _plant_host_work(path)
    return path


def _hostile_mpi(tmp_path: Path) -> Path:
    from testkit.nsys_writer import write_nsys
    from testkit.scenarios import ALL_SCENARIOS

    sc = ALL_SCENARIOS["mpi_collectives"]()
    sc.mpi_calls = [dataclasses.replace(c, name=HOSTILE_MPI) if c.name == "MPI_Allreduce" else c
                    for c in sc.mpi_calls]
    # GPU work on one process only: an export of several GPU processes is a rank set, whose rules read
    # the cross-rank facts, while MPI-IMB-001's evidence (which quotes the slowest collective by name,
    # the prose --redact must catch) reads the MPI calls of every process of one run.
    first = min(k.pid for k in sc.kernels)
    for name in ("kernels", "copies", "memsets"):
        setattr(sc, name, [x for x in getattr(sc, name) if x.pid == first])
    return write_nsys(sc, tmp_path / "nightjar_mpi.sqlite")


def _substrings(name: str, n: int = 8) -> set[str]:
    return {name[i:j].lower() for i in range(len(name)) for j in range(i + n, len(name) + 1)}


_HOST_WORK_TOOLS = [[("g", "summary_table", {"table": "gaps"}), ("m", "summary_table", {"table": "mpi"}),
                     ("h", "host_during_gap", {}), ("e", "explain_rule", {"rule_id": "H1"}),
                     ("r", "explain_rule", {}), ("w", "window", {})],
                    [("q1", "sql_query", {"sql": "SELECT name, count(*) AS calls_count FROM pa_os_calls GROUP BY 1"}),
                     ("q2", "sql_query", {"sql": "SELECT function, count(*) AS samples_count FROM pa_cpu_samples "
                                                 "GROUP BY 1"}),
                     ("q3", "sql_query", {"sql": "SELECT name, count(*) AS calls_count FROM pa_mpi_calls GROUP BY 1"}),
                     ("q4", "sql_query", {"sql": "SELECT * FROM pa_os_calls WHERE name LIKE '%ightjar%'"})]]


@pytest.mark.parametrize("case", ["host_work", "mpi"])
def test_host_work_and_mpi_names_never_reach_a_request_body(case: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`pa analyze --redact`: sampled functions, OS calls and MPI names of the profile become placeholders.

    The GPU-IDLE evidence quotes the host work in the gaps (and the MPI rules the slowest
    collective) as prose; a name off the allow-list of public API names must not be sent, in the
    first request or any other, nor any 8-character piece of it. Allow-listed names may be sent.
    """
    from click.testing import CliRunner

    from pa.cli import main
    from pa.metrics.summarize import summarize
    from pa.rules.engine import evaluate, load_ruleset

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("PA_CLAUDE_CLI", "")
    path = _hostile_host_work(tmp_path) if case == "host_work" else _hostile_mpi(tmp_path)
    hostile = [HOSTILE_CPU, HOSTILE_OS] if case == "host_work" else [HOSTILE_MPI]
    # the premise: the engine's own prose quotes the names (what --redact must catch)
    prose = " ".join(f"{h.title} {h.description} {h.suggestion} " + " ".join(e.text for e in h.evidence)
                     for h in evaluate(summarize(path), load_ruleset()).hypotheses)
    assert all(name in prose for name in hostile), prose
    with FakeLlmServer(script("openai", _HOST_WORK_TOOLS, answer(narrative="STRING_1 dominates."))) as srv:
        model, base = provider_options("openai", srv, monkeypatch)
        res = CliRunner().invoke(main, ["analyze", str(path), "-f", "json", "--redact", "--model", model,
                                        "--base-url", base, "--yes", "--max-turns", "3"])
        assert res.exit_code == 0, res.output
    assert len(srv.requests) == 3, res.output   # two tool turns and the answer: every request was made
    first, body = json.dumps(srv.requests[0], ensure_ascii=False), srv.bodies_text()
    leaked = sorted({p for name in hostile for p in _substrings(name) if p in body.lower()})
    assert leaked == [], leaked
    assert "STRING_" in first   # the names went out as placeholders
    if case == "host_work":   # allow-listed OS calls are sent as they are
        assert "ioctl" in first and "pthread_cond_wait" in body
    else:
        assert "MPI_Wait" in body and "MPI_Isend" in body   # standard MPI names are public


def test_every_string_field_of_the_summary_says_where_it_comes_from() -> None:
    """The redactor finds profile strings by their fields' origin: a new field must declare one."""
    import typing

    from pydantic import BaseModel

    from pa.metrics.model import ProfileSummary
    from pa.metrics.origin import text_fields
    from pa.ranks.model import RankOverview

    def models(tp: Any) -> list[type[BaseModel]]:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return [tp]
        return [m for a in typing.get_args(tp) for m in models(a)]

    seen: set[type] = set()
    stack: list[type[BaseModel]] = [ProfileSummary, RankOverview]
    missing = []
    while stack:
        model = stack.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, origin in text_fields(model):
            nested = models(model.model_fields[name].annotation)
            stack.extend(nested)
            if origin is None and not nested:
                missing.append(f"{model.__name__}.{name}")
    assert missing == []
    assert len(seen) > 30   # the walk reached the nested models


@pytest.mark.parametrize(("name", "public"), [
    ("cudaStreamSynchronize", True), ("cuMemAlloc_v2", True), ("hipMemcpyAsync", True), ("ncclAllReduce", True),
    ("MPI_Allreduce", True), ("PMPI_Comm_rank", True), ("MPI_File_write_at_all", True),
    ("pthread_cond_wait", True), ("ioctl", True), ("poll", True), ("read", True), ("NVIDIA A100-SXM4-80GB", True),
    (HOSTILE_CPU, False), (HOSTILE_OS, False), (HOSTILE_MPI, False), ("MPI_AcmeNightjarHalo", False),
    ("cuda::std::sort", False), ("nightjar_read", False), ("readNightjar", False), ("main_loop", False),
])
def test_allow_list(name: str, public: bool) -> None:
    from pa.llm.redact import Redactor, is_public

    assert is_public(name) is public
    red = Redactor()
    red.name("STRING", name)
    assert (red.placeholder(name) is None) is public
    assert (red.datum(name) == name) is public


def test_walk_registers_host_work_mpi_and_rank_names_and_keeps_pa_words(tmp_path: Path) -> None:
    from pa.llm.redact import from_summary
    from pa.metrics.summarize import summarize
    from pa.ranks.model import RankOverview

    s = summarize(_hostile_host_work(tmp_path))
    work = {w.name for g in s.idle_gaps for w in g.host_work}
    assert {HOSTILE_CPU, HOSTILE_OS, "ioctl", "pthread_cond_wait"} <= work
    rank = RankOverview(rank=3, rank_source="file_name", file_name="nightjar_rank3.sqlite", span_ns=1, kernel_time_ns=0,
                        busy_ns=0, idle_ns=0, mpi_ns=None, collective_wait_ns=0, utilization_pct=None)
    red = from_summary(s, True, ranks=[rank])
    for raw in (HOSTILE_CPU, HOSTILE_OS, s.kernels[0].name, s.profile.host_name, s.profile.file_name,
                "nightjar_rank3.sqlite"):
        assert red.placeholder(raw) is not None, raw
    for own in ("ioctl", "pthread_cond_wait", "cpu_samples", "os_runtime", "cpu_stall", "compute", "idle",
                s.devices[0].name):
        assert red.placeholder(own) is None, own
    text = red.text(f"mostly in {HOSTILE_CPU} (84 % of the samples), {HOSTILE_OS} and ioctl")
    assert "ightjar" not in text and "ioctl" in text and text.count("STRING_") == 2


def test_compare_redaction_covers_titles_and_iterations(tmp_path: Path) -> None:
    """`pa compare --redact`: a finding's title quotes a kernel's short name the document does not list."""
    from testkit.accuracy import generate_profile

    from pa.llm.compare import compare_user_prompt, redactor_for
    from pa.pipeline import CompareRequest, compare

    doc = compare(generate_profile("high_variance", "nsys", tmp_path),
                  generate_profile("host_idle_gaps", "nsys", tmp_path), CompareRequest(llm_enabled=False))
    titles = [h["title"] for h in doc["hypotheses"]]
    assert any("spmv_csr_kernel" in t for t in titles), titles
    sent = compare_user_prompt(doc, redactor_for(doc, True))
    for name in ("spmv_csr_kernel", "stencil3d_kernel", *titles):
        assert name not in sent, name
    assert "GPU-IDLE-001" in sent and "STRING_" in sent


def test_a_kernel_name_quoted_for_a_profiler_command_is_redacted_too() -> None:
    """A rule's suggestion pastes the name into `ncu -k 'regex:NAME'` (kernel_arg): that form is the same name."""
    from pa.llm.redact import Redactor
    from pa.rules.templates import kernel_arg

    red = Redactor(True)
    name = "void q7z_evil</profile-data> it's(int)"
    ph = red.add("KERNEL", name)
    for quoted in (kernel_arg(name), kernel_arg(name, "regex")):
        text = red.text(f"profile it: ncu --set full -k {quoted} ./app")
        assert "q7z" not in text and ph in text, text
