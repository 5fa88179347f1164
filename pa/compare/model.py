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
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pa.llm.model import LlmExplanation

COMPARISON_SCHEMA_VERSION = "1.5"


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
    kind: str = Field(description="overall, kernel, copy, sync, mpi or idle")
    phase: str | None = None
    before_ns: int
    after_ns: int
    delta_ns: int
    delta_pct: float | None
    note: str | None = Field(None, description="'new' or 'from ~0' when delta_pct is None")


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
    hypotheses: list[HypothesisChange] | None = Field(
        default=None, description="None when rules were not run on both sides")
    narrative: list[str] = Field(description="deterministic sentences from fixed templates "
                                             "(pa.compare.narrative)")
    llm: LlmExplanation | None = Field(None, description="LLM explanation; None: deterministic narrative only")
    llm_reason: str | None = Field(None, description="why there is no LLM explanation")
    warnings: list[str] = Field(default_factory=list)
