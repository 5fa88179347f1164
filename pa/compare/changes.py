"""One compared scalar: the delta, a percentage only where it means something, and significance.

Formulas in pa.compare.model: significant when |after − before| > floor % × max(|before|, |after|);
delta_pct = delta / before × 100 unless before is 0 ("new") or below NEAR_ZERO_FRACTION of after
("from ~0"), where a percentage such as +44300 % would say nothing.
"""

from __future__ import annotations

from pa.compare.model import Change

NEAR_ZERO_FRACTION = 0.01


def significant(before: float, after: float, floor_pct: float) -> bool:
    """|after − before| > floor × max(|before|, |after|)."""
    return abs(after - before) > floor_pct / 100.0 * max(abs(before), abs(after))


def pct_change(before: float, after: float) -> tuple[float | None, str | None]:
    """(delta_pct, note): the percentage, or None with "new" / "from ~0" where it would mean nothing."""
    if before == 0:
        return None, ("new" if after else None)
    if abs(before) < NEAR_ZERO_FRACTION * abs(after):
        return None, "from ~0"
    return 100.0 * (after - before) / before, None


def change(metric: str, unit: str, before: float | None, after: float | None, floor: float) -> Change:
    """One compared scalar; None on either side means "not captured" and is never significant."""
    if before is None or after is None:
        return Change(metric=metric, unit=unit, before=before, after=after, delta=None, delta_pct=None,
                      significant=False)
    d = after - before
    pct, note = pct_change(before, after)
    return Change(metric=metric, unit=unit, before=before, after=after, delta=d, delta_pct=pct,
                  significant=significant(before, after, floor), note=note)
