"""The LLM's final answer (validated by instructor) and the engine's re-checks of it.

The model ranks and refines; the engine decides what reaches the report:

- ids: unknown candidate ids in the ranking or the refinements are dropped (with a warning);
  candidates the model left out are kept, after the ranked ones, in the rules' order. A model can
  re-order grounded findings but never remove one.
- numbers: every number in a refined description/suggestion and every evidence value of a new
  hypothesis must match a number of the summary, of the candidates' evidence or of a tool result.
  Tolerance: |a − b| ≤ 1 % of |b| (rounding of percentages and durations as the model copies them),
  or exact for zero. Integers 0..16 in prose are not checked (counts, ordinals, "2 streams").
  An ungrounded refinement text is dropped (the rule's own text stays) and flagged; a new hypothesis
  with any ungrounded value, or without any value from a tool result, is dropped and flagged.
- confidence: a change is clamped to ±0.3 per candidate and to [0, 1]; new hypotheses are capped at
  0.6 (they rest on one conversation, not on a reviewed rule).
- bounds: Amdahl bounds of new hypotheses are recomputed by `amdahl_bounds`; the runtime fraction
  is capped so that the claims per bucket and in total never exceed the span (time has one owner).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engine.rules.hypothesis import (
    ActionCategory,
    BottleneckType,
    Bucket,
    Evidence,
    EvidenceValue,
    Hypothesis,
    amdahl_bounds,
)

REL_TOL = 0.01
MAX_CONF_DELTA = 0.3
NEW_CONF_CAP = 0.6
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?")


class Refinement(BaseModel):
    """Changes to one candidate hypothesis."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="candidate id, e.g. H1")
    description: str | None = Field(None, description="sharper description; numbers copied exactly")
    suggestion: str | None = Field(None, description="more specific, actionable suggestion")
    confidence_delta: float = Field(0.0, ge=-1, le=1, description="change of confidence, e.g. -0.1")
    reason: str = Field(description="why the description or confidence changed")


class NewValue(BaseModel):
    """A value a new hypothesis rests on."""

    model_config = ConfigDict(extra="forbid")

    name: str
    value: float
    unit: str | None = None
    source: str = Field(description="id of the tool call whose result contains the value")


class NewEvidence(BaseModel):
    """A sentence of evidence for a new hypothesis."""

    model_config = ConfigDict(extra="forbid")

    text: str
    values: list[NewValue] = Field(min_length=1)


class NewHypothesis(BaseModel):
    """A hypothesis the rules did not produce, backed by tool results."""

    model_config = ConfigDict(extra="forbid")

    title: str
    bottleneck_type: BottleneckType
    bucket: Bucket
    description: str
    suggestion: str
    action_category: ActionCategory
    evidence: list[NewEvidence] = Field(min_length=1)
    runtime_fraction_pct: float | None = Field(None, ge=0, le=100)
    confidence: float = Field(ge=0, le=1)


class LlmAnswer(BaseModel):
    """The structured final answer of the LLM stage."""

    model_config = ConfigDict(extra="forbid")

    ranking: list[str] = Field(description="candidate ids, most recoverable time first")
    refinements: list[Refinement] = Field(default_factory=list)
    new_hypotheses: list[NewHypothesis] = Field(default_factory=list)
    narrative: str = Field(min_length=1, max_length=2000, description="short summary for the reader")


def grounded(x: float, facts: list[float]) -> bool:
    """True when x matches a fact within the documented tolerance."""
    return any(f == x or (f != 0 and abs(x - f) <= REL_TOL * abs(f)) for f in facts)


def ungrounded_numbers(text: str, facts: list[float], magnitude: bool = False) -> list[str]:
    """Numbers written in `text` that match no fact (small integers are not checked).

    With `magnitude`, signs are ignored on both sides ("fell by 70 ms" for a delta of −70 ms).
    """
    if magnitude:
        facts = sorted({abs(f) for f in facts})
    bad = []
    for m in _NUMBER.finditer(text):
        tok = m.group(0)
        x = float(tok.replace(",", ""))
        if magnitude:
            x = abs(x)
        if x.is_integer() and 0 <= x <= 16:
            continue
        if not grounded(x, facts):
            bad.append(tok)
    return bad


def _claims(hyps: list[Hypothesis], span: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for h in hyps:
        if h.runtime_fraction_pct is not None:
            out[h.bucket] = out.get(h.bucket, 0) + round(h.runtime_fraction_pct / 100 * span)
    return out


def apply_answer(answer: LlmAnswer, rule_hyps: list[Hypothesis], facts: list[float],
                 tool_facts: dict[str, list[float]], buckets: dict[str, int], span: int,
                 warnings: list[str]) -> list[Hypothesis]:
    """Merge the validated answer into the rules' hypotheses under the engine's re-checks."""
    by_id = {h.id: h for h in rule_hyps}
    all_facts = facts + [x for xs in tool_facts.values() for x in xs]
    order: list[str] = []
    for hid in answer.ranking:
        if hid not in by_id:
            warnings.append(f"llm: unknown candidate id {hid!r} in the ranking dropped")
        elif hid not in order:
            order.append(hid)
    order += [h.id for h in rule_hyps if h.id not in order]

    refined = dict(by_id)
    for r in answer.refinements:
        h = refined.get(r.id)
        if h is None:
            warnings.append(f"llm: refinement of unknown id {r.id!r} dropped")
            continue
        update: dict[str, Any] = {}
        for fld in ("description", "suggestion"):
            text = getattr(r, fld)
            if not text:
                continue
            bad = ungrounded_numbers(text, all_facts)
            if bad:
                warnings.append(f"llm: refined {fld} of {r.id} dropped: numbers {', '.join(bad)} match "
                                "no fact of the summary or a tool result")
            else:
                update[fld] = text
        delta = max(-MAX_CONF_DELTA, min(MAX_CONF_DELTA, r.confidence_delta))
        if delta:
            new_conf = round(max(0.0, min(1.0, h.confidence + delta)), 3)
            update["confidence"] = new_conf
            update["evidence"] = [*h.evidence, Evidence(
                text=f"LLM review: confidence {h.confidence:g} → {new_conf:g}: {r.reason}", values=[])]
        refined[r.id] = h.model_copy(update=update)

    out = [refined[i] for i in order]
    left = {b: min(ns, span) for b, ns in buckets.items()}
    for b, ns in _claims(out, span).items():
        left[b] = left.get(b, 0) - ns
    total_left = span - sum(_claims(out, span).values())
    for n, nh in enumerate(answer.new_hypotheses, start=1):
        hyp = _new_hypothesis(f"L{n}", nh, all_facts, tool_facts, span, left, total_left, warnings)
        if hyp is not None:
            if hyp.runtime_fraction_pct is not None:
                got = round(hyp.runtime_fraction_pct / 100 * span)
                left[hyp.bucket] = left.get(hyp.bucket, 0) - got
                total_left -= got
            out.append(hyp)
    return out


def _new_hypothesis(hid: str, nh: NewHypothesis, facts: list[float], tool_facts: dict[str, list[float]],
                    span: int, left: dict[str, int], total_left: int,
                    warnings: list[str]) -> Hypothesis | None:
    values = [v for e in nh.evidence for v in e.values]
    if not any(v.source in tool_facts for v in values):
        warnings.append(f"llm: new hypothesis {nh.title!r} dropped: no evidence value cites a tool call")
        return None
    bad = [f"{v.name}={v.value:g}" for v in values if not grounded(v.value, facts)]
    if bad:
        warnings.append(f"llm: new hypothesis {nh.title!r} dropped: values {', '.join(bad)} match no fact")
        return None
    frac = None
    if nh.runtime_fraction_pct is not None and span > 0:
        want = round(nh.runtime_fraction_pct / 100 * span)
        got = max(0, min(want, left.get(nh.bucket, 0), total_left))
        if got < want:
            warnings.append(f"llm: {hid} claim reduced from {want / span:.1%} to {got / span:.1%} of the "
                            f"span: the {nh.bucket} bucket or the span is already claimed")
        frac = got / span
    lower, upper = amdahl_bounds(frac)
    return Hypothesis(
        id=hid, rule_id=None, bottleneck_type=nh.bottleneck_type, bucket=nh.bucket, title=nh.title,
        description=nh.description,
        evidence=[Evidence(text=e.text, values=[EvidenceValue(name=v.name, value=v.value, unit=v.unit,
                                                              source=f"llm-tool:{v.source}")
                                                for v in e.values]) for e in nh.evidence],
        suggestion=nh.suggestion, expected_impact="low" if frac is None or frac < 0.05 else
        ("medium" if frac < 0.2 else "high"),
        action_category=nh.action_category,
        runtime_fraction_pct=None if frac is None else frac * 100,
        estimated_speedup_pct_lower=lower, estimated_speedup_pct_upper=upper,
        confidence=min(nh.confidence, NEW_CONF_CAP), source="llm")
