"""Shape of `pa compare` output: a structural diff of two ProfileSummary objects.

Deltas are AFTER − BEFORE (negative: AFTER is faster / smaller). delta_pct = delta / BEFORE × 100,
except where a percentage would mean nothing: BEFORE is 0 (`note` "new") or below
NEAR_ZERO_FRACTION of AFTER (`note` "from ~0"); delta_pct is then None and the note is shown instead
of "+44300 %". A change is significant when |delta| > noise_floor_pct / 100 × max(BEFORE, AFTER);
smaller changes are reported but never reach key_differences or the narrative.

The verdict (regression, improvement or within_noise) rests on one measure, named in
verdict_basis: the median time per iteration when both captures mark the same iteration range
(pa.metrics.iterations), else the GPU's active window (per GPU) when both captures have GPU
operations, else the span. Start-up (time to the first GPU operation) is compared apart. When one
capture holds GPU activity records and the other none, and they mark no common iteration range,
there is no verdict (`not_comparable`, basis `none`): only what both captured is compared
(pa.compare.diff).
`pa compare --fail-on` turns it into an exit code.

A capture that is a rank set (one export of several rank processes: torchrun, mpirun under one nsys)
is still judged whole: the verdict, overview, kernels, devices and phases read the whole capture (all
its processes), exactly as for a single process. The per-rank comparison (`ranks`, pa.compare.ranks)
explains who waits for whom; a change in who is late or in the ranks' total collective wait is a key
difference (kind "ranks"), never a verdict of its own: the ranks of one job finish together, so the
job's time is the capture's.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pa.llm.model import LlmExplanation

COMPARISON_SCHEMA_VERSION = "1.6"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Change(_Model):
    """One scalar compared."""

    metric: str
    unit: str = Field(description="ns, bytes, count or pct")
    before: float | None
    after: float | None
    delta: float | None = Field(description="after − before")
    delta_pct: float | None = Field(description="delta / before × 100; None when meaningless (see note)")
    significant: bool
    note: str | None = Field(None, description="'new' (before 0) or 'from ~0' (before tiny): why delta_pct is None")


class KernelChange(_Model):
    """One kernel (by full name) in both captures."""

    name: str
    status: str = Field(description="changed, unchanged (within the noise floor), new or vanished")
    before_ns: int
    after_ns: int
    delta_ns: int
    delta_pct: float | None
    note: str | None = Field(None, description="'new' or 'from ~0' when delta_pct is None")
    before_count: int
    after_count: int


class KeyDifference(_Model):
    """A significant time change, ordered by |delta_ns| in key_differences."""

    id: str = Field(description="K1, K2, ... in this order (the LLM explanation cites these ids)")
    what: str
    kind: str = Field(description="overall, kernel, copy, sync, mpi, idle or ranks (the ranks block: who is late "
                                  "at the collectives, their total wait)")
    phase: str | None = None
    before_ns: int
    after_ns: int
    delta_ns: int
    delta_pct: float | None
    note: str | None = Field(None, description="'new' or 'from ~0' when delta_pct is None")
    sentence: str | None = Field(None, description="kind ranks: the change in words (who is late now, who waits how "
                                                   "long for it, and why it is late); None for the other kinds")


class PhaseComparison(_Model):
    """Overview changes of one aligned phase."""

    phase: str
    before_label: str
    after_label: str
    changes: list[Change]


class DeviceComparison(_Model):
    """One GPU (by device number) in both captures: busy, kernel, copy time and utilisation."""

    device: int
    before_name: str | None = Field(description="GPU name in BEFORE; None when the device is unused there")
    after_name: str | None
    changes: list[Change]


class IterationComparison(_Model):
    """The same iteration range in both captures: median time per iteration (pa.metrics.iterations)."""

    name: str = Field(description="the normalised range name, e.g. 'Iteration #'")
    before_count: int
    after_count: int
    median: Change = Field(description="median duration of one iteration, ns")


class HypothesisChange(_Model):
    """What became of one rule's hypothesis between BEFORE and AFTER."""

    rule_id: str
    title: str
    status: str = Field(description="disappeared, shrank, grew, unchanged or appeared")
    before_pct: float | None = Field(description="runtime fraction in BEFORE, % of span")
    after_pct: float | None


class RankChange(_Model):
    """One rank (matched by rank number) in both captures: span, GPU busy, compute, communication, waits."""

    rank: int
    before_pid: int | None = Field(description="the rank's process in BEFORE (an export of several GPU processes); "
                                               "None: no such rank in BEFORE, or one file per rank")
    after_pid: int | None
    changes: list[Change] = Field(description="span, gpu busy, compute kernel time, communication time, "
                                              "exposed communication, GPU collective wait (ns); None on a "
                                              "side without the rank")


class CollectiveKindChange(_Model):
    """One NCCL/RCCL collective kind (pa.ranks.cross gpu_collectives name, e.g. "AllReduce", "SendRecv")."""

    name: str
    before_instances: int | None = Field(description="instances matched across BEFORE's ranks; None: not in BEFORE")
    after_instances: int | None
    total_wait: Change = Field(description="Σ over instances and ranks of latest start − own start, ns")
    max_skew: Change = Field(description="largest latest − earliest start of one instance, ns")


class LateRank(_Model):
    """The rank the others wait for at the collectives, in one capture (pa.ranks.cross)."""

    rank: int
    pid: int | None = Field(description="its process, when one export holds the ranks")
    lead_ns: int = Field(description="Σ over the collectives it arrives last at of its lead over the next-latest rank")
    lead_pct: float = Field(description="lead_ns, % of the rank set's longest span")
    late: bool = Field(description="lead_pct above the noise floor; otherwise the last arrivals are arrival noise "
                                   "and no rank is late")
    because: str | None = Field(None, description="GPU collectives: compute, idle or mixed (gpu_late_because): what "
                                                  "the rank's GPU did more of before its late arrivals; None for MPI")


class RanksComparison(_Model):
    """Per-rank comparison of two rank sets: one export of several rank processes (or a rank directory) each.

    Ranks are matched by rank number only (never by pid, never guessed): a rank missing on one side has None
    there, and `notes` says when the rank counts or the pids differ.
    """

    before_rank_count: int | None = Field(description="ranks in BEFORE; None: BEFORE is not a rank set (one "
                                                      "process, or a pa summary JSON file)")
    after_rank_count: int | None
    notes: list[str] = Field(description="how the ranks were matched: differing rank counts or pids, a side that "
                                         "is not a rank set")
    ranks: list[RankChange] = Field(description="every rank number of either side, ascending")
    gpu_collective_wait: Change = Field(description="Σ over ranks of GPU collective wait (ns); None on a side that "
                                                    "is not a rank set")
    gpu_collectives: list[CollectiveKindChange] = Field(
        description="per NCCL/RCCL collective kind of either side, largest |total wait change| first")
    gpu_late_before: LateRank | None = Field(description="the GPU late rank in BEFORE (gpu_straggler_rank); None: "
                                                         "no collective kernels matched, or no rank leads")
    gpu_late_after: LateRank | None
    mpi_collective_wait: Change | None = Field(
        None, description="Σ over ranks of MPI collective wait (ns), when either side matched MPI collectives")
    mpi_late_before: LateRank | None = Field(None, description="the MPI straggler (straggler_rank) in BEFORE")
    mpi_late_after: LateRank | None = None


class CaptureRef(_Model):
    """Which file a side of the comparison is."""

    file_name: str
    sha256: str
    span_ns: int


class Comparison(_Model):
    """`pa compare BEFORE AFTER` (published as schemas/compare.schema.json)."""

    comparison_schema_version: str = COMPARISON_SCHEMA_VERSION
    kind: Literal["comparison"] = "comparison"
    before: CaptureRef
    after: CaptureRef
    noise_floor_pct: float
    identical: bool = Field(description="same file contents (sha256)")
    within_noise: bool = Field(description="no change above the noise floor")
    verdict: Literal["regression", "improvement", "within_noise", "not_comparable"] = Field(
        description="AFTER slower, faster, or the same within the noise floor, on verdict_basis; not_comparable "
                    "when one capture holds GPU activity records and the other none (see warnings)")
    verdict_basis: Literal["iteration_median", "gpu_window", "span", "none"] = Field(
        description="iteration_median when both captures mark the same iteration range, else gpu_window when "
                    "both have GPU operations (the steady state without start-up), else span; none with "
                    "verdict not_comparable")
    verdict_reason: str = Field(description="one sentence: the measure, its two values and the change")
    mode: str = Field(description="per_phase (phases aligned) or overall")
    mode_reason: str
    overview: list[Change]
    kernels: list[KernelChange] = Field(description="every kernel of either capture, largest |delta| first; "
                                                    "empty when one capture holds no GPU activity records")
    key_differences: list[KeyDifference]
    phases: list[PhaseComparison] = Field(default_factory=list)
    devices: list[DeviceComparison] = Field(default_factory=list, description="per GPU used in either capture")
    iterations: IterationComparison | None = Field(
        None, description="None when the captures do not both mark the same iteration range")
    iterations_reason: str = Field(description="which iteration range was compared, or why none was")
    ranks: RanksComparison | None = Field(
        None, description="per rank and per collective kind, when BEFORE or AFTER is a rank set (an export of "
                          "several rank processes); None otherwise. The verdict does not read it (module docs)")
    hypotheses: list[HypothesisChange] | None = Field(
        default=None, description="None when rules were not run on both sides")
    narrative: list[str] = Field(description="deterministic sentences from fixed templates "
                                             "(pa.compare.narrative)")
    llm: LlmExplanation | None = Field(None, description="LLM explanation; None: deterministic narrative only")
    llm_reason: str | None = Field(None, description="why there is no LLM explanation")
    warnings: list[str] = Field(default_factory=list)
