"""Typed results of phase detection: one PhaseSummary per non-overlapping phase of the timeline.

Kept apart from pa.metrics.model (which imports this module for `ProfileSummary.phases`) so
the phase code owns its own shapes. Times are integer nanoseconds; `start_ns`/`end_ns` are offsets
from the span start, so phases of different ranks can be lined up by name or order.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from pa.metrics.origin import KernelStr, MarkerStr, OwnStr


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PhaseKernel(_Model):
    """One kernel's share of a phase (durations clipped to the phase)."""

    name: KernelStr
    short_name: KernelStr | None = None
    time_ns: int = Field(description="Σ over kernels of |[start, end) ∩ phase|")
    count: int = Field(description="kernels that start inside the phase (each kernel counted once)")


class PhaseSummary(_Model):
    """A phase: a stretch of the timeline with a stable kernel mix, or one marked by an NVTX range.

    Every event that straddles a boundary is clipped to each phase it overlaps, so the phases' time
    totals add up to the whole profile's (never dropped by a containment test).
    """

    index: int
    label: MarkerStr = Field(description="dominant marker or kernel (short name), or 'idle'; unique")
    source: OwnStr = Field(description="markers (NVTX/rocTX ranges), kernel_mix (segmentation) or single")
    warmup: bool = Field(default=False, description="first phase that looks like initialisation")
    start_ns: int = Field(description="offset from the span start")
    end_ns: int = Field(description="offset from the span start (exclusive)")
    duration_ns: int
    kernel_count: int = Field(description="kernels starting in the phase")
    kernel_time_ns: int = Field(description="Σ clipped kernel durations; the full total, not a top-N sum")
    busy_ns: int = Field(description="Σ over devices of |union(kernels, copies, memsets) ∩ phase|")
    idle_ns: int = Field(description="duration × used devices − busy")
    utilization_pct: float | None = Field(default=None, description="busy / (duration × used devices) × 100")
    largest_gap_ns: int = Field(default=0, description="longest idle interval of any device inside the phase")
    copy_time_ns: int = Field(default=0, description="Σ clipped copy durations")
    copy_bytes: int = Field(default=0, description="bytes of copies starting in the phase")
    sync_ns: int | None = Field(
        default=None, description="CPU blocked in sync APIs: union per process, clipped, summed over "
                                  "processes; None when not captured")
    mpi_ns: int | None = Field(
        default=None, description="time in MPI calls: union per process, clipped, summed over processes; "
                                  "None when not captured")
    idle_by_cause: dict[OwnStr, int] = Field(
        default_factory=dict, description="in-window idle gaps inside the phase by cause (DeviceGaps), "
                                          "straddling gaps in proportion")
    recoverable_by_cause: dict[OwnStr, int] = Field(
        default_factory=dict, description="the part of that idle time each cause's fix can recover")
    top_kernels: list[PhaseKernel] = Field(default_factory=list, description="largest clipped time first; "
                                           "a truncated list, never a total")
    marker: MarkerStr | None = Field(default=None, description="NVTX/rocTX range name that marks the phase, if any")

