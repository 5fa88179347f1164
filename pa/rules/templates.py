"""Evidence and suggestion templates: a sandboxed Jinja environment with number-formatting filters.

Templates only format numbers the engine already computed (why: the report must be able to trace
every number to a metric, so a template never does arithmetic of its own: a derived number is a
pack metric, cited; tests/test_rule_templates.py checks every built-in template's AST). Null
values render as "n/a" rather than raising, because a template is rendered only for a fired rule
and a cited value that is null is itself worth showing.

A site pack's templates are data: they run in pa's sandbox (pa.sandbox) under a time budget,
attributes starting with `_` are refused when the pack is loaded, and a template that fails while
rendering is one UserError line quoting it, never a traceback.
"""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes

from pa import formatting, sandbox
from pa.errors import UserError

# Wall-clock budget of one evidence or suggestion rendering (a real one takes well under a millisecond).
TEMPLATE_SECONDS = 2.0


def kernel_arg(name: object, style: object = "plain") -> str:
    """A kernel name as one shell word for a profiler's kernel filter, safe to paste into a shell.

    Kernel names are data from the profile: `gemm$(touch x)` or a demangled `f<int>(float*)` must not
    run or split when the user pastes the suggested command. style "regex:" (Nsight Compute's
    `-k regex:NAME`) escapes the name as a regular expression first; the word is then shell-quoted.
    """
    text = str(name)
    if str(style).startswith("regex"):
        text = "regex:" + re.escape(text)
    return shlex.quote(text)


# The sentence filters of rule packs (docs/rules.md); every number is formatted by pa.formatting.
FILTERS = {"dur": formatting.duration, "ms": formatting.milliseconds, "pct": formatting.fraction,
           "pctv": formatting.percent, "bytes": formatting.data_size, "bandwidth": formatting.bandwidth,
           "num": formatting.number, "kernel_arg": kernel_arg}

_ENV = sandbox.sandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)
_ENV.filters.update(FILTERS)


@lru_cache(maxsize=4096)
def check_template(text: str) -> frozenset[str]:
    """Parse a template and return the top-level names it uses; raise ValueError on bad syntax.

    Attribute or key names starting with `_` are refused here, at load time, rather than by the
    sandbox while a report is being rendered.
    """
    try:
        ast = _ENV.parse(text)
    except TemplateSyntaxError as exc:
        raise ValueError(f"template syntax error: {exc.message} (line {exc.lineno})") from None
    except (RecursionError, MemoryError):
        raise ValueError("template nested too deeply") from None
    keys: list[object] = [n.attr for n in ast.find_all(nodes.Getattr)]
    keys += [n.arg.value for n in ast.find_all(nodes.Getitem) if isinstance(n.arg, nodes.Const)]
    for key in keys:
        if isinstance(key, str) and key.startswith("_"):
            raise ValueError(f"template reads {key!r}: names starting with '_' are not allowed")
    return frozenset(meta.find_undeclared_variables(ast))


@lru_cache(maxsize=4096)
def _compiled(text: str) -> Any:
    return _ENV.from_string(text)


def render(text: str, context: dict[str, Any]) -> str:
    """Render a template in the sandbox; missing names raise (they were checked at load time)."""
    try:
        return sandbox.render_bounded(_compiled(text), context, seconds=TEMPLATE_SECONDS).strip()
    except sandbox.TEMPLATE_FAILURES as exc:
        snippet = " ".join(text.split())[:80]
        raise UserError(f"rule pack template {snippet!r} failed: {sandbox.describe(exc)}") from None
