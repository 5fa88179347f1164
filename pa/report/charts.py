"""Chart geometry for the HTML report, computed from the validated report document only.

Geometry lives here rather than in the template so that it is testable and the template stays a
layout: each function returns plain dicts of SVG coordinates (viewBox units). Bars that carry a
value have the CSS class `bar` plus a chart-specific class, which the browser test counts.

The timeline strip is an approximation until the summary carries a utilisation time series: it
draws the device's leading idle, its active window and trailing idle, and marks the largest idle
gaps inside the window at their real positions (ProfileSummary.idle_gaps[].largest). Idle time
inside the window that is not among the largest gaps is only reported as a number. When a
`timeline` series appears in the report (planned), `timeline_strips` uses it instead.
"""

from __future__ import annotations

from typing import Any

WIDTH = 640.0          # drawing width of every chart, viewBox units
STRIP_H = 16.0
LABEL_W = 120.0


def _x(t: float, span: float) -> float:
    return round(LABEL_W + (WIDTH - LABEL_W) * (t / span if span > 0 else 0.0), 2)


def timeline_strips(doc: dict[str, Any]) -> dict[str, Any]:
    """One strip per used device: idle (before/after), active window, and the largest gaps."""
    span = float(doc["summary"]["span_ns"])
    series = doc.get("timeline")  # future: per-device utilisation series; tolerated when absent
    rows = []
    for i, dev in enumerate(doc["summary"]["devices"]):
        y = round(4 + i * (STRIP_H + 8), 2)
        segs: list[dict[str, Any]] = []
        first, last = dev.get("first_activity_ns"), dev.get("last_activity_ns")
        if series is None and first is not None and last is not None and span > 0:
            segs.append({"x": _x(0, span), "w": round(_x(first, span) - _x(0, span), 2),
                         "cls": "seg-idle", "title": "idle before the first GPU operation"})
            segs.append({"x": _x(first, span), "w": round(_x(last, span) - _x(first, span), 2),
                         "cls": "seg-active", "title": "active window (first to last GPU operation)"})
            segs.append({"x": _x(last, span), "w": round(_x(span, span) - _x(last, span), 2),
                         "cls": "seg-idle", "title": "idle after the last GPU operation"})
            for gap in dev.get("largest_gaps", []):
                x0 = _x(gap["start_ns"], span)
                w = max(0.6, _x(gap["start_ns"] + gap["duration_ns"], span) - x0)
                segs.append({"x": x0, "w": round(w, 2), "cls": "seg-gap",
                             "title": f"idle gap, host: {gap['host_activity']}"})
        label = f"GPU {dev['id']}"
        rows.append({"y": y, "label": label, "util": dev.get("utilization_pct"), "segments": segs})
    height = round(8 + len(rows) * (STRIP_H + 8), 2)
    return {"width": WIDTH, "height": height, "strip_h": STRIP_H, "rows": rows,
            "approximate": series is None}


def gap_histograms(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One histogram per device: a bar per bucket (zero-count buckets have height 0)."""
    out = []
    plot_h = 100.0
    for dev in doc["summary"]["devices"]:
        buckets = dev.get("gap_histogram") or []
        if not buckets:
            continue
        top = max(b["count"] for b in buckets) or 1
        slot = (WIDTH - 40) / len(buckets)
        bars = []
        for j, b in enumerate(buckets):
            h = round(plot_h * b["count"] / top, 2)
            bars.append({"x": round(40 + j * slot + slot * 0.1, 2), "w": round(slot * 0.8, 2),
                         "y": round(10 + plot_h - h, 2), "h": h, "label": b["label"],
                         "count": b["count"], "total_ns": b["total_ns"]})
        out.append({"device": dev["id"], "width": WIDTH, "height": plot_h + 40, "base": 10 + plot_h,
                    "bars": bars})
    return out


def speedup_ranges(doc: dict[str, Any]) -> dict[str, Any]:
    """Per finding with a bound, a bar of the run time it saves: from half of its claim to all of it.

    The axis is time saved (share of the run, at most 100 %), not the Amdahl speedup percentage,
    which grows without limit as the claim nears the whole run; the label carries the speedup factor.
    """
    hyps = [h for h in doc["hypotheses"] if h.get("claim", "recoverable") == "recoverable"
            and h.get("runtime_fraction_pct") is not None]
    top = max((h["runtime_fraction_pct"] for h in hyps), default=0.0) or 1.0
    rows = []
    for i, h in enumerate(hyps):
        hi = h["runtime_fraction_pct"]
        lo = hi / 2
        x0, x1 = _x(lo, top), _x(hi, top)
        rows.append({"y": round(4 + i * 22, 2), "x": x0, "w": round(max(1.0, x1 - x0), 2),
                     "id": h["id"], "lower": lo, "upper": hi, "title": h["title"], "hypothesis": h})
    return {"width": WIDTH, "height": round(8 + len(rows) * 22 + 14, 2), "rows": rows, "max": top}


def rank_bars(doc: dict[str, Any]) -> dict[str, Any] | None:
    """Per-rank bars: span, GPU busy overlaid, and collective wait below; None with a single profile.

    With a `cross_rank` block the bars come from its per-rank table (busy, collective wait, the
    straggler and the primary rank marked); an older report with only `ranks` draws span and busy.
    busy_ns is summed over a rank's GPUs, so the bar draws it per GPU (÷ the used devices, which
    idle_ns = span × devices − busy gives) and never longer than the span: a green bar past the grey
    one would claim the GPUs were busy for longer than the rank ran. The wait bar is clamped too.
    """
    cross = doc.get("cross_rank")
    ranks = cross["ranks"] if cross else doc.get("ranks")
    if not ranks:
        return None
    top = float(max(r["span_ns"] for r in ranks)) or 1.0
    scale = (WIDTH - LABEL_W) / top
    rows = []
    for i, r in enumerate(ranks):
        busy = r.get("busy_ns", r.get("gpu_busy_ns")) or 0
        wait = r.get("collective_wait_ns") or 0
        span = r["span_ns"]
        idle = r.get("idle_ns")
        devices = max(1, round((busy + idle) / span)) if span > 0 and idle is not None else 1
        busy_drawn = min(busy / devices, span)
        wait_drawn = min(wait, span)
        roles = []
        if cross and r["rank"] == cross.get("straggler_rank"):
            roles.append("straggler")
        if cross and r["rank"] == cross.get("primary_rank"):
            roles.append("primary")
        rows.append({"y": round(4 + i * 26, 2), "x": LABEL_W, "w": round(max(1.0, r["span_ns"] * scale), 2),
                     "busy_w": round(busy_drawn * scale, 2), "wait_w": round(wait_drawn * scale, 2),
                     "rank": r["rank"], "span_ns": span, "busy_ns": busy, "wait_ns": wait, "devices": devices,
                     "util": r.get("utilization_pct", r.get("gpu_utilization_pct")),
                     "roles": roles, "cls": "rank-straggler" if "straggler" in roles else ""})
    return {"width": WIDTH, "height": round(8 + len(rows) * 26, 2), "rows": rows, "cross": cross is not None}


def all_charts(doc: dict[str, Any]) -> dict[str, Any]:
    """Every chart of the HTML report."""
    return {"timeline": timeline_strips(doc), "gaps": gap_histograms(doc),
            "speedup": speedup_ranges(doc), "ranks": rank_bars(doc)}
