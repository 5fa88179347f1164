"""The steady state a run's findings are judged on: its marked loop, when the markers show one.

Real captures are short and mostly start-up: import, context creation, reading and uploading the
input. pa judges the GPU's active window (first to last GPU operation) rather than the capture, but
that window still holds the set-up's GPU work (the input's upload, a warm-up pass) and the host gaps
between it and the loop. When the application marks the steps of its loop (the repeated top-level
range of pa.metrics.iterations: `nvtx.range("step")`, cuDF's GROUPBY_AGG, ...), the loop is the
steady state, and `pa analyze` judges the findings on the events from its start on (pa.pipeline: a
summary of the relations restricted to that range, Relations.overlapping).

What is left out is what comes *before* the loop: the set-up. From the first iteration's start
on, everything is judged, the loop and what follows it (output, a checkpoint: in a production run
they recur every so many steps; the host work after the last kernel is told apart as the run's
wind-down, pa.metrics.gaps). The marked range is taken as the loop only when the GPU's work is
there: from the first iteration's start to the last GPU operation lies at least
STEADY_MIN_KERNEL_SHARE of the kernel time (per device, its kernels' union, summed). A repeated
range after most of the computation (a library's internal ranges, the last of several stdpar
calls, a host-side helper) is not the loop. And the set-up before it must be at least
1 − STEADY_MAX_WINDOW_SHARE of the active window: a loop that starts with the window changes nothing.
"""

from __future__ import annotations

from pa.metrics import intervals as iv
from pa.metrics.activity import DeviceActivity
from pa.metrics.model import IterationStats, ProfileSummary, SteadyWindow

STEADY_MIN_KERNEL_SHARE = 0.5
STEADY_MAX_WINDOW_SHARE = 0.9


def steady_window(iterations: IterationStats | None, acts: dict[int, DeviceActivity],
                  span_start: int) -> SteadyWindow | None:
    """The marked loop as the analysis window (module docs), or None: judge the GPU's active window."""
    if iterations is None or iterations.start_ns is None or iterations.end_ns is None or not acts:
        return None
    lo = span_start + iterations.start_ns
    first = min((int(a.busy[0][0]) for a in acts.values() if len(a.busy[0])), default=None)
    last = max((int(a.busy[1][-1]) for a in acts.values() if len(a.busy[1])), default=None)
    if first is None or last is None or last <= first:
        return None
    kernel_ns = sum(iv.length(a.kernels) for a in acts.values())
    inside = sum(iv.coverage(a.kernels, lo, last) for a in acts.values())
    if kernel_ns <= 0 or inside < STEADY_MIN_KERNEL_SHARE * kernel_ns:
        return None
    if lo - first < (1 - STEADY_MAX_WINDOW_SHARE) * (last - first):
        return None
    return SteadyWindow(start_ns=iterations.start_ns, end_ns=last - span_start, name=iterations.name,
                        count=iterations.count, kernel_share_pct=round(100.0 * inside / kernel_ns, 3))


def judged_summary(capture: ProfileSummary, window: ProfileSummary) -> ProfileSummary:
    """The summary the rules read: `window`'s metrics (the events of the steady window) on the capture's facts.

    `window` was summarised from the relations restricted to capture.steady_window, on the capture's
    span, so its shares of the span and of the window stay on one scale. What describes the capture
    rather than the loop comes from `capture`: where its first and last GPU operations are, the call
    that is its start-up, which relations it captured at all (CAP-WARMUP-001, CAP-GPU-001 speak of
    the capture; every other rule of the loop).
    """
    gpu = window.gpu.model_copy(update={"first_operation_ns": capture.gpu.first_operation_ns,
                                        "last_operation_ns": capture.gpu.last_operation_ns})
    return window.model_copy(update={"gpu": gpu, "startup_call": capture.startup_call, "captured": capture.captured,
                                     "steady_window": capture.steady_window, "judged_range": capture.steady_window})
