"""`pa analyze` end to end: every shared profile × every format, paths, -o, exit 3, LLM hook."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import NSYS_PROFILES, missing_reason, real_nsys_profiles
from test_report_fixtures import make_report

from pa.cli import main
from pa.report.schema import build_report_schema, dump_schema, schema_errors

PROFILES = real_nsys_profiles()
FORMATS = ["text", "markdown", "html", "json"]


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, ["analyze", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def example_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled example, copied into a directory whose path must never leak into a report."""
    from testkit import scenarios
    from testkit.nsys_writer import write_nsys

    out = tmp_path_factory.mktemp("secret_dir") / "example.sqlite"
    write_nsys(scenarios.example(), out)
    return out


@pytest.mark.skipif(not PROFILES, reason=missing_reason(NSYS_PROFILES))
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_every_shared_profile_every_format(profile: Path, real_report: Callable[[Path, str], str]) -> None:
    for fmt in FORMATS:
        text = real_report(profile, fmt)  # pa analyze PROFILE --no-llm -f FMT -o FILE exited 0
        assert str(NSYS_PROFILES) not in text
        if fmt == "json":
            doc = json.loads(text)
            assert schema_errors(doc) == []
            assert doc["provenance"]["llm"]["mode"] == "rules_only"
            assert doc["profiles"][0]["sha256"]


def test_no_absolute_paths_unless_asked(example_profile: Path, tmp_path: Path) -> None:
    secret = str(example_profile.parent)
    for fmt in FORMATS:
        result = _run(str(example_profile), "--no-llm", "-f", fmt)
        assert result.exit_code == 0, result.output
        assert secret not in result.output, fmt
    kept = _run(str(example_profile), "--no-llm", "-f", "json", "--keep-paths")
    assert secret in kept.output
    assert json.loads(kept.output)["profiles"][0]["path"] == str(example_profile)


def test_output_extension_and_format_inference(example_profile: Path, tmp_path: Path) -> None:
    result = _run(str(example_profile), "--no-llm", "-f", "html", "-o", str(tmp_path / "report"))
    assert result.exit_code == 0
    assert (tmp_path / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    result = _run(str(example_profile), "--no-llm", "-o", str(tmp_path / "r.md"))
    assert (tmp_path / "r.md").read_text(encoding="utf-8").startswith("# pa report")
    result = _run(str(example_profile), "--no-llm")
    assert "Key metrics" in result.output and "\x1b[" not in result.output   # not a TTY: no colour


def test_broken_report_exits_3_and_renders_nothing(example_profile: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import pa.report.assemble as assemble

    def broken(*args: Any, **kwargs: Any) -> Any:
        report = make_report()
        report.hypotheses[0].runtime_fraction_pct = 150.0     # not re-validated on assignment
        return report

    monkeypatch.setattr(assemble, "build_report", broken)
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["analyze", str(example_profile), "--no-llm", "-o", str(out)])
    assert result.exit_code == 3
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pa: error: bug:")
    assert not out.exists() and not list(tmp_path.iterdir())


def test_llm_stage_is_called_and_recorded(example_profile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pa.llm.stage as stage
    from pa.llm.model import LlmOptions, LlmOutcome, LlmProvenance

    calls: list[Any] = []

    def fake_stage(summary: Any, rule_result: Any, options: LlmOptions) -> LlmOutcome:
        calls.append(options)
        return LlmOutcome(hypotheses=list(reversed(rule_result.hypotheses)),
                          provenance=LlmProvenance(mode="llm", provider="fake", model="m1", turns=2,
                                                   tool_calls=1, input_tokens=10, output_tokens=5,
                                                   log_path="/abs/secret/llm.log"))

    monkeypatch.setattr(stage, "llm_stage", fake_stage)
    doc = json.loads(_run(str(example_profile), "-f", "json", "--model", "m1").output)
    assert calls and calls[0].model == "m1"
    assert doc["provenance"]["llm"]["provider"] == "fake"
    assert doc["provenance"]["llm"]["log_path"] == "llm.log"
    off = json.loads(_run(str(example_profile), "-f", "json", "--no-llm").output)
    assert len(calls) == 1
    assert off["provenance"]["llm"] == {**off["provenance"]["llm"], "mode": "rules_only",
                                        "reason": "--no-llm given"}


def test_several_ranks(example_profile: Path, tmp_path: Path) -> None:
    second = tmp_path / "rank1.sqlite"
    second.write_bytes(example_profile.read_bytes())
    doc = json.loads(_run(str(example_profile), str(second), "--no-llm", "-f", "json").output)
    assert len(doc["ranks"]) == 2 and len(doc["profiles"]) == 2
    assert any(k["stage"] == "report" for k in doc["skipped"])


def test_schema_command_prints_committed_schema() -> None:
    result = CliRunner().invoke(main, ["schema", "report"])
    assert result.exit_code == 0
    assert result.output == dump_schema(build_report_schema())
    assert "schema" not in CliRunner().invoke(main, ["--help"]).output.split("Commands:")[1]
