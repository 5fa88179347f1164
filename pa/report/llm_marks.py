"""What the LLM stage changed, marked in the report.

The pipeline (pa.pipeline) runs the LLM stage (pa.llm.stage.run) once, after the rules and
before the report is built; its `LlmOutcome` (pa.llm.model) comes here.

The LLM may rank, refine and explain, never invent numbers: its hypotheses go through the same
report validation (ids unique, Amdahl bounds recomputed from F, claims ≤ span) as the rules' ones.
`annotate` then marks in the report what the LLM changed: each finding's engine rank and the
reason of a move, the parts it rewrote (source llm, with the rule's original), whether an
LLM-proposed finding is speculative; and the headline says when the LLM ranked first another
finding than the rules' primary one (it never silently drops it).
"""

from __future__ import annotations

from pa.llm.model import LlmOutcome, LlmProvenance
from pa.report.model import Headline, LlmMark, RefinedPart, ReportHypothesis


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
