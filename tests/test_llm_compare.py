"""`pa compare` with an LLM: one validated call explaining the diff, against the HTTP fake (no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fakes.llm_server import (  # tests/ is on sys.path
    FakeLlmServer,
    Reply,
    anthropic_answer,
    error,
    openai_answer,
)
from testkit.phased import MS, phased, write

from pa.cli import main

A = {"gemm_tn_kernel": 1.0}
B = {"stencil3d_kernel": 0.7, "reduce_sum_kernel": 0.3}
C = {"axpy_kernel": 0.5, "scale_kernel": 0.5}
NAMES = ["gemm_tn_kernel", "stencil3d_kernel", "reduce_sum_kernel", "axpy_kernel", "scale_kernel"]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no developer pa.toml
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    d = tmp_path_factory.mktemp("llm_cmp")
    sb, _ = phased([(150 * MS, A, 0.9), (130 * MS, B, 0.9), (120 * MS, C, 0.9)], seed=0)
    sa, _ = phased([(150 * MS, A, 0.9), (60 * MS, B, 0.9), (120 * MS, C, 0.9)], seed=0)
    pb, pa = write(sb, d / "before.sqlite"), write(sa, d / "after.sqlite")
    res = CliRunner().invoke(main, ["compare", str(pb), str(pa), "--no-llm", "--no-rules", "--json"])
    assert res.exit_code == 0, res.output
    return pb, pa, json.loads(res.stdout)


def _grounded_text(doc: dict[str, Any]) -> str:
    """A narrative citing only numbers of the comparison, as the model is told to."""
    k = doc["key_differences"][0]
    return (f"Phase stencil3d_kernel got shorter: {k['before_ns'] / 1e6:.3f} ms -> {k['after_ns'] / 1e6:.3f} ms "
            f"({k['delta_pct']:.1f} %), which is most of the change in span.")


def _run(pair: tuple, srv: FakeLlmServer, *args: str, model: str = "openai:fake") -> Any:
    pb, pa, _ = pair
    base = srv.url if model.startswith("openai") else srv.root
    return CliRunner().invoke(main, ["compare", str(pb), str(pa), "--no-rules", "--model", model,
                                     "--base-url", base, "--yes", *args])


def test_openai_explanation_rendered_one_call_no_tools(pair: tuple, tmp_path: Path) -> None:
    doc = pair[2]
    text = _grounded_text(doc)
    log = tmp_path / "cmp.jsonl"
    with FakeLlmServer([openai_answer({"narrative": text, "key_differences": ["K1", "K2"]}, "CompareAnswer")]) as srv:
        r = _run(pair, srv, "-f", "markdown", "--log", str(log))
    assert r.exit_code == 0, r.output
    assert "## Explanation" in r.stdout and text in r.stdout
    assert "discusses K1, K2" in r.stdout and "Numbers not found" not in r.stdout
    assert len(srv.requests) == 1                                    # exactly one model call
    body = srv.requests[0]
    assert [t["function"]["name"] for t in body["tools"]] == ["CompareAnswer"]   # the forced answer only
    sent = json.dumps(body)
    assert "<comparison-data>" in sent and '\\"id\\":\\"K1\\"' in sent
    assert "stencil3d_kernel" in sent                                 # not redacted by default
    assert "sql_query" not in sent and "summary_table" not in sent   # no tools, no profile access
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [x["kind"] for x in records] == ["request", "response"]
    assert "pa: LLM explanation: sending" in r.stderr and "pre-flight" in r.stderr


def test_ungrounded_number_is_flagged_and_unknown_id_dropped(pair: tuple) -> None:
    doc = pair[2]
    text = _grounded_text(doc) + " That saves 123.456 ms per step."
    with FakeLlmServer([openai_answer({"narrative": text, "key_differences": ["K1", "K99"]}, "CompareAnswer")]) as srv:
        r = _run(pair, srv, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["llm"]["text"] == text and out["llm"]["provider"] == "openai" and out["llm"]["model"] == "fake"
    assert out["llm"]["ungrounded_numbers"] == ["123.456"]
    assert out["llm"]["key_differences"] == ["K1"]
    assert any(w.startswith("llm: numbers not found") and "123.456" in w for w in out["warnings"])
    assert any("K99" in w for w in out["warnings"])
    with FakeLlmServer([openai_answer({"narrative": text, "key_differences": ["K1"]}, "CompareAnswer")]) as srv:
        r = _run(pair, srv, "-f", "html")
    assert 'id="llm-explanation"' in r.stdout and "Numbers not found in the comparison: 123.456" in r.stdout


def test_redaction_keeps_names_out_of_the_request(pair: tuple) -> None:
    answer = {"narrative": "KERNEL_1 and phase KERNEL_2 changed the most.", "key_differences": ["K1"]}
    with FakeLlmServer([openai_answer(answer, "CompareAnswer")]) as srv:
        r = _run(pair, srv, "--redact", "--json")
    assert r.exit_code == 0, r.output
    body = srv.bodies_text()
    for name in [*NAMES, "before.sqlite", "after.sqlite"]:
        assert name not in body, name
    assert "KERNEL_1" in body
    text = json.loads(r.stdout)["llm"]["text"]
    assert "KERNEL_" not in text and "MARKER_" not in text      # placeholders mapped back locally
    assert any(n in text for n in NAMES)


def test_anthropic_shape(pair: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-key")
    text = _grounded_text(pair[2])
    with FakeLlmServer([anthropic_answer({"narrative": text, "key_differences": ["K1"]}, "CompareAnswer")]) as srv:
        r = _run(pair, srv, "-f", "text", model="anthropic:claude-fake")
    assert r.exit_code == 0, r.output
    assert "Explanation (LLM anthropic claude-fake" in r.stdout and text in r.stdout
    assert srv.paths == ["/v1/messages"] and srv.requests[0]["tools"][0]["name"] == "CompareAnswer"


@pytest.mark.parametrize("script", [
    [error(500)] * 5,                                                    # server errors after the retries
    [openai_answer({"narrative": "x"}, "CompareAnswer")] * 4,            # invalid after the validation retries
], ids=["server-error", "invalid-answer"])
def test_failure_falls_back_to_the_deterministic_narrative(pair: tuple, script: list[Reply]) -> None:
    with FakeLlmServer(script) as srv:
        r = _run(pair, srv, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["llm"] is None and out["llm_reason"].startswith("LLM explanation failed")
    assert out["narrative"] == pair[2]["narrative"]
    assert "deterministic narrative only" in r.stderr
    with FakeLlmServer(script) as srv:
        r = _run(pair, srv, "-f", "text")
    assert "(deterministic narrative only: LLM explanation failed" in r.stdout
    with FakeLlmServer(script) as srv:
        r = _run(pair, srv, "--require-llm")
    assert r.exit_code == 2 and "--require-llm" in r.stderr


def test_dry_run_sends_nothing_and_no_provider_says_why(pair: tuple) -> None:
    pb, pa, _ = pair
    with FakeLlmServer([]) as srv:
        r = _run(pair, srv, "--dry-run", "--json")
    assert r.exit_code == 0 and srv.requests == []
    assert "dry run: nothing was sent" in r.stderr and "<comparison-data>" in r.stderr
    assert json.loads(r.stdout)["llm_reason"] == "--dry-run: prompt printed, nothing sent"
    r = CliRunner().invoke(main, ["compare", str(pb), str(pa), "--no-rules", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["llm_reason"].startswith("no LLM provider configured")


def test_compare_require_llm_without_provider_and_deadline(pair: tuple) -> None:
    from fakes.llm_server import Reply

    pb, pa, _ = pair
    r = CliRunner().invoke(main, ["compare", str(pb), str(pa), "--no-rules", "--json", "--require-llm"])
    assert r.exit_code == 2 and "--require-llm" in r.stderr and "no LLM provider configured" in r.stderr
    with FakeLlmServer([Reply({}, 200, delay_s=6.0)] * 3) as srv:
        r = _run(pair, srv, "--json", "--llm-timeout", "1")
    assert r.exit_code == 0, r.output
    assert "deadline of 1 s" in json.loads(r.stdout)["llm_reason"]
