"""The seam between the rule engine and the report where the optional LLM stage plugs in (issue 6).

`pa analyze` calls `run_llm_stage` exactly once, after the rules and before the report is built.
Until the LLM stage exists this is a no-op and the report says "rules only" with the reason. The
LLM engineer provides `engine.llm.stage.llm_stage(summary, rule_result, options) -> LlmOutcome |
None`; it is imported lazily so that the deterministic path never imports an LLM client, and a
missing module simply means "rules only".

The LLM may rank, refine and explain, never invent numbers: its hypotheses go through the same
report validation (ids unique, Amdahl bounds recomputed from F, claims ≤ span) as the rules' ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.report.model import LlmProvenance
from engine.rules.hypothesis import Hypothesis


@dataclass(frozen=True)
class LlmOptions:
    """What the CLI passes to the LLM stage (--no-llm, --model, --base-url)."""

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
    """

    hypotheses: list[Hypothesis]
    provenance: LlmProvenance
    narrative: str | None = None
    warnings: list[str] = field(default_factory=list)
    narrative_ungrounded: list[str] = field(default_factory=list)


class LlmFailure(str):
    """A rules-only reason that is also a warning: the stage was configured and tried, and failed.

    The stage returns one instead of a plain str when a provider call, the `claude` client or the
    answer's validation failed; the report then carries the reason in `warnings[]` as well as in
    `skipped[]` (a plain str, e.g. no key or --no-llm, is only a skipped row).
    """

    __slots__ = ()


LlmStage = Callable[[Any, Any, LlmOptions], "LlmOutcome | None"]


def _find_stage() -> LlmStage | None:
    """Return engine.llm.stage.llm_stage when it exists (issue 6), else None."""
    try:
        module = importlib.import_module("engine.llm.stage")
    except ImportError:
        return None
    stage = getattr(module, "llm_stage", None)
    return stage if callable(stage) else None


def run_llm_stage(summary: Any, rule_result: Any, options: LlmOptions) -> tuple[LlmOutcome | None, str]:
    """HOOK (issue 6): run the LLM stage when enabled and available.

    Returns (outcome, reason): outcome None means "rules only" and reason says why, for the report.
    """
    if not options.enabled:
        return None, "--no-llm given"
    stage = _find_stage()
    if stage is None:
        return None, "LLM stage not available in this version of pa"
    outcome = stage(summary, rule_result, options)
    if isinstance(outcome, str):  # the stage says why it stayed rules-only (no key, failure, --dry-run)
        return None, outcome
    if outcome is None:
        return None, "LLM stage skipped (no API key or provider configured)"
    return outcome, ""
