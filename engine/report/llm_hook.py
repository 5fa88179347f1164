"""The seam between the rule engine and the report where the optional LLM stage plugs in.

`pa analyze` calls `run_llm_stage` exactly once, after the rules and before the report is built.
`engine.llm.stage.llm_stage(summary, rule_result, options)` returns an `LlmOutcome`, or a str
saying why the report stays rules-only; it is imported lazily so that the deterministic path never
imports an LLM client, and a missing module simply means "rules only".

The LLM may rank, refine and explain, never invent numbers: its hypotheses go through the same
report validation (ids unique, Amdahl bounds recomputed from F, claims ≤ span) as the rules' ones.
`annotate` then marks in the report what the LLM changed: each finding's engine rank and the
reason of a move, the parts it rewrote (source llm, with the rule's original), whether an
LLM-proposed finding is speculative; and the headline says when the LLM ranked first another
finding than the rules' primary one (it never silently drops it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.report.model import Headline, LlmMark, LlmProvenance, RefinedPart, ReportHypothesis
from engine.rules.hypothesis import Hypothesis


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
    changed (engine.llm.output.Review).
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


def rules_only_provenance(reason: str | None) -> LlmProvenance:
    """Provenance of a rules-only report: the failure's token use when the stage failed, else the reason."""
    prov = getattr(reason, "provenance", None)
    if isinstance(prov, LlmProvenance):
        return prov.model_copy(update={"mode": "rules_only", "reason": str(reason)})
    return LlmProvenance(mode="rules_only", reason=reason)


def annotate(hyps: list[ReportHypothesis], headline: Headline,
             llm: LlmOutcome | None) -> tuple[list[ReportHypothesis], Headline]:
    """Mark what the LLM changed on each finding and in the headline (module docs)."""
    if llm is None:
        return hyps, headline
    order = llm.engine_order or [h.id for h in hyps if h.source == "rules"]
    moves = {m["id"]: m["reason"] for m in llm.moves}
    out = []
    for h in hyps:
        mark = LlmMark(engine_rank=order.index(h.id) + 1 if h.id in order else None,
                       rank_reason=moves.get(h.id),
                       refined=[RefinedPart(**p) for p in llm.refined.get(h.id, [])],
                       speculative=h.id in llm.speculative, fraction_basis=llm.fraction_basis.get(h.id))
        out.append(h.model_copy(update={"llm": mark}))
    if order and out and out[0].id != order[0]:
        first = next((h for h in out if h.id == order[0]), None)
        if first is not None:
            why = moves.get(out[0].id) or moves.get(first.id) or "see the LLM review"
            headline = headline.model_copy(update={
                "engine_primary_id": first.id,
                "text": f"{headline.text} (Ranked first by the LLM review; the rules ranked {first.id} "
                        f"\"{first.title}\" first, now #{first.rank}: {why})"})
    return out, headline


LlmStage = Callable[[Any, Any, LlmOptions], "LlmOutcome | None"]


def _find_stage() -> LlmStage | None:
    """Return engine.llm.stage.llm_stage when it exists, else None."""
    try:
        module = importlib.import_module("engine.llm.stage")
    except ImportError:
        return None
    stage = getattr(module, "llm_stage", None)
    return stage if callable(stage) else None


def run_llm_stage(summary: Any, rule_result: Any, options: LlmOptions) -> tuple[LlmOutcome | None, str]:
    """Run the LLM stage when enabled and available.

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
