"""The Report model: what `pa analyze` writes, and what `schemas/report.schema.json` publishes.

The report is self-contained on purpose: a reviewer who receives only the JSON (or a rendering of
it) can check every number. Each cited value names the summary field it came from and, through
`sources`, the canonical relation(s) and the query file (path under queries/ + sha256) that
produced it. Times stay integer nanoseconds; rounding happens only in the templates.

The schema is generated from these classes (`pa.report.schema.build_report_schema`); bump
REPORT_SCHEMA_VERSION and add a line to docs/report-schema-changelog.md on any change.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pa.llm.model import LlmProvenance
from pa.ranks.model import CrossRank
from pa.rules.hypothesis import EvidenceValue, Hypothesis

REPORT_SCHEMA_VERSION = "1.10"

class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class QueryFileTrace(_Model):
    """One query file behind a relation: the exact SQL that produced the numbers."""

    relation: str
    path: str = Field(description="path under queries/, e.g. nsys/base/kernels.sql")
    sha256: str


class SourceTrace(_Model):
    """Where one summary section comes from: relations and the query files that produced them."""

    relations: list[str]
    query_files: list[QueryFileTrace] = Field(
        description="files of the first profile's query set; missing relation = not in that set")


class ProfileRef(_Model):
    """One profile that went into the report."""

    file_name: str
    path: str | None = Field(None, description="absolute path; only present with --keep-paths")
    sha256: str
    size_bytes: int = Field(ge=0)
    format: Literal["nsys", "rocpd"]
    vendor: Literal["nvidia", "amd"]
    schema_version: str
    product_version: str | None = None
    query_set: str
    rank: int | None = None
    host_name: str | None = None


class GapBucketRow(_Model):
    """One bucket of a device's idle-gap histogram."""

    label: str
    lower_ns: int = Field(ge=0)
    upper_ns: int | None = None
    count: int = Field(ge=0)
    total_ns: int = Field(ge=0)


class GapRow(_Model):
    """One of the largest idle gaps of a device (start is an offset from the span start)."""

    start_ns: int = Field(ge=0)
    duration_ns: int = Field(ge=0)
    host_activity: str = Field(description="the gap's cause: sync, copy_wait, launch, alloc, compile, mpi, "
                                           "dispatch, cpu_stall, overhead or unknown (docs/user-guide.md)")
    recoverable_ns: int = Field(0, ge=0, description="what the fix of its cause can recover of this gap")


class DeviceRow(_Model):
    """Per-device key facts, enough to draw a utilisation strip without a time series."""

    id: int
    name: str | None = None
    kernel_count: int = Field(ge=0)
    busy_ns: int = Field(ge=0)
    utilization_pct: float | None = Field(None, ge=0, le=100)
    first_activity_ns: int | None = Field(None, description="offset from the span start")
    last_activity_ns: int | None = Field(None, description="offset from the span start")
    leading_idle_ns: int | None = None
    trailing_idle_ns: int | None = None
    idle_in_window_ns: int | None = Field(None, description="active window − busy")
    idle_by_cause: dict[str, int] = Field(default_factory=dict, description="idle_in_window_ns by gap cause")
    gap_count: int | None = None
    gap_histogram: list[GapBucketRow] = Field(default_factory=list)
    largest_gaps: list[GapRow] = Field(default_factory=list)


class KernelRow(_Model):
    """One of the top kernels by total time."""

    name: str
    count: int = Field(ge=0)
    total_ns: int = Field(ge=0)
    mean_ns: float = Field(ge=0)
    share_of_gpu_time_pct: float | None = Field(None, ge=0, le=100)


class JudgedIterations(BaseModel):
    """The marked loop the findings are judged from: the events from its start on, start-up and set-up left out."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="the iteration range's normalised name")
    count: int = Field(ge=0, description="iterations")
    start_ns: int = Field(description="the first iteration's start, from the span start")
    end_ns: int = Field(description="the last GPU operation's end, from the span start")
    kernel_share_pct: float = Field(ge=0, le=100, description="share of the capture's kernel time inside it")


class KeyMetrics(_Model):
    """The headline numbers of the (primary) profile, copied from its ProfileSummary."""

    span_ns: int = Field(ge=0)
    gpu_activity_captured: bool = Field(
        description="false when the profile holds no GPU activity records: the GPU numbers below are then "
                    "null, not 0 (see host_issued_gpu_work for why)")
    host_issued_gpu_work: bool | None = Field(
        None, description="true when the host made GPU API calls (launches, copies); with "
                          "gpu_activity_captured false that is a degraded capture, with both false a CPU-only one; "
                          "null when no host API calls were captured")
    device_count: int | None = Field(None, ge=0)
    kernel_count: int | None = Field(None, ge=0)
    kernel_time_ns: int | None = Field(None, ge=0)
    gpu_busy_ns: int | None = Field(None, ge=0, description="Σ over devices of the union of kernels, copies and "
                                                            "memsets (any GPU activity)")
    gpu_utilization_pct: float | None = Field(None, ge=0, le=100, description="gpu_busy over device time")
    kernel_busy_ns: int | None = Field(None, ge=0, description="Σ over devices of the union of kernels alone")
    kernel_utilization_pct: float | None = Field(None, ge=0, le=100, description="kernel_busy over device time")
    window_ns: int | None = Field(None, ge=0, description="Σ over devices of the active window (first to last "
                                                          "GPU operation)")
    window_busy_pct: float | None = Field(None, ge=0, le=100, description="gpu_busy over the active windows: "
                                                                          "the steady-state utilisation")
    outside_window_pct: float | None = Field(None, ge=0, le=100, description="start-up (before the first GPU "
                                                                             "operation) and tear-down (after the "
                                                                             "last) over the span")
    analysis_window_ns: int | None = Field(
        None, ge=0, description="the analysis window the findings are judged on (hypotheses[].window_fraction_pct, "
                                "impact, ranking, noise floor): the GPU's active window per device (window_ns ÷ "
                                "the devices with GPU operations); the span when no GPU operation was recorded or "
                                "the capture holds no steady state")
    judged_iterations: JudgedIterations | None = Field(
        None, description="set when the findings are judged on the run's marked loop (pa.metrics.steady) rather "
                          "than on the GPU's active window: analysis_window_ns is then that loop's active window")
    steady_state: bool | None = Field(
        None, description="whether the GPU's active window is the application's work (a kernel repeated "
                          "steady_state_min_repeats times, or the GPU busy steady_state_min_busy of it); false: "
                          "the window may be start-up itself and the whole capture is judged; null: not evaluated")
    exposed_copy_ns: int | None = Field(None, ge=0)
    copy_bytes: int | None = Field(None, description="explicit copies of every kind (host↔device, device↔device, "
                                                      "peer); unified-memory migrations are apart")
    pageable_share_pct: float | None = Field(None, ge=0, le=100, description="pageable bytes over host↔device bytes")
    host_copy_bytes: int | None = Field(None, ge=0, description="host↔device copies (HtoD, DtoH, HtoH)")
    device_copy_bytes: int | None = Field(None, ge=0, description="device↔device copies on one GPU")
    peer_copy_bytes: int | None = Field(None, ge=0, description="peer-to-peer copies between GPUs")
    migration_count: int | None = Field(None, ge=0, description="unified-memory migrations (null: none recorded)")
    migrated_bytes: int | None = Field(None, ge=0)
    cpu_blocked_in_sync_ns: int | None = None
    cpu_blocked_pct_of_span: float | None = Field(
        None, ge=0, le=100, description="per process: blocked time over span × processes making GPU API calls")
    cpu_blocked_in_copies_ns: int | None = Field(
        None, ge=0, description="host time in copy calls that wait for the GPU (synchronous copies, and calls "
                                "that returned after their copy ended): blocked like in a sync call")
    cpu_blocked_in_copies_pct_of_span: float | None = Field(None, ge=0, le=100, description="per process")
    cpu_blocked_in_frees_ns: int | None = Field(
        None, ge=0, description="host time in free calls (cudaFree, hipFree) while the process's GPUs were busy: "
                                "a free synchronises with the device implicitly")
    launch_count: int | None = None
    launches_per_s: float | None = None
    mpi_ns: int | None = None
    mpi_pct_of_span: float | None = Field(None, ge=0, le=100, description="per process; without MPI_Init / "
                                                                         "MPI_Finalize (mpi_setup_ns)")
    mpi_setup_ns: int | None = Field(None, ge=0, description="MPI_Init, MPI_Init_thread and MPI_Finalize: start-up "
                                                             "and tear-down, shown apart")
    profiler_overhead_pct_of_span: float | None = Field(None, ge=0, le=100, description="per process")
    devices: list[DeviceRow]
    top_kernels: list[KernelRow]
    kernel_names_total: int = Field(ge=0, description="distinct kernel names (top_kernels is a cut)")


class TracedValue(EvidenceValue):
    """An evidence value plus the relations and query files behind it (resolved via `sources`)."""

    section: str | None = Field(description="key of `sources` the value resolves to; None: derived")
    relations: list[str]
    query_files: list[str] = Field(description="query file paths under queries/")


class TracedEvidence(_Model):
    """A sentence of evidence and the traced values it rests on."""

    text: str
    values: list[TracedValue]


class RefinedPart(_Model):
    """A part of a finding that the LLM stage rewrote (source llm), with the rule's original."""

    part: Literal["description", "suggestion", "confidence"]
    source: Literal["llm"] = "llm"
    original: str = Field(description="the rule's text (or confidence) before the LLM's change")
    reason: str


class LlmMark(_Model):
    """What the LLM stage did to one finding (None in a rules-only report)."""

    engine_rank: int | None = Field(description="the rank the rules gave it; None: proposed by the LLM")
    rank_reason: str | None = Field(None, description="why the LLM moved it against the engine's order")
    refined: list[RefinedPart] = Field(default_factory=list)
    speculative: bool = Field(False, description="LLM-proposed without a recoverable time the engine can "
                                                 "recompute: no runtime fraction, no Amdahl bound")
    fraction_basis: str | None = Field(None, description="LLM-proposed: what the engine computed the runtime "
                                                         "fraction from")


class ReportHypothesis(Hypothesis):
    """A ranked finding: the Hypothesis contract with every cited value traced to its source."""

    rank: int = Field(ge=1)
    evidence: list[TracedEvidence]  # type: ignore[assignment]
    llm: LlmMark | None = Field(None, description="what the LLM stage changed (rank, rewritten parts); "
                                                  "None: rules only")


class Headline(_Model):
    """The summary line: the first finding in rank order and the upper bound of what fixing it gains."""

    text: str
    hypothesis_id: str | None = None
    bottleneck_type: str | None = None
    speedup_pct_upper: float | None = None
    claim: str | None = Field(None, description="the claim kind of that finding (recoverable, speculative, none)")
    engine_primary_id: str | None = Field(None, description="the rules' first finding when the LLM ranked "
                                                            "another one first (said in the text too)")


class SkippedRow(_Model):
    """Something that was not analysed, and why. "Could not look" is never "healthy"."""

    stage: Literal["summary", "rules", "llm", "report"]
    what: str
    reason: str


class RuleOutcomeRow(_Model):
    """What one rule did: fired, stayed silent (checked and healthy) or was skipped."""

    rule_id: str
    status: str
    reason: str | None = None
    phase: str | None = Field(None, description="phase label for a rule evaluated per phase (scope: phase)")


class RankRow(_Model):
    """One rank (profile file) when several are analysed together."""

    rank: int
    file_name: str
    span_ns: int = Field(ge=0)
    gpu_busy_ns: int = Field(ge=0)
    gpu_utilization_pct: float | None = Field(None, ge=0, le=100)
    mpi_ns: int | None = None


class RulePackRef(_Model):
    """A rule pack as it was applied: order matters (later packs override earlier ones)."""

    name: str
    path: str = Field(description="path relative to the bundled rules/ for built-in packs, else the "
                                  "file name unless --keep-paths")
    sha256: str
    order: int
    builtin: bool


class RankMove(_Model):
    """A finding the LLM ranked differently from the engine, and why."""

    id: str
    engine_rank: int = Field(ge=1)
    llm_rank: int = Field(ge=1)
    reason: str


class LlmReview(_Model):
    """What the LLM stage wrote for the reader, after the engine's re-checks."""

    narrative: str = Field(description="the model's short summary (at most 2,000 characters); its "
                                       "numbers are checked against the facts but not dropped")
    ungrounded_numbers: list[str] = Field(
        default_factory=list, description="numbers in the narrative that match no fact of the summary, "
                                          "the candidates or a tool result (flagged; also in warnings[])")
    engine_order: list[str] = Field(default_factory=list, description="the rules' order of the findings")
    moves: list[RankMove] = Field(default_factory=list, description="findings the LLM moved, with reasons")


class Provenance(_Model):
    """Everything needed to reproduce the report."""

    pa_version: str
    report_schema_version: str
    summary_schema_version: str
    generated_at: str = Field(description="UTC, ISO 8601")
    duration_s: float = Field(ge=0)
    command_line: list[str] = Field(description="argv with absolute paths reduced to file names "
                                                "unless --keep-paths")
    query_sets: list[str]
    query_files: list[QueryFileTrace]
    rule_packs: list[RulePackRef]
    llm: LlmProvenance


class Report(_Model):
    """The auditable result of `pa analyze`."""

    schema_version: str = REPORT_SCHEMA_VERSION
    kind: Literal["analysis"] = "analysis"
    headline: Headline
    profiles: list[ProfileRef] = Field(min_length=1)
    primary_profile: int = Field(0, ge=0, description="index in `profiles` the rules ran on")
    summary: KeyMetrics
    hypotheses: list[ReportHypothesis]
    time_claims_ns: dict[str, int] = Field(
        default_factory=dict, description="time the listed findings claim per bucket (compute, exposed_copy, "
                                          "...), span-equivalent ns; their sum never exceeds the span")
    time_buckets_ns: dict[str, int] = Field(
        default_factory=dict, description="time available per bucket, span-equivalent ns (device time ÷ devices, "
                                          "MPI time ÷ processes); start-up and tear-down belong to none")
    rule_outcomes: list[RuleOutcomeRow] = Field(default_factory=list)
    skipped: list[SkippedRow]
    warnings: list[str]
    next_captures: list[str] = Field(description="what to capture next to close the gaps above")
    ranks: list[RankRow] | None = None
    cross_rank: CrossRank | None = Field(
        None, description="several ranks: per-rank table, straggler, imbalance (side, per phase), collective "
                          "skew (top entries; collective_count is the total); None with one profile")
    llm: LlmReview | None = Field(None, description="the LLM stage's narrative; None: rules only")
    sources: dict[str, SourceTrace]
    provenance: Provenance
