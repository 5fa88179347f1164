"""The analysis thresholds a site may tune, in one place.

These numbers decide how the *summary* classifies what it measures (a gap is host work, a phase is
warm-up, a straggler's imbalance is compute-side, a copy is large enough to measure the link), so
the rules that read those classifications depend on them. They are rule-pack params like every
other threshold: `rules/thresholds.yaml` declares each one with its unit, meaning and source, and a
site pack changes one with `override_params:` (docs/rules.md, "Analysis thresholds"). The rule
loader fills a `Thresholds` from the layered params (`RuleSet.thresholds`); `pa analyze` passes it
to `summarize`, `detect_phases`, the rank runner and `cross_rank` as the keyword argument
`thresholds`, the way `marker_naming` is passed. `pa summary`, which loads no rule pack, uses
DEFAULT_THRESHOLDS.

The defaults below must equal the values in rules/thresholds.yaml; tests/test_thresholds.py fails
when the two drift apart or when a field has no param.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Thresholds:
    """Tunable thresholds of the summary's classifications (one field per rule-pack param)."""

    marker_coverage_min: float = 0.6
    """Top-level NVTX/rocTX ranges of one thread must cover at least this share of the span to cut
    the run into phases by marker; otherwise phases come from the kernel mix."""

    phase_idle_busy_max: float = 0.05
    """A phase without a marker whose GPU utilisation is below this fraction is labelled 'idle'."""

    warmup_util_ratio: float = 0.5
    """The first of several phases is warm-up when its GPU utilisation is below this multiple of the
    rest of the run's."""

    phase_min_kernels_per_window: int = 4
    """Kernel-mix segmentation uses at most (kernel count / this) windows, so each window holds
    enough kernels for its mix to mean something."""

    host_work_min_ns: int = 1_000_000
    """An idle gap counts as host work of its own (cause `cpu_stall`) only when the host's own work
    in it lasts at least this long (and is more than half the gap's unexplained rest)."""

    dispatch_max_ns: int = 100_000
    """An idle gap shorter than this in which the host's own time dominates is per-operation dispatch
    (cause `dispatch`), not host work: the gap between two operations an eager framework issues."""

    lazy_load_min_ns: int = 1_000_000
    """A kernel launch call at least this long is loading the kernel's module on first use (CUDA lazy
    loading, HIP's on-demand code objects): cause `load`, start-up inside the window, not launch
    overhead."""

    imbalance_side_min: float = 0.10
    """Cross-rank imbalance ((max - min) / mean) of kernel or MPI time from which the run's imbalance is
    called compute- or communication-side (`cross_rank.imbalance_side`); below it, 'balanced'."""

    phase_order_tolerance: float = 0.25
    """Ranks whose phases differ in duration by at most this (max/min - 1) are aligned by phase
    order when their labels disagree; otherwise only whole-run figures are compared."""

    measured_pinned_min_bytes: int = 1 << 20
    """Pinned copies of at least this many bytes measure the host link's achieved bandwidth
    (smaller ones are dominated by their fixed latency)."""

    latency_copy_max_bytes: int = 64 << 10
    """Copies of at most this many bytes measure the per-copy latency."""

    collective_latency_ns: int = 50_000
    """An NCCL/RCCL kernel shorter than this is a small collective (`collectives[].small_*`): its time is
    mostly the collective's fixed cost, not the bytes it moves (COMM-LAT-001)."""

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Thresholds:
        """The thresholds named in `params` (name -> value), the defaults for the others.

        Raises ValueError naming the param when a value is out of its range (`problem`).
        """
        given: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in params:
                continue
            error = problem(f.name, params[f.name])
            if error:
                raise ValueError(f"{f.name}: {error}")
            given[f.name] = int(params[f.name]) if f.type == "int" else float(params[f.name])
        return cls(**given)


# The range of each threshold: (lowest, highest, whole number?). Outside it the analysis would divide
# by zero or ask for a share above the whole (a phase covering 150 % of the span).
_RANGES: dict[str, tuple[float, float, bool]] = {
    "marker_coverage_min": (0.0, 1.0, False),
    "phase_idle_busy_max": (0.0, 1.0, False),
    "warmup_util_ratio": (0.0, math.inf, False),
    "phase_min_kernels_per_window": (1, math.inf, True),
    "host_work_min_ns": (0, math.inf, True),
    "dispatch_max_ns": (0, math.inf, True),
    "lazy_load_min_ns": (1, math.inf, True),
    "imbalance_side_min": (0.0, math.inf, False),
    "phase_order_tolerance": (0.0, math.inf, False),
    "measured_pinned_min_bytes": (1, math.inf, True),
    "latency_copy_max_bytes": (0, math.inf, True),
    "collective_latency_ns": (1, math.inf, True),
}


def problem(name: str, value: Any) -> str | None:
    """Why `value` cannot be threshold `name`, or None when it can."""
    lo, hi, whole = _RANGES[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    if whole and value != int(value):
        return f"must be a whole number, got {value!r}"
    if not lo <= value <= hi:
        return f"must be between {lo:g} and {hi:g}, got {value!r}"
    return None


DEFAULT_THRESHOLDS = Thresholds()
THRESHOLD_NAMES = frozenset(f.name for f in dataclasses.fields(Thresholds))
