"""The report model and the published JSON Schema agree; the schema rejects broken reports."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from test_report_fixtures import make_hypothesis, make_report, make_rule_result

from pa.errors import InternalError
from pa.paths import data_dir
from pa.report.schema import (
    build_report_schema,
    build_summary_schema,
    dump_schema,
    invariant_errors,
    schema_errors,
    validate_report,
)


@pytest.mark.parametrize(("name", "build"),
                         [("report", build_report_schema), ("summary", build_summary_schema)])
def test_committed_schema_matches_generated(name: str, build: Any) -> None:
    committed = (data_dir("schemas") / f"{name}.schema.json").read_text(encoding="utf-8")
    assert committed == dump_schema(build()), f"regenerate: pa schema {name} > schemas/{name}.schema.json"


def test_schema_is_draft_2020_12_with_version() -> None:
    schema = build_report_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["schema_version"]


@pytest.fixture
def doc() -> dict[str, Any]:
    return validate_report(make_report(n_profiles=2))


def test_good_report_validates(doc: dict[str, Any]) -> None:
    assert schema_errors(doc) == []
    assert invariant_errors(doc) == []


def _broken(doc: dict[str, Any], edit: Any) -> list[str]:
    d = copy.deepcopy(doc)
    edit(d)
    return schema_errors(d)


def test_missing_field_rejected(doc: dict[str, Any]) -> None:
    assert _broken(doc, lambda d: d["provenance"].pop("pa_version"))
    assert _broken(doc, lambda d: d["hypotheses"][0].pop("suggestion"))
    # optional-valued fields are still required keys (null, never absent)
    assert _broken(doc, lambda d: d["summary"].pop("mpi_ns"))


def test_bad_enum_rejected(doc: dict[str, Any]) -> None:
    assert _broken(doc, lambda d: d["hypotheses"][0].update(bottleneck_type="gpu_bound"))
    assert _broken(doc, lambda d: d["provenance"]["llm"].update(mode="maybe"))
    assert _broken(doc, lambda d: d["skipped"][0].update(stage="elsewhere"))


def test_fraction_over_100_rejected(doc: dict[str, Any]) -> None:
    assert _broken(doc, lambda d: d["hypotheses"][0].update(runtime_fraction_pct=150.0))
    assert _broken(doc, lambda d: d["summary"]["devices"][0].update(utilization_pct=100.5))
    assert _broken(doc, lambda d: d["hypotheses"][0].update(confidence=1.5))


def test_unknown_field_rejected(doc: dict[str, Any]) -> None:
    assert _broken(doc, lambda d: d.update(extra=1))


def test_invariants_caught() -> None:
    doc = validate_report(make_report())
    dup = copy.deepcopy(doc)
    dup["hypotheses"][1]["id"] = "H1"
    assert any("duplicate" in e for e in invariant_errors(dup))
    bounds = copy.deepcopy(doc)
    bounds["hypotheses"][0]["estimated_speedup_pct_upper"] = 99.0
    assert any("do not follow" in e for e in invariant_errors(bounds))


def test_claims_over_span_are_a_bug() -> None:
    rr = make_rule_result()
    rr.hypotheses = [make_hypothesis("H1", 0.7), make_hypothesis("H2", 0.6)]
    with pytest.raises(InternalError, match="add up"):
        validate_report(make_report(rule_result=rr))


def test_validate_report_raises_internal_error_on_broken_model() -> None:
    report = make_report()
    report.hypotheses[0].runtime_fraction_pct = 150.0  # assignment is not validated by pydantic
    with pytest.raises(InternalError) as info:
        validate_report(report)
    assert info.value.exit_code == 3
    assert "\n" not in str(info.value)


def test_json_document_round_trips(doc: dict[str, Any]) -> None:
    assert json.loads(json.dumps(doc)) == doc
