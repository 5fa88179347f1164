"""How a finding's gain reads: "up to 1.56× faster (−36 % time)", never "gains at most 3240%".

One wording for the headline and every template. The numbers are the engine's Amdahl bounds: the
upper bound removes the whole claimed fraction F (speedup 1/(1 − F)), the lower one half of it; the
time saved is F itself. A percentage speedup (3240 %) hides that the run gets 33× faster, and a
"gain" on a finding that claims no time must say so rather than print 0.
"""

from __future__ import annotations


def factor_text(speedup_pct: float) -> str:
    """A speedup percentage as a factor: 56 → '1.56×', 3240 → '33.4×'."""
    factor = 1.0 + speedup_pct / 100.0
    return f"{factor:.2f}×" if factor < 10 else f"{factor:.3g}×"


def percent_text(pct: float) -> str:
    """A share that stays readable when small: 36 → '36 %', 2.3 → '2.3 %', 0.04 → '0.04 %'."""
    if pct >= 10:
        return f"{pct:.0f} %"
    if pct >= 1:
        return f"{pct:.1f} %"
    return f"{pct:.2g} %"


def gain_text(claim: str | None, fraction_pct: float | None, lower_pct: float | None,
              upper_pct: float | None) -> str:
    """The gain of one finding as a performance engineer writes it."""
    if claim == "none":
        return "none claimed (a finding about the capture, not a cost of the application)"
    if claim == "speculative" or fraction_pct is None:
        return "not bounded by this trace (speculative: its headroom cannot be measured here)"
    if upper_pct is None:
        return f"the whole run (−{percent_text(fraction_pct)} time): no finite speedup bound"
    text = f"up to {factor_text(upper_pct)} faster (−{percent_text(fraction_pct)} time)"
    if lower_pct is not None:
        text += f"; about {factor_text(lower_pct)} if half of it is removed"
    return text
