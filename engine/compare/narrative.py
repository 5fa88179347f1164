"""Deterministic narrative of a Comparison: fixed sentence templates filled with its numbers.

No free text is generated: the same two summaries always give the same sentences, in the same order
(identity / noise verdict, span, the top key differences, kernels new and vanished, hypotheses).
"""

from __future__ import annotations

from engine.compare.model import Comparison

TOP_KEYS = 5
_T = {
    "identical": "The two captures are identical (same sha256); there is nothing to compare.",
    "noise": "No change exceeds the {floor:g} % noise floor: the runs are the same within measurement noise.",
    "span": "The run got {dir} by {abs_ms:.3f} ms ({pct:+.1f} %): {before_ms:.3f} ms → {after_ms:.3f} ms.",
    "key": "{what}{phase}: {before_ms:.3f} ms → {after_ms:.3f} ms ({delta_ms:+.3f} ms{pct}).",
    "new": "{n} kernel(s) appear only in AFTER, {m} only in BEFORE.",
    "mode": "Compared {mode_text} ({reason}).",
    "hyp": "BEFORE finding {rule} {status}{frac}.",
}


def _ms(ns: float) -> float:
    return ns / 1e6


def narrate(c: Comparison) -> list[str]:
    """Sentences for a Comparison, in a fixed order."""
    if c.identical:
        return [_T["identical"]]
    out: list[str] = []
    if c.within_noise:
        out.append(_T["noise"].format(floor=c.noise_floor_pct))
    span = next(x for x in c.overview if x.metric == "span")
    if span.significant and span.delta is not None and span.before is not None and span.after is not None:
        out.append(_T["span"].format(dir="faster" if span.delta < 0 else "slower", abs_ms=_ms(abs(span.delta)),
                                     pct=span.delta_pct or 0.0, before_ms=_ms(span.before), after_ms=_ms(span.after)))
    out.append(_T["mode"].format(mode_text="phase by phase" if c.mode == "per_phase" else "the whole run",
                                 reason=c.mode_reason))
    for k in c.key_differences[:TOP_KEYS]:
        pct = f", {k.delta_pct:+.1f} %" if k.delta_pct is not None else ""
        phase = f" in phase {k.phase}" if k.phase else ""
        out.append(_T["key"].format(what=k.what[0].upper() + k.what[1:], phase=phase,
                                    before_ms=_ms(k.before_ns), after_ms=_ms(k.after_ns),
                                    delta_ms=_ms(k.delta_ns), pct=pct))
    new = sum(1 for k in c.kernels if k.status == "new")
    gone = sum(1 for k in c.kernels if k.status == "vanished")
    if new or gone:
        out.append(_T["new"].format(n=new, m=gone))
    for h in c.hypotheses or []:
        if h.status == "unchanged" or (h.status == "appeared" and h.after_pct is None):
            continue
        frac = ""
        if h.before_pct is not None and h.after_pct is not None:
            frac = f" ({h.before_pct:.1f} % → {h.after_pct:.1f} % of the run)"
        elif h.status == "disappeared" and h.before_pct is not None:
            frac = f" (was {h.before_pct:.1f} % of the run)"
        out.append(_T["hyp"].format(rule=h.rule_id, status=h.status, frac=frac))
    return out
