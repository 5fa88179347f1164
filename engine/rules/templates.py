"""Evidence and suggestion templates: a sandboxed Jinja environment with number-formatting filters.

Templates only format numbers the engine already computed (why: the report must be able to trace
every number to a metric, so a template never does arithmetic of its own beyond display). Null
values render as "n/a" rather than raising, because a template is rendered only for a fired rule
and a cited value that is null is itself worth showing.
"""

from __future__ import annotations

from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, meta
from jinja2.sandbox import SandboxedEnvironment


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

_ENV = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False)
_ENV.filters.update(FILTERS)


def check_template(text: str) -> set[str]:
    """Parse a template and return the top-level names it uses; raise ValueError on bad syntax."""
    try:
        ast = _ENV.parse(text)
    except TemplateSyntaxError as exc:
        raise ValueError(f"template syntax error: {exc.message} (line {exc.lineno})") from None
    return set(meta.find_undeclared_variables(ast))


def render(text: str, context: dict[str, Any]) -> str:
    """Render a template in the sandbox; missing names raise (they were checked at load time)."""
    return _ENV.from_string(text).render(**context).strip()
