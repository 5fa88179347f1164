"""Robust and economical: deadline, Gemini's malformed calls, JSON-as-text answers, prompt caching, token use and
cost in provenance (also after a failure), one warning line, ceilings refused even with --yes, capped tool results,
delimiters that no profile string can spoof."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fakes.llm_server import (
    FakeLlmServer,
    Reply,
    anthropic_answer,
    anthropic_text,
    anthropic_tool_use,
    error,
    gemini_answer,
    gemini_function_calls,
    gemini_malformed,
    gemini_text,
    openai_answer,
    openai_text,
    openai_tool_calls,
    with_cached,
)
from llm_world import LONG_NAME, PROVIDERS, answer, provider_options, script, write_hostile

from pa.llm.model import LlmFailure, LlmOptions
from pa.llm.stage import llm_stage


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_hostile(tmp_path_factory.mktemp("robust") / "p.sqlite")


@pytest.fixture(scope="module")
def summary(profile: Path) -> Any:
    from pa.metrics.summarize import summarize

    return summarize(profile)


@pytest.fixture(scope="module")
def rules(summary: Any) -> Any:
    from pa.rules.engine import evaluate, load_ruleset

    return evaluate(summary, load_ruleset())


def _opts(provider: str, srv: FakeLlmServer, monkeypatch: pytest.MonkeyPatch, profile: Path | None = None,
          **extra: Any) -> LlmOptions:
    model, base = provider_options(provider, srv, monkeypatch)
    return LlmOptions(model=model, base_url=base, extra={"yes": True, "max_retries": 0, "retry_initial_s": 0.01,
                                                          **({"profile_path": str(profile)} if profile else {}),
                                                          **extra})


# ---------------------------------------------------------------- one overall deadline


@pytest.mark.slow  # waits out a deadline against a hung fake server (~2 s each)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_hung_server_costs_the_deadline_not_timeout_times_retries(provider: str, summary: Any, rules: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import google.genai  # noqa: F401  (imports are not the stage's time)
    import instructor  # noqa: F401

    import pa.llm.agent  # noqa: F401

    hung = [Reply({}, 200, delay_s=6.0)] * 4
    with FakeLlmServer(hung) as srv:
        t0 = time.monotonic()
        out = llm_stage(summary, rules, _opts(provider, srv, monkeypatch, deadline_s=1.5, timeout_s=120.0,
                                              max_retries=3))
        elapsed = time.monotonic() - t0
    assert isinstance(out, LlmFailure) and "deadline of 1.5 s" in out, out
    assert elapsed < 4.0, elapsed  # was timeout_s × (retries + 1): 480 s


@pytest.mark.slow  # waits out a deadline against a hung fake server (~2 s each)
def test_cli_deadline_gives_the_rules_only_report_with_one_warning_line(profile: Path) -> None:
    from pa.cli import main

    with FakeLlmServer([Reply({}, 200, delay_s=6.0)] * 4) as srv:
        res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--model", "openai:m", "--base-url",
                                        srv.url, "--yes", "--llm-timeout", "1.5"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["provenance"]["llm"]["mode"] == "rules_only" and "deadline" in doc["provenance"]["llm"]["reason"]
    lines = res.stderr.strip().splitlines()
    assert all(line.startswith("pa: ") for line in lines), lines  # no SDK log line beside pa's
    assert sum("warning" in line for line in lines) == 1


def test_failure_after_retries_is_one_warning_line_and_keeps_the_tokens_spent(profile: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    from pa.cli import main

    # as in a real run: no handler on the root logger (pytest installs its own), so Python's last-resort
    # handler would print a library's warnings and errors on stderr
    monkeypatch.setattr(logging.root, "handlers", [])

    # the final turn fails: instructor used to print "API call failed on attempt 1 ..." beside pa's warning
    script_ = [openai_tool_calls(("c1", "summary_table", {"table": "kernels"})), openai_text("ok"), *[error(500)] * 4]
    with FakeLlmServer(script_) as srv:
        res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--model", "openai:m", "--base-url",
                                        srv.url, "--yes"])
    assert res.exit_code == 0, res.output
    lines = res.stderr.strip().splitlines()
    assert all(line.startswith("pa: ") for line in lines), lines
    assert [line for line in lines if "warning" in line] == [next(x for x in lines if "LLM stage failed" in x)]
    llm = json.loads(res.stdout)["provenance"]["llm"]
    assert llm["mode"] == "rules_only" and llm["input_tokens"] == 200 and llm["output_tokens"] == 40
    assert llm["turns"] == 2 and llm["tool_calls"] == 1


# ---------------------------------------------------------------- provider quirks


def test_gemini_malformed_function_call_retries_the_turn(summary: Any, rules: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    replies = [gemini_malformed(), gemini_function_calls(("g1", "summary_table", {"table": "syncs"})),
               gemini_text("done"), gemini_malformed(), gemini_answer(answer())]
    with FakeLlmServer(replies) as srv:
        out = llm_stage(summary, rules, _opts("gemini", srv, monkeypatch))
    assert not isinstance(out, str), out
    assert len(srv.requests) == 5 and out.provenance.tool_calls == 1
    assert srv.requests[0] == srv.requests[1]  # the same turn asked again


def test_gemini_malformed_every_time_fails_cleanly(summary: Any, rules: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLlmServer([gemini_malformed()] * 3) as srv:
        out = llm_stage(summary, rules, _opts("gemini", srv, monkeypatch))
    assert isinstance(out, LlmFailure) and "malformed function call 3 times" in out


def test_on_prem_server_answering_the_final_turn_with_json_text_is_accepted(summary: Any, rules: Any) -> None:
    text = "Here is my answer:\n```json\n" + json.dumps(answer(narrative="Text JSON answer.")) + "\n```"
    with FakeLlmServer([openai_text("no tools"), openai_text(text)]) as srv:
        out = llm_stage(summary, rules, LlmOptions(model="qwen2.5", base_url=srv.url, extra={
            "yes": True, "max_retries": 0}))
    assert not isinstance(out, str), out
    assert out.narrative == "Text JSON answer." and len(srv.requests) == 2


def test_invalid_json_text_is_still_reasked_with_the_errors(summary: Any, rules: Any) -> None:
    bad = json.dumps({"ranking": [], "narrative": ""})  # narrative too short
    with FakeLlmServer([openai_text("x"), openai_text(bad), openai_text(json.dumps(answer()))]) as srv:
        out = llm_stage(summary, rules, LlmOptions(model="qwen2.5", base_url=srv.url, extra={
            "yes": True, "max_retries": 0}))
    assert not isinstance(out, str), out
    assert "narrative" in json.dumps(srv.requests[2]["messages"][-1])


# ---------------------------------------------------------------- prompt caching and cached tokens


def test_anthropic_cache_breakpoints_and_cached_tokens(summary: Any, rules: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    replies = [with_cached(anthropic_tool_use(("t1", "summary_table", {"table": "syncs"})), 0),
               with_cached(anthropic_tool_use(("t2", "summary_table", {"table": "copies"})), 900),
               with_cached(anthropic_text("done"), 900), anthropic_answer(answer())]
    with FakeLlmServer(replies) as srv:
        out = llm_stage(summary, rules, _opts("anthropic", srv, monkeypatch))
    assert not isinstance(out, str), out
    first, third = srv.requests[0], srv.requests[2]
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert first["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    marks = [b for m in third["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])
             if "cache_control" in b]
    assert len(marks) + 1 <= 4 and marks[-1]["tool_use_id"] == "t2"  # the newest results are a breakpoint
    prov = out.provenance
    assert prov.cached_input_tokens == 1800 and prov.input_tokens == 400 + 1800


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_stable_prefix_and_cached_tokens_reported(provider: str, summary: Any, rules: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    step = openai_tool_calls if provider == "openai" else gemini_function_calls
    final = openai_answer if provider == "openai" else gemini_answer
    replies = [with_cached(step(("c1", "summary_table", {"table": "syncs"})), 0),
               with_cached(step(("c2", "summary_table", {"table": "streams"})), 640),
               with_cached(final(answer()), 640)]
    with FakeLlmServer(replies) as srv:
        out = llm_stage(summary, rules, _opts(provider, srv, monkeypatch, max_turns=3))
    assert not isinstance(out, str), out
    a, b = srv.requests[0], srv.requests[1]
    if provider == "openai":  # the prefix a provider caches is byte-identical from one turn to the next
        assert a["messages"][:2] == b["messages"][:2] and a["tools"] == b["tools"]
    else:
        assert a["contents"][0] == b["contents"][0] and a["systemInstruction"] == b["systemInstruction"]
    assert out.provenance.cached_input_tokens == 1280


# ---------------------------------------------------------------- cost, ceilings, --dry-run


def test_cost_ceiling_refuses_even_with_yes_and_sends_nothing(summary: Any, rules: Any,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789abcdef")
    out = llm_stage(summary, rules, LlmOptions(model="openai:gpt-4.1", extra={"yes": True, "max_cost_usd": 0.01}))
    assert isinstance(out, LlmFailure) and "above the ceiling of $0.01" in out
    assert "--max-cost" in capsys.readouterr().err  # nothing was sent: there is no server at all here


def test_request_token_ceiling_refuses_the_first_request_and_a_grown_one(summary: Any, rules: Any) -> None:
    with FakeLlmServer([]) as srv:
        out = llm_stage(summary, rules, LlmOptions(model="m", base_url=srv.url, extra={
            "yes": True, "max_request_tokens": 500}))
        assert isinstance(out, LlmFailure) and "max_request_tokens" in out and srv.requests == []
    big = [openai_tool_calls(*[(f"c{i}", "summary_table", {"table": t}) for i, t in
                               enumerate(("kernels", "markers", "phases", "gaps", "streams"))])]
    with FakeLlmServer([*big, openai_answer(answer())]) as srv:
        out = llm_stage(summary, rules, LlmOptions(model="m", base_url=srv.url, extra={
            "yes": True, "max_request_tokens": 6_000, "max_retries": 0}))
    assert isinstance(out, LlmFailure) and "above the ceiling" in out and len(srv.requests) == 1


def test_cost_in_provenance_uses_the_price_and_the_cache_discount() -> None:
    from pa.llm.agent import Usage
    from pa.llm.providers import LlmSettings, Target
    from pa.llm.stage import _provenance

    t = Target("anthropic", "claude-sonnet-4-5", "k" * 20, None, key_from="ANTHROPIC_API_KEY")
    usage = Usage(turns=2, tool_calls=1, input_tokens=10_000, output_tokens=1_000, cached_input_tokens=4_000)
    prov = _provenance(t, LlmSettings(), usage)
    assert prov.estimated_cost_usd == pytest.approx((6_000 * 3 + 4_000 * 3 * 0.1 + 1_000 * 15) / 1e6)
    assert "as of" in (prov.cost_basis or "")
    on_prem = Target("openai", "qwen", "not-needed", "http://gpu:8000/v1")
    assert _provenance(on_prem, LlmSettings(), usage).estimated_cost_usd is None


# ---------------------------------------------------------------- tool results capped, strings capped and escaped


def test_tool_results_are_capped_in_bytes_and_say_so(summary: Any, rules: Any) -> None:
    with FakeLlmServer([openai_tool_calls(("c1", "summary_table", {"table": "kernels"}),
                                          ("c2", "summary_table", {"table": "markers"})),
                        openai_text("ok"), openai_answer(answer())]) as srv:
        out = llm_stage(summary, rules, LlmOptions(model="m", base_url=srv.url, extra={
            "yes": True, "max_retries": 0, "tool_max_bytes": 1_000}))
    assert not isinstance(out, str), out
    results = [m["content"] for m in srv.requests[1]["messages"] if m["role"] == "tool"]
    assert all(len(r) <= 1_600 for r in results), [len(r) for r in results]
    assert all("tool result cap of 1,000 bytes" in r for r in results)


def test_no_profile_string_can_close_a_data_block_or_blow_up_the_request(summary: Any, rules: Any,
                                                                         profile: Path) -> None:
    turns = [openai_tool_calls(("c1", "sql_query", {"sql": "SELECT DISTINCT name FROM pa_kernels"}),
                               ("c2", "summary_table", {"table": "kernels"})), openai_text("ok"),
             openai_answer(answer())]
    with FakeLlmServer(turns) as srv:
        out = llm_stage(summary, rules, LlmOptions(model="m", base_url=srv.url, extra={
            "yes": True, "max_retries": 0, "profile_path": str(profile)}))
    assert not isinstance(out, str), out
    for req in srv.requests:
        for m in req["messages"]:
            content = m.get("content") or ""
            if m["role"] in ("user", "tool"):
                inner = content.replace("<profile-data>", "").replace("</profile-data>", "") \
                    .replace("<tool-exchange>", "").replace("</tool-exchange>", "")
                assert "</profile-data>" not in inner and "<profile-data>" not in inner
                assert content.count("<profile-data>") <= 1
    body = srv.bodies_text()
    assert "xxxxxxxxxx" * 30 not in body and LONG_NAME not in body  # the 20,000-character name is cut
    assert max(len(json.dumps(r)) for r in srv.requests) < 60_000


def test_dry_run_prints_one_token_estimate(summary: Any, rules: Any, capsys: pytest.CaptureFixture[str]) -> None:
    out = llm_stage(summary, rules, LlmOptions(model="m", base_url="http://127.0.0.1:9/v1",
                                               extra={"dry_run": True}))
    err = capsys.readouterr().err
    assert isinstance(out, str) and err.count("input tokens") == 1 and "(estimated, ceil(chars/4))" in err


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_provider_round_trip_records_usage(provider: str, summary: Any, rules: Any, profile: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    turns = [[("c1", "window", {"phase": "0"}), ("c2", "copy_compute_overlap", {})]]
    with FakeLlmServer(script(provider, turns, answer())) as srv:
        out = llm_stage(summary, rules, _opts(provider, srv, monkeypatch, profile, max_turns=2))
    assert not isinstance(out, str), out
    assert out.provenance.input_tokens == 200 and out.provenance.output_tokens == 40
    assert out.provenance.turns == 2 and out.provenance.tool_calls == 2


def test_raw_tables_and_redact_do_not_mix(profile: Path) -> None:
    from pa.cli import main

    res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--model", "m", "--base-url",
                                    "http://127.0.0.1:9/v1", "--redact", "--sql-raw-tables"])
    assert res.exit_code == 2 and "--sql-raw-tables cannot be combined with --redact" in res.stderr
