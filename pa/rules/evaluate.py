"""Evaluate a RuleSet on one ProfileSummary: metrics, rules, suppression, time buckets, ranking.

Pure computation: `(summary, ruleset, extra facts) -> RuleResult`. Rendering lives elsewhere.

A rule's claim is one of three kinds (`claim:` in the pack): `recoverable` (its runtime_fraction is
the share of the span its fix can recover as the trace proves it; Amdahl bounds follow),
`speculative` (the trace cannot show the headroom: no bound) or `none` (a finding about the capture).
A recoverable rule whose fraction is null on this profile is shown as speculative.

The analysis window (`analysis_window_ns`) is the GPU's active window per device: first to last GPU
operation, summed over the devices with GPU operations and divided by their number; the span when no
GPU operation was recorded, or when the capture holds no steady state (the rule packs' `steady_state`
metric: no kernel launched steady_state_min_repeats times, so the window may be start-up itself; then
the whole capture is judged and capture caveats rank in tiers 1 and 4 like any claim-none finding).
Real captures are short and mostly start-up, so a finding is judged on the steady state: its impact
level, its place within a tier and the noise floor use the claimed time as a share of that window
(window_fraction_pct). Claims themselves stay span-relative (a fraction of the span times the span,
in ns) and are capped per bucket and by the span exactly as before.

Ranking, in tiers (why: an engineer reads demonstrated waste first; a caveat about the capture is
worth the headline only when nothing else is found):
  0. recoverable claims of high or medium impact;
  1. other findings that claim no time (claim none, not in group `capture`) of medium or high impact;
  2. recoverable claims of low impact;
  3. speculative findings;
  4. other claim-none findings of low impact;
  5. capture caveats (rules in group `capture`: warm-up, profiler overhead, ...), whatever their impact.
Within a tier: window fraction × confidence (the confidence-weighted bound of recoverable time; not
the Amdahl bound itself, which is infinite at F = 1 and would let one claim dwarf every weight), then
impact, confidence and rule id. A recoverable claim below the noise floor (param noise_floor_fraction
of the analysis window, after capping) is not a finding: it stays in the outcomes as
`below_noise_floor`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pa.metrics.idle import window_per_device_ns
from pa.metrics.model import ProfileSummary, SkippedItem
from pa.rules.expr import Expr, ExprError, Scope
from pa.rules.expr import evaluate as eval_expr
from pa.rules.hypothesis import Evidence, EvidenceValue, Hypothesis, Impact, amdahl_bounds, window_fraction
from pa.rules.loader import PackRef, ProgrammingModel, Rule, RuleSet
from pa.rules.templates import render

_IMPACT_ORDER = {"low": 0, "medium": 1, "high": 2}


@dataclass
class RuleOutcome:
    """What happened to one rule on this profile, with the values it saw."""

    rule_id: str
    status: str  # 'fired' | 'silent' | 'skipped' | 'disabled' | 'suppressed' | 'below_noise_floor'
    reason: str | None
    values: dict[str, Any]
    phase: str | None = None  # the phase label for a rule with `scope: phase`


@dataclass
class RuleResult:
    """Ranked hypotheses and everything needed to audit them."""

    hypotheses: list[Hypothesis]
    skipped: list[SkippedItem]
    packs: list[PackRef]
    outcomes: list[RuleOutcome]
    metrics: dict[str, float | int | str | None]
    buckets: dict[str, int]  # time available per bucket (span-equivalent ns)
    warnings: list[str] = field(default_factory=list)
    claims: dict[str, int] = field(default_factory=dict)  # time the listed findings claim per bucket
    # The param values the rules ran with (after site overrides): later stages that judge a claim
    # (the LLM review's impact of a new finding) use the same cut-offs.
    params: dict[str, Any] = field(default_factory=dict)
    # The analysis window (analysis_window_ns) the findings' window fractions, impact and noise floor
    # were measured on.
    analysis_ns: int = 0


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
    """Time available per bucket, in span-equivalent ns (device time ÷ devices, MPI time ÷ processes).

    The buckets partition what a claim may come from (docs/rules.md, "Time has one owner"):
    compute = busy − exposed copy − exposed communication kernels (compute kernels and memsets), in
    the share of busy time that is on the critical path (the host waited on it:
    gpu.critical_busy_ns; faster kernels elsewhere only lengthen the following gap); exposed_copy =
    copies no kernel hides; sync = in-window idle in synchronisation round trips (gap causes sync
    and copy_wait); idle = the rest of the in-window idle (launch, alloc, MPI, host work, overhead);
    exposed_communication = MPI time per process plus the NCCL/RCCL kernel time no compute kernel
    overlaps. Idle before the first and after the last GPU operation belongs to no bucket: start-up
    and tear-down are the capture rules' to report, never a claim.
    """
    g = summary.gpu
    devices = max(g.device_count, 1)
    exposed = g.exposed_copy_ns or 0
    sync = g.idle_by_cause.get("sync", 0) + g.idle_by_cause.get("copy_wait", 0)
    mpi = summary.mpi.total_ns // max(summary.mpi.process_count, 1) if summary.mpi else 0
    comm = g.communication_exposed_ns
    critical = min(1.0, g.critical_busy_ns / g.busy_ns) if g.busy_ns else 0.0
    return {
        "compute": int(max(0, g.busy_ns - exposed - comm) * critical) // devices,
        "exposed_copy": exposed // devices,
        "exposed_communication": mpi + comm // devices,
        "sync": sync // devices,
        "idle": max(0, g.idle_in_window_ns - sync) // devices,
    }


def analysis_window_ns(summary: ProfileSummary) -> int:
    """The analysis window: the GPU's active window per device, or the span without GPU operations.

    summary.gpu.window_ns sums the active window (first to last GPU operation) over the devices with
    GPU activity (gpu.device_count); divided by their number it is span-equivalent time, on the scale
    of the claims (a claim of the idle bucket is device time ÷ devices too). It never exceeds the span.
    """
    span = max(0, summary.span_ns)
    window = window_per_device_ns(summary)
    return span if window is None else max(1, min(span, window))


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
    model: ProgrammingModel | None = None

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
    if parts[0] == "cross_rank" and "cross_rank" not in ctx.roots:
        mpi = ctx.roots["summary"].get("mpi") or {}
        if max(mpi.get("process_count") or 1, len(mpi.get("ranks") or [])) >= 2:
            return (f"{path} is not available (this export holds several MPI processes in one file; "
                    "cross-rank facts need one export per rank: pa analyze DIR)")
        return (f"{path} is not available (cross-rank facts need the profiles of several ranks analysed "
                f"together: pa analyze DIR or several files)")
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


def programming_model(summary: ProfileSummary, ruleset: RuleSet) -> ProgrammingModel | None:
    """The first model of the rule packs whose prefixes start a kernel, marker or GPU API name of the profile.

    Only names pa already reads: every kernel, every marker name, the synchronising API calls. None
    when no model matches (the rules' own, vendor-worded advice then stands).
    """
    kernels = [n for k in summary.kernels for n in (k.name, k.short_name) if n]
    markers = [m.name for m in summary.markers.by_name] if summary.markers else []
    apis = [a.name for a in summary.sync.by_api] if summary.sync else []
    for model in ruleset.models.values():
        for names, prefixes in ((kernels, model.kernel_prefixes), (markers, model.marker_prefixes),
                                (apis, model.api_prefixes)):
            if prefixes and any(n.startswith(tuple(prefixes)) for n in names):
                return model
    return None


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
    ctx = _Ctx(ruleset, roots, names, vendor, {s.what: s.reason for s in summary.skipped},
               programming_model(summary, ruleset))
    skipped: list[SkippedItem] = []
    warnings: list[str] = []
    outcomes: dict[str, RuleOutcome] = {}

    for err in _compute_metrics(ctx):
        skipped.append(SkippedItem(what=f"metric {err[0]}", reason=f"rule error: {err[1]}"))
    metrics = {m: names[m] for m in ruleset.metrics}
    # Record-valued metrics (e.g. top_kernel) are internal; the result carries scalars only.
    metrics = {k: (v if isinstance(v, (int, float, str)) or v is None else None)
               for k, v in metrics.items()}

    fired: dict[str, Fired] = {}
    for rule in ruleset.rules.values():
        if rule.id in ruleset.disabled:
            by = f"disabled by {ruleset.disabled[rule.id]}"
            outcomes[rule.id] = RuleOutcome(rule.id, "disabled", by, {})
            continue
        if rule.scope == "phase":
            _evaluate_per_phase(rule, ctx, summary, fired, outcomes, skipped, warnings)
            continue
        _evaluate_rule(rule, ctx, rule.id, None, fired, outcomes, skipped, warnings)

    _suppress(fired, outcomes)
    buckets = compute_buckets(summary)
    floor = float(names.get("noise_floor_fraction") or 0.0)
    # Without a steady state in the capture (core.yaml's steady_state metric) the whole capture is judged.
    steady = names.get("steady_state") is not False
    analysis = analysis_window_ns(summary) if steady else max(0, summary.span_ns)
    hyps, claims = _rank_and_cap(fired, buckets, summary.span_ns, analysis, warnings, outcomes, floor,
                                 caveats_last=steady)
    return RuleResult(hypotheses=hyps, skipped=skipped, packs=list(ruleset.packs),
                      outcomes=list(outcomes.values()), metrics=metrics,
                      buckets=buckets, warnings=warnings, claims=claims,
                      params={name: p.value for name, p in ruleset.params.items()}, analysis_ns=analysis)


# A fired rule: the rule, its runtime fraction, the values it saw, and the context it fired in
# (the run, or one phase for `scope: phase`), keyed by rule id or "RULE-ID@phase label".
Fired = tuple[Rule, "float | None", dict[str, Any], "_Ctx"]


def _compute_metrics(ctx: _Ctx) -> list[tuple[str, str]]:
    """Evaluate every metric into ctx.names (in dependency order); return (metric, error) pairs."""
    errors = []
    for m in ctx.rs.metrics.values():
        try:
            ctx.names[m.name] = eval_expr(m.expr, ctx.scope())
        except ExprError as exc:
            ctx.names[m.name] = None
            errors.append((m.name, str(exc)))
    return errors


def _evaluate_per_phase(rule: Rule, ctx: _Ctx, summary: ProfileSummary, fired: dict[str, Fired],
                        outcomes: dict[str, RuleOutcome], skipped: list[SkippedItem], warnings: list[str]) -> None:
    """`scope: phase`: evaluate the rule once per phase of summary.phases with `phase` bound to it.

    Metrics are recomputed with the phase bound, so a metric may use `phase.*` too; the rule's
    runtime_fraction is still a share of the whole span (e.g. phase.idle_ns / summary.span_ns).
    """
    if not summary.phases:
        why = "scope: phase, but the profile has no phases (no kernels)"
        outcomes[rule.id] = RuleOutcome(rule.id, "skipped", why, {})
        skipped.append(SkippedItem(what=f"rule {rule.id}", reason=why))
        return
    for ph in summary.phases:
        pctx = _Ctx(ctx.rs, {**ctx.roots, "phase": ph.model_dump(mode="python")},
                    {p.name: p.value for p in ctx.rs.params.values()}, ctx.vendor, ctx.skipped_reasons)
        _compute_metrics(pctx)   # errors were reported once, at run level
        _evaluate_rule(rule, pctx, f"{rule.id}@{ph.label}", ph.label, fired, outcomes, skipped, warnings)


def _evaluate_rule(rule: Rule, ctx: _Ctx, key: str, phase: str | None, fired: dict[str, Fired],
                   outcomes: dict[str, RuleOutcome], skipped: list[SkippedItem], warnings: list[str]) -> None:
    """Evaluate one rule in one context (the run, or one phase) and record its outcome under `key`."""
    what = f"rule {rule.id}" + (f" (phase {phase})" if phase else "")
    seen = {ref: ctx.value(ref)[0] for e in rule.evidence for ref in e.cite}

    def skip(why: str) -> None:
        outcomes[key] = RuleOutcome(rule.id, "skipped", why, seen, phase)
        skipped.append(SkippedItem(what=what, reason=why))

    why = _check_requires(rule, ctx)
    if why:
        skip(why)
        return
    try:
        cond, nulls = _ev(rule.when, ctx)
        seen["when"] = cond
        if cond is None:
            skip("cannot decide: null input(s) " + ", ".join(_missing_reason(ctx, n) for n in nulls))
            return
        if not cond:
            outcomes[key] = RuleOutcome(rule.id, "silent", "condition `when` is false", seen, phase)
            return
        frac = None
        if rule.runtime_fraction is not None:
            frac, _ = _ev(rule.runtime_fraction, ctx)
            if frac is not None and (isinstance(frac, bool) or not isinstance(frac, (int, float))
                                     or not 0.0 <= frac <= 1.0):
                raise ExprError(f"runtime_fraction {frac!r} is outside [0, 1]")
        seen["runtime_fraction"] = frac
    except ExprError as exc:
        skip(f"rule error: {exc}")
        warnings.append(f"{what} ({rule.pack}): {exc}")
        return
    fired[key] = (rule, None if frac is None else float(frac), seen, ctx)
    outcomes[key] = RuleOutcome(rule.id, "fired", None, seen, phase)


def _targets(fired: dict[str, Fired], key: str, target: str) -> list[str]:
    """Fired keys a `suppresses: target` of the rule fired under `key` reaches.

    A run-level target is one key; a phase-scoped target is every phase of it, or only the same
    phase when the suppressing rule is phase-scoped too.
    """
    phase = key.partition("@")[2]
    out = []
    for k in fired:
        rid, _, kphase = k.partition("@")
        if rid == target and (not phase or not kphase or kphase == phase):
            out.append(k)
    return out


def _suppress(fired: dict[str, Fired], outcomes: dict[str, RuleOutcome]) -> None:
    """Apply `suppresses:` relations between fired rules (in id order, so the result is stable)."""
    for key in sorted(fired):
        if key not in fired:
            continue  # already suppressed by an earlier rule
        rule, _, _, ctx = fired[key]
        for s in rule.suppresses:
            targets = _targets(fired, key, s.target)
            if not targets:
                continue
            if s.when is not None:
                ok, _ = _ev(s.when, ctx)
                if not ok:
                    continue
            for k in targets:
                del fired[k]
                o = outcomes[k]
                outcomes[k] = RuleOutcome(o.rule_id, "suppressed", f"explained by {rule.id}", o.values, o.phase)


def impact_level(frac: float | None, params: Mapping[str, Any]) -> Impact:
    """Impact of a claim of `frac` of the analysis window: params impact_high_fraction / impact_medium_fraction.

    The one definition of the cut-offs, used by the rules and by the LLM review of new findings, so a
    site pack's override_params reaches both.
    """
    if frac is None:
        return "low"
    if frac >= params["impact_high_fraction"]:
        return "high"
    if frac >= params["impact_medium_fraction"]:
        return "medium"
    return "low"


def _impact(rule: Rule, frac: float | None, params: Mapping[str, Any]) -> str:
    level = rule.expected_impact if rule.expected_impact != "auto" else impact_level(frac, params)
    return level if _IMPACT_ORDER[level] <= _IMPACT_ORDER[rule.max_impact] else rule.max_impact


def _claim_of(rule: Rule, frac: float | None) -> str:
    """The claim kind shown: a recoverable rule whose fraction is null on this profile is speculative."""
    if rule.claim == "recoverable" and frac is None:
        return "speculative"
    return rule.claim


def _is_capture(rule: Rule) -> bool:
    """A capture caveat: a rule of group `capture` (rules/capture.yaml) that claims no time."""
    return rule.claim == "none" and "capture" in rule.groups


def _tier(claim: str, impact: str, capture: bool = False) -> int:
    """Ranking tier (module docs): demonstrated waste first, then the rest; capture caveats last.

    Other claim-none findings, small waste and speculation come between; a capture caveat ranks after
    all of them, so that it leads only when nothing else is found.
    """
    if claim == "none" and capture:
        return 5
    big = _IMPACT_ORDER[impact] >= _IMPACT_ORDER["medium"]
    if claim == "recoverable":
        return 0 if big else 2
    if claim == "none":
        return 1 if big else 4
    return 3


def _rank_and_cap(fired: dict[str, Fired], buckets: dict[str, int], span: int, analysis: int,
                  warnings: list[str], outcomes: dict[str, RuleOutcome],
                  floor: float, caveats_last: bool = True) -> tuple[list[Hypothesis], dict[str, int]]:
    """Cap claims per bucket and in total by the span, in rank order; drop noise; rank and render.

    Claims are span fractions (ns = fraction × span); impact, the order within a tier and the noise
    floor use their share of the analysis window `analysis` (ns, span-equivalent).
    """
    def wfrac(frac: float | None) -> float | None:
        return None if frac is None else window_fraction(frac * span, analysis)

    def key(rid: str, frac: float | None) -> tuple[int, float, int, float, str]:
        rule, _, _, ctx = fired[rid]
        claim = _claim_of(rule, frac)
        wf = wfrac(frac)
        impact = _impact(rule, wf, ctx.names)
        return (_tier(claim, impact, caveats_last and _is_capture(rule)), -(wf or 0.0) * rule.confidence,
                -_IMPACT_ORDER[impact], -rule.confidence, rid)

    order = sorted(fired, key=lambda rid: key(rid, fired[rid][1]))
    left = {b: min(ns, span) for b, ns in buckets.items()}
    total_left = span
    capped: dict[str, tuple[float | None, str | None]] = {}
    claims = dict.fromkeys(buckets, 0)
    for rid in order:
        rule, frac = fired[rid][0], fired[rid][1]
        if frac is None or span <= 0 or rule.claim != "recoverable":
            capped[rid] = (frac if span > 0 and rule.claim == "recoverable" else None, None)
            continue
        want = round(frac * span)
        # A `scope: ranks` claim is a loss every rank waits for (the straggler's delay): on the
        # primary rank it may sit in another bucket (the others' MPI wait, or the straggler's own
        # compute the host never waits on), so the primary's bucket does not bound it; the span does.
        bucket_left = total_left if rule.scope == "ranks" else left[rule.bucket]
        got = max(0, min(want, bucket_left, total_left))
        note = None
        if got < want:
            why = (f"higher-ranked findings already claim the rest of the {rule.bucket} time or of the span"
                   if rule.scope == "ranks" or min(buckets[rule.bucket], span) >= want else
                   f"only {min(buckets[rule.bucket], span) / span:.1%} of the span is {rule.bucket} time "
                   f"that can shorten the run" + (" (GPU work the host waited on)" if rule.bucket == "compute"
                                                   else ""))
            note = f"claim reduced from {want / span:.1%} to {got / span:.1%} of the span: {why}"
        share = window_fraction(got, analysis) or 0.0
        if share < floor:
            o = outcomes[rid]
            outcomes[rid] = RuleOutcome(o.rule_id, "below_noise_floor",
                                        f"recoverable {share:.2%} of the GPU's active window ({got / span:.2%} of "
                                        f"the span) is below the noise floor of {floor:.0%}", o.values, o.phase)
            o.values["claimed_fraction"] = got / span
            o.values["claimed_window_fraction"] = share
            continue
        left[rule.bucket] = max(0, left[rule.bucket] - got)
        total_left -= got
        claims[rule.bucket] += got
        if note:
            warnings.append(f"{rid}: {note}")
        capped[rid] = (got / span, note)

    final = sorted(capped, key=lambda rid: key(rid, capped[rid][0]))
    out = []
    for n, rid in enumerate(final, start=1):
        rule, _, seen, ctx = fired[rid]
        frac, note = capped[rid]
        out.append(_hypothesis(f"H{n}", rule, frac, wfrac(frac), note, ctx))
        seen["claimed_fraction"] = frac
        seen["claimed_window_fraction"] = wfrac(frac)
    return out, claims


def _suggestion(rule: Rule, model: ProgrammingModel | None) -> str:
    """The rule's suggestion, or the detected programming model's advice for that rule when it has one."""
    if model is not None and rule.id in model.suggestions:
        return model.suggestions[rule.id]
    return rule.suggestion


def _phase_label(ctx: _Ctx) -> str | None:
    """The label of the phase a `scope: phase` rule fired in (None at run level)."""
    phase = ctx.roots.get("phase")
    return phase.get("label") if isinstance(phase, dict) else None


def _hypothesis(hid: str, rule: Rule, frac: float | None, wfrac: float | None, note: str | None,
                ctx: _Ctx) -> Hypothesis:
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
        text = render(spec.text, tctx)
        if text.strip():     # a conditional sentence that does not apply on this profile is left out
            evidence.append(Evidence(text=text, values=vals))
    if note:
        evidence.append(Evidence(text=note, values=[]))
    claim = _claim_of(rule, frac)
    if claim == "speculative" and rule.claim == "recoverable":
        evidence.append(Evidence(text="The trace cannot bound this claim on this profile (an input of its "
                                      "counterfactual is unknown), so no gain is stated.", values=[]))
    lower, upper = amdahl_bounds(frac)
    wlower, wupper = amdahl_bounds(wfrac)
    return Hypothesis(
        id=hid, rule_id=rule.id, bottleneck_type=rule.bottleneck_type,
        bucket=rule.bucket,
        phase=(render(rule.phase, tctx) or None) if rule.phase else _phase_label(ctx),
        title=render(rule.title, tctx), description=rule.description.strip(), evidence=evidence,
        suggestion=render(_suggestion(rule, ctx.model), tctx),
        expected_impact=_impact(rule, wfrac, ctx.names),
        action_category=rule.action_category,
        runtime_fraction_pct=None if frac is None else frac * 100.0,
        estimated_speedup_pct_lower=lower, estimated_speedup_pct_upper=upper,
        window_fraction_pct=None if wfrac is None else wfrac * 100.0,
        window_speedup_pct_lower=wlower, window_speedup_pct_upper=wupper,
        confidence=rule.confidence, claim=claim,
        counterfactual=" ".join(rule.counterfactual.split()) if rule.counterfactual else None, source="rules",
        # a next_capture template may render empty when the profile already holds what it asks for
        next_capture=(render(rule.next_capture, tctx).strip() or None) if rule.next_capture else None,
        references=list(rule.references))
