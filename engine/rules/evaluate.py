"""Evaluate a RuleSet on one ProfileSummary: metrics, rules, suppression, time buckets, ranking.

Pure computation: `(summary, ruleset, extra facts) -> RuleResult`. Rendering lives elsewhere.

Ranking key (why not the Amdahl upper bound itself: it is infinite at F = 1 and convex, so it would
let one large claim dwarf every confidence weight): recoverable = claimed fraction × confidence, i.e.
the confidence-weighted upper bound of recoverable *time*; ties broken by rule id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.metrics.model import ProfileSummary, SkippedItem
from engine.rules.expr import Expr, ExprError, Scope
from engine.rules.expr import evaluate as eval_expr
from engine.rules.hypothesis import Evidence, EvidenceValue, Hypothesis, amdahl_bounds
from engine.rules.loader import PackRef, Rule, RuleSet
from engine.rules.templates import render

BUCKETS = ("compute", "exposed_copy", "exposed_communication", "sync", "idle")
_IMPACT_ORDER = {"low": 0, "medium": 1, "high": 2}


@dataclass
class RuleOutcome:
    """What happened to one rule on this profile, with the values it saw."""

    rule_id: str
    status: str  # 'fired' | 'silent' | 'skipped' | 'disabled' | 'suppressed'
    reason: str | None
    values: dict[str, Any]


@dataclass
class RuleResult:
    """Ranked hypotheses and everything needed to audit them."""

    hypotheses: list[Hypothesis]
    skipped: list[SkippedItem]
    packs: list[PackRef]
    outcomes: list[RuleOutcome]
    metrics: dict[str, float | int | str | None]
    buckets: dict[str, int]
    warnings: list[str] = field(default_factory=list)


def _nest(extra: Mapping[str, Any]) -> dict[str, Any]:
    """{'cross_rank.straggler_rank': 3} -> {'cross_rank': {'straggler_rank': 3}}; nested dicts kept."""
    out: dict[str, Any] = {}
    for key, value in extra.items():
        parts = key.split(".")
        cur = out
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = value
    return out


def compute_buckets(summary: ProfileSummary) -> dict[str, int]:
    """Nanoseconds available per time bucket (see module docs of docs/rules.md, "Time has one owner").

    compute = Σ device busy − exposed copy (kernels and memsets); exposed_copy = gpu.exposed_copy_ns;
    exposed_communication = mpi.total_ns (the summary has no MPI/compute overlap yet, so all of
    it counts as exposed); sync = sync.cpu_blocked_ns; idle = span × devices − Σ busy.
    """
    devices = max(summary.gpu.device_count, 1)
    return {
        "compute": max(0, summary.gpu.busy_ns - summary.gpu.exposed_copy_ns),
        "exposed_copy": summary.gpu.exposed_copy_ns,
        "exposed_communication": summary.mpi.total_ns if summary.mpi else 0,
        "sync": summary.sync.cpu_blocked_ns if summary.sync else 0,
        "idle": max(0, summary.span_ns * devices - summary.gpu.busy_ns),
    }


def _unit_of(name: str) -> str | None:
    """Unit of a summary field from its suffix (the model's naming convention)."""
    leaf = name.rsplit(".", 1)[-1]
    for suffix, unit in (("_ns", "ns"), ("_pct", "%"), ("_bps", "B/s"), ("bytes", "bytes"),
                         ("_count", "count"), ("count", "count")):
        if leaf.endswith(suffix):
            return unit
    return None


@dataclass
class _Ctx:
    rs: RuleSet
    roots: dict[str, Any]
    names: dict[str, Any]
    vendor: dict[str, str]
    skipped_reasons: dict[str, str]

    def scope(self) -> Scope:
        return Scope(names=self.names, roots=self.roots)

    def value(self, ref: str) -> tuple[Any, str | None, str]:
        """(value, unit, source) of a cited name: summary path, metric or param."""
        if ref in self.rs.metrics:
            return self.names.get(ref), self.rs.metrics[ref].unit, f"metric:{ref}"
        if ref in self.rs.params:
            return self.names.get(ref), self.rs.params[ref].unit, f"param:{ref}"
        v = self.scope().lookup_path(ref)
        if isinstance(v, (dict, list)):
            v = None
        return v, _unit_of(ref), ref


def _missing_reason(ctx: _Ctx, path: str) -> str:
    """Say why `path` is null, quoting the summary's own skipped reason where one matches."""
    parts = path.split(".")
    hint = parts[1] if parts[0] == "summary" and len(parts) > 1 else parts[0]
    for what, why in ctx.skipped_reasons.items():
        if hint and hint.rstrip("s") in what:
            return f"{path} is not available ({what}: {why})"
    return f"{path} is not available"


def _check_requires(rule: Rule, ctx: _Ctx) -> str | None:
    for req in rule.requires:
        if req in ctx.names:
            if ctx.names[req] is None:
                return f"requires {req}, which is null on this profile"
            continue
        if ctx.scope().lookup_path(req) is None:
            return f"requires {_missing_reason(ctx, req)}"
    return None


def _ev(e: Expr, ctx: _Ctx) -> tuple[Any, list[str]]:
    s = ctx.scope()
    v = eval_expr(e, s)
    return v, sorted(set(s.nulls))


def evaluate(summary: ProfileSummary, ruleset: RuleSet,
             extra_facts: Mapping[str, Any] | None = None) -> RuleResult:
    """Run every enabled rule of `ruleset` on `summary` and return ranked, bucket-capped hypotheses."""
    roots: dict[str, Any] = {"summary": summary.model_dump(mode="python")}
    for key, value in _nest(extra_facts or {}).items():
        if key in ("summary",):
            raise ValueError("extra_facts may not replace the summary")
        roots[key] = value
    vendor = dict(ruleset.vendors.get(summary.profile.vendor, {}))
    names: dict[str, Any] = {p.name: p.value for p in ruleset.params.values()}
    ctx = _Ctx(ruleset, roots, names, vendor, {s.what: s.reason for s in summary.skipped})
    skipped: list[SkippedItem] = []
    warnings: list[str] = []
    outcomes: dict[str, RuleOutcome] = {}

    for m in ruleset.metrics.values():
        try:
            names[m.name] = eval_expr(m.expr, ctx.scope())
        except ExprError as exc:
            names[m.name] = None
            skipped.append(SkippedItem(what=f"metric {m.name}", reason=f"rule error: {exc}"))
    metrics = {m: names[m] for m in ruleset.metrics}
    # Record-valued metrics (e.g. top_kernel) are internal; the result carries scalars only.
    metrics = {k: (v if isinstance(v, (int, float, str)) or v is None else None)
               for k, v in metrics.items()}

    fired: dict[str, tuple[Rule, float | None, dict[str, Any]]] = {}
    for rule in ruleset.rules.values():
        if rule.id in ruleset.disabled:
            by = f"disabled by {ruleset.disabled[rule.id]}"
            outcomes[rule.id] = RuleOutcome(rule.id, "disabled", by, {})
            continue
        seen = {ref: ctx.value(ref)[0] for e in rule.evidence for ref in e.cite}
        why = _check_requires(rule, ctx)
        if why:
            outcomes[rule.id] = RuleOutcome(rule.id, "skipped", why, seen)
            skipped.append(SkippedItem(what=f"rule {rule.id}", reason=why))
            continue
        try:
            cond, nulls = _ev(rule.when, ctx)
            seen["when"] = cond
            if cond is None:
                why = "cannot decide: null input(s) " + ", ".join(_missing_reason(ctx, n) for n in nulls)
                outcomes[rule.id] = RuleOutcome(rule.id, "skipped", why, seen)
                skipped.append(SkippedItem(what=f"rule {rule.id}", reason=why))
                continue
            if not cond:
                outcomes[rule.id] = RuleOutcome(rule.id, "silent", "condition `when` is false", seen)
                continue
            frac = None
            if rule.runtime_fraction is not None:
                frac, _ = _ev(rule.runtime_fraction, ctx)
                if frac is not None and (isinstance(frac, bool) or not isinstance(frac, (int, float))
                                         or not 0.0 <= frac <= 1.0):
                    raise ExprError(f"runtime_fraction {frac!r} is outside [0, 1]")
            seen["runtime_fraction"] = frac
        except ExprError as exc:
            why = f"rule error: {exc}"
            outcomes[rule.id] = RuleOutcome(rule.id, "skipped", why, seen)
            skipped.append(SkippedItem(what=f"rule {rule.id}", reason=why))
            warnings.append(f"rule {rule.id} ({rule.pack}): {exc}")
            continue
        fired[rule.id] = (rule, None if frac is None else float(frac), seen)
        outcomes[rule.id] = RuleOutcome(rule.id, "fired", None, seen)

    _suppress(fired, outcomes, ctx)
    buckets = compute_buckets(summary)
    hyps = _rank_and_cap(fired, buckets, summary.span_ns, ctx, warnings)
    return RuleResult(hypotheses=hyps, skipped=skipped, packs=list(ruleset.packs),
                      outcomes=[outcomes[r] for r in ruleset.rules], metrics=metrics,
                      buckets=buckets, warnings=warnings)


def _suppress(fired: dict[str, tuple[Rule, float | None, dict[str, Any]]],
              outcomes: dict[str, RuleOutcome], ctx: _Ctx) -> None:
    """Apply `suppresses:` relations between fired rules (in id order, so the result is stable)."""
    for rid in sorted(fired):
        if rid not in fired:
            continue  # already suppressed by an earlier rule
        rule = fired[rid][0]
        for s in rule.suppresses:
            if s.target not in fired:
                continue
            if s.when is not None:
                ok, _ = _ev(s.when, ctx)
                if not ok:
                    continue
            del fired[s.target]
            o = outcomes[s.target]
            outcomes[s.target] = RuleOutcome(s.target, "suppressed", f"explained by {rid}", o.values)


def _impact(rule: Rule, frac: float | None, params: Mapping[str, Any]) -> str:
    if rule.expected_impact != "auto":
        level = rule.expected_impact
    elif frac is None:
        level = "low"
    elif frac >= params.get("impact_high_fraction", 0.2):
        level = "high"
    elif frac >= params.get("impact_medium_fraction", 0.05):
        level = "medium"
    else:
        level = "low"
    return level if _IMPACT_ORDER[level] <= _IMPACT_ORDER[rule.max_impact] else rule.max_impact


def _rank_and_cap(fired: dict[str, tuple[Rule, float | None, dict[str, Any]]], buckets: dict[str, int],
                  span: int, ctx: _Ctx, warnings: list[str]) -> list[Hypothesis]:
    """Cap claims per bucket and in total by the span, in rank order; then rank and render."""
    def key(item: tuple[str, float | None, float]) -> tuple[float, str]:
        rid, frac, conf = item
        return (-(frac or 0.0) * conf, rid)

    order = sorted(((rid, f, r.confidence) for rid, (r, f, _) in fired.items()), key=key)
    left = {b: min(ns, span) for b, ns in buckets.items()}
    total_left = span
    capped: dict[str, tuple[float | None, str | None]] = {}
    for rid, frac, _ in order:
        rule = fired[rid][0]
        if frac is None or span <= 0:
            capped[rid] = (frac if span > 0 else None, None)
            continue
        want = round(frac * span)
        got = max(0, min(want, left[rule.bucket], total_left))
        left[rule.bucket] -= got
        total_left -= got
        note = None
        if got < want:
            note = (f"claim reduced from {want / span:.1%} to {got / span:.1%} of the span: "
                    f"higher-ranked hypotheses already claim the rest of the {rule.bucket} bucket "
                    f"or of the span")
            warnings.append(f"{rid}: {note}")
        capped[rid] = (got / span, note)

    final = sorted(((rid, capped[rid][0], fired[rid][0].confidence) for rid in capped), key=key)
    out = []
    for n, (rid, frac, _) in enumerate(final, start=1):
        rule, _, seen = fired[rid]
        out.append(_hypothesis(f"H{n}", rule, frac, capped[rid][1], ctx))
        seen["claimed_fraction"] = frac
    return out


def _hypothesis(hid: str, rule: Rule, frac: float | None, note: str | None, ctx: _Ctx) -> Hypothesis:
    tctx: dict[str, Any] = dict(ctx.names)
    tctx.update(ctx.roots)
    tctx["vendor"] = ctx.vendor
    tctx["rule"] = {"id": rule.id, "runtime_fraction": frac}
    evidence = []
    for spec in rule.evidence:
        vals = []
        for ref in spec.cite:
            v, unit, source = ctx.value(ref)
            vals.append(EvidenceValue(name=ref, value=v, unit=unit, source=source))
        evidence.append(Evidence(text=render(spec.text, tctx), values=vals))
    if note:
        evidence.append(Evidence(text=note, values=[]))
    lower, upper = amdahl_bounds(frac)
    return Hypothesis(
        id=hid, rule_id=rule.id, bottleneck_type=rule.bottleneck_type,
        bucket=rule.bucket,
        phase=render(rule.phase, tctx) or None if rule.phase else None,
        title=render(rule.title, tctx), description=rule.description.strip(), evidence=evidence,
        suggestion=render(rule.suggestion, tctx),
        expected_impact=_impact(rule, frac, ctx.names),
        action_category=rule.action_category,
        runtime_fraction_pct=None if frac is None else frac * 100.0,
        estimated_speedup_pct_lower=lower, estimated_speedup_pct_upper=upper,
        confidence=rule.confidence, source="rules",
        next_capture=render(rule.next_capture, tctx) if rule.next_capture else None,
        references=list(rule.references))
