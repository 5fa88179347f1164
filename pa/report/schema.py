"""Generate the published JSON Schemas and validate reports against them.

The schemas are generated from the pydantic models (one copy of the knowledge) and committed
under schemas/ so that people without pa can validate a report; a test fails when the committed
file drifts from the generated one (regenerate with `pa schema report > schemas/report.schema.json`).

Post-processing of `model_json_schema()`: the draft 2020-12 `$schema`, an `$id`, our own
`schema_version`, and every property marked required. A report is always dumped with every key
present (None as null), so "required" is exactly right and a report missing a field is caught.

`validate_report` is the gate before rendering: schema errors and broken invariants the schema
cannot express (unique ids, Amdahl bounds that match F, claims that fit in the span) are bugs in
pa and raise InternalError (exit 3); nothing is rendered half-way.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from jsonschema import Draft202012Validator

from pa.errors import InternalError
from pa.metrics.model import SUMMARY_SCHEMA_VERSION, ProfileSummary
from pa.paths import data_dir
from pa.report.model import REPORT_SCHEMA_VERSION, Report
from pa.rules.hypothesis import amdahl_bounds

DRAFT = "https://json-schema.org/draft/2020-12/schema"


def _require_all(node: Any) -> None:
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict) and node.get("type") == "object":
            node["required"] = list(props)
        for value in node.values():
            _require_all(value)
    elif isinstance(node, list):
        for value in node:
            _require_all(value)


def _finish(schema: dict[str, Any], name: str, version: str) -> dict[str, Any]:
    _require_all(schema)
    head = {"$schema": DRAFT, "$id": f"urn:pa:schema:{name}", "schema_version": version}
    return {**head, **schema}


def build_report_schema() -> dict[str, Any]:
    """The report schema (draft 2020-12) as committed in schemas/report.schema.json."""
    return _finish(Report.model_json_schema(mode="serialization"), "report", REPORT_SCHEMA_VERSION)


def build_summary_schema() -> dict[str, Any]:
    """The ProfileSummary schema (draft 2020-12) as committed in schemas/summary.schema.json."""
    return _finish(ProfileSummary.model_json_schema(mode="serialization"), "summary",
                   SUMMARY_SCHEMA_VERSION)


def dump_schema(schema: dict[str, Any]) -> str:
    """Serialise a schema the way it is committed (stable key order from the model, 2-space indent)."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


@functools.lru_cache(maxsize=4)
def published_validator(file_name: str) -> Draft202012Validator:
    """Validator for a shipped schemas/<file_name>: the published contract, not the model."""
    try:
        schema = json.loads((data_dir("schemas") / file_name).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError) as exc:
        raise InternalError(f"cannot load schemas/{file_name}: {exc}") from exc
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def violations(file_name: str, doc: dict[str, Any]) -> list[str]:
    """All violations of the published schema `file_name` by `doc`, as 'path: message' lines."""
    errors = sorted(published_validator(file_name).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors]


def schema_errors(doc: dict[str, Any]) -> list[str]:
    """All schema violations of a report document, as 'path: message' lines."""
    return violations("report.schema.json", doc)


def invariant_errors(doc: dict[str, Any]) -> list[str]:
    """Violations of report invariants that JSON Schema cannot express."""
    out: list[str] = []
    hyps = doc.get("hypotheses") or []
    ids = [h.get("id") for h in hyps]
    if len(set(ids)) != len(ids):
        out.append(f"hypotheses: duplicate ids {ids}")
    if [h.get("rank") for h in hyps] != list(range(1, len(hyps) + 1)):
        out.append("hypotheses: ranks are not 1..n in order")
    total = 0.0
    for h in hyps:
        f = h.get("runtime_fraction_pct")
        total += f or 0.0
        for frac_key, prefix in (("runtime_fraction_pct", "estimated_speedup_pct"),
                                 ("window_fraction_pct", "window_speedup_pct")):
            fv = h.get(frac_key)
            want = amdahl_bounds(None if fv is None else fv / 100.0)
            got = (h.get(f"{prefix}_lower"), h.get(f"{prefix}_upper"))
            for w, g in zip(want, got, strict=True):
                if (w is None) != (g is None) or (w is not None and not math.isclose(w, g, rel_tol=1e-6,
                                                                                        abs_tol=1e-9)):
                    out.append(f"hypotheses/{h.get('id')}: speedup bounds {got} do not follow from "
                               f"{frac_key} {fv}% (expected {want})")
                    break
    if total > 100.0 + 1e-6:
        out.append(f"hypotheses: runtime fractions add up to {total:.3f}% of the span (> 100%)")
    return out


def validate_report(report: Report) -> dict[str, Any]:
    """Return the report's JSON document after checking it; InternalError (exit 3) when it fails."""
    try:
        doc: dict[str, Any] = json.loads(report.model_dump_json())
    except ValueError as exc:  # pragma: no cover - pydantic always emits JSON
        raise InternalError(f"report is not serialisable: {exc}") from exc
    problems = schema_errors(doc) + invariant_errors(doc)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InternalError(f"bug: the report fails its own schema: {problems[0]}{more}")
    return doc
