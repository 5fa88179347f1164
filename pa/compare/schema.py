"""The published schema of `pa compare` output (schemas/compare.schema.json) and the validation gate.

Generated from pa.compare.model.Comparison the same way as the report schema (every property
required, draft 2020-12, `$id` urn:pa:schema:compare); a test fails when the committed file drifts
(regenerate with `pa schema compare > schemas/compare.schema.json`). `validate_comparison` is the
gate before rendering: a failure is a bug in pa (InternalError, exit 3), nothing is rendered.
"""

from __future__ import annotations

import json
from typing import Any

from pa.compare.model import COMPARISON_SCHEMA_VERSION, Comparison
from pa.errors import InternalError
from pa.report.schema import _finish, violations


def build_compare_schema() -> dict[str, Any]:
    """The comparison schema as committed in schemas/compare.schema.json."""
    return _finish(Comparison.model_json_schema(mode="serialization"), "compare", COMPARISON_SCHEMA_VERSION)


def compare_schema_errors(doc: dict[str, Any]) -> list[str]:
    """All schema violations of a comparison document, as 'path: message' lines."""
    return violations("compare.schema.json", doc)


def validate_comparison(c: Comparison) -> dict[str, Any]:
    """The comparison's JSON document after checking it against the published schema."""
    doc: dict[str, Any] = json.loads(c.model_dump_json())
    problems = compare_schema_errors(doc)
    keys = [abs(k["delta_ns"]) for k in doc["key_differences"]]
    if keys != sorted(keys, reverse=True):
        problems.append("key_differences: not ordered by absolute time change")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InternalError(f"bug: the comparison fails its own schema: {problems[0]}{more}")
    return doc
