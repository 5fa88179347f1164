"""GPU idle time: the one definition every module uses.

Idle time is device time no GPU operation covers: `duration × devices − busy`, where busy is the
union of kernel, copy and memset intervals on each device, summed over devices (so it never counts
an overlap twice), and the result is never negative. Which duration is meant is the caller's
choice and the only difference between the figures pa reports:

- `DeviceGaps.idle_ns` / `gpu.idle_in_window_ns`: over a device's active window (first to last GPU
  operation), one device at a time; start-up and tear-down are not in it. The rules read this one.
- `PhaseSummary.idle_ns`: over a phase, for the devices with activity.
- `run_idle_ns(summary)`: over the whole span for the devices with activity (at least one),
  start-up and tear-down included: the per-rank overview of `cross_rank` and `pa compare`'s "gpu idle".
"""

from __future__ import annotations

from pa.metrics.model import ProfileSummary


def gpu_activity_captured(summary: ProfileSummary) -> bool:
    """True when the profile holds GPU activity records (kernels, copies or memsets on a device).

    "Could not look" is never "idle": without records (GPU tracing off, a degraded capture, a
    CPU-only build) every GPU figure is unknown, not 0, and nothing may be compared with or judged
    on it. The report's key metrics and `pa compare` both ask this one question.
    """
    return summary.host_side is None and summary.gpu.device_count > 0 and not any(
        k.what in ("kernels", "gpu_activity") for k in summary.skipped)


def idle_ns(duration_ns: int, busy_ns: int, devices: int = 1) -> int:
    """Device time of `devices` GPUs over `duration_ns` that `busy_ns` (summed unions) leaves idle."""
    return max(0, int(duration_ns) * int(devices) - int(busy_ns))


def run_idle_ns(summary: ProfileSummary) -> int:
    """Idle device time over the whole span: span × devices with activity (at least 1) − busy."""
    return idle_ns(summary.span_ns, summary.gpu.busy_ns, max(summary.gpu.device_count, 1))


def window_per_device_ns(summary: ProfileSummary) -> int | None:
    """The GPUs' active window (first to last GPU operation) per device with activity; None without one.

    Span-equivalent like the claims: gpu.window_ns summed over devices ÷ their number. The analysis
    window the rules judge on (pa.rules.evaluate.analysis_window_ns) and `pa compare`'s "gpu window"
    are this one figure.
    """
    g = summary.gpu
    return round(g.window_ns / g.device_count) if g.window_ns > 0 and g.device_count > 0 else None
