"""What the LLM stage takes and gives back: the interface the pipeline calls.

The stage (pa.llm.stage.llm_stage for `pa analyze`, pa.llm.compare.explain_comparison for
`pa compare`) is called by pa.pipeline with `LlmOptions` and returns an `LlmOutcome` (or
`LlmExplanation`), or a str saying why the output stays rules-only. The report and the comparison
embed `LlmProvenance` and `LlmExplanation`; they live here, in the LLM layer, so that the report
and compare layers above import them and the LLM layer never imports those layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pa.rules.hypothesis import Hypothesis


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LlmProvenance(_Model):
    """Whether an LLM touched the report, and how much."""

    mode: Literal["rules_only", "llm"]
    reason: str | None = Field(None, description="why the LLM stage did not run (rules only)")
    provider: str | None = None
    model: str | None = None
    turns: int | None = None
    tool_calls: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = Field(None, description="input tokens read from the provider's prompt cache")
    estimated_cost_usd: float | None = Field(None, description="tokens used (also before a failure) × list price")
    cost_basis: str | None = Field(None, description="the price the estimate used, or why there is none")
    log_path: str | None = None



class LlmExplanation(_Model):
    """The optional LLM explanation of the differences (one validated call; see pa.compare.explain)."""

    text: str = Field(description="the model's explanation; every number must come from this comparison")
    provider: str | None = None
    model: str | None = None
    key_differences: list[str] = Field(
        default_factory=list, description="ids of the key differences (K1, ...) the text discusses; unknown ids "
                                          "are dropped by the engine")
    ungrounded_numbers: list[str] = Field(
        default_factory=list, description="numbers in the text that match no number of the comparison (flagged)")



@dataclass(frozen=True)
class LlmOptions:
    """What the CLI passes to the LLM stage (--no-llm, --model, --base-url, the stage's other flags)."""

    enabled: bool = True
    model: str | None = None
    base_url: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class LlmOutcome:
    """What the LLM stage returns: the refined, re-ranked hypotheses and how they were obtained.

    `narrative` is the model's short summary (placeholders mapped back); `warnings` are the engine's
    post-checks (dropped unknown ids, ungrounded numbers flagged or dropped), each starting "llm: ";
    `narrative_ungrounded` lists numbers of the narrative that match no fact (flagged, kept).
    `engine_order`, `moves`, `refined`, `speculative` and `fraction_basis` say what the review
    changed (pa.llm.output.Review).
    """

    hypotheses: list[Hypothesis]
    provenance: LlmProvenance
    narrative: str | None = None
    warnings: list[str] = field(default_factory=list)
    narrative_ungrounded: list[str] = field(default_factory=list)
    engine_order: list[str] = field(default_factory=list)
    moves: list[dict[str, Any]] = field(default_factory=list)
    refined: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    speculative: list[str] = field(default_factory=list)
    fraction_basis: dict[str, str] = field(default_factory=dict)


class LlmFailure(str):
    """A rules-only reason that is also a warning: the stage was configured and tried, and failed.

    The stage returns one instead of a plain str when a provider call, the `claude` client, the
    answer's validation or the deadline failed, or a ceiling refused the run; the report then
    carries the reason in `warnings[]` as well as in `skipped[]` (a plain str, e.g. no key or
    --no-llm, is only a skipped row). `provenance` keeps the tokens spent before the failure.
    """

    provenance: LlmProvenance | None = None


