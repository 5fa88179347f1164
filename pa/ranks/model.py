"""Shapes of a multi-rank analysis: the per-rank Stage 1 results and the cross-rank facts.

`RankSet` is in-memory only (it holds each rank's ProfileSummary and its collective calls);
`CrossRank` is the pydantic block the report carries as `cross_rank`, and `CrossRank.facts()`
flattens it into the `cross_rank.*` names rules can use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from pa.metrics.model import ProfileSummary
from pa.metrics.origin import OwnStr, PathStr


@dataclass
class Collectives:
    """One rank's collective MPI calls in call order: name -> (starts, ends) int64 arrays.

    Instance k of a name on each rank is the same collective (MPI requires every rank of the
    communicator to call collectives in the same order).
    """

    calls: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


@dataclass
class GpuCollectives:
    """One rank's NCCL/RCCL collective kernels in start order: key -> per-instance arrays.

    The key is the collective type and, when the rank has several communication streams, the
    stream's order of first use ("AllReduce", "AllReduce (stream 2)"): the k-th instance of a key
    on each rank is the same collective (NCCL launches a communicator's collectives in the same
    order on every rank). Per instance: start and end, and over the segment since the previous
    instance of the same key ended on this rank (or since the rank's first kernel), its length
    and the time a compute kernel ran on the rank's devices in it (what the rank was doing before
    it arrived).
    """

    calls: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)


@dataclass
class RankResult:
    """Stage 1 of one rank: its summary, where its rank number came from, its collectives."""

    rank: int
    rank_source: str          # mpi (profile metadata), file_name, process_order, or order
    summary: ProfileSummary
    collectives: Collectives
    path: Path | None = None  # the rank file (never serialised: reports use the file name)
    gpu_collectives: GpuCollectives = field(default_factory=GpuCollectives)
    pid: int | None = None    # the process of an export of several GPU processes (pa.ranks.processes)


@dataclass
class RankSet:
    """Stage 1 of every rank, sorted by rank."""

    ranks: list[RankResult]
    warnings: list[str] = field(default_factory=list)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RankOverview(_Model):
    """Overview of one rank."""

    rank: int
    rank_source: OwnStr
    file_name: PathStr
    span_ns: int
    kernel_time_ns: int = Field(description="compute kernel time: NCCL/RCCL communication kernels, which wait for "
                                            "the other ranks, are not counted")
    busy_ns: int
    idle_ns: int = Field(description="span × used devices − busy")
    mpi_ns: int | None = Field(description="time in MPI calls (union per process); None: not captured")
    collective_wait_ns: int = Field(description="Σ over collective instances of latest start − this start")
    noncollective_mpi_ns: int | None = Field(
        None, description="MPI time outside collectives (mpi_ns − collective union time): p2p, waits, other")
    utilization_pct: float | None
    pid: int | None = Field(None, description="the process this rank is, when one export holds several GPU processes")
    communication_ns: int = Field(0, description="NCCL/RCCL communication kernel time")
    communication_exposed_ns: int = Field(0, description="communication kernel time with no compute kernel beside it "
                                                         "on the rank's devices (union)")
    communication_recoverable_ns: int = Field(0, description="the rank summary's communication_recoverable_ns: its "
                                                             "exposed communication no longer than the compute "
                                                             "it could hide behind")
    gpu_collective_wait_ns: int = Field(0, description="Σ over matched GPU collective instances of latest start − "
                                                       "this rank's start: the time its collective kernels wait "
                                                       "for later ranks")


class Imbalance(_Model):
    """Spread of one quantity over ranks, from each rank's full total (never a top-N list)."""

    min_ns: int
    max_ns: int
    mean_ns: float
    max_rank: int
    min_rank: int
    imbalance: float | None = Field(description="(max − min) / mean; None when the mean is 0")


class PhaseImbalance(_Model):
    """Imbalance of kernel time and MPI time in one aligned phase (or the whole run)."""

    phase: str
    kernel_time: Imbalance
    mpi: Imbalance | None = None


class CollectiveSkew(_Model):
    """Arrival skew of one collective across ranks. wait(rank, k) = max_r start(r, k) − start(rank, k)."""

    name: str
    instances: int = Field(description="instances matched on every rank (the minimum count)")
    total_wait_ns: int = Field(description="Σ over instances and ranks of wait")
    max_skew_ns: int = Field(description="largest latest − earliest start of one instance")
    last_arrivals: dict[int, int] = Field(description="rank -> instances where it arrived last")


class CrossRank(_Model):
    """Cross-rank facts of a multi-rank run."""

    rank_count: int
    ranks: list[RankOverview]
    phase_alignment: str = Field(description="name, order, or none (phases could not be lined up)")
    overall: PhaseImbalance
    phases: list[PhaseImbalance] = Field(default_factory=list)
    collectives: list[CollectiveSkew] = Field(
        default_factory=list, description="per collective name, largest total wait first (in a report: the "
                                          "top entries only; collective_count is the total)")
    collective_count: int = Field(0, description="distinct collective names matched across ranks")
    collective_instances: int = Field(0, description="Σ matched instances over all collective names")
    straggler_rank: int | None = Field(
        None, description="rank that arrives last at the most collective instances (the one others wait for)")
    straggler_delay_ns: int | None = Field(
        None, description="Σ over the collective calls the straggler arrived last at of its lead over the "
                          "next-latest rank: the part of every other rank's wait it alone causes, by which the "
                          "run shortens if it arrives with the others (pa.ranks.cross)")
    most_waited_on_rank: int | None = Field(
        None, description="rank whose late arrivals cost the others the most summed wait")
    most_waiting_rank: int | None = Field(None, description="rank with the largest collective wait")
    compute_imbalance: float | None = Field(None, description="(max − min)/mean of kernel time")
    communication_imbalance: float | None = Field(None, description="(max − min)/mean of MPI time")
    noncollective_imbalance: float | None = Field(
        None, description="(max − min)/mean of MPI time outside collectives; None when no rank has any")
    imbalance_side: str = Field(description="compute, communication, or balanced")
    primary_rank: int
    primary_reason: str
    rank_source: str = Field("", description="how the ranks were numbered: mpi, file_name, order, process_order "
                                             "(one export's GPU processes by ascending pid) or file_process_order")
    gpu_collectives: list[CollectiveSkew] = Field(
        default_factory=list, description="NCCL/RCCL collective kernels matched across ranks, per type and stream, "
                                          "largest total wait first (pa.ranks.gpu_collectives)")
    gpu_collective_instances: int = Field(0, description="Σ matched instances over the GPU collectives")
    gpu_straggler_rank: int | None = Field(
        None, description="the late rank: the one whose lead over the next-latest rank, summed over the matched "
                          "collective kernels it starts last at, is largest (the rank the others wait for most)")
    gpu_straggler_delay_ns: int | None = Field(
        None, description="Σ over the GPU collectives the straggler arrived last at of its lead over the "
                          "next-latest rank: by this much every rank's collectives would end earlier")
    gpu_most_waiting_rank: int | None = Field(None, description="rank with the largest GPU collective wait")
    gpu_late_compute_ns: int | None = Field(
        None, description="over the GPU collectives the straggler arrived last at: its compute-kernel time since "
                          "its previous collective minus the other ranks' mean over theirs")
    gpu_late_idle_ns: int | None = Field(
        None, description="the same for the time its GPU had no compute kernel (host gaps, data loading, syncs)")
    gpu_late_because: str | None = Field(
        None, description="compute (the straggler computes more before it arrives), idle (its GPU idles more: "
                          "the host holds it back), or mixed; None without a GPU straggler")
    gpu_late_idle_cause: str | None = Field(
        None, description="the late rank's largest cause of GPU idle time over its run (pa.metrics.gaps causes, "
                          "as the reports name them: host work, sync round trips, per-op dispatch, ...)")
    gpu_late_idle_cause_share: float | None = Field(
        None, description="that cause's share of the late rank's GPU idle time in its active window (0-1)")
    warnings: list[str] = Field(default_factory=list)

    def communication_recoverable_ns(self) -> int | None:
        """What overlapping communication with compute recovers over the ranks, as the trace proves it.

        Per rank: its exposed communication kernel time less its wait for later ranks inside those
        kernels (overlap hides transfers; the wait goes only when the late rank arrives earlier,
        which COMM-SKEW-001 claims), and no more than its summary's recoverable time (the compute it
        can hide behind). The collectives tie the ranks together, so the run shortens by the
        smallest of these. None without communication kernels on every rank.
        """
        if not self.ranks or any(r.communication_ns == 0 for r in self.ranks):
            return None
        return min(max(0, min(r.communication_recoverable_ns, r.communication_exposed_ns - r.gpu_collective_wait_ns))
                   for r in self.ranks)

    def facts(self) -> dict[str, Any]:
        """Flat `cross_rank.*` facts for rules (pa.rules.evaluate's extra_facts).

        Derived facts (ns unless said): mean_collective_wait_ns = Σ wait / ranks; wait_spread =
        max wait / mean wait; wait_share_of_mpi = Σ wait / Σ MPI time; straggler_excess_kernel_ns =
        straggler kernel time − mean kernel time (and _mpi_ns likewise for MPI time outside
        collectives); `phases` is the per-phase imbalance list (phase, kernel_imbalance, mpi_imbalance).
        """
        n = max(self.rank_count, 1)
        waits = [r.collective_wait_ns for r in self.ranks]
        mean_wait = sum(waits) / n
        kernel_mean = sum(r.kernel_time_ns for r in self.ranks) / n
        mpis = [r.mpi_ns for r in self.ranks]
        total_mpi = sum(m for m in mpis if m is not None) if all(m is not None for m in mpis) else None
        other = [r.noncollective_mpi_ns or 0 for r in self.ranks]
        strag = next((r for r in self.ranks if r.rank == self.straggler_rank), None)
        out: dict[str, Any] = {
            "cross_rank.rank_count": self.rank_count,
            "cross_rank.straggler_rank": self.straggler_rank,
            "cross_rank.straggler_delay_ns": self.straggler_delay_ns,
            "cross_rank.most_waited_on_rank": self.most_waited_on_rank,
            "cross_rank.most_waiting_rank": self.most_waiting_rank,
            "cross_rank.compute_imbalance": self.compute_imbalance,
            "cross_rank.communication_imbalance": self.communication_imbalance,
            "cross_rank.noncollective_imbalance": self.noncollective_imbalance,
            "cross_rank.imbalance_side": self.imbalance_side,
            "cross_rank.primary_rank": self.primary_rank,
            "cross_rank.collective_count": self.collective_count,
            "cross_rank.collective_instances": self.collective_instances,
            "cross_rank.collective_wait_ns": sum(waits),
            "cross_rank.max_collective_wait_ns": max(waits, default=0),
            "cross_rank.mean_collective_wait_ns": mean_wait,
            "cross_rank.wait_spread": max(waits) / mean_wait if waits and mean_wait > 0 else None,
            "cross_rank.wait_share_of_mpi": sum(waits) / total_mpi if total_mpi else None,
            "cross_rank.mean_kernel_time_ns": kernel_mean,
            "cross_rank.straggler_kernel_time_ns": strag.kernel_time_ns if strag else None,
            "cross_rank.straggler_excess_kernel_ns": max(0.0, strag.kernel_time_ns - kernel_mean) if strag else None,
            "cross_rank.straggler_excess_mpi_ns":
                max(0.0, (strag.noncollective_mpi_ns or 0) - sum(other) / n) if strag else None,
            "cross_rank.gpu_collective_instances": self.gpu_collective_instances,
            "cross_rank.gpu_straggler_rank": self.gpu_straggler_rank,
            "cross_rank.gpu_straggler_delay_ns": self.gpu_straggler_delay_ns,
            "cross_rank.gpu_most_waiting_rank": self.gpu_most_waiting_rank,
            "cross_rank.gpu_collective_wait_ns": sum(r.gpu_collective_wait_ns for r in self.ranks),
            "cross_rank.gpu_max_collective_wait_ns": max((r.gpu_collective_wait_ns for r in self.ranks), default=0),
            "cross_rank.gpu_late_compute_ns": self.gpu_late_compute_ns,
            "cross_rank.gpu_late_idle_ns": self.gpu_late_idle_ns,
            "cross_rank.gpu_late_because": self.gpu_late_because,
            "cross_rank.gpu_late_idle_cause": self.gpu_late_idle_cause,
            "cross_rank.gpu_late_idle_cause_share": self.gpu_late_idle_cause_share,
            "cross_rank.communication_recoverable_ns": self.communication_recoverable_ns(),
            "cross_rank.gpu_straggler_pid": next((r.pid for r in self.ranks if r.rank == self.gpu_straggler_rank),
                                                 None),
            "cross_rank.phases": [{"phase": p.phase, "kernel_imbalance": p.kernel_time.imbalance,
                                   "mpi_imbalance": p.mpi.imbalance if p.mpi else None} for p in self.phases],
        }
        return out


class RankSummary(_Model):
    """One rank of a multi-rank `pa summary --json`: its number, where that came from, its summary."""

    rank: int
    rank_source: str = Field(description="mpi (profile metadata), file_name, or order")
    summary: ProfileSummary


class MultiRankSummary(_Model):
    """`pa summary --json` with several rank files: every rank's ProfileSummary and the cross-rank facts."""

    kind: Literal["multi_rank_summary"] = "multi_rank_summary"
    ranks: list[RankSummary] = Field(description="sorted by rank")
    cross_rank: CrossRank
