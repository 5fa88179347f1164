"""Evidence and suggestion templates: a sandboxed Jinja environment with number-formatting filters.

Templates only format numbers the engine already computed (why: the report must be able to trace
every number to a metric, so a template never does arithmetic of its own beyond display). Null
values render as "n/a" rather than raising, because a template is rendered only for a fired rule
and a cited value that is null is itself worth showing.

A site pack's templates are data: they run in pa's sandbox (engine.sandbox) under a time budget,
attributes starting with `_` are refused when the pack is loaded, and a template that fails while
rendering is one UserError line quoting it, never a traceback.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, meta, nodes

from engine import sandbox
from engine.errors import UserError

# Wall-clock budget of one evidence or suggestion rendering (a real one takes well under a millisecond).
TEMPLATE_SECONDS = 2.0


def _na(x: Any) -> bool:
    return x is None or isinstance(x, bool) or not isinstance(x, (int, float))


def fmt_duration(ns: Any) -> str:
    """Nanoseconds as a human duration with an adaptive unit (ns, µs, ms, s)."""
    if _na(ns):
        return "n/a"
    a = abs(ns)
    if a >= 1e9:
        return f"{ns / 1e9:.3g} s"
    if a >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if a >= 1e3:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns:.0f} ns"


def fmt_ms(ns: Any) -> str:
    """Nanoseconds in milliseconds."""
    return "n/a" if _na(ns) else f"{ns / 1e6:.3g} ms"


def fmt_pct(fraction: Any) -> str:
    """A fraction (0..1) as a percentage."""
    return "n/a" if _na(fraction) else f"{fraction * 100:.1f} %"


def fmt_pctv(percent: Any) -> str:
    """A value that is already a percentage."""
    return "n/a" if _na(percent) else f"{percent:.1f} %"


def fmt_bytes(n: Any) -> str:
    """Bytes in decimal units, as the report's tables and the bandwidths (GB/s) are written."""
    if _na(n):
        return "n/a"
    v = float(n)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.0f} B"


def fmt_bandwidth(bps: Any) -> str:
    """Bytes per second in decimal GB/s (the unit vendors quote link and memory peaks in)."""
    return "n/a" if _na(bps) else f"{bps / 1e9:.3g} GB/s"


def fmt_num(x: Any) -> str:
    """A count with thousands separators, or a float with 3 significant digits."""
    if _na(x):
        return "n/a"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.3g}"


FILTERS = {"dur": fmt_duration, "ms": fmt_ms, "pct": fmt_pct, "pctv": fmt_pctv, "bytes": fmt_bytes,
           "bandwidth": fmt_bandwidth, "num": fmt_num}

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
