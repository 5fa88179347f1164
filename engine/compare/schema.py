"""The published schema of `pa compare` output (schemas/compare.schema.json) and the validation gate.

Generated from engine.compare.model.Comparison the same way as the report schema (every property
required, draft 2020-12, `$id` urn:pa:schema:compare); a test fails when the committed file drifts
(regenerate with `pa schema compare > schemas/compare.schema.json`). `validate_comparison` is the
gate before rendering: a failure is a bug in pa (InternalError, exit 3), nothing is rendered.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from jsonschema import Draft202012Validator

from engine.compare.model import COMPARISON_SCHEMA_VERSION, Comparison
from engine.errors import InternalError
from engine.paths import data_dir
from engine.report.schema import _finish


def build_compare_schema() -> dict[str, Any]:
    """The comparison schema as committed in schemas/compare.schema.json."""
    return _finish(Comparison.model_json_schema(mode="serialization"), "compare", COMPARISON_SCHEMA_VERSION)


@functools.lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    try:
        schema = json.loads((data_dir("schemas") / "compare.schema.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError) as exc:
        raise InternalError(f"cannot load the comparison schema: {exc}") from exc
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def compare_schema_errors(doc: dict[str, Any]) -> list[str]:
    """All schema violations of a comparison document, as 'path: message' lines."""
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors]


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
