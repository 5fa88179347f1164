"""`pa analyze` end to end for each provider's API shape, against a fake server on 127.0.0.1.

The model's answer reverses the rules' ranking: the rendered report must follow the model's order
(the ranking comes from the model) while every number stays the engine's (bounds recomputed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fakes.llm_server import FakeLlmServer, anthropic_answer, gemini_answer, openai_answer
from testkit import scenarios
from testkit.nsys_writer import write_nsys

from pa.cli import main
from pa.rules.hypothesis import amdahl_bounds


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("e2e") / "example.sqlite"
    write_nsys(scenarios.example(), path)
    return path


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("PA_CLAUDE_CLI", "")


def _rules_only(profile: Path) -> dict[str, Any]:
    res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--no-llm"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _answer(ranking: list[str]) -> dict[str, Any]:
    return {"ranking": ranking, "rank_changes": [{"id": i, "reason": f"reviewer's order for {i}"} for i in ranking],
            "refinements": [], "new_hypotheses": [], "narrative": "The ranking was reversed by the reviewer model."}


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_ranking_comes_from_the_model_and_numbers_from_the_engine(profile: Path, provider: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    base = _rules_only(profile)
    rule_order = [h["rule_id"] for h in base["hypotheses"]]
    ids = [h["id"] for h in base["hypotheses"]]
    assert len(ids) >= 2, "the example profile must give several hypotheses"
    reply = {"openai": openai_answer, "anthropic": anthropic_answer, "gemini": gemini_answer}[provider]
    with FakeLlmServer([reply(_answer(list(reversed(ids))))]) as srv:
        if provider == "openai":
            args = ["--model", "openai:local", "--base-url", srv.url]
        elif provider == "anthropic":
            monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-key")
            args = ["--model", "anthropic:claude-fake", "--base-url", srv.root]
        else:
            monkeypatch.setenv("GEMINI_API_KEY", "fake-key")
            args = ["--model", "gemini:gemini-fake", "--base-url", srv.root]
        res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--yes", "--max-turns", "1",
                                        *args])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["provenance"]["llm"]["mode"] == "llm"
    assert doc["provenance"]["llm"]["provider"] == provider
    assert [h["rule_id"] for h in doc["hypotheses"]] == list(reversed(rule_order))
    # the engine's order beside the model's, each move with its reason; the headline names the rules' primary
    assert doc["llm"]["engine_order"] == ids
    assert {m["id"] for m in doc["llm"]["moves"]} == set(ids[:-1])
    assert all(m["reason"].startswith("reviewer's order") for m in doc["llm"]["moves"])
    assert [h["llm"]["engine_rank"] for h in doc["hypotheses"]] == list(range(len(ids), 0, -1))
    assert doc["headline"]["engine_primary_id"] == ids[0] and ids[0] in doc["headline"]["text"]
    for h in doc["hypotheses"]:
        frac = h["runtime_fraction_pct"]
        lo, hi = amdahl_bounds(None if frac is None else frac / 100)
        assert h["estimated_speedup_pct_lower"] == pytest.approx(lo) if lo is not None else h[
            "estimated_speedup_pct_lower"] is None
        assert h["estimated_speedup_pct_upper"] == pytest.approx(hi) if hi is not None else h[
            "estimated_speedup_pct_upper"] is None
    assert len(srv.requests) >= 1


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_refined_parts_moves_and_tokens_are_shown_in_every_format(profile: Path, provider: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from pa.report.render import render

    base = _rules_only(profile)
    ids = [h["id"] for h in base["hypotheses"]]
    last = base["hypotheses"][-1]
    frac = last["runtime_fraction_pct"]
    said = f"This costs {frac:.1f} % of the run." if frac is not None else "This one sets the pace."
    reply = {"ranking": [ids[-1]], "rank_changes": [{"id": ids[-1], "reason": "it hides the others"}],
             "refinements": [{"id": ids[-1], "description": said,
                              "reason": "states the share"}],
             "new_hypotheses": [], "narrative": "One finding first."}
    make = {"openai": openai_answer, "anthropic": anthropic_answer, "gemini": gemini_answer}[provider]
    with FakeLlmServer([make(reply)]) as srv:
        if provider == "openai":
            args = ["--model", "openai:local", "--base-url", srv.url]
        else:
            monkeypatch.setenv("ANTHROPIC_API_KEY" if provider == "anthropic" else "GEMINI_API_KEY", "fake-key")
            args = ["--model", f"{provider}:m", "--base-url", srv.root]
        res = CliRunner().invoke(main, ["analyze", str(profile), "-f", "json", "--yes", "--max-turns", "1", *args])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    first = doc["hypotheses"][0]
    assert first["id"] == ids[-1] and first["source"] == "rules"
    assert first["description"] == said
    assert first["llm"]["refined"] == [{"part": "description", "source": "llm", "original": last["description"],
                                        "reason": "states the share"}]
    assert first["llm"]["rank_reason"] == "it hides the others" and first["llm"]["engine_rank"] == len(ids)
    assert doc["provenance"]["llm"]["input_tokens"] == 100 and doc["provenance"]["llm"]["output_tokens"] == 20
    for fmt in ("text", "markdown", "html"):
        out = render(doc, fmt).replace("&#39;", "'")
        assert "it hides the others" in out and "states the share" in out, fmt
        assert f"The rules ranked {', '.join(ids)}" in out, fmt
        assert "100 input (0 cached)" in out or "100 in (0 cached)" in out, fmt
