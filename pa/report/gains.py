"""How a finding's gain reads: "up to 1.56× faster (−36 % time)", never "gains at most 3240%".

One wording for the headline and every template. The numbers are the engine's Amdahl bounds: the
upper bound removes the whole claimed fraction F (speedup 1/(1 − F)), the lower one half of it; the
time saved is F itself. A percentage speedup (3240 %) hides that the run gets 33× faster, and a
"gain" on a finding that claims no time must say so rather than print 0.

A claim is judged on the analysis window (the GPU's active window; docs/rules.md, "The analysis
window"): where its share of that window reads differently from its share of the capture, the
window share and its speedup come first and the capture's after them: "recovers up to 24 % of the
GPU's active window (2.7 % of this capture): up to 1.32× faster in that window, about 1.14× if half
of it is removed; 1.03× over this capture".
"""

from __future__ import annotations

from pa import formatting


def factor_text(speedup_pct: float) -> str:
    """A speedup percentage as a factor: 56 → '1.56×', 3240 → '33.4×', 123400 → '1,235×' (never '1.24e+03×')."""
    factor = 1.0 + speedup_pct / 100.0
    return f"{factor:.2f}×" if factor < 10 else f"{formatting.number(factor)}×"


def percent_text(pct: float) -> str:
    """A share that stays readable when small: 36 → '36 %', 2.3 → '2.3 %', 0.04 → '0.04 %', 2e-5 → '0.00002 %'."""
    if pct >= 10:
        return f"{pct:.0f} %"
    if pct >= 1:
        return f"{pct:.1f} %"
    return f"{formatting.number(pct, 2)} %"


def gain_text(claim: str | None, fraction_pct: float | None, lower_pct: float | None,
              upper_pct: float | None, window_pct: float | None = None, window_lower_pct: float | None = None,
              window_upper_pct: float | None = None) -> str:
    """The gain of one finding as a performance engineer writes it (window share first when it differs)."""
    if claim == "none":
        return "none claimed (a finding about the capture, not a cost of the application)"
    if claim == "speculative" or fraction_pct is None:
        return "not bounded by this trace (speculative: its headroom cannot be measured here)"
    if window_pct is not None and percent_text(window_pct) != percent_text(fraction_pct):
        return _window_gain_text(fraction_pct, upper_pct, window_pct, window_lower_pct, window_upper_pct)
    if upper_pct is None:
        return f"the whole run (−{percent_text(fraction_pct)} time): no finite speedup bound"
    text = f"up to {factor_text(upper_pct)} faster (−{percent_text(fraction_pct)} time)"
    if lower_pct is not None:
        text += f"; about {factor_text(lower_pct)} if half of it is removed"
    return text


def _window_gain_text(fraction_pct: float, upper_pct: float | None, window_pct: float,
                      window_lower_pct: float | None, window_upper_pct: float | None) -> str:
    """'recovers up to 24 % of the GPU's active window (2.7 % of this capture): up to 1.32× faster ...'."""
    text = (f"recovers up to {percent_text(window_pct)} of the GPU's active window "
            f"({percent_text(fraction_pct)} of this capture): ")
    if window_upper_pct is None:
        text += "no finite speedup bound in that window"
    else:
        text += f"up to {factor_text(window_upper_pct)} faster in that window"
        if window_lower_pct is not None:
            text += f", about {factor_text(window_lower_pct)} if half of it is removed"
    if upper_pct is not None:
        text += f"; up to {factor_text(upper_pct)} over this capture"
    return text
