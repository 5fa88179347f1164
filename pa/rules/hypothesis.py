"""The Hypothesis model shared by the rule engine, the LLM stage and the report.

Amdahl bounds are computed here, by the engine, from the runtime fraction F of the span that the
bottleneck owns: lower = 1/(1 − F/2) − 1 (half of it removed), upper = 1/(1 − F) − 1 (all of it
removed), as percentages; both are None when F is None or F ≥ 1. Neither a rule template nor the
LLM ever computes them.

The same claim is also stated as a share of the analysis window (pa.rules.evaluate.analysis_window_ns:
the GPU's active window per device, first to last GPU operation; the span when there is none):
window_fraction_pct and the Amdahl bounds on that window. Real captures are short and mostly
start-up, so the window share is what the steady state would gain; impact and ranking use it, while
runtime_fraction_pct (the share of the span) stays the scale on which claims are capped and summed.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

# allocation (device memory allocated and freed in the steady state), compilation (JIT and module
# loading while the GPU waits) and communication (collective kernels such as NCCL/RCCL) joined the
# original eight in report schema 1.4: none of those said what such a finding is about.
BottleneckType = Literal["compute_bound", "memory_bound", "mpi_latency", "mpi_imbalance",
                         "cpu_launch_overhead", "synchronization", "io", "allocation", "compilation",
                         "communication", "other"]
Impact = Literal["high", "medium", "low"]
ActionCategory = Literal["runtime_config", "launch_config", "code_optimization", "algorithm"]
Bucket = Literal["compute", "exposed_copy", "exposed_communication", "sync", "idle"]
Source = Literal["rules", "llm"]
Claim = Literal["recoverable", "speculative", "none"]

# The vocabularies as tuples, for code that iterates them (the evaluator's buckets, the LLM
# redactor's public words). These Literals are the one definition: the report model and its
# generated schema use them, and tests/test_rules_engine.py checks that the hand-written rule-pack
# schema (schemas/rulepack.schema.json) lists the same values.
BOTTLENECK_TYPES: tuple[str, ...] = get_args(BottleneckType)
BUCKETS: tuple[str, ...] = get_args(Bucket)
ACTION_CATEGORIES: tuple[str, ...] = get_args(ActionCategory)
CLAIMS: tuple[str, ...] = get_args(Claim)


class EvidenceValue(BaseModel):
    """One number an evidence line cites, and where it came from."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="metric or summary fact name, e.g. sync.cpu_blocked_ns")
    value: float | int | str | None
    unit: str | None = None
    source: str = Field(description="where the value comes from: summary field path, rule metric, "
                                    "or tool call id, with the relation and query file behind it")


class Evidence(BaseModel):
    """A sentence of evidence and the values it rests on."""

    model_config = ConfigDict(extra="forbid")

    text: str
    values: list[EvidenceValue] = Field(default_factory=list)


class Hypothesis(BaseModel):
    """One candidate explanation of why the application is slow."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="unique within the report, e.g. H1")
    rule_id: str | None = Field(description="rule that produced it (None for LLM-proposed)")
    bottleneck_type: BottleneckType
    bucket: Bucket = Field(description="time bucket the runtime fraction is claimed from")
    phase: str | None = None
    title: str
    description: str
    evidence: list[Evidence]
    suggestion: str
    expected_impact: Impact
    action_category: ActionCategory
    runtime_fraction_pct: float | None = Field(None, ge=0, le=100)
    estimated_speedup_pct_lower: float | None = None
    estimated_speedup_pct_upper: float | None = None
    window_fraction_pct: float | None = Field(None, ge=0, le=100, description=(
        "the claimed time as a share of the analysis window (the GPU's active window per device; the span when "
        "no GPU operation was recorded), capped at 100; null where runtime_fraction_pct is null"))
    window_speedup_pct_lower: float | None = Field(None, description=(
        "Amdahl lower bound (half of it removed) on the analysis window, from window_fraction_pct"))
    window_speedup_pct_upper: float | None = Field(None, description=(
        "Amdahl upper bound (all of it removed) on the analysis window; null at 100 %"))
    confidence: float = Field(ge=0, le=1)
    claim: Claim = Field("recoverable", description=(
        "recoverable: runtime_fraction_pct is time the fix can recover as the trace proves it; speculative: "
        "the trace cannot show the headroom (no bound); none: a finding about the capture, no time claimed"))
    counterfactual: str | None = Field(None, description="what the fix changes, as the rule states it")
    source: Source = "rules"
    next_capture: str | None = None
    references: list[str] = Field(default_factory=list)


def amdahl_bounds(fraction: float | None) -> tuple[float | None, float | None]:
    """Return (lower, upper) speedup in percent for a runtime fraction F in [0, 1].

    lower assumes half of F is removed, upper that all of it is; None where F is None or F >= 1
    (removing all of the runtime has no finite speedup).
    """
    if fraction is None or fraction >= 1.0:
        return (None, None)
    if fraction < 0.0:
        raise ValueError(f"runtime fraction {fraction} is negative")
    lower = (1.0 / (1.0 - fraction / 2.0) - 1.0) * 100.0
    upper = (1.0 / (1.0 - fraction) - 1.0) * 100.0
    return (lower, upper)


def window_fraction(claimed_ns: float | None, analysis_ns: int) -> float | None:
    """The claimed time as a share of the analysis window, in [0, 1] (None where nothing is claimed).

    A claim on the span (an MPI share, say) can exceed the GPU's active window: it is capped at 1.
    """
    if claimed_ns is None or analysis_ns <= 0:
        return None
    return min(1.0, max(0.0, claimed_ns / analysis_ns))
