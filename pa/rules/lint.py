"""Warnings about a site pack that loads but cannot do what its author meant (`pa rules validate`).

Loading (pa.rules.loader) rejects what is wrong; this module warns about what is legal but
useless, because a site pack that silently never fires is worse than one that fails to load:
- a param the pack defines, or overrides, that no metric or enabled rule (expression, requirement,
  citation or template) uses;
- a `select_match` text with regular-expression or glob characters (the match is a literal
  substring, so `gemm.*` only matches a name containing the four characters "gemm.*");
- with a profile: a `select`/`select_match` call that matches none of the records it is given, a
  field no record has, and a metric of the pack that is null on that profile.
Only items from site packs are checked: the built-in packs are tested by their own rule cases.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from typing import Any

from pa.metrics.marker_names import DEFAULT_NAMING
from pa.metrics.model import ProfileSummary
from pa.metrics.thresholds import Thresholds
from pa.rules.expr import Expr, ExprError, Scope, compile_expr, evaluate
from pa.rules.loader import Rule, RuleSet
from pa.rules.templates import check_template

_SELECTORS = ("select", "select_match")
_PATTERN_CHARS = set("*?[]^$\\|+(){}")


def _exprs(rs: RuleSet, site: set[str]) -> Iterator[tuple[str, str, Expr]]:
    """(pack, who, expression) for every metric and rule expression of the site packs."""
    for m in rs.metrics.values():
        if m.pack in site:
            yield m.pack, f"metric {m.name}", m.expr
    for r in rs.rules.values():
        if r.pack not in site:
            continue
        yield r.pack, f"{r.id} when", r.when
        if r.runtime_fraction is not None:
            yield r.pack, f"{r.id} runtime_fraction", r.runtime_fraction
        for i, s in enumerate(r.suppresses):
            if s.when is not None:
                yield r.pack, f"{r.id} suppresses.{i}.when", s.when


def _rule_names(r: Rule) -> set[str]:
    """Every bare name and path root a rule uses, in expressions, requirements, citations and templates."""
    names: set[str] = set()
    exprs = [r.when, r.runtime_fraction, *(s.when for s in r.suppresses)]
    for e in exprs:
        if e is not None:
            names |= _expr_names(e)
    names |= {q.split(".")[0] for q in r.requires}
    names |= {c.split(".")[0] for e in r.evidence for c in e.cite}
    texts = [e.text for e in r.evidence] + [r.suggestion, r.title, r.next_capture or "", r.phase or ""]
    for t in texts:
        names |= set(check_template(t))
    return names


def _expr_names(e: Expr) -> set[str]:
    return set(e.names) | {p.split(".")[0] for p in e.paths} | set(e.record_names)


def _used_names(rs: RuleSet) -> set[str]:
    # The analysis thresholds (rules/thresholds.yaml) are read by the summary itself, not by a rule
    # expression: overriding one changes the classifications the rules read.
    used: set[str] = {f.name for f in dataclasses.fields(Thresholds)}
    for m in rs.metrics.values():
        used |= _expr_names(m.expr)
    for r in rs.rules.values():
        if r.id not in rs.disabled:
            used |= _rule_names(r)
    return used


def site_packs(rs: RuleSet) -> set[str]:
    """Display paths of the site packs of `rs` (what Param/Metric/Rule.pack hold)."""
    return {p.path for p in rs.packs if not p.builtin}


def _selector_calls(e: Expr) -> Iterator[tuple[ast.Call, str, list[Any]]]:
    """select/select_match calls with a constant field name: (call, field, constant needles)."""
    for node in ast.walk(e.tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _SELECTORS
                and len(node.args) >= 3 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            needles = [a.value for a in node.args[2:] if isinstance(a, ast.Constant)]
            yield node, node.args[1].value, needles


def static_warnings(rs: RuleSet) -> list[str]:
    """Warnings that need no profile: unused params and pattern characters in select_match texts."""
    site = site_packs(rs)
    out: list[str] = []
    used = _used_names(rs)
    for p in rs.params.values():
        if p.pack in site and p.name not in used:
            out.append(f"{p.pack}: param {p.name} is defined but no metric, rule, citation or template uses it")
        elif p.overridden_by in site and p.name not in used:
            out.append(f"{p.overridden_by}: override of param {p.name} has no effect: no enabled rule and no "
                       "metric uses it")
    for pack, who, e in _exprs(rs, site):
        for call, _, needles in _selector_calls(e):
            if call.func.id != "select_match":  # type: ignore[attr-defined]
                continue
            for n in needles:
                if isinstance(n, str) and _PATTERN_CHARS & set(n):
                    out.append(f"{pack}: {who}: select_match text {n!r} looks like a regular "
                               "expression or glob, but select_match matches a literal, case-insensitive "
                               "substring (see `pa rules functions`)")
    return out


def profile_warnings(rs: RuleSet, summary: ProfileSummary) -> list[str]:
    """Warnings on one profile: selections that match nothing, and site metrics that are null."""
    site = site_packs(rs)
    names: dict[str, Any] = {p.name: p.value for p in rs.params.values()}
    roots: dict[str, Any] = {"summary": summary.model_dump(mode="python")}
    null_metrics: list[str] = []
    for m in rs.metrics.values():   # dependency order, as the evaluator computes them
        try:
            names[m.name] = evaluate(m.expr, Scope(names=names, roots=roots))
        except ExprError:
            names[m.name] = None
        if names[m.name] is None and m.pack in site:
            null_metrics.append(m.name)
    profile = summary.profile.file_name
    out = [f"{rs.metrics[n].pack}: metric {n} is null on {profile} (every rule using it would be skipped "
           "there); check its summary paths with `pa summary --json`" for n in null_metrics]
    for pack, who, e in _exprs(rs, site):
        for call, fld, needles in _selector_calls(e):
            try:
                records = evaluate(compile_expr(ast.unparse(call.args[0])), Scope(names=names, roots=roots))
            except ExprError:
                continue   # e.g. a `phase.*` list, bound only while the rule runs per phase
            if not isinstance(records, list) or not records:
                continue
            text = ast.unparse(call)
            where = f"{pack}: {who}: {text}"
            if not any(isinstance(r, dict) and fld in r for r in records):
                out.append(f"{where}: no record of {ast.unparse(call.args[0])} has a field {fld!r} on {profile}")
                continue
            try:
                hits = evaluate(compile_expr(text), Scope(names=names, roots=roots))
            except ExprError:
                continue
            if hits == []:
                shown = ", ".join(repr(n) for n in needles) or "its values"
                out.append(f"{where}: {shown} matches none of the {len(records)} records on {profile} "
                           "(this pattern can never match there)")
    return out


def added_strip_after(rs: RuleSet) -> list[str]:
    """The `marker_names.strip_after` texts the packs added to the default ones."""
    return [t for t in rs.marker_naming.strip_after if t and t not in DEFAULT_NAMING.strip_after]


def marker_naming_warnings(hits: dict[str, bool] | None, profile: str) -> list[str]:
    """Warnings for the added `marker_names.strip_after` texts no marker name of the profile contains.

    `hits` maps each text a pack added (added_strip_after) to whether some marker name contains it
    (None: the profile has no markers, so nothing can be said).
    """
    return [f"marker_names.strip_after {t!r} is in no marker name of {profile}: it changes no name there"
            for t, found in (hits or {}).items() if not found]
