"""Shape of `pa compare` output: a structural diff of two ProfileSummary objects.

Deltas are AFTER − BEFORE (negative: AFTER is faster / smaller). delta_pct = delta / BEFORE × 100
(None when BEFORE is 0). A change is significant when |delta| > noise_floor_pct / 100 × max(BEFORE,
AFTER); smaller changes are reported but never reach key_differences or the narrative.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine.llm.model import LlmExplanation

COMPARISON_SCHEMA_VERSION = "1.2"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Change(_Model):
    """One scalar compared."""

    metric: str
    unit: str = Field(description="ns, bytes, count or pct")
    before: float | None
    after: float | None
    delta: float | None = Field(description="after − before")
    delta_pct: float | None = Field(description="delta / before × 100")
    significant: bool


class KernelChange(_Model):
    """One kernel (by full name) in both captures."""

    name: str
    status: str = Field(description="changed, unchanged (within the noise floor), new or vanished")
    before_ns: int
    after_ns: int
    delta_ns: int
    delta_pct: float | None
    before_count: int
    after_count: int


class KeyDifference(_Model):
    """A significant time change, ordered by |delta_ns| in key_differences."""

    id: str = Field(description="K1, K2, ... in this order (the LLM explanation cites these ids)")
    what: str
    kind: str = Field(description="overall, kernel, copy, sync, mpi or idle")
    phase: str | None = None
    before_ns: int
    after_ns: int
    delta_ns: int
    delta_pct: float | None


class PhaseComparison(_Model):
    """Overview changes of one aligned phase."""

    phase: str
    before_label: str
    after_label: str
    changes: list[Change]


class HypothesisChange(_Model):
    """What became of one rule's hypothesis between BEFORE and AFTER."""

    rule_id: str
    title: str
    status: str = Field(description="disappeared, shrank, grew, unchanged or appeared")
    before_pct: float | None = Field(description="runtime fraction in BEFORE, % of span")
    after_pct: float | None


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
    mode: str = Field(description="per_phase (phases aligned) or overall")
    mode_reason: str
    overview: list[Change]
    kernels: list[KernelChange] = Field(description="every kernel of either capture, largest |delta| first")
    key_differences: list[KeyDifference]
    phases: list[PhaseComparison] = Field(default_factory=list)
    hypotheses: list[HypothesisChange] | None = Field(
        default=None, description="None when rules were not run on both sides")
    narrative: list[str] = Field(description="deterministic sentences from fixed templates "
                                             "(engine.compare.narrative)")
    llm: LlmExplanation | None = Field(None, description="LLM explanation; None: deterministic narrative only")
    llm_reason: str | None = Field(None, description="why there is no LLM explanation")
    warnings: list[str] = Field(default_factory=list)
