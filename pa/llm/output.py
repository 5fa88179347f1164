"""The LLM's final answer (validated by instructor) and the engine's re-checks of it.

The model ranks and refines; the engine decides what reaches the report:

- ids: unknown candidate ids in the ranking or the refinements are dropped (with a warning);
  candidates the model left out are kept, after the ranked ones, in the rules' order. A model can
  re-order grounded findings but never remove one.
- moves: the candidates the model moved are the ones outside a longest common subsequence of
  the engine's order and the model's (of those, the one that leaves most reason-less candidates in
  place); each needs a reason in `rank_changes`, else the engine's order is kept (warning). The
  report shows the engine's order and each move with its reason.
- numbers (pa.llm.grounding, unit- and kind-aware): a refined description/suggestion of
  candidate H may cite H's evidence values, runtime fraction and Amdahl bounds and the measurements
  of the run's tool results; an ungrounded refinement text is dropped (the rule's text stays) and
  flagged. Text that survives is marked as the model's (`refined`, with the rule's original).
- confidence: a change is clamped to ±0.3 per candidate and to [0, 1]; new hypotheses are capped at
  0.6 (they rest on one conversation, not on a reviewed rule).
- new hypotheses: every evidence value must equal a measurement of the tool call it cites (a SQL
  result that reads no profile data, or a column computed from the query's own literals, is not
  one), and its texts' numbers must be facts of those calls or of the context. The runtime fraction
  comes only from `fraction_basis`, recomputed by the engine from the summary (one of
  `FRACTION_FACTS`: time a fix recovers as the trace proves it, never a bucket's size), then capped
  so that the claims per bucket and in total never exceed the span (time has one owner), and the Amdahl bounds are the
  engine's. Without a basis the hypothesis is speculative: no runtime fraction, no bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pa.llm.grounding import Fact, facts_for, facts_of, ungrounded, value_grounded
from pa.rules.evaluate import analysis_window_ns, impact_level
from pa.rules.hypothesis import (
    ActionCategory,
    BottleneckType,
    Bucket,
    Evidence,
    EvidenceValue,
    Hypothesis,
    amdahl_bounds,
    window_fraction,
)
from pa.rules.loader import load_ruleset

MAX_CONF_DELTA = 0.3
NEW_CONF_CAP = 0.6


def _per_device(summary: Any, ns: float | None) -> float | None:
    return None if ns is None else ns / max(1, summary.gpu.device_count)


def _recoverable(cause: str) -> Callable[[Any], float | None]:
    """What the fix of one gap cause recovers (pa.metrics.gaps), per device."""
    return lambda s: _per_device(s, s.gpu.recoverable_by_cause.get(cause, 0))


def _copy_overlap(s: Any) -> float | None:
    """Σ over devices of min(copy time no kernel hides, kernel time no copy hides), per device."""
    used = [d for d in s.devices if d.used and d.exposed_copy_ns is not None]
    return _per_device(s, sum(min(d.exposed_copy_ns, d.kernel_only_ns) for d in used)) if used else None


def _pinning(s: Any) -> float | None:
    """Pageable copy time minus its pinned-memory estimate, at most the exposed copy time, per device."""
    if s.copies is None or s.gpu.exposed_copy_ns is None:
        return None
    kinds = [c for c in s.copies.by_kind if c.pinned_estimate_ns is not None]
    return _per_device(s, min(sum(c.total_ns - c.pinned_estimate_ns for c in kinds), s.gpu.exposed_copy_ns))


# Facts a new hypothesis may take its runtime fraction from: each is time a fix *recovers* as the trace
# proves it (the rules' counterfactuals), never the size of a bucket such as a kernel's total time,
# the host's blocked time or all idle time (name -> ns over the span).
FRACTION_FACTS: dict[str, Callable[[Any], float | None]] = {
    **{f"gpu.recoverable_by_cause.{c}": _recoverable(c)
       for c in ("sync", "copy_wait", "launch", "alloc", "mpi", "dispatch", "cpu_stall")},
    "copy_overlap": _copy_overlap,
    "pinning_saving": _pinning,
}


class Refinement(BaseModel):
    """Changes to one candidate hypothesis."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="candidate id, e.g. H1")
    description: str | None = Field(None, description="sharper description; numbers copied exactly")
    suggestion: str | None = Field(None, description="more specific, actionable suggestion")
    confidence_delta: float = Field(0.0, ge=-1, le=1, description="change of confidence, e.g. -0.1")
    reason: str = Field(description="why the description or confidence changed")


class RankChange(BaseModel):
    """Why a candidate is ranked differently from the engine's order."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="candidate id that moved, e.g. H3")
    reason: str = Field(min_length=1, max_length=500, description="why it belongs at its new place")


class NewValue(BaseModel):
    """A value a new hypothesis rests on."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="the tool result's field or column name, e.g. total_ns")
    value: float
    unit: str | None = None
    source: str = Field(description="id of the tool call whose result contains the value")


class NewEvidence(BaseModel):
    """A sentence of evidence for a new hypothesis."""

    model_config = ConfigDict(extra="forbid")

    text: str
    values: list[NewValue] = Field(min_length=1)


class FractionBasis(BaseModel):
    """What the engine recomputes a new hypothesis's runtime fraction from."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["fact"] = "fact"
    name: str = Field(description="one of the recoverable-time facts " + ", ".join(FRACTION_FACTS)
                                  + " (a kernel's or phase's whole time is not recoverable time: without a "
                                    "fact the finding is speculative)")


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
    fraction_basis: FractionBasis | None = Field(
        None, description="what the recoverable time is; without it the hypothesis is speculative (no bound)")
    runtime_fraction_pct: float | None = Field(None, ge=0, le=100, description="ignored: the engine recomputes it")
    confidence: float = Field(ge=0, le=1)


class LlmAnswer(BaseModel):
    """The structured final answer of the LLM stage."""

    model_config = ConfigDict(extra="forbid")

    ranking: list[str] = Field(description="candidate ids, most recoverable time first")
    rank_changes: list[RankChange] = Field(default_factory=list,
                                           description="one entry per candidate moved against the engine's order")
    refinements: list[Refinement] = Field(default_factory=list)
    new_hypotheses: list[NewHypothesis] = Field(default_factory=list)
    narrative: str = Field(min_length=1, max_length=2000, description="short summary for the reader")


def _same(text: str) -> str:
    return text


@dataclass
class Scope:
    """The facts each part of the answer may cite (pa.llm.grounding: scoped, typed).

    `mask` replaces names (kernels, markers, devices, strings of tool results) by placeholders
    before numbers are read, so `gemm<128, 128, 8>` or `A100-SXM4-80GB` is not taken for a claim.
    """

    context: list[Fact]
    tools: dict[str, list[Fact]]
    mask: Callable[[str], str] = _same

    def tool_facts(self) -> list[Fact]:
        """Every measurement of the run's tool results."""
        return [f for fs in self.tools.values() for f in fs]


def hypothesis_facts(h: Hypothesis) -> list[Fact]:
    """What a candidate cites: its evidence values, runtime fraction and Amdahl bounds."""
    out: list[Fact] = []
    for e in h.evidence:
        for v in e.values:
            out += facts_for(v.name, v.value, v.unit)
    out += facts_for("runtime_fraction_pct", h.runtime_fraction_pct)
    out += facts_for("estimated_speedup_pct_lower", h.estimated_speedup_pct_lower)
    out += facts_for("estimated_speedup_pct_upper", h.estimated_speedup_pct_upper)
    return out


@dataclass
class Review:
    """The engine's verdict on an answer: what reaches the report, and how it got there."""

    hypotheses: list[Hypothesis]
    engine_order: list[str]
    moves: list[dict[str, Any]] = field(default_factory=list)
    refined: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    speculative: list[str] = field(default_factory=list)
    fraction_basis: dict[str, str] = field(default_factory=dict)
    narrative_ungrounded: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _unmoved(a: list[str], b: list[str], prefer: set[str]) -> set[str]:
    """The ids of a longest common subsequence of two orders: the ones that did not move.

    Among the longest ones, the subsequence that keeps most ids of `prefer` (the ids the model gave
    no reason for): in a swap of H1 and H2 with a reason for H2, H2 is the one that moved.
    """
    n, m = len(a), len(b)
    table = [[(0, 0)] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if a[i] == b[j]:
                length, kept = table[i + 1][j + 1]
                table[i][j] = (length + 1, kept + (a[i] in prefer))
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    keep, i, j = set(), 0, 0
    while i < n and j < m:
        if a[i] == b[j] and table[i][j] == (table[i + 1][j + 1][0] + 1, table[i + 1][j + 1][1] + (a[i] in prefer)):
            keep.add(a[i])
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return keep


def _claims(hyps: list[Hypothesis], span: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for h in hyps:
        if h.runtime_fraction_pct is not None:
            out[h.bucket] = out.get(h.bucket, 0) + round(h.runtime_fraction_pct / 100 * span)
    return out


def builtin_params() -> dict[str, Any]:
    """The built-in packs' param values (for callers that have no RuleResult.params)."""
    return {name: p.value for name, p in load_ruleset().params.items()}


def apply_answer(answer: LlmAnswer, rule_hyps: list[Hypothesis], scope: Scope, buckets: dict[str, int],
                 summary: Any, warnings: list[str], params: Mapping[str, Any] | None = None,
                 analysis_ns: int | None = None) -> Review:
    """Merge the validated answer into the rules' hypotheses under the engine's re-checks.

    `params` are the rule params the run used (RuleResult.params): a new finding's impact uses their
    cut-offs; None means the built-in packs' values. `analysis_ns` is the analysis window the rules
    judged on (RuleResult.analysis_ns: the span when the capture holds no steady state); None means
    the GPU's active window of `summary`.
    """
    params = builtin_params() if params is None else params
    analysis = analysis_window_ns(summary) if analysis_ns is None else analysis_ns
    span = int(summary.span_ns)
    by_id = {h.id: h for h in rule_hyps}
    engine_order = [h.id for h in rule_hyps]
    order: list[str] = []
    for hid in answer.ranking:
        if hid not in by_id:
            warnings.append(f"llm: unknown candidate id {hid!r} in the ranking dropped")
        elif hid not in order:
            order.append(hid)
    order += [hid for hid in engine_order if hid not in order]
    reasons = {c.id: c.reason for c in answer.rank_changes if c.id in by_id}
    unmoved = _unmoved(engine_order, order, {h for h in engine_order if h not in reasons})
    moved = [hid for hid in order if hid not in unmoved]
    missing = [hid for hid in moved if hid not in reasons]
    review = Review(hypotheses=[], engine_order=engine_order)
    if missing:
        warnings.append(f"llm: ranking not applied: the move of {', '.join(missing)} carries no reason "
                        "(rank_changes); the engine's order is kept")
        order = list(engine_order)
    else:
        review.moves = [{"id": hid, "engine_rank": engine_order.index(hid) + 1, "llm_rank": order.index(hid) + 1,
                         "reason": reasons[hid]} for hid in moved]

    refined = dict(by_id)
    tool_facts = scope.tool_facts()
    for r in answer.refinements:
        h = refined.get(r.id)
        if h is None:
            warnings.append(f"llm: refinement of unknown id {r.id!r} dropped")
            continue
        update: dict[str, Any] = {}
        parts: list[dict[str, Any]] = []
        facts = hypothesis_facts(by_id[r.id]) + tool_facts
        for fld in ("description", "suggestion"):
            text = getattr(r, fld)
            if not text or text == getattr(h, fld):
                continue
            bad = ungrounded(scope.mask(text), facts)
            if bad:
                warnings.append(f"llm: refined {fld} of {r.id} dropped: numbers {', '.join(bad)} are not facts "
                                f"{r.id} cites or tool results measured (units and quantities checked)")
            else:
                update[fld] = text
                parts.append({"part": fld, "original": getattr(h, fld), "reason": r.reason})
        delta = max(-MAX_CONF_DELTA, min(MAX_CONF_DELTA, r.confidence_delta))
        if delta:
            new_conf = round(max(0.0, min(1.0, h.confidence + delta)), 3)
            if new_conf != h.confidence:
                update["confidence"] = new_conf
                update["evidence"] = [*h.evidence, Evidence(
                    text=f"LLM review: confidence {h.confidence:g} → {new_conf:g}: {r.reason}", values=[])]
                parts.append({"part": "confidence", "original": f"{h.confidence:g}", "reason": r.reason})
        if update:
            refined[r.id] = h.model_copy(update=update)
            review.refined.setdefault(r.id, []).extend(parts)

    out = [refined[i] for i in order]
    left = {b: min(ns, span) for b, ns in buckets.items()}
    for b, ns in _claims(out, span).items():
        left[b] = left.get(b, 0) - ns
    total_left = span - sum(_claims(out, span).values())
    for n, nh in enumerate(answer.new_hypotheses, start=1):
        hyp = _new_hypothesis(f"L{n}", nh, scope, summary, left, total_left, warnings, review, params, analysis)
        if hyp is not None:
            if hyp.runtime_fraction_pct is not None:
                got = round(hyp.runtime_fraction_pct / 100 * span)
                left[hyp.bucket] = left.get(hyp.bucket, 0) - got
                total_left -= got
            out.append(hyp)
    review.hypotheses = out
    return review


def basis_ns(basis: FractionBasis, summary: Any) -> tuple[float | None, str]:
    """The time (ns, per device where the summary sums devices) a fraction basis names, and how it was found."""
    name = basis.name
    fn = FRACTION_FACTS.get(name)
    if fn is None:
        return None, f"{name!r} is not one of {', '.join(FRACTION_FACTS)}"
    value = fn(summary)
    return (None, f"{name} is not available in this profile") if value is None else (float(value), name)


def _new_hypothesis(hid: str, nh: NewHypothesis, scope: Scope, summary: Any, left: dict[str, int],
                    total_left: int, warnings: list[str], review: Review,
                    params: Mapping[str, Any], analysis_ns: int) -> Hypothesis | None:
    span = int(summary.span_ns)
    values = [v for e in nh.evidence for v in e.values]
    cited = {v.source for v in values}
    unknown = sorted(c for c in cited if c not in scope.tools)
    if unknown:
        warnings.append(f"llm: new hypothesis {nh.title!r} dropped: it cites tool calls {', '.join(unknown)} "
                        "that did not happen")
        return None
    bad = [f"{v.name}={v.value:g}" for v in values
           if not value_grounded(v.value, v.unit, v.name, scope.tools[v.source])]
    if bad:
        warnings.append(f"llm: new hypothesis {nh.title!r} dropped: values {', '.join(bad)} are not measurements "
                        "of the tool calls they cite")
        return None
    facts = [f for c in cited for f in scope.tools[c]] + scope.context
    loose = [x for text in (nh.description, nh.suggestion, *(e.text for e in nh.evidence))
             for x in ungrounded(scope.mask(text), facts)]
    if loose:
        warnings.append(f"llm: new hypothesis {nh.title!r} dropped: its text cites {', '.join(loose)}, not facts "
                        "of the tool calls it cites or of the context")
        return None
    frac: float | None = None
    if nh.fraction_basis is not None and span > 0:
        ns, how = basis_ns(nh.fraction_basis, summary)
        if ns is None:
            warnings.append(f"llm: {hid} ({nh.title}) is speculative: its fraction basis is unusable ({how})")
        else:
            want = round(min(ns, span))
            got = max(0, min(want, left.get(nh.bucket, 0), total_left))
            if got < want:
                warnings.append(f"llm: {hid} claim reduced from {want / span:.1%} to {got / span:.1%} of the "
                                f"span: the {nh.bucket} bucket or the span is already claimed")
            frac = got / span
            review.fraction_basis[hid] = f"{how} (engine-computed)"
    elif nh.runtime_fraction_pct is not None:
        warnings.append(f"llm: {hid} ({nh.title}): runtime fraction {nh.runtime_fraction_pct:g} % ignored "
                        "(no fraction_basis the engine can recompute); speculative, no bound")
    if frac is None:
        review.speculative.append(hid)
    lower, upper = amdahl_bounds(frac)
    # judged on the analysis window like the rules' findings (pa.rules.evaluate, module docs)
    wfrac = None if frac is None else window_fraction(frac * span, analysis_ns)
    wlower, wupper = amdahl_bounds(wfrac)
    return Hypothesis(
        id=hid, rule_id=None, bottleneck_type=nh.bottleneck_type, bucket=nh.bucket, title=nh.title,
        description=nh.description,
        evidence=[Evidence(text=e.text, values=[EvidenceValue(name=v.name, value=v.value, unit=v.unit,
                                                              source=f"llm-tool:{v.source}")
                                                for v in e.values]) for e in nh.evidence],
        suggestion=nh.suggestion, expected_impact=impact_level(wfrac, params),
        action_category=nh.action_category,
        runtime_fraction_pct=None if frac is None else frac * 100,
        estimated_speedup_pct_lower=lower, estimated_speedup_pct_upper=upper,
        window_fraction_pct=None if wfrac is None else wfrac * 100,
        window_speedup_pct_lower=wlower, window_speedup_pct_upper=wupper,
        claim="speculative" if frac is None else "recoverable",
        counterfactual=(None if frac is None else
                        f"proposed by the LLM review; the engine recomputed its share from {nh.fraction_basis}"),
        confidence=min(nh.confidence, NEW_CONF_CAP), source="llm")


# ---- the comparison explainer's check (pa.compare.explain): tolerance-based, signs ignored

REL_TOL = 0.01
_SMALL = 16


def grounded(x: float, facts: list[float]) -> bool:
    """True when x matches a fact within 1 % relative (exact for zero)."""
    return any(f == x or (f != 0 and abs(x - f) <= REL_TOL * abs(f)) for f in facts)


def ungrounded_numbers(text: str, facts: list[float], magnitude: bool = False) -> list[str]:
    """Numbers written in `text` that match no fact (small integers are not checked).

    Used by `pa compare`'s explanation, whose facts are the comparison's numbers in every unit the
    prompt shows them. With `magnitude`, signs are ignored on both sides.
    """
    import re

    if magnitude:
        facts = sorted({abs(f) for f in facts})
    bad = []
    for m in re.finditer(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?", text):
        tok = m.group(0)
        x = float(tok.replace(",", ""))
        if magnitude:
            x = abs(x)
        if x.is_integer() and 0 <= x <= _SMALL:
            continue
        if not grounded(x, facts):
            bad.append(tok)
    return bad


def context_facts(context: dict[str, Any]) -> list[Fact]:
    """The pre-seeded context's facts (what the narrative may cite besides candidates and tools)."""
    return facts_of({k: v for k, v in context.items() if k not in ("glossary", "candidate_fields")})
