"""Numbers as pa writes them in every text it renders: one family of formatters.

`pa summary`'s tables (pa.summary_render), the report templates' Jinja filters
(pa.report.render) and the rule packs' sentence filters (pa.rules.templates) all format
through these functions, so a number reads the same wherever it appears:

- **sizes in decimal (SI) units**: B, kB, MB, GB, TB (1 MB = 10^6 bytes), the units the profilers'
  bandwidths (GB/s) and the vendors' link and memory peaks are quoted in; 301,989,888 bytes read
  "302 MB" everywhere. (Binary units appear only where a threshold is itself a power of two and is
  named by its definition, such as the 1 MiB of the pinned-copy estimate.)
- **three significant digits** with an adaptive unit for durations ('1.23 s', '45.6 ms', '789 µs',
  '12 ns'), sizes and bandwidths ('1.51 TB/s', '31.5 GB/s', '2.29 MB/s'); a value that rounds up to
  1000 of a unit is written in the next unit ('1 s', never '1e+03 ms');
- **percentages with one decimal and a space**: '12.3 %'; a real but tiny share reads '<0.1 %',
  never '0.0 %' (which would look like nothing);
- counts with thousands separators: '12,345'; other numbers (rates, ratios, cited values) to a few
  significant digits, positionally: '100,000', '0.00229', never '1e+05' or '2.29e-03' (a reader
  scanning a column of numbers misreads an exponent, and grep cannot find it);
- 'n/a' for a missing value (None, a boolean or anything that is not a number).

Each layer keeps its filter names (report templates: `ns`, `pct` of a percentage, `frac` of a
fraction; rule packs: `dur`, `pct` of a fraction, `pctv` of a percentage), documented in
docs/report.md and docs/rules.md; the formatting behind them is this module's.
"""

from __future__ import annotations

import math
from typing import Any

NA = "n/a"
_DURATION_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
_SIZE_UNITS = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0))
_RATE_UNITS = tuple((f"{unit}/s", scale) for unit, scale in _SIZE_UNITS)


def _number(x: Any) -> float | None:
    """`x` as a finite float, or None when it is not a number (None, bool, text, NaN, inf)."""
    if x is None or isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _scaled(v: float, units: tuple[tuple[str, float], ...], digits: int = 3) -> str:
    """`v` in the largest unit whose `digits`-significant-digit value is at least 1; the smallest unit as an integer.

    Choosing the unit after rounding is what keeps 999.6 ms from reading '1e+03 ms' (it reads '1 s').
    """
    for unit, scale in units[:-1]:
        text = f"{v / scale:.{digits}g}"
        if abs(float(text)) >= 1:
            if "e" in text:   # the largest unit beyond `digits` digits: written in full
                text = f"{v / scale:,.0f}"
            return f"{text} {unit}"
    return f"{v:,.0f} {units[-1][0]}"


def duration(ns: Any, digits: int = 3) -> str:
    """Nanoseconds as a human duration: '1.23 s', '45.6 ms', '789 µs', '12 ns'."""
    v = _number(ns)
    return NA if v is None else _scaled(v, _DURATION_UNITS, digits)


def duration_pair(before: Any, after: Any) -> tuple[str, str]:
    """Two durations to compare, with the fewest significant digits (3 to 6) that tell them apart.

    '39.5 s → 39.6 s' where three digits differ, '39.53 s → 39.54 s' where four are needed: a
    change the reader is told about never reads as 'x → x' (issue 30: the compare narrative wrote
    '39525.712 ms' to be sure).
    """
    pair = (duration(before), duration(after))
    for digits in range(4, 7):
        if pair[0] != pair[1] or before == after:
            break
        pair = (duration(before, digits), duration(after, digits))
    return pair


def signed_duration(ns: Any) -> str:
    """A change in nanoseconds with its sign: '+1.23 ms', '-45.6 µs', '0 ns'."""
    v = _number(ns)
    if v is None:
        return NA
    return ("+" if v > 0 else "-" if v < 0 else "") + duration(abs(v))


def milliseconds(ns: Any) -> str:
    """Nanoseconds in milliseconds, 3 significant digits: '45.6 ms'."""
    v = _number(ns)
    return NA if v is None else f"{v / 1e6:.3g} ms"


def data_size(n: Any) -> str:
    """Bytes in decimal units: '302 MB', '64 kB', '12 B'."""
    v = _number(n)
    return NA if v is None else _scaled(v, _SIZE_UNITS)


def bandwidth(bps: Any) -> str:
    """Bytes per second in the decimal unit that keeps 3 significant digits: '31.5 GB/s', '1.51 TB/s'.

    A fixed GB/s wrote an NVLink rate as '1.51e+03 GB/s' and a trickle as '0.00229 GB/s' (issue 30);
    decimal units keep the rate comparable with the vendors' peaks, which are quoted in GB/s.
    """
    v = _number(bps)
    return NA if v is None else _scaled(v, _RATE_UNITS)


def percent(value: Any, digits: int = 1) -> str:
    """A value that is already a percentage: '12.3 %'; a tiny positive share '<0.1 %'."""
    v = _number(value)
    if v is None:
        return NA
    if 0 < v < 10 ** -digits:
        return f"<{10 ** -digits:g} %"
    return f"{v:.{digits}f} %"


def fraction(value: Any, digits: int = 1) -> str:
    """A fraction (0..1) as a percentage: 0.123 → '12.3 %'."""
    v = _number(value)
    return NA if v is None else percent(v * 100.0, digits)


def count(n: Any) -> str:
    """A count with thousands separators: 1590 → '1,590' (a float count is rounded to a whole one)."""
    v = _number(n)
    if v is None:
        return NA
    return f"{n:,}" if isinstance(n, int) else f"{round(v):,}"


def number(x: Any, digits: int = 3) -> str:
    """A count with thousands separators ('12,345'), or a float to `digits` significant digits.

    Positional, never scientific: 2.29e-3 → '0.00229', 1.23456 → '1.23'. A float with more
    integer digits than `digits` is written whole, with separators (1e5 → '100,000', 48,229,871.4
    → '48,229,871'), as `duration` writes 12,345 s: rounding it to `digits` digits would show
    zeros that are not measured, an exponent would be misread.
    """
    v = _number(x)
    if v is None:
        return NA
    if isinstance(x, int):
        return f"{x:,}"
    if abs(v) >= 10 ** digits:
        return f"{round(v):,}"
    rounded = float(f"{v:.{digits}g}")   # 999.6 → 1000.0 before the decimals are chosen
    if rounded == 0:
        return "0"
    decimals = max(digits - 1 - math.floor(math.log10(abs(rounded))), 0)
    if decimals == 0:
        return f"{round(rounded):,}"
    return f"{rounded:.{decimals}f}".rstrip("0").rstrip(".")
