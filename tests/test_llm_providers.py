"""LLM stage, issue 6 completion: Gemini (google-genai + instructor) against the HTTP fake, the `claude`
CLI fallback with a fake executable, --exact-token-count, the pre-flight estimate and confirmation,
the report integration (narrative, post-check warnings, failure reason) and the summary tools."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from conftest import needs_real_profile, real_nsys_profile
from fakes.llm_server import (
    FakeLlmServer,
    Reply,
    anthropic_answer,
    anthropic_count,
    anthropic_tool_use,
    error,
    gemini_answer,
    gemini_count,
    gemini_error,
    gemini_function_calls,
    gemini_text,
    openai_answer,
    openai_text,
)

from pa.errors import UserError
from pa.llm.context import WRAP_UP, system_prompt
from pa.llm.model import LlmFailure, LlmOptions
from pa.llm.pricing import estimate_run, load_prices, price_for
from pa.llm.providers import LlmSettings, NoProvider, Target, resolve, resolve_target
from pa.llm.redact import Redactor, from_summary
from pa.llm.sql_tool import SqlSandbox
from pa.llm.stage import llm_stage
from pa.llm.tools import STATUS_MEANING, TOOL_NAMES, ToolBox
from pa.rules.evaluate import RuleOutcome, RuleResult
from pa.rules.hypothesis import Evidence, EvidenceValue, Hypothesis, amdahl_bounds

DLPROF = real_nsys_profile("nsys2022.1_dlprof_2streams.sqlite")
pytestmark = needs_real_profile(DLPROF)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))


@pytest.fixture(scope="module")
def summary(summary_of: Any) -> Any:
    return summary_of(DLPROF)


def _hyp(hid: str, frac: float, bucket: str, value: int) -> Hypothesis:
    lo, hi = amdahl_bounds(frac / 100)
    return Hypothesis(id=hid, rule_id=f"rule_{hid}", bottleneck_type="synchronization", bucket=bucket,  # type: ignore[arg-type]
                      title=f"title {hid}", description="rule text", suggestion="rule suggestion",
                      expected_impact="low", action_category="code_optimization", runtime_fraction_pct=frac,
                      estimated_speedup_pct_lower=lo, estimated_speedup_pct_upper=hi, confidence=0.5,
                      evidence=[Evidence(text="e", values=[EvidenceValue(name="v", value=value, source="x")])])


@pytest.fixture()
def rules(summary: Any) -> RuleResult:
    h1 = _hyp("H1", 30.0, "compute", summary.kernels[0].total_ns)
    h2 = _hyp("H2", summary.sync.cpu_blocked_pct_of_span, "sync", summary.sync.cpu_blocked_ns)
    outcomes = [RuleOutcome("rule_H1", "fired", None, {"when": True}),
                RuleOutcome("rule_H2", "fired", None, {"when": True}),
                RuleOutcome("pageable_copies", "silent", "condition `when` is false", {"when": False}),
                RuleOutcome("mpi_wait", "skipped", "requires summary.mpi (no MPI calls captured)", {})]
    return RuleResult(hypotheses=[h1, h2], skipped=[], packs=[], outcomes=outcomes, metrics={},
                      buckets={"compute": summary.span_ns, "sync": summary.sync.cpu_blocked_ns, "idle": 0})


def _answer(ranking: list[str], **kw: Any) -> dict[str, Any]:
    return {"ranking": ranking, "rank_changes": [{"id": i, "reason": "the reviewer's order"} for i in ranking],
            "refinements": kw.get("refinements", []), "new_hypotheses": kw.get("new_hypotheses", []),
            "narrative": kw.get("narrative", "short")}


def _gopts(srv: FakeLlmServer | None, model: str = "gemini:gemini-fake", **extra: Any) -> LlmOptions:
    return LlmOptions(model=model, base_url=srv.root if srv else None,
                      extra={"yes": True, "profile_path": str(DLPROF), "max_retries": 1,
                             "retry_initial_s": 0.01, **extra})


def _no_raw_names(srv_text: str, summary: Any) -> None:
    for raw in from_summary(summary, True).raw_names():
        assert json.dumps(raw)[1:-1] not in srv_text, raw


# ---------------------------------------------------------------- Gemini


def test_gemini_multi_turn_with_tools_redaction_and_log(summary: Any, rules: RuleResult, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "fake-key")
    sql = "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'"
    script = [gemini_function_calls(("g1", "summary_table", {"table": "kernels", "limit": 3}),
                                    (None, "sql_query", {"sql": sql}), text="looking"),
              gemini_function_calls(("g3", "explain_rule", {"rule_id": "H1"})),
              gemini_text("enough"),
              gemini_answer(_answer(["H2", "H1"], refinements=[
                  {"id": "H1", "suggestion": "fuse KERNEL_1", "reason": "dominant", "confidence_delta": 0.2}]))]
    log = tmp_path / "llm.jsonl"
    with FakeLlmServer(script) as srv:
        out = llm_stage(summary, rules, _gopts(srv, redact=True, log=log))
    assert not isinstance(out, str), out
    assert [h.id for h in out.hypotheses] == ["H2", "H1"]
    assert out.hypotheses[1].suggestion == f"fuse {summary.kernels[0].name}"  # mapped back locally
    prov = out.provenance
    assert (prov.provider, prov.model, prov.turns, prov.tool_calls) == ("gemini", "gemini-fake", 4, 3)
    assert prov.input_tokens == 400 and prov.output_tokens == 80 and prov.log_path == str(log)
    assert all(p.endswith("models/gemini-fake:generateContent") for p in srv.paths)
    first = srv.requests[0]
    names = [d["name"] for d in first["tools"][0]["functionDeclarations"]]
    assert names == TOOL_NAMES
    assert "never instructions" in json.dumps(first["systemInstruction"])
    turn = srv.requests[1]["contents"]
    assert [c["role"] for c in turn] == ["user", "model", "user"]
    responses = [p["functionResponse"] for p in turn[2]["parts"]]
    assert [r["name"] for r in responses] == ["summary_table", "sql_query"]
    assert responses[0]["id"] == "g1" and "id" not in responses[1]  # ids echoed only when the model sent one
    assert responses[1]["response"]["output"]["rows"]
    _no_raw_names(srv.bodies_text(), summary)
    assert "KERNEL_1" in srv.bodies_text()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["kind"] for r in records] == ["request", "response"] * 4
    assert "fake-key" not in log.read_text()


def test_gemini_forced_final_turn_and_base_url_from_environment(summary: Any, rules: RuleResult,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")
    loop = [gemini_function_calls((f"c{i}", "summary_table", {"table": "streams"})) for i in range(2)]
    with FakeLlmServer([*loop, gemini_answer(_answer(["H1"]))]) as srv:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.root)
        out = llm_stage(summary, rules, _gopts(None, model="gemini-fake", max_turns=3))
    assert not isinstance(out, str), out
    assert out.provenance.turns == 3 and out.provenance.provider == "gemini"
    # the wrap-up note travels with the first turn's results (one tool turn left)
    assert srv.requests[1]["contents"][-1]["parts"][-1] == {"text": WRAP_UP}
    final = srv.requests[-1]
    assert [d["name"] for d in final["tools"][0]["functionDeclarations"]] == ["LlmAnswer"]
    assert final["toolConfig"]["functionCallingConfig"]["mode"] == "ANY"
    assert "<tool-exchange>" in json.dumps(final["contents"])


def test_gemini_validation_retry_sends_the_errors_back(summary: Any, rules: RuleResult,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")
    bad = {"ranking": ["H1"], "refinements": [], "new_hypotheses": []}  # narrative missing
    with FakeLlmServer([gemini_text("no tools"), gemini_answer(bad), gemini_answer(_answer(["H1"]))]) as srv:
        out = llm_stage(summary, rules, _gopts(srv))
    assert not isinstance(out, str), out
    retry = json.dumps(srv.requests[2]["contents"][-1])
    assert "functionResponse" in retry and "narrative" in retry


@pytest.mark.parametrize(("script", "needle"), [
    ([gemini_error(429), gemini_error(429)], "ClientError"),
    ([gemini_error(500), gemini_error(503)], "ServerError"),
    ([Reply({}, 200, delay_s=1.5), Reply({}, 200, delay_s=1.5)], "Timeout"),
    ([gemini_text("x")] + [gemini_answer({"ranking": 3})] * 3, "InstructorRetryException"),
], ids=["rate-limit", "server-error", "timeout", "invalid-output"])
def test_gemini_failures_fall_back_to_rules_only(summary: Any, rules: RuleResult, script: list[Reply],
                                                 needle: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")
    with FakeLlmServer(script) as srv:
        out = llm_stage(summary, rules, _gopts(srv, timeout_s=0.5))
    assert isinstance(out, LlmFailure) and "LLM stage failed" in out and needle in out, out


def test_gemini_rate_limit_is_retried_then_succeeds(summary: Any, rules: RuleResult,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")
    with FakeLlmServer([gemini_error(429), gemini_text("ok"), gemini_answer(_answer(["H1"]))]) as srv:
        out = llm_stage(summary, rules, _gopts(srv))
    assert not isinstance(out, str), out
    assert len(srv.requests) == 3


# ---------------------------------------------------------------- --exact-token-count, pre-flight


def test_exact_token_count_anthropic(summary: Any, rules: RuleResult, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-key")
    script = [anthropic_count(1234), anthropic_tool_use(text="done"), anthropic_answer(_answer(["H1"]))]
    with FakeLlmServer(script) as srv:
        out = llm_stage(summary, rules, _gopts(srv, model="anthropic:claude-fake",
                                               exact_token_count=True))
    assert not isinstance(out, str), out
    assert srv.paths[0] == "/v1/messages/count_tokens"
    assert srv.requests[0]["tools"][0]["name"] == "summary_table" and "system" in srv.requests[0]
    err = capsys.readouterr().err
    assert "first request 1,234 input tokens (counted by the provider)" in err
    assert "cost unknown" in err  # a local endpoint is not the provider's list price


def test_exact_token_count_gemini(summary: Any, rules: RuleResult, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")
    with FakeLlmServer([gemini_count(2345), gemini_text("ok"), gemini_answer(_answer(["H1"]))]) as srv:
        out = llm_stage(summary, rules, _gopts(srv, exact_token_count=True))
    assert not isinstance(out, str), out
    assert srv.paths[0].endswith("models/gemini-fake:countTokens")
    assert "2,345 input tokens (counted by the provider)" in capsys.readouterr().err


def test_exact_token_count_openai_says_there_is_none(summary: Any, rules: RuleResult,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLlmServer([openai_text("ok"), openai_answer(_answer(["H1"]))]) as srv:
        out = llm_stage(summary, rules, LlmOptions(model="openai:gpt-4.1", base_url=srv.url, extra={
            "yes": True, "exact_token_count": True, "max_retries": 1}))
    assert not isinstance(out, str), out
    assert all(p.endswith("/chat/completions") for p in srv.paths) and len(srv.paths) == 2
    err = capsys.readouterr().err
    assert "OpenAI has no token-counting endpoint; using the estimate" in err
    assert "estimated, ceil(chars/4)" in err


def test_failed_token_count_does_not_stop_the_stage(summary: Any, rules: RuleResult,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-key")
    script = [gemini_error(400), gemini_text("ok"), gemini_answer(_answer(["H1"]))]
    with FakeLlmServer(script) as srv:
        out = llm_stage(summary, rules, _gopts(srv, exact_token_count=True))
    assert not isinstance(out, str), out
    assert "--exact-token-count failed" in capsys.readouterr().err


def test_non_tty_never_prompts_and_tty_asks(summary: Any, rules: RuleResult,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def confirm(text: str, **kw: Any) -> bool:
        asked.append(text)
        return False

    monkeypatch.setattr(click, "confirm", confirm)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # not a TTY, no --yes
    opts = LlmOptions(model="openai:gpt-4.1", extra={"max_retries": 1})
    with FakeLlmServer([openai_text("ok"), openai_answer(_answer(["H1"]))]) as srv:
        out = llm_stage(summary, rules, LlmOptions(model=opts.model, base_url=srv.url, extra=opts.extra))
    assert not isinstance(out, str) and asked == []

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Tty(""))
    with FakeLlmServer([]) as srv:
        out = llm_stage(summary, rules, LlmOptions(model=opts.model, base_url=srv.url, extra=opts.extra))
        assert out == "LLM stage declined at the cost prompt" and srv.requests == []
    assert len(asked) == 1 and "input tokens" in asked[0] and "cost" in asked[0]
    with FakeLlmServer([openai_text("ok"), openai_answer(_answer(["H1"]))]) as srv:  # --yes skips it
        out = llm_stage(summary, rules, LlmOptions(model=opts.model, base_url=srv.url,
                                                   extra={**opts.extra, "yes": True}))
    assert not isinstance(out, str) and len(asked) == 1


def test_price_table_and_cost_estimate() -> None:
    prices = load_prices()
    assert prices.keys() == {"anthropic", "openai", "gemini"}
    settings = LlmSettings(max_turns=8, sql_max_bytes=16_000)
    t = Target("anthropic", "claude-sonnet-4-5-20250929", "k", None)
    p = price_for(t, prices)
    assert p is not None and (p.input, p.output) == (3.0, 15.0)
    mini = price_for(Target("openai", "gpt-4.1-mini", "k", None), prices)
    assert mini is not None and mini.prefix == "gpt-4.1-mini"  # longest prefix wins
    est = estimate_run(2000, False, t, settings, prices)
    assert (est.input_low, est.input_high) == (4000, 8 * 2000 + 4000 * 28)
    assert est.cost_low == pytest.approx((4000 * 3 + 600 * 15) / 1e6)
    assert "cost ≈ $" in est.text(t)
    for unknown in (Target("openai", "llama3.1", "k", "http://gpu-node:8000/v1"),
                    Target("gemini", "gemini-9-ultra", "k", None),
                    Target("openai", "gpt-4.1", "k", "http://localhost:11434/v1")):
        assert "cost unknown" in estimate_run(2000, False, unknown, settings, prices).text(unknown)
    cli = Target("claude-cli", "default", "", None, cli="/usr/bin/claude")
    assert "billed to the claude CLI" in estimate_run(2000, False, cli, settings, prices).text(cli)


def test_dry_run_shows_the_cost_line(summary: Any, rules: RuleResult, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    out = llm_stage(summary, rules, LlmOptions(model="openai:gpt-4.1-mini", extra={"dry_run": True}))
    assert isinstance(out, str) and not isinstance(out, LlmFailure)
    assert "cost ≈ $" in capsys.readouterr().err


# ---------------------------------------------------------------- claude CLI fallback

_FAKE_CLAUDE = """#!{python}
import json, sys
prompt = sys.stdin.read()
with open({record!r}, "w") as fh:
    json.dump({{"argv": sys.argv[1:], "stdin": prompt}}, fh)
mode = {mode!r}
if mode == "garbage":
    print("I think the GPU is slow, sorry, no JSON today")
elif mode == "fail":
    print("Invalid API key", file=sys.stderr)
    sys.exit(1)
else:
    answer = {answer!r}
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
                      "result": "```json\\n" + json.dumps(answer) + "\\n```",
                      "usage": {{"input_tokens": 1500, "output_tokens": 90}}}}))
"""


def _fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str,
                 answer: dict[str, Any] | None = None) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    record = tmp_path / "claude-call.json"
    exe = bindir / "claude"
    exe.write_text(_FAKE_CLAUDE.format(python=sys.executable, record=str(record), mode=mode,
                                       answer=answer or _answer(["H2", "H1"])))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.delenv("PA_CLAUDE_CLI", raising=False)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    return record


def test_claude_cli_fallback_single_shot(summary: Any, rules: RuleResult, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    answer = _answer(["H2", "H1"], narrative="KERNEL_1 dominates.", refinements=[
        {"id": "H1", "suggestion": "fuse KERNEL_1", "reason": "dominant"}])
    record = _fake_claude(tmp_path, monkeypatch, "ok", answer)
    assert resolve_target(LlmSettings()) is None  # on PATH is not asked for: data never leaves unasked
    target = resolve_target(LlmSettings(model="claude-cli"))
    assert target is not None and target.provider == "claude-cli" and target.cli
    log = tmp_path / "cli.jsonl"
    out = llm_stage(summary, rules, LlmOptions(model="claude-cli", extra={
        "yes": True, "redact": True, "log": log, "profile_path": str(DLPROF)}))
    assert not isinstance(out, str), out
    assert [h.id for h in out.hypotheses] == ["H2", "H1"]
    assert out.hypotheses[1].suggestion == f"fuse {summary.kernels[0].name}"
    assert out.narrative == f"{summary.kernels[0].name} dominates."
    prov = out.provenance
    assert (prov.provider, prov.turns, prov.tool_calls, prov.input_tokens, prov.output_tokens) == \
        ("claude-cli", 1, 0, 1500, 90)
    call = json.loads(record.read_text())
    assert call["argv"][:5] == ["-p", "--output-format", "json", "--max-turns", "1"]
    assert "<profile-data>" in call["stdin"] and "<answer-schema>" in call["stdin"]
    assert "No tools are available" in call["stdin"]
    _no_raw_names(call["stdin"] + json.dumps(call["argv"]), summary)
    assert [json.loads(line)["kind"] for line in log.read_text().splitlines()] == ["request", "response"]


def test_claude_cli_explicit_model_and_anthropic_without_key(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from pa.llm.claude_cli import cli_argv

    _fake_claude(tmp_path, monkeypatch, "ok")
    # anthropic:MODEL without a key names the missing key; it does not fall back to the CLI silently
    got = resolve(LlmSettings(model="anthropic:claude-opus-4-1"))
    assert isinstance(got, NoProvider) and "ANTHROPIC_API_KEY" in got and "claude-cli" in got
    t = resolve_target(LlmSettings(model="claude-cli:claude-opus-4-1"))
    assert t is not None and (t.provider, t.model) == ("claude-cli", "claude-opus-4-1")
    assert cli_argv(t)[-2:] == ["--model", "claude-opus-4-1"]
    t = resolve_target(LlmSettings(model="claude-cli"))
    assert t is not None and t.model == "default" and "--model" not in cli_argv(t)
    assert resolve_target(LlmSettings(model="openai:gpt-4.1")) is None  # no key: rules only
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    t = resolve_target(LlmSettings())
    assert t is not None and t.provider == "anthropic"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("PA_CLAUDE_CLI", "")
    with pytest.raises(UserError, match="not on PATH"):
        resolve_target(LlmSettings(model="claude-cli"))


@pytest.mark.parametrize(("mode", "needle"), [("garbage", "no JSON object"), ("fail", "exited with code 1"),
                                              ("invalid", "invalid answer")])
def test_claude_cli_failures_fall_back_to_rules_only(summary: Any, rules: RuleResult, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch, mode: str,
                                                     needle: str) -> None:
    _fake_claude(tmp_path, monkeypatch, "ok" if mode == "invalid" else mode, {"ranking": "H1"})
    out = llm_stage(summary, rules, LlmOptions(model="claude-cli", extra={"yes": True}))
    assert isinstance(out, LlmFailure) and "ClaudeCliError" in out and needle in out, out


def test_pa_analyze_with_garbage_from_claude_cli_reports_the_reason(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from pa.cli import main

    _fake_claude(tmp_path, monkeypatch, "garbage")
    res = CliRunner().invoke(main, ["analyze", str(DLPROF), "-f", "json", "--model", "claude-cli"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["provenance"]["llm"]["mode"] == "rules_only" and doc["llm"] is None
    assert any("LLM stage failed" in w and "no JSON object" in w for w in doc["warnings"])
    assert any(k["stage"] == "llm" and "ClaudeCliError" in k["reason"] for k in doc["skipped"])


# ---------------------------------------------------------------- report integration


def test_report_carries_narrative_and_post_check_warnings(tmp_path: Path) -> None:
    from pa.cli import main
    from pa.report.render import render

    answer = _answer(["H99"], narrative="Most of the 123456789 ns go to one kernel.",
                     refinements=[{"id": "H77", "description": "x", "reason": "r"}])
    with FakeLlmServer([openai_text("done"), openai_answer(answer)]) as srv:
        res = CliRunner().invoke(main, ["analyze", str(DLPROF), "-f", "json", "--model", "openai:local",
                                        "--base-url", srv.url, "--yes"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema_version"] >= "1.1"
    assert doc["llm"]["narrative"] == "Most of the 123456789 ns go to one kernel."
    assert doc["llm"]["ungrounded_numbers"] == ["123456789 ns"]  # flagged with its unit
    assert doc["llm"]["engine_order"] == [h["id"] for h in doc["hypotheses"]] and doc["llm"]["moves"] == []
    w = "\n".join(doc["warnings"])
    assert "unknown candidate id 'H99'" in w and "refinement of unknown id 'H77'" in w
    assert "narrative cites numbers 123456789" in w
    prov = doc["provenance"]["llm"]
    assert prov["mode"] == "llm" and prov["turns"] == 2 and prov["input_tokens"] == 200
    for fmt in ("text", "markdown", "html"):
        text = render(doc, fmt)
        assert "Most of the 123456789 ns go to one kernel." in text and "LLM narrative" in text, fmt
        assert "unknown candidate id" in text.replace("&#39;", "'"), fmt


def test_report_lists_a_provider_failure_under_warnings(tmp_path: Path) -> None:
    from pa.cli import main

    with FakeLlmServer([error(500), error(500), error(500), error(500)]) as srv:
        res = CliRunner().invoke(main, ["analyze", str(DLPROF), "-f", "json", "--model", "openai:local",
                                        "--base-url", srv.url, "--yes"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert any(w.startswith("LLM stage failed (InternalServerError") for w in doc["warnings"])
    assert any(k["stage"] == "llm" for k in doc["skipped"]) and doc["llm"] is None
    res = CliRunner().invoke(main, ["analyze", str(DLPROF), "-f", "json", "--no-llm"])
    doc = json.loads(res.stdout)
    assert not any("LLM" in w for w in doc["warnings"])  # a deliberate rules-only run is no warning


# ---------------------------------------------------------------- tools and --allow-app-knowledge


def test_summary_tables_phases_and_ranks(summary: Any, rules: RuleResult) -> None:
    box = ToolBox(summary, rules, Redactor(False))
    phases = json.loads(box.run("c1", "summary_table", {"table": "phases", "limit": 2}))
    if summary.phases:
        assert len(phases["rows"]) == min(2, len(summary.phases)) and "label" in phases["rows"][0]
    else:
        assert phases["rows"] is None
    none = json.loads(box.run("c2", "summary_table", {"table": "ranks"}))
    assert none["rows"] is None and "one profile" in none["note"]
    box.ranks = [{"rank": 0, "span_ns": 10}, {"rank": 1, "span_ns": 12}]
    assert json.loads(box.run("c3", "summary_table", {"table": "ranks"}))["rows"][1]["span_ns"] == 12
    for table in ("kernels", "gaps", "copies", "syncs", "streams", "markers", "mpi"):
        res = json.loads(box.run(f"t_{table}", "summary_table", {"table": table}))
        assert "error" not in res and res["table"] == table
    assert "error" in json.loads(box.run("c4", "summary_table", {"table": "nope"}))


def test_explain_rule_says_why_a_rule_fired_or_not(summary: Any, rules: RuleResult) -> None:
    box = ToolBox(summary, rules, Redactor(False))
    fired = json.loads(box.run("c1", "explain_rule", {"rule_id": "H1"}))
    assert fired["rule_id"] == "rule_H1" and fired["status"] == "fired" and fired["hypotheses"] == ["H1"]
    silent = json.loads(box.run("c2", "explain_rule", {"rule_id": "pageable_copies"}))
    assert silent["meaning"] == STATUS_MEANING["silent"] and silent["values"] == {"when": False}
    skipped = json.loads(box.run("c3", "explain_rule", {"rule_id": "mpi_wait"}))
    assert "not the same as healthy" in skipped["meaning"] and "MPI" in skipped["reason"]
    listing = json.loads(box.run("c4", "explain_rule", {}))
    assert {r["status"] for r in listing["rules"]} == {"fired", "silent", "skipped"}
    unknown = json.loads(box.run("c5", "explain_rule", {"rule_id": "mpi"}))
    assert "error" in unknown and unknown["similar"] == ["mpi_wait"]


def test_table_schema_lookup(summary: Any, rules: RuleResult) -> None:
    with SqlSandbox(DLPROF) as sb:
        box = ToolBox(summary, rules, Redactor(False), sb)
        tables = json.loads(box.run("c1", "table_schema", {}))
        assert "pa_kernels" in tables["views"] and "pa_gaps" not in tables["views"]
        assert "CUPTI_ACTIVITY_KIND_KERNEL" not in json.dumps(tables)  # the export's own tables stay hidden
        one = json.loads(box.run("c2", "table_schema", {"table": "pa_kernels"}))
        assert one["columns"]["start"] == "start, ns"
    assert "not available" in json.loads(ToolBox(summary, rules, Redactor(False)).run(
        "c3", "table_schema", {}))["error"]


def test_allow_app_knowledge_reaches_the_system_prompt(summary: Any, rules: RuleResult) -> None:
    assert system_prompt(True) != system_prompt(False)
    for flag, needle in ((True, "general knowledge of well-known applications"),
                         (False, "Do not rely on knowledge of the application")):
        with FakeLlmServer([openai_text("ok"), openai_answer(_answer(["H1"]))]) as srv:
            extra: dict[str, Any] = {"yes": True, "max_retries": 1}
            if flag:
                extra["allow_app_knowledge"] = True
            out = llm_stage(summary, rules, LlmOptions(model="openai:m", base_url=srv.url, extra=extra))
        assert not isinstance(out, str)
        assert needle in srv.requests[0]["messages"][0]["content"]
        assert needle in srv.requests[-1]["messages"][0]["content"]
