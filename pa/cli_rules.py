"""`pa rules list|show|functions|validate|explain`: inspect the rule packs and why a rule fired or not."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pa.cli import SuggestingGroup
from pa.cli_options import (
    TEXT_OR_JSON,
    format_option_of,
    json_option,
    output_format,
    output_option,
    queries_option,
    rules_option,
)
from pa.errors import UserError, closest, one_line_errors

# A plain Group object (not a decorated function) so its type is known across the import cycle
# with pa.cli, which registers it.
rules_group: click.Group = SuggestingGroup(
    "rules", help="Inspect, validate and explain the declarative rule packs.")


@rules_group.command("list")
@rules_option
@one_line_errors
def list_rules(site_packs: tuple[Path, ...]) -> None:
    """List every rule with its pack, bottleneck type and state."""
    from pa.rules.engine import load_ruleset

    rs = load_ruleset(site_packs)
    for p in rs.packs:
        version = f" version {p.version}" if p.version else ""
        _echo(f"pack {p.order}: {p.name:<10} {p.path}{version}  sha256:{p.sha256[:12]}")
    for r in sorted(rs.rules.values(), key=lambda r: r.id):
        state = f"disabled by {rs.disabled[r.id]}" if r.id in rs.disabled else r.pack
        _echo(f"{r.id:<18} {r.bottleneck_type:<20} {r.title}  [{state}]")


@rules_group.command("show")
@click.argument("rule_id")
@rules_option
@one_line_errors
def show(rule_id: str, site_packs: tuple[Path, ...]) -> None:
    """Show one rule as the engine sees it after layering, with the params it uses."""
    import yaml

    from pa.rules.engine import load_ruleset

    rs = load_ruleset(site_packs)
    if rule_id not in rs.rules:
        raise UserError(f"unknown rule {rule_id!r}; {closest(rule_id, rs.rules, '`pa rules list` lists them')}")
    r = rs.rules[rule_id]
    _echo(f"# from {r.pack}" + (f" (disabled by {rs.disabled[r.id]})" if r.id in rs.disabled else ""))
    _echo(f"# claim: {r.claim}")
    if r.counterfactual:
        _echo("# counterfactual: " + " ".join(r.counterfactual.split()))
    _echo(yaml.safe_dump(r.raw, sort_keys=False, allow_unicode=True).rstrip())
    used = sorted(n for n in _names_of(r) if n in rs.params)
    if used:
        _echo("# params:")
        for n in used:
            p = rs.params[n]
            over = f" (overridden by {p.overridden_by})" if p.overridden_by else ""
            _echo(f"#   {n} = {p.value} {p.unit or ''}{over}: {p.description}")


@rules_group.command("functions")
@click.option("--markdown", is_flag=True, help="Print the tables of docs/rules.md instead of plain text.")
def functions(markdown: bool) -> None:
    """List every operator and function of the rule expression language, with its semantics."""
    from pa.rules.functions import FUNCTIONS, OPERATORS

    if markdown:
        from pa.rules.docs import render_function_table

        _echo(render_function_table())
        return
    _echo("Operators:")
    for o in OPERATORS:
        _echo(f"  {o.syntax}\n      {o.description}")
    _echo("Functions:")
    for f in sorted(FUNCTIONS.values(), key=lambda f: f.name):
        _echo(f"  {f.signature}\n      {f.description}")


def _names_of(rule: object) -> set[str]:
    from pa.rules.loader import Rule

    assert isinstance(rule, Rule)
    names = set(rule.when.names)
    if rule.runtime_fraction is not None:
        names |= rule.runtime_fraction.names
    return names


@rules_group.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--profile", "profile", type=click.Path(path_type=Path), default=None,
              help="Also try the packs on this profile: warn about patterns that match nothing, fields no "
                   "record has, metrics that are null there and marker_names.strip_after texts no marker "
                   "name contains.")
@queries_option
@one_line_errors
def validate(files: tuple[Path, ...], profile: Path | None, query_dirs: tuple[Path, ...]) -> None:
    """Validate site pack FILES (schema, expressions, templates, references) layered on the built-ins.

    Errors stop with exit 2. Legal but useless parts of the site packs are warnings (exit 0): a
    param nothing uses, a select_match text written as a regular expression, and with --profile a
    selection that matches nothing, a metric that is null on that profile and a
    marker_names.strip_after text that no marker name of it contains.
    """
    from pa.rules.engine import load_ruleset
    from pa.rules.lint import profile_warnings, static_warnings

    rs = load_ruleset(files)
    site = [p for p in rs.packs if not p.builtin]
    for p in site:
        version = f", version {p.version}" if p.version else ""
        _echo(f"ok: {p.path} (pack {p.name}{version}, sha256 {p.sha256[:12]})")
    warnings = static_warnings(rs)
    if profile is not None:
        from pa.metrics.summarize import marker_substring_hits, summarize
        from pa.rules.lint import added_strip_after, marker_naming_warnings

        summary = summarize(profile, marker_naming=rs.marker_naming, thresholds=rs.thresholds,
                            query_dirs=query_dirs)
        warnings += profile_warnings(rs, summary)
        added = added_strip_after(rs)
        if added:
            warnings += marker_naming_warnings(marker_substring_hits(profile, added, query_dirs),
                                               summary.profile.file_name)
    for w in warnings:
        _echo(f"warning: {w}")
    _echo(f"{len(rs.rules)} rules, {len(rs.disabled)} disabled, {len(rs.params)} params, "
               f"{len(rs.metrics)} metrics, {len(warnings)} warning(s)")


@rules_group.command("explain")
@click.argument("rule_id")
@click.argument("profile", type=click.Path(path_type=Path))
@rules_option
@format_option_of(TEXT_OR_JSON, "text or json (the outcome, the values and inputs the rule saw)")
@output_option
@json_option
@queries_option
@one_line_errors
def explain(rule_id: str, profile: Path, site_packs: tuple[Path, ...], fmt: str | None, output: Path | None,
            as_json: bool, query_dirs: tuple[Path, ...]) -> None:
    """Say why RULE_ID did or did not fire on PROFILE, with the values it saw."""
    from pa.cli_output import plan_output, write_output, wrote
    from pa.controls import escape_controls
    from pa.metrics.summarize import summarize
    from pa.rules.engine import evaluate, load_ruleset

    fmt = output_format(fmt, as_json, output, formats=TEXT_OR_JSON)
    out = plan_output(output, ".json" if fmt == "json" else ".txt", inputs=[profile, *site_packs])  # before any work
    rs = load_ruleset(site_packs)
    if rule_id not in rs.rules:
        raise UserError(f"unknown rule {rule_id!r}; {closest(rule_id, rs.rules, '`pa rules list` lists them')}")
    # the summary as pa analyze computes it with these packs (marker names, analysis thresholds)
    result = evaluate(summarize(profile, marker_naming=rs.marker_naming, thresholds=rs.thresholds,
                                query_dirs=query_dirs), rs)
    outcome = next(o for o in result.outcomes if o.rule_id == rule_id)
    rule = rs.rules[rule_id]
    hyp = next((h for h in result.hypotheses if h.rule_id == rule_id), None)
    inputs = sorted(_names_of(rule))
    inputs_seen = {n: result.metrics.get(n, rs.params[n].value if n in rs.params else None)
                   for n in inputs}
    data = {"rule_id": rule_id, "status": outcome.status, "reason": outcome.reason,
            "when": rule.when.source, "values": outcome.values, "inputs": inputs_seen,
            "hypothesis": hyp.model_dump() if hyp else None}
    if fmt == "json":
        lines = [json.dumps(data, indent=2, default=str)]
    else:
        reason = f" ({outcome.reason})" if outcome.reason else ""
        lines = [f"{rule_id} on {profile.name}: {outcome.status}{reason}", f"  when: {rule.when.source}"]
        lines += [f"    {n} = {_shown(v)}" for n, v in inputs_seen.items()]
        lines += [f"  {n} = {_shown(v)}" for n, v in outcome.values.items()]
        if hyp:
            lines.append(f"  -> {hyp.id} {hyp.title}: {hyp.expected_impact} impact, "
                         f"fraction {_shown(hyp.runtime_fraction_pct)}, speedup "
                         f"{_shown(hyp.estimated_speedup_pct_lower)}..{_shown(hyp.estimated_speedup_pct_upper)} %")
    # a site pack's titles and the profile's names are text pa prints: controls escaped, lines kept
    text = escape_controls("\n".join(lines), keep_layout=True) + "\n"
    if out.is_stdout:
        click.echo(text, nl=False)
        return
    write_output(out, text)
    click.echo(wrote(out, fmt), err=True)


def _shown(v: object) -> str:
    """A value as `pa rules explain` prints it: Python's repr, but null for "unknown here", never None.

    Why: a reader is not a Python programmer; the JSON output (--json) says null too.
    """
    return "null (unknown on this profile)" if v is None else repr(v)


def _echo(text: object = "") -> None:
    """Print a line whose text may come from a site rule pack (titles, descriptions): controls escaped."""
    from pa.controls import escape_controls

    click.echo(escape_controls(str(text), keep_layout=True))
