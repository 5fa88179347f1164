"""Render a validated comparison document (engine.compare.schema) through templates/compare.*.j2.

Same environment, filters and `--templates DIR` override as the report (engine.report.render):
numbers are rounded only here. The templates show changes above the noise floor only; a change
below it is printed as "within noise", never as a number that could be read as a difference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.compare.model import Comparison
from engine.errors import InternalError, UserError
from engine.report.render import make_env

TEMPLATES = {"text": "compare.txt.j2", "markdown": "compare.md.j2", "html": "compare.html.j2"}
FORMATS = (*TEMPLATES, "json")
KEY_ROWS = 15


def render_comparison(doc: dict[str, Any], fmt: str, templates_dir: Path | None = None) -> str:
    """Render a validated comparison document in `fmt` (text, markdown, html or json)."""
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt not in TEMPLATES:
        raise UserError(f"unknown comparison format {fmt!r}; choose from {', '.join(FORMATS)}")
    if templates_dir is not None and not templates_dir.is_dir():
        raise UserError(f"--templates {templates_dir}: not a directory")
    env = make_env(templates_dir)
    try:
        return env.get_template(TEMPLATES[fmt]).render(cmp=doc, top=KEY_ROWS)
    except Exception as exc:  # a template failure: the site's mistake or pa's bug, one line
        where = getattr(exc, "filename", None) or TEMPLATES[fmt]
        if templates_dir is not None and (templates_dir / TEMPLATES[fmt]).is_file():
            raise UserError(f"template {Path(where).name}: {exc}") from exc
        raise InternalError(f"bug in bundled template {Path(where).name}: {exc}") from exc


def render_text(c: Comparison) -> str:
    """The comparison as a fixed-width text report (validated first)."""
    from engine.compare.schema import validate_comparison

    return render_comparison(validate_comparison(c), "text")
