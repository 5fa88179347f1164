"""LLM stage, offline parts: SQL sandbox, redaction, context budget, answer re-checks."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from engine.llm.context import TOKEN_BUDGET, build_context, estimate_tokens, system_prompt, user_prompt
from engine.llm.output import LlmAnswer, apply_answer, ungrounded_numbers
from engine.llm.redact import Redactor, from_summary
from engine.llm.sql_tool import SqlLimits, SqlSandbox
from engine.llm.tools import TOOL_SPECS
from engine.rules.hypothesis import Evidence, EvidenceValue, Hypothesis


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "p.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    conn.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, f"kernel_{i}") for i in range(500)])
    conn.commit()
    conn.close()
    return path


def test_select_works_and_row_cap_is_stated(db: Path) -> None:
    with SqlSandbox(db, SqlLimits(max_rows=10)) as sb:
        res = sb.query("SELECT id, upper(value) FROM StringIds ORDER BY id")
    assert res["row_count"] == 10 and res["rows"][0] == [0, "KERNEL_0"]
    assert "row cap" in res["truncated"]


def test_byte_cap_is_stated(db: Path) -> None:
    with SqlSandbox(db, SqlLimits(max_rows=1000, max_bytes=200)) as sb:
        res = sb.query("SELECT value FROM StringIds")
    assert "result-size cap" in res["truncated"] and 0 < res["row_count"] < 20


@pytest.mark.parametrize("sql", [
    "WITH x AS (SELECT 1) DELETE FROM StringIds",
    "WITH x AS (SELECT 1) INSERT INTO StringIds SELECT 1000, 'x'",
    "SELECT load_extension('evil')",
    "SELECT randomblob(100000000)",
    "SELECT * FROM pragma_table_info('StringIds')",
    "DELETE FROM StringIds",
    "ATTACH DATABASE 'other.db' AS o",
    "PRAGMA writable_schema = 1",
    "SELECT 1; DROP TABLE StringIds",
])
def test_writes_attach_pragma_and_unsafe_functions_are_refused(db: Path, sql: str) -> None:
    with SqlSandbox(db) as sb:
        res = sb.query(sql)
        assert "error" in res
        assert sb.query("SELECT count(*) FROM StringIds")["rows"] == [[500]]


def test_authorizer_itself_denies_attach_and_pragma(db: Path, tmp_path: Path) -> None:
    """Bypass the keyword pre-check: the authorizer is the real gate."""
    with SqlSandbox(db) as sb:
        for sql in (f"ATTACH DATABASE '{tmp_path / 'x.db'}' AS x", "PRAGMA query_only = 0",
                    "CREATE TEMP TABLE t (a)"):
            with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
                sb._conn.execute(sql)
    assert not (tmp_path / "x.db").exists()


def test_long_query_is_interrupted_by_the_time_limit(db: Path) -> None:
    with SqlSandbox(db, SqlLimits(time_limit_s=0.2)) as sb:
        res = sb.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                       "SELECT count(*) FROM c")
        assert "time limit" in res["error"]
        assert sb.query("SELECT 1")["rows"] == [[1]]  # the connection is still usable


def test_schema_lookup(db: Path) -> None:
    with SqlSandbox(db) as sb:
        assert sb.schema(None) == {"tables": ["StringIds"]}
        assert "CREATE TABLE StringIds" in sb.schema("StringIds")["create"]
        assert "error" in sb.schema("nope")


def test_redactor_is_stable_and_reversible() -> None:
    red = Redactor()
    red.add("KERNEL", "void gemm<float>(float*)")
    red.add("KERNEL", "gemm")
    red.add("HOST", "node042")
    out = red.text("void gemm<float>(float*) ran on node042; gemm again; /home/alice/run.sh")
    assert out == "KERNEL_1 ran on HOST_1; KERNEL_2 again; PATH_1"
    assert red.restore(out) == "void gemm<float>(float*) ran on node042; gemm again; /home/alice/run.sh"
    assert red.cell("unknown string") == "STRING_1" and red.cell("gemm") == "KERNEL_2"
    assert red.restore_sql("SELECT 1 WHERE name = 'KERNEL_1'") == \
        "SELECT 1 WHERE name = 'void gemm<float>(float*)'"
    assert Redactor(enabled=False).text("node042") == "node042"


def test_context_fits_the_budget_on_real_profiles(real_profile: Path) -> None:
    from engine.metrics.summarize import summarize
    from engine.rules.engine import evaluate, load_ruleset

    summary = summarize(real_profile)
    result = evaluate(summary, load_ruleset())
    for redact in (False, True):
        red = from_summary(summary, redact)
        text = system_prompt(False) + user_prompt(build_context(summary, result), red) + json.dumps(TOOL_SPECS)
        assert estimate_tokens(text) < TOKEN_BUDGET
        if redact:
            for raw in red.raw_names():
                assert json.dumps(raw)[1:-1] not in text


def _hyp(hid: str, frac: float, bucket: str = "sync") -> Hypothesis:
    return Hypothesis(id=hid, rule_id=f"r_{hid}", bottleneck_type="synchronization", bucket=bucket,  # type: ignore[arg-type]
                      title=hid, description="d", suggestion="s", expected_impact="low",
                      action_category="code_optimization", runtime_fraction_pct=frac, confidence=0.5,
                      evidence=[Evidence(text="e", values=[EvidenceValue(name="x", value=1234, source="x")])])


def test_apply_answer_drops_unknown_ids_keeps_omitted_and_checks_numbers() -> None:
    answer = LlmAnswer.model_validate({
        "ranking": ["H2", "H7"],
        "refinements": [{"id": "H1", "description": "blocked 1234 ns", "reason": "r", "confidence_delta": 0.9},
                        {"id": "H2", "suggestion": "gain 73.5 %", "reason": "r"},
                        {"id": "H8", "description": "x", "reason": "r"}],
        "new_hypotheses": [
            {"title": "grounded", "bottleneck_type": "other", "bucket": "idle", "description": "d",
             "suggestion": "s", "action_category": "algorithm", "confidence": 0.9, "runtime_fraction_pct": 90,
             "evidence": [{"text": "t", "values": [{"name": "n", "value": 777.0, "source": "c1"}]}]},
            {"title": "invented", "bottleneck_type": "other", "bucket": "idle", "description": "d",
             "suggestion": "s", "action_category": "algorithm", "confidence": 0.5,
             "evidence": [{"text": "t", "values": [{"name": "n", "value": 999.0, "source": "c1"}]}]}],
        "narrative": "n"})
    warnings: list[str] = []
    out = apply_answer(answer, [_hyp("H1", 10), _hyp("H2", 5)], [1234.0], {"c1": [777.0]},
                       {"sync": 1000, "idle": 200}, 1000, warnings)
    assert [h.id for h in out] == ["H2", "H1", "L1"]
    h1 = out[1]
    assert h1.description == "blocked 1234 ns" and h1.confidence == pytest.approx(0.8)  # delta clamped
    assert out[0].suggestion == "s"  # 73.5 matches no fact: refinement dropped
    new = out[2]
    assert new.source == "llm" and new.confidence == 0.6 and new.runtime_fraction_pct == pytest.approx(20)
    assert new.estimated_speedup_pct_upper == pytest.approx(25.0)  # recomputed, capped to idle bucket
    text = "\n".join(warnings)
    assert "'H7'" in text and "'H8'" in text and "73.5" in text and "invented" in text


def test_ungrounded_numbers_tolerance() -> None:
    assert ungrounded_numbers("12.3 % and 1,000 ns and 3 streams", [12.345, 1000]) == []
    assert ungrounded_numbers("42.0 ms", [40.0]) == ["42.0"]
