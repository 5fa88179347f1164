"""Per GPU, per iteration, the verdict, and warnings that two captures may not be comparable.

- Devices are paired by device number (the profile's numbering) among the devices used in either
  capture; a device used on one side only has null values on the other.
- Iterations: both captures must mark the same iteration range (pa.metrics.iterations, by
  normalised name); the median time of one iteration is compared, which does not depend on how long
  either capture ran or how much start-up it holds.
- The verdict rests on that median when there is one, else on the GPU's active window (first to last
  GPU operation, per GPU: the steady state without start-up and tear-down) when both captures have
  GPU operations, else on the span: significant and larger is a regression, significant and smaller
  an improvement, otherwise within noise. A start-up change (time to the first GPU operation) is
  reported apart, in the reason and the overview, never in the verdict.
- Different applications: less than SAME_APP_MIN_SHARED of either side's kernel time is in kernels
  (by full name) that the other side also ran (pa.metrics.same_app). Different GPUs: the used devices' names or recorded
  hardware facts (SMs, compute capability, memory) differ, or their number does.
"""

from __future__ import annotations

from pa import formatting
from pa.compare.changes import change
from pa.compare.model import Change, DeviceComparison, IterationComparison
from pa.metrics.idle import gpu_activity_captured
from pa.metrics.model import DeviceSummary, ProfileSummary
from pa.metrics.same_app import SAME_APP_MIN_SHARED, shared_kernel_fractions


def device_changes(b: ProfileSummary, a: ProfileSummary, floor: float) -> list[DeviceComparison]:
    """Per GPU used in either capture: busy, kernel time, copy time and utilisation, BEFORE vs AFTER."""
    bd = {d.id: d for d in b.devices if d.used}
    ad = {d.id: d for d in a.devices if d.used}
    out = []
    for dev in sorted(set(bd) | set(ad)):
        x, y = bd.get(dev), ad.get(dev)

        def val(d: DeviceSummary | None, f: str) -> float | None:
            return None if d is None else getattr(d, f)
        out.append(DeviceComparison(device=dev, before_name=x.name if x else None, after_name=y.name if y else None,
                                    changes=[change(label, unit, val(x, f), val(y, f), floor) for label, unit, f in (
                                        ("gpu busy", "ns", "busy_ns"), ("kernel time", "ns", "kernel_time_ns"),
                                        ("copy time", "ns", "copy_time_ns"),
                                        ("utilization", "pct", "utilization_pct"))]))
    return out


def iteration_change(b: ProfileSummary, a: ProfileSummary, floor: float) -> tuple[IterationComparison | None, str]:
    """(comparison, reason): the median iteration time when both captures mark the same iteration."""
    ib = b.markers.iterations if b.markers else None
    ia = a.markers.iterations if a.markers else None
    if ib is None or ia is None:
        side = "either capture" if ib is None and ia is None else "BEFORE" if ib is None else "AFTER"
        return None, (f"no iteration range in {side} (a top-level marker range repeated at least 3 times, "
                      "back to back)")
    if ib.name != ia.name:
        return None, f"the iteration ranges differ ({ib.name!r} in BEFORE, {ia.name!r} in AFTER)"
    return (IterationComparison(name=ib.name, before_count=ib.count, after_count=ia.count,
                                median=change("iteration median", "ns", ib.median_ns, ia.median_ns, floor)),
            f"median of {ib.count} {ib.name!r} ranges in BEFORE and {ia.count} in AFTER")


def verdict(span: Change, it: IterationComparison | None, identical: bool,
            window: Change | None = None) -> tuple[str, str, str]:
    """(verdict, basis, reason) — module docs."""
    if it is not None:
        basis, c, what = "iteration_median", it.median, f"median time per {it.name!r} iteration"
    elif window is not None and window.before and window.after:
        basis, c, what = "gpu_window", window, "GPU's active window (first to last GPU operation, per GPU)"
    else:
        basis, c, what = "span", span, "span (first to last event)"
    if identical or c.before is None or c.after is None or c.delta is None:
        return "within_noise", basis, "The captures are identical." if identical else f"The {what} is unknown."
    before, after = formatting.duration_pair(c.before, c.after)   # was '39525.712 ms' (issue 30)
    pct = f"{c.delta_pct:+.1f} %" if c.delta_pct is not None else (c.note or "")
    if not c.significant:
        return "within_noise", basis, f"The {what} is the same within the noise floor: {before} → {after}."
    kind = "regression" if c.delta > 0 else "improvement"
    word = "slower" if c.delta > 0 else "faster"
    return kind, basis, f"AFTER is {word}: the {what} went from {before} to {after} ({pct})."


def capture_warnings(b: ProfileSummary, a: ProfileSummary, iterations: bool = False) -> list[str]:
    """A warning when one side holds no GPU activity records and the other does (pa.compare.diff docs).

    `iterations`: both sides mark the same iteration range, so the verdict rests on it and stands.
    """
    cb, ca = gpu_activity_captured(b), gpu_activity_captured(a)
    if cb == ca:
        return []
    side, s = ("BEFORE", b) if not cb else ("AFTER", a)
    why = ("the host issued GPU work that the capture holds no record of: GPU tracing was off, filtered or cut"
           if s.host_side is not None else "no kernel, copy or memset was captured")
    verdict = ("the verdict rests on the iteration range both mark" if iterations else "there is no verdict")
    return [f"{side} ({s.profile.file_name}) holds no GPU activity records ({why}): GPU time, kernels, copies, "
            f"devices and phases are compared only when both captures hold them, and {verdict}"]


def comparability_warnings(b: ProfileSummary, a: ProfileSummary) -> list[str]:
    """Warnings that BEFORE and AFTER look like different applications or different GPUs."""
    out: list[str] = []
    if b.profile.vendor != a.profile.vendor:
        out.append(f"comparing a {b.profile.vendor} capture with a {a.profile.vendor} one")
    shares = shared_kernel_fractions(b, a)
    if shares is not None:
        shared_b, shared_a = shares
        if min(shared_b, shared_a) < SAME_APP_MIN_SHARED:
            out.append(f"the captures may be different applications: only {100 * shared_b:.0f} % of BEFORE's "
                       f"kernel time and {100 * shared_a:.0f} % of AFTER's is in kernels both ran")
    gb, ga = _gpus(b), _gpus(a)
    if gb and ga and gb != ga:
        out.append(f"the captures ran on different GPUs: BEFORE on {_describe(gb)}, AFTER on {_describe(ga)}; "
                   "time changes mix the code change with the hardware change")
    return out


def _gpus(s: ProfileSummary) -> list[tuple[str, str, str, str]]:
    """Sorted hardware descriptions of the used devices (name, compute capability, SMs, memory)."""
    def txt(v: object) -> str:
        return "" if v is None else str(v)
    return sorted((txt(d.name), txt(d.hardware.compute_capability),
                   txt(d.hardware.sm_count),
                   txt(d.hardware.memory_bytes)) for d in s.devices if d.used)


def _describe(gpus: list[tuple[str, str, str, str]]) -> str:
    counts: dict[tuple[str, str, str, str], int] = {}
    for g in gpus:
        counts[g] = counts.get(g, 0) + 1
    parts = []
    for (name, cc, sms, _), n in counts.items():
        extra = ", ".join(x for x in (f"cc {cc}" if cc else "", f"{sms} SMs" if sms else "") if x)
        parts.append(f"{n}× {name or 'unnamed GPU'}" + (f" ({extra})" if extra else ""))
    return " + ".join(parts)
