"""Render a validated report document to text, Markdown, HTML or JSON through Jinja templates.

The templates see only the report document (a plain dict that passed validation), the chart
geometry computed from it, and a few formatting filters; they never see the summary or the rules.
Numbers are rounded here, at the last moment, never in the report. A site's `--templates DIR` is
searched first, so it can override one format and keep the built-in others.

Autoescaping is on for HTML (kernel names and marker text come from the profile: untrusted).
Colours in text output come from the `style` filter and only when the caller asks for them (stdout
is a TTY); nothing else writes escape codes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jinja2
from rich.color import ColorSystem
from rich.style import Style

from engine.errors import InternalError, UserError
from engine.paths import data_dir
from engine.report.charts import all_charts
from engine.report.gains import factor_text, gain_text

TEMPLATES = {"text": "report.txt.j2", "markdown": "report.md.j2", "html": "report.html.j2"}
FORMATS = (*TEMPLATES, "json")
EXTENSIONS = {"text": ".txt", "markdown": ".md", "html": ".html", "json": ".json"}


def fmt_ns(value: float | None) -> str:
    """Human duration from integer ns: '1.23 s', '45.6 ms', '789 µs', '12 ns'; None → 'n/a'."""
    if value is None:
        return "n/a"
    v = float(value)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.0f} ns"


def fmt_pct(value: float | None, digits: int = 1) -> str:
    """'12.3%'; None → 'n/a'."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    v = float(value)
    if 0 < v < 10 ** -digits:
        # a real but tiny share must not read as "0.0%" (that would look like "nothing").
        return f"<{10 ** -digits:g}%"
    return f"{v:.{digits}f}%"


def fmt_frac(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage: 0.123 → '12.3%'; None → 'n/a'."""
    return fmt_pct(None if value is None else float(value) * 100.0, digits)


def fmt_bytes(value: float | None) -> str:
    """Decimal units (the profilers' bandwidths are decimal): '1.2 GB'; None → 'n/a'."""
    if value is None:
        return "n/a"
    v = float(value)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.0f} B"


def fmt_num(value: float | int | str | None) -> str:
    """A cited evidence value: integers with thousands separators, floats to 4 significant digits."""
    if value is None:
        return "n/a"
    if isinstance(value, (bool, str)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.4g}"


def fmt_gain(h: dict[str, Any]) -> str:
    """A finding's gain as an engineer writes it (engine.report.gains): 'up to 1.56× faster (−36 % time)'."""
    return gain_text(h.get("claim"), h.get("runtime_fraction_pct"), h.get("estimated_speedup_pct_lower"),
                     h.get("estimated_speedup_pct_upper"))


def fmt_factor(speedup_pct: float | None) -> str:
    """An Amdahl speedup percentage as a factor ('1.56×'); 'n/a' when there is no bound."""
    return "n/a" if speedup_pct is None else factor_text(float(speedup_pct))


# What each gap cause is called in the reports (engine.metrics.gaps.GAP_CAUSES).
CAUSE_NAMES = {"cpu_stall": "host work", "sync": "sync round trips", "copy_wait": "copy waits",
               "launch": "launch calls", "alloc": "alloc/free", "mpi": "MPI", "overhead": "profiler overhead",
               "unknown": "host not captured"}


def fmt_causes(by_cause: dict[str, int] | None) -> str:
    """Idle time by gap cause, largest first: 'host work 16.4 ms, sync round trips 12.4 ms'."""
    if not by_cause:
        return "none"
    items = sorted(by_cause.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{CAUSE_NAMES.get(k, k)} {fmt_ns(v)}" for k, v in items if v)


def md_cell(value: Any) -> str:
    """Make a value safe inside a GitHub Markdown table cell."""
    text = "" if value is None else str(value)
    return (text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")
            .replace("\n", " ").replace("\r", " "))


def _style_filter(color: bool) -> Any:
    def style(text: Any, spec: str) -> str:
        """Wrap text in ANSI codes for `spec` (a rich style) only when colours are on."""
        if not color:
            return str(text)
        return Style.parse(spec).render(str(text), color_system=ColorSystem.STANDARD)

    return style


def _autoescape(name: str | None) -> bool:
    return name is not None and ".html" in name


def make_env(templates_dir: Path | None = None, color: bool = False) -> jinja2.Environment:
    """The Jinja environment: site templates first, then the bundled ones."""
    paths = [str(templates_dir)] if templates_dir is not None else []
    paths.append(str(data_dir("templates")))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(paths), autoescape=_autoescape,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters.update(ns=fmt_ns, pct=fmt_pct, frac=fmt_frac, bytes=fmt_bytes, num=fmt_num, gain=fmt_gain,
                       factor=fmt_factor, causes=fmt_causes, md=md_cell, style=_style_filter(color))
    return env


def render(doc: dict[str, Any], fmt: str, templates_dir: Path | None = None, color: bool = False) -> str:
    """Render a validated report document in `fmt` (text, markdown, html or json)."""
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt not in TEMPLATES:
        raise UserError(f"unknown report format {fmt!r}; choose from {', '.join(FORMATS)}")
    if templates_dir is not None and not templates_dir.is_dir():
        raise UserError(f"--templates {templates_dir}: not a directory")
    env = make_env(templates_dir, color=color and fmt == "text")
    try:
        template = env.get_template(TEMPLATES[fmt])
        charts = all_charts(doc) if fmt == "html" else {}
        return template.render(report=doc, charts=charts)
    except Exception as exc:  # any failure of a template: the site's mistake or pa's bug, one line
        where = getattr(exc, "filename", None) or TEMPLATES[fmt]
        if templates_dir is not None and (templates_dir / TEMPLATES[fmt]).is_file():
            raise UserError(f"template {Path(where).name}: {exc}") from exc
        raise InternalError(f"bug in bundled template {Path(where).name}: {exc}") from exc
