"""The notebook API (`pa.summarize`, `pa.analyze`, …) gives what the CLI prints: one pipeline."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import pa
from pa.cli import main


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("api") / "example.sqlite"
    result = CliRunner().invoke(main, ["example", str(path)])
    assert result.exit_code == 0, result.output
    return path


def _without_run_facts(doc: dict) -> dict:
    """The report minus what differs between two runs of the same analysis (when, how long, how called)."""
    doc = json.loads(json.dumps(doc))
    for key in ("duration_s", "command_line", "generated_at"):
        del doc["provenance"][key]
    return doc


def test_summarize_is_pa_summary_json(example: Path) -> None:
    cli = CliRunner().invoke(main, ["summary", str(example), "--json"])
    assert cli.exit_code == 0, cli.output
    assert json.loads(pa.summarize(example).model_dump_json()) == json.loads(cli.output)


def test_analyze_is_pa_analyze_json(example: Path) -> None:
    cli = CliRunner().invoke(main, ["analyze", str(example), "--no-llm", "-f", "json"])
    assert cli.exit_code == 0, cli.output
    doc = pa.analyze(example)
    assert _without_run_facts(doc) == _without_run_facts(json.loads(cli.output))
    assert doc["hypotheses"], "the example profile has planted behaviour: at least one finding"
    assert doc["provenance"]["llm"]["mode"] == "rules_only"


def test_render_and_compare(example: Path) -> None:
    md = pa.render(pa.analyze(example), "markdown")
    assert md.startswith("#")
    same = pa.compare_captures(example, example)
    assert same["identical"] is True and same["key_differences"] == []
    importlib.import_module("pa.compare")  # the subpackage of the same name does not hide the API
    assert callable(pa.compare_captures)
    with pytest.raises(AttributeError):
        _ = pa.no_such_function  # type: ignore[attr-defined]
