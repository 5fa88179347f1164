"""Render a validated report document to text, Markdown, HTML or JSON through Jinja templates.

The templates see only the report document (a plain dict that passed validation), the chart
geometry computed from it, and a few formatting filters; they never see the summary or the rules.
Numbers are rounded here, at the last moment, never in the report. A site's `--templates DIR` is
searched first, so it can override one format and keep the built-in others.

Every template is rendered in pa's Jinja sandbox (pa.sandbox): a site template is data, sees
only `report` (or `cmp`), `charts` and the filters below, cannot reach Python internals, and is
stopped after TEMPLATE_SECONDS. Template files are read only if they are regular UTF-8 files of at
most MAX_TEMPLATE_BYTES (a FIFO named report.txt.j2 cannot block pa).

Strings from the profile are data in every format: control characters (ESC, OSC, CSI, carriage
return, bidi overrides) are written as visible escapes before rendering (pa.controls); HTML
is autoescaped; in Markdown, `md` escapes every character that could start a link, an image,
emphasis, raw HTML or an autolink, and `code` builds a code span no backtick can break out of.
Colours in text output come from the `style` filter and only when the caller asks for them (stdout
is a TTY); nothing else writes escape codes.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2
from jinja2.loaders import split_template_path
from rich.color import ColorSystem
from rich.style import Style

from pa import formatting, sandbox
from pa.controls import escape_controls, escape_controls_deep, escape_json_controls
from pa.errors import InternalError, UserError
from pa.inputs import read_text_file
from pa.metrics.gaps import GAP_CAUSE_NAMES
from pa.paths import data_dir
from pa.report.charts import all_charts
from pa.report.gains import factor_text, gain_text
from pa.report.terminal import shorten_names, wrap_text

TEMPLATES = {"text": "report.txt.j2", "markdown": "report.md.j2", "html": "report.html.j2"}
FORMATS = (*TEMPLATES, "json")
EXTENSIONS = {"text": ".txt", "markdown": ".md", "html": ".html", "json": ".json"}
MAX_TEMPLATE_BYTES = 1 << 20
TEMPLATE_SECONDS = 20.0


# The report templates' number filters (docs/report.md): `ns` a duration, `pct` a percentage, `frac` a
# fraction, `bytes` a size, `num` a cited value (4 significant digits: the value tables are where a
# reader checks a number). Formatting is pa.formatting's, as in pa summary and the rule sentences.
fmt_ns = formatting.duration
fmt_pct = formatting.percent
fmt_frac = formatting.fraction
fmt_bytes = formatting.data_size


def fmt_num(value: float | int | str | None) -> str:
    """A cited evidence value: text as given, integers with thousands separators, floats to 4 digits."""
    if isinstance(value, (bool, str)):
        return str(value)
    return formatting.number(value, digits=4)


def fmt_gain(h: dict[str, Any]) -> str:
    """A finding's gain as an engineer writes it (pa.report.gains): 'up to 1.56× faster (−36 % time)'."""
    return gain_text(h.get("claim"), h.get("runtime_fraction_pct"), h.get("estimated_speedup_pct_lower"),
                     h.get("estimated_speedup_pct_upper"), h.get("window_fraction_pct"),
                     h.get("window_speedup_pct_lower"), h.get("window_speedup_pct_upper"))


def fmt_factor(speedup_pct: float | None) -> str:
    """An Amdahl speedup percentage as a factor ('1.56×'); 'n/a' when there is no bound."""
    return "n/a" if speedup_pct is None else factor_text(float(speedup_pct))


# What each gap cause is called in the reports (pa.metrics.gaps.GAP_CAUSES).
CAUSE_NAMES = GAP_CAUSE_NAMES


def _short_names(names: Any, width: int = 34) -> list[str]:
    """Names shortened together to `width` cells, in the middle, still distinct (pa.report.terminal).

    A site template's width is data: anything below one cell is one cell.
    """
    return shorten_names([str(n) for n in names], max(int(width), 1))


def fmt_causes(by_cause: dict[str, int] | None) -> str:
    """Idle time by gap cause, largest first: 'host work 16.4 ms, sync round trips 12.4 ms'."""
    if not by_cause:
        return "none"
    items = sorted(by_cause.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{CAUSE_NAMES.get(k, k)} {fmt_ns(v)}" for k, v in items if v)


# Characters that can open a Markdown (CommonMark + GitHub) construct anywhere in a line: links and
# images (`[`: an image needs `![`), emphasis and strikethrough, code spans, raw HTML and autolinks
# (`<`), entities, table cells. `>` and `!` are harmless once `<` and `[` are escaped.
# An underscore inside a word never starts emphasis (CommonMark), so snake_case names stay as typed.
_MD_INLINE = re.compile(r"([\\`*\[\]<|~&]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")
# ... and at the start of a block: headings, quotes, lists, setext underlines, fences.
_MD_BLOCK_START = re.compile(r"^(\s*)(?:([#>+\-=])|(\d+)([.)]))")
# GitHub's bare autolinks: scheme://, www., e-mail addresses.
_MD_AUTOLINK = re.compile(r"(?i)(://)|(\bwww)\.|(@)")


def md_cell(value: Any) -> str:
    """Untrusted text made inert in Markdown prose or a GitHub table cell.

    Every character that could start a link, image, emphasis, code span, raw HTML, entity or
    table cell is backslash-escaped (it renders as itself); line breaks become spaces; a leading
    heading/list/quote marker is escaped; `://`, `www.` and `@` are broken so GitHub cannot
    autolink them.
    """
    text = "" if value is None else str(value)
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    text = _MD_INLINE.sub(r"\\\1", text)
    text = _MD_AUTOLINK.sub(lambda m: "\\://" if m.group(1) else (m.group(2) + "\\." if m.group(2) else "\\@"),
                            text)
    return _MD_BLOCK_START.sub(lambda m: m.group(1) + ("\\" + m.group(2) if m.group(2)
                                                       else m.group(3) + "\\" + m.group(4)), text)


def md_code(value: Any, cell: bool = False) -> str:
    """A complete Markdown code span showing `value` literally, whatever backticks it holds.

    CommonMark ends a code span at a backtick run as long as the opening one, so the fence is one
    backtick longer than the longest run inside, padded with spaces when the content starts or
    ends with a backtick. Line breaks become spaces. In a table cell (cell=True) `|` is escaped,
    which GitHub's table parser removes again before the span is read.
    """
    text = "" if value is None else str(value)
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    if cell:
        text = text.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    if not text.strip(" "):
        return f"{fence}{text or ' '}{fence}"
    # CommonMark strips one space from each end when both ends have one: pad so it strips ours.
    pad = " " if text.startswith("`") or text.endswith("`") or (text[0] == " " and text[-1] == " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_STYLE_WORDS = frozenset({"bold", "dim", "italic", "underline", "reverse", "strike", "not", "on", "default",
                          "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
                          "bright_black", "bright_red", "bright_green", "bright_yellow", "bright_blue",
                          "bright_magenta", "bright_cyan", "bright_white"})


def _style_filter(color: bool) -> Any:
    def style(text: Any, spec: str) -> str:
        """Wrap text in ANSI codes for `spec` (a rich style) only when colours are on."""
        if not color:
            return str(text)
        # colours and text attributes only: a site template's `style("link https://...")` would print
        # an OSC 8 hyperlink; any other word is dropped.
        words = [w for w in str(spec).split() if w in _STYLE_WORDS]
        return Style.parse(" ".join(words) or "none").render(str(text), color_system=ColorSystem.STANDARD)

    return style


def _autoescape(name: str | None) -> bool:
    return name is not None and ".html" in name


class _SafeLoader(jinja2.BaseLoader):
    """Template files from a search path, each read through read_text_file (regular UTF-8, bounded)."""

    def __init__(self, searchpath: list[Path]) -> None:
        self.searchpath = searchpath

    def get_source(self, environment: jinja2.Environment, template: str
                   ) -> tuple[str, str, Callable[[], bool]]:
        pieces = split_template_path(template)   # refuses '..' and absolute names
        for base in self.searchpath:
            path = base.joinpath(*pieces)
            if path.exists():
                # a literal terminal escape in a template's source is shown, never printed raw
                text = escape_controls(read_text_file(path, MAX_TEMPLATE_BYTES, "template"), keep_layout=True)
                mtime = path.stat().st_mtime
                return text, str(path), lambda p=path, m=mtime: p.exists() and p.stat().st_mtime == m
        raise jinja2.TemplateNotFound(template)


def make_env(templates_dir: Path | None = None, color: bool = False) -> jinja2.Environment:
    """The sandboxed Jinja environment: site templates first, then the bundled ones.

    The bundled-only environment is built once per colour setting, so its templates are compiled
    once per process; with a site directory a fresh one is built each time (a site template may
    appear in front of a bundled one that an older environment has cached).
    """
    return _bundled_env(color) if templates_dir is None else _new_env(templates_dir, color)


@functools.lru_cache(maxsize=2)
def _bundled_env(color: bool) -> jinja2.Environment:
    return _new_env(None, color)


def _new_env(templates_dir: Path | None, color: bool) -> jinja2.Environment:
    paths = [templates_dir] if templates_dir is not None else []
    paths.append(data_dir("templates"))
    env = sandbox.sandbox(loader=_SafeLoader(paths), autoescape=_autoescape, trim_blocks=True,
                          lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(ns=fmt_ns, pct=fmt_pct, frac=fmt_frac, bytes=fmt_bytes, num=fmt_num, gain=fmt_gain,
                       factor=fmt_factor, causes=fmt_causes, md=md_cell, code=md_code, style=_style_filter(color),
                       short_names=_short_names)
    return env


def check_templates_dir(templates_dir: Path, names: Mapping[str, str] | None = None) -> None:
    """`--templates DIR`, checked before any analysis: a directory whose templates pa can read."""
    if not templates_dir.is_dir():
        raise UserError(f"--templates {templates_dir}: not a directory")
    env = _new_env(templates_dir, False)
    for name in (names or TEMPLATES).values():
        path = templates_dir / name
        if path.exists() or path.is_symlink():
            text = read_text_file(path, MAX_TEMPLATE_BYTES, "template")
            try:
                env.parse(text, name)   # a syntax error shows before the analysis, not after it
            except sandbox.TEMPLATE_FAILURES as exc:
                raise UserError(f"template {name}: {sandbox.describe(exc)}") from None


def render_template(name: str, context: dict[str, Any], templates_dir: Path | None = None,
                    color: bool = False) -> str:
    """Render template `name` with `context` in the sandbox; a failure is one line.

    A failure is the site's mistake (UserError) when the site directory holds the template, else a
    bug in a bundled template (InternalError). Site templates run under a time budget.
    """
    env = make_env(templates_dir, color=color)
    try:
        template = env.get_template(name)
        if templates_dir is None:
            return template.render(**context)
        return sandbox.render_bounded(template, context, seconds=TEMPLATE_SECONDS)
    except UserError:
        raise
    except sandbox.TEMPLATE_FAILURES as exc:
        where = getattr(exc, "filename", None) or name
        if templates_dir is not None and (templates_dir / name).is_file():
            raise UserError(f"template {Path(where).name}: {sandbox.describe(exc)}") from None
        raise InternalError(f"bug in bundled template {Path(where).name}: {sandbox.describe(exc)}") from exc


def render(doc: dict[str, Any], fmt: str, templates_dir: Path | None = None, color: bool = False,
           evidence: bool = False, width: int | None = None) -> str:
    """Render a validated report document in `fmt` (text, markdown, html or json).

    Text only: `evidence` shows the values (metric paths, query files) under each evidence sentence,
    which the terminal view leaves to `--evidence` (issue 29: the reading first, the audit trail on
    request; JSON, Markdown and HTML always hold it); `width` wraps the lines to a terminal's width
    between words, never inside a number (None: lines as long as they are, for a file or a pipe).
    """
    if fmt == "json":
        return escape_json_controls(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n"
    if fmt not in TEMPLATES:
        raise UserError(f"unknown report format {fmt!r}; choose from {', '.join(FORMATS)}")
    if templates_dir is not None:
        check_templates_dir(templates_dir)
    safe = escape_controls_deep(doc, keep_layout=True)
    charts = all_charts(safe) if fmt == "html" else {}
    text = render_template(TEMPLATES[fmt], {"report": safe, "charts": charts, "evidence": evidence},
                           templates_dir, color=color and fmt == "text")
    return wrap_text(text, width) if fmt == "text" else text
