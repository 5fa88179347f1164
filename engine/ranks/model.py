"""Shapes of a multi-rank analysis: the per-rank Stage 1 results and the cross-rank facts.

`RankSet` is in-memory only (it holds each rank's ProfileSummary and its collective calls);
`CrossRank` is the pydantic block the report carries as `cross_rank`, and `CrossRank.facts()`
flattens it into the `cross_rank.*` names rules can use.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from engine.metrics.model import ProfileSummary


@dataclass
class Collectives:
    """One rank's collective MPI calls in call order: name -> (starts, ends) int64 arrays.

    Instance k of a name on each rank is the same collective (MPI requires every rank of the
    communicator to call collectives in the same order).
    """

    calls: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)


@dataclass
class RankResult:
    """Stage 1 of one rank: its summary, where its rank number came from, its collectives."""

    rank: int
    rank_source: str          # mpi (profile metadata), file_name, or order
    summary: ProfileSummary
    collectives: Collectives


@dataclass
class RankSet:
    """Stage 1 of every rank, sorted by rank."""

    ranks: list[RankResult]
    warnings: list[str] = field(default_factory=list)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RankRow(_Model):
    """Overview of one rank."""

    rank: int
    rank_source: str
    file_name: str
    span_ns: int
    kernel_time_ns: int
    busy_ns: int
    idle_ns: int = Field(description="span × used devices − busy")
    mpi_ns: int | None = Field(description="time in MPI calls (union per process); None: not captured")
    collective_wait_ns: int = Field(description="Σ over collective instances of latest start − this start")
    utilization_pct: float | None


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
    ranks: list[RankRow]
    phase_alignment: str = Field(description="name, order, or none (phases could not be lined up)")
    overall: PhaseImbalance
    phases: list[PhaseImbalance] = Field(default_factory=list)
    collectives: list[CollectiveSkew] = Field(default_factory=list)
    straggler_rank: int | None = Field(
        None, description="rank that arrives last at the most collective instances (the one others wait for)")
    most_waited_on_rank: int | None = Field(
        None, description="rank whose late arrivals cost the others the most summed wait")
    most_waiting_rank: int | None = Field(None, description="rank with the largest collective wait")
    compute_imbalance: float | None = Field(None, description="(max − min)/mean of kernel time")
    communication_imbalance: float | None = Field(None, description="(max − min)/mean of MPI time")
    imbalance_side: str = Field(description="compute, communication, or balanced")
    primary_rank: int
    primary_reason: str
    warnings: list[str] = Field(default_factory=list)

    def facts(self) -> dict[str, float | int | str | None]:
        """Flat `cross_rank.*` facts for rules (engine.rules.evaluate's extra_facts)."""
        out: dict[str, float | int | str | None] = {
            "cross_rank.rank_count": self.rank_count,
            "cross_rank.straggler_rank": self.straggler_rank,
            "cross_rank.most_waited_on_rank": self.most_waited_on_rank,
            "cross_rank.most_waiting_rank": self.most_waiting_rank,
            "cross_rank.compute_imbalance": self.compute_imbalance,
            "cross_rank.communication_imbalance": self.communication_imbalance,
            "cross_rank.imbalance_side": self.imbalance_side,
            "cross_rank.primary_rank": self.primary_rank,
            "cross_rank.collective_wait_ns": sum(r.collective_wait_ns for r in self.ranks),
            "cross_rank.max_collective_wait_ns": max((r.collective_wait_ns for r in self.ranks), default=0),
        }
        return out
