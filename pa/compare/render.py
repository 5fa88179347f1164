"""Render a validated comparison document (pa.compare.schema) through templates/compare.*.j2.

Same environment, filters and `--templates DIR` override as the report (pa.report.render):
numbers are rounded only here. The templates show changes above the noise floor only; a change
below it is printed as "within noise", never as a number that could be read as a difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pa.compare.model import Comparison
from pa.controls import escape_controls_deep, escape_json_controls
from pa.errors import UserError
from pa.report.render import check_templates_dir, render_template

TEMPLATES = {"text": "compare.txt.j2", "markdown": "compare.md.j2", "html": "compare.html.j2"}
FORMATS = (*TEMPLATES, "json")
KEY_ROWS = 15


def render_comparison(doc: dict[str, Any], fmt: str, templates_dir: Path | None = None, color: bool = False) -> str:
    """Render a validated comparison document in `fmt` (text, markdown, html or json); `color`: styles in text."""
    if fmt == "json":
        return escape_json_controls(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n"
    if fmt not in TEMPLATES:
        raise UserError(f"unknown comparison format {fmt!r}; choose from {', '.join(FORMATS)}")
    if templates_dir is not None:
        check_templates_dir(templates_dir, TEMPLATES)
    # Sandboxed like the report's templates; profile strings made inert (pa.report.render).
    return render_template(TEMPLATES[fmt], {"cmp": escape_controls_deep(doc, keep_layout=True), "top": KEY_ROWS},
                           templates_dir, color=color and fmt == "text")


def render_text(c: Comparison) -> str:
    """The comparison as a fixed-width text report (validated first)."""
    from pa.compare.schema import validate_comparison

    return render_comparison(validate_comparison(c), "text")
