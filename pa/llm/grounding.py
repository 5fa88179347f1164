"""Are the numbers the model wrote facts? A unit- and kind-aware check, scoped to what was cited.

The old check accepted a number within 1 % of *any* number of the summary or of any tool result,
whatever its unit: "73.2 % of runtime" passed on a kernel's 72.87 ns standard deviation, "4.7×
speedup" on a 4.72 % share, and about half of random percentages passed by chance. Now:

**Facts are typed.** Each number the engine offers carries a kind and, for percentages, the
quantity it is a share of, inferred from its field or column name and unit (`_ns`, `_pct`,
`bytes`, `_per_s`, `count`, `runtime_fraction_pct`, `share_of_gpu_time_pct`,
`estimated_speedup_pct_*`, …; the SQL tool tells the model to name result columns this way):

- `pct` with a class: `span` (of the run: runtime fractions, `*_pct_of_span`, `*_frac`),
  `gpu_time` (share of GPU/kernel time), `utilization`, `speedup` (the engine's Amdahl bounds), or
  `other` when the name does not say (such a fact matches a percentage of any quantity but speedup);
- `speedup` factors (×): only the engine's bounds, as 1 + bound / 100;
- `ns` (durations), `bytes`, `bandwidth` (bytes/s), `rate` (per second), `hz`, `count`, `plain`.

**Claims are typed.** A number in the text is read with its unit ("12.3 ms", "1.5 GB", "4.7×",
"2.1 GB/s", "36 %") and, for a percentage, the words around it ("of the run", "of GPU time",
"utilisation", "faster"/"speedup"/"gain"). A claim matches only a fact of the same kind (and, for
a percentage, the same class; an unqualified percentage any class but speedup), after converting
units, and only at the precision written: "72.9 %" matches 72.87 (rounds to it) but "73.2 %"
does not; "1.2 s" matches 1,234,567,890 ns. Signs are ignored. Plain integers 0–16 are not
checked (counts, ordinals, "2 streams").

**Facts are scoped.** A refinement of candidate H is checked against H's own evidence values,
runtime fraction and bounds, plus the tool results of the run; the narrative against every
candidate and the pre-seeded context plus the tool results; a new hypothesis's value against the
one tool call it cites. Tool results count only when they are measurements: a SQL result column
that reads no profile data (`SELECT 95.0`) or that moves with the query's own literals is not a
fact (pa.llm.sql_tool).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SMALL_INT = 16
_DUR = {"ns": 1.0, "nanosecond": 1.0, "nanoseconds": 1.0, "µs": 1e3, "μs": 1e3, "us": 1e3,
        "microsecond": 1e3, "microseconds": 1e3, "ms": 1e6, "millisecond": 1e6, "milliseconds": 1e6,
        "s": 1e9, "sec": 1e9, "secs": 1e9, "second": 1e9, "seconds": 1e9, "min": 60e9, "minute": 60e9,
        "minutes": 60e9, "h": 3600e9, "hour": 3600e9, "hours": 3600e9}
_BYTES = {"b": (1.0,), "byte": (1.0,), "bytes": (1.0,), "kb": (1e3, 1024.0), "kib": (1024.0,),
          "mb": (1e6, 1024.0 ** 2), "mib": (1024.0 ** 2,), "gb": (1e9, 1024.0 ** 3), "gib": (1024.0 ** 3,),
          "tb": (1e12, 1024.0 ** 4), "tib": (1024.0 ** 4,)}
_MAG = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "g": 1e9, "billion": 1e9, "bn": 1e9}
_HZ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9}

_CLAIM = re.compile(
    r"(?<![\w.])(?P<sign>[-−+])?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:[eE](?P<exp>[-+]?\d+))?"
    r"(?![\w.,]\d)"
    r"(?:\s?(?P<unit>%|percent\b|per\s?cent\b|×|x(?![\w])|-?fold\b|"
    r"times\s+(?:faster|slower|more|less|higher|lower|longer|shorter)\b|"
    r"[kKMGT]i?B/s|[kKMGT]B/s|B/s|bytes?/s|[kKMGT]i?B\b|bytes?\b|B\b|[kKMG]?Hz\b|"
    r"nanoseconds?\b|microseconds?\b|milliseconds?\b|seconds?\b|minutes?\b|hours?\b|"
    r"ns\b|µs\b|μs\b|us\b|ms\b|secs?\b|s\b|min\b|h\b|"
    r"(?:k|K|M|G|thousand|million|billion|bn)\b(?:\s?(?:/s|per\s+second))?|/s\b|per\s+second\b))?",
)
_SPAN_AFTER = re.compile(r"^\s*(?:of\s+(?:the\s+)?(?:total\s+|whole\s+|wall[- ]clock\s+)?"
                         r"(?:run\b|runtime|run\s+time|span|wall|execution|time\b|trace|capture|elapsed)"
                         r"|(?:less\s+|more\s+)?(?:time|runtime|run\s*time|wall)\b)")
_GPU_AFTER = re.compile(r"^\s*of\s+(?:the\s+)?(?:total\s+)?(?:gpu|kernel|device)(?:\s+kernel)?\s+time")
_UTIL = re.compile(r"utili[sz]|busy|idle")
_SPEEDUP = re.compile(r"speed-?up|faster|gain|improvement")


@dataclass(frozen=True)
class Fact:
    """One number the engine can vouch for, in base units (ns, bytes, percent, ×)."""

    value: float
    kind: str         # pct, speedup, ns, bytes, bandwidth, rate, hz, count, plain
    cls: str = ""     # for pct: span, gpu_time, utilization, speedup, other
    name: str = ""


@dataclass(frozen=True)
class Claim:
    """One number written in the model's text."""

    text: str
    value: float      # as written, sign dropped, magnitude word applied
    kind: str
    cls: str
    decimals: int
    scales: tuple[float, ...] = (1.0,)  # base units per written unit (several for MB: 1e6 or 2^20)


def _pct_class(name: str) -> str:
    """The quantity a percentage (or 0–1 fraction) is a share of, from its name; `other` when unknown."""
    last = name.rsplit(".", 1)[-1]
    if "speedup" in name:
        return "speedup"
    if last.startswith("window_") and ("busy" in last or "kernel" in last):
        return "utilization"   # busy over the GPU's active window (rules/core.yaml), not a share of the run
    if "span" in name or "runtime_fraction" in name or "of_run" in name or last.endswith("_frac"):
        return "span"
    if "gpu_time" in name or "share_of_gpu" in name or last.endswith("kernel_share"):
        return "gpu_time"
    if "utiliz" in name or "utilis" in name or last.endswith("_util"):
        return "utilization"
    return "other"


_UNIT_HINT = re.compile(r"(?:_ns|_us|_ms|_s|_pct|pct|percent|_bytes|bytes|_per_s|_bps|_hz|count|fraction|ratio|"
                        r"speedup|bandwidth)(?:_|$)|^(?:start|end|duration|span|busy|time|n|calls|launches|rows)$")


def _unit_part(path: str) -> str:
    """The path component that says the unit (`host_cover_pct.sync` → host_cover_pct), else the last."""
    parts = path.split(".")
    for part in reversed(parts):
        if _UNIT_HINT.search(part):
            return part
    return parts[-1]


def facts_for(name: str, value: Any, unit: str | None = None) -> list[Fact]:
    """The typed facts of one named number (module docs: kinds inferred from names and units)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return []
    v = float(value)
    full = name.lower()
    n = _unit_part(full)
    u = (unit or "").strip().lower()
    if "speedup" in full and ("pct" in full or u in ("%", "pct", "percent")):
        return [Fact(v, "pct", "speedup", name), Fact(1 + v / 100, "speedup", "", name)]
    if u in ("%", "pct", "percent") or n.endswith("_pct") or n == "pct" or "percent" in n or "_pct_" in n:
        return [Fact(v, "pct", _pct_class(full), name)]
    if u in ("ratio", "fraction") or "fraction" in n or n.endswith("ratio"):
        return [Fact(v * 100, "pct", _pct_class(full), name), Fact(v, "plain", "", name)]
    if u in _DUR or n.endswith(("_ns", "_us", "_ms", "_s")) or n in ("ns", "start", "end", "duration",
                                                                       "span", "busy", "time"):
        if u in _DUR:
            scale = _DUR[u]
        elif n.endswith("_us"):
            scale = 1e3
        elif n.endswith("_ms"):
            scale = 1e6
        elif n.endswith("_s") and not n.endswith("_per_s"):
            scale = 1e9
        else:
            scale = 1.0
        if not (n.endswith("_per_s") or u.endswith("/s")):
            return [Fact(v * scale, "ns", "", name)]
    if u in ("b/s", "bytes/s", "bps") or "bytes_per_s" in n or n.endswith("_bps") or "bandwidth" in n:
        return [Fact(v, "bandwidth", "", name)]
    if n.endswith("_per_s") or u.endswith("/s") or n.endswith("_per_second"):
        return [Fact(v, "rate", "", name)]
    if u in ("b", "byte", "bytes") or "bytes" in n:
        return [Fact(v, "bytes", "", name)]
    if u in _HZ or n.endswith("_hz") or n == "hz":
        return [Fact(v * _HZ.get(u, 1.0), "hz", "", name)]
    if u == "count" or "count" in n or n in ("count", "calls", "launches", "n", "rows", "instances") \
            or n.startswith("n_"):
        return [Fact(v, "count", "", name)]
    return [Fact(v, "plain", "", name)]


def facts_of(value: Any, name: str = "") -> list[Fact]:
    """Every typed number inside a JSON-like value (field names give the kinds).

    A SQL tool result ({"columns": [...], "rows": [[...]]}) pairs each cell with its column name.
    """
    out: list[Fact] = []
    stack: list[tuple[str, Any]] = [(name, value)]
    while stack:
        key, v = stack.pop()
        if isinstance(v, dict):
            cols, rows = v.get("columns"), v.get("rows")
            if isinstance(cols, list) and isinstance(rows, list) and all(isinstance(r, list) for r in rows):
                for r in rows:
                    stack.extend((str(c), x) for c, x in zip(cols, r, strict=False))
                stack.extend((k, x) for k, x in v.items() if k not in ("columns", "rows"))
            elif {"name", "value"} <= v.keys() and not isinstance(v.get("value"), (dict, list)):
                out.extend(facts_for(str(v["name"]), v["value"], v.get("unit")))
            else:
                stack.extend((k if not key else f"{key}.{k}", x) for k, x in v.items())
        elif isinstance(v, (list, tuple)):
            stack.extend((key, x) for x in v)
        else:
            out.extend(facts_for(key, v))
    return out


def _decimals(num: str) -> int:
    return len(num.split(".", 1)[1]) if "." in num else 0


def _classify_pct(text: str, start: int, end: int) -> str:
    after = text[end:end + 48].lower()
    before = text[max(0, start - 40):start].lower()
    if _SPEEDUP.search(after[:28]) or re.search(r"(?:speed-?up|gains?|faster)(?: of)?(?: up to| at most| about)?\s*$",
                                                 before):
        return "speedup"
    if _GPU_AFTER.search(after):
        return "gpu_time"
    if _SPAN_AFTER.search(after):
        return "span"
    if _UTIL.search(after[:24]) or _UTIL.search(before[-24:]):
        return "utilization"
    return "any"


def claims_in(text: str) -> list[Claim]:
    """The numbers written in `text`, typed (module docs); small plain integers are left out."""
    out: list[Claim] = []
    for m in _CLAIM.finditer(text):
        num = m.group("num")
        try:
            value = float(num.replace(",", ""))
        except ValueError:
            continue
        decimals = _decimals(num)
        if m.group("exp"):
            value *= 10.0 ** int(m.group("exp"))
            decimals = max(0, decimals - int(m.group("exp")))
        raw_unit = (m.group("unit") or "").strip()
        unit = re.sub(r"\s+", " ", raw_unit).lower()
        written = m.group(0).strip()
        if not unit:
            if value.is_integer() and 0 <= value <= SMALL_INT and "." not in num:
                continue
            out.append(Claim(written, value, "plain", "", decimals))
        elif unit in ("%", "percent", "per cent", "percent"):
            out.append(Claim(written, value, "pct", _classify_pct(text, m.start(), m.end()), decimals))
        elif unit in ("×", "x") or "fold" in unit or unit.startswith("times"):
            out.append(Claim(written, value, "speedup", "", decimals))
        elif unit.endswith("/s") or unit.endswith("per second"):
            head = unit.split("/")[0].split(" per")[0].strip()
            if head in ("b", "bytes", "byte") or head.endswith("b"):
                scale = _BYTES.get(head, (1.0,))
                out.append(Claim(written, value, "bandwidth", "", decimals, scale))
            else:
                out.append(Claim(written, value, "rate", "", decimals, (_MAG.get(head, 1.0),)))
        elif raw_unit in ("k", "K", "M", "G") or unit in ("thousand", "million", "billion", "bn"):
            out.append(Claim(written, value, "count", "", decimals, (_MAG[unit],)))
        elif unit in _BYTES or raw_unit in ("B",):
            out.append(Claim(written, value, "bytes", "", decimals, _BYTES.get(unit, (1.0,))))
        elif unit in _HZ:
            out.append(Claim(written, value, "hz", "", decimals, (_HZ[unit],)))
        elif unit in _DUR:
            out.append(Claim(written, value, "ns", "", decimals, (_DUR[unit],)))
        else:
            out.append(Claim(written, value, "plain", "", decimals))
    return out


_COMPATIBLE = {"plain": ("plain", "count"), "count": ("count", "plain"), "ns": ("ns",), "bytes": ("bytes",),
               "bandwidth": ("bandwidth",), "rate": ("rate",), "hz": ("hz",), "speedup": ("speedup",),
               "pct": ("pct",)}


def matches(claim: Claim, fact: Fact) -> bool:
    """True when `fact` supports `claim` (same kind and class, equal at the precision written)."""
    if fact.kind not in _COMPATIBLE[claim.kind]:
        return False
    if claim.kind == "pct":
        if claim.cls == "speedup" or fact.cls == "speedup":
            if claim.cls != fact.cls:
                return False
        elif claim.cls != "any" and fact.cls not in (claim.cls, "other"):
            return False
    half = 0.5 * 10.0 ** -claim.decimals * (1 + 1e-9) + 1e-12
    return any(abs(abs(fact.value) / scale - claim.value) <= half for scale in claim.scales)


def ungrounded(text: str, facts: Iterable[Fact]) -> list[str]:
    """The numbers of `text` (as written) that no fact supports, in text order."""
    pool = list(facts)
    by_kind: dict[str, list[Fact]] = {}
    for f in pool:
        by_kind.setdefault(f.kind, []).append(f)
    bad = []
    for c in claims_in(text):
        candidates = [f for k in _COMPATIBLE[c.kind] for f in by_kind.get(k, [])]
        if not any(matches(c, f) for f in candidates):
            bad.append(c.text)
    return bad


def value_grounded(value: float, unit: str | None, name: str, facts: Iterable[Fact]) -> bool:
    """A new hypothesis's evidence value against the facts of the tool call it cites.

    The value must equal a fact of that call (to the precision it is written with, in its unit),
    and when its unit or name gives it a kind, the fact must be of that kind.
    """
    typed = facts_for(name, value, unit) or [Fact(float(value), "plain")]
    want = typed[0]
    scale = abs(want.value / value) if value else 1.0
    text = repr(float(value))
    decimals = min(6, _decimals(text)) if "e" not in text else 6
    half = (0.5 * 10.0 ** -decimals * (1 + 1e-9) + 1e-12) * scale
    for f in facts:
        if want.kind != "plain" and f.kind != want.kind and {want.kind, f.kind} != {"count", "plain"}:
            continue
        if abs(abs(f.value) - abs(want.value)) <= max(half, 1e-9 * abs(want.value)):
            return True
    return False
