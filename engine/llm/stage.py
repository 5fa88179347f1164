"""Entry point of the LLM stage, called by `engine.report.llm_hook` (issue 6).

`llm_stage(summary, rule_result, options)` returns an `LlmOutcome`, or a string saying why the
report stays rules-only (no key, --dry-run, declined, or what failed). It never raises for a
provider failure: timeouts, rate limits and server errors (after the SDK's retries), malformed
tool arguments, an answer still invalid after the validation retries, all become the rules-only
report with the reason, unless `--require-llm` was given (then a UserError, exit code ≠ 0).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from engine.errors import UserError
from engine.llm.context import (
    build_context,
    estimate_tokens,
    render_dry_run,
    system_prompt,
    user_prompt,
)
from engine.llm.output import apply_answer
from engine.llm.providers import ENABLE_HINT, LlmSettings, Target, load_settings, resolve_target
from engine.llm.redact import from_summary
from engine.llm.sql_tool import SqlLimits, SqlSandbox
from engine.llm.tools import TOOL_SPECS, ToolBox, numbers_of


def settings_from_options(options: Any) -> LlmSettings:
    """LlmOptions (model, base_url, extra flags) merged over pa.toml."""
    flags = {"model": getattr(options, "model", None), "base_url": getattr(options, "base_url", None)}
    flags.update({k: v for k, v in (getattr(options, "extra", None) or {}).items() if k != "profile_path"})
    return load_settings(flags)


def privacy_notice(target: Target, redact: bool) -> str:
    """What leaves the machine, said before anything is sent."""
    names = ("names replaced by placeholders (--redact)" if redact
             else "kernel names, marker text and other profile strings (use --redact to replace them)")
    return (f"pa: LLM stage: sending summary metrics, candidate hypotheses, tool results and {names} to "
            f"{target.label()}")


def _confirm(estimate: int, settings: LlmSettings) -> bool:
    """Pre-flight confirmation on a TTY; never prompts when stdin is not a TTY or with --yes."""
    if settings.yes or not sys.stdin.isatty():
        return True
    return click.confirm(f"pa: about {estimate} input tokens for the first turn, up to "
                         f"{settings.max_turns} turns; continue?", default=True, err=True)


def llm_stage(summary: Any, rule_result: Any, options: Any) -> Any:
    """Run the LLM stage; an LlmOutcome, or a str reason for the rules-only report."""
    from engine.report.llm_hook import LlmOutcome
    from engine.report.model import LlmProvenance

    settings = settings_from_options(options)
    target = resolve_target(settings)
    redactor = from_summary(summary, settings.redact)
    system = system_prompt(settings.allow_app_knowledge)
    user = user_prompt(build_context(summary, rule_result), redactor)
    if settings.dry_run:
        label = target.label() if target else "no provider configured"
        click.echo(render_dry_run(system, user, TOOL_SPECS, label), err=True)
        return "--dry-run: prompt printed, nothing sent"
    if target is None:
        click.echo(f"pa: rules-only report; {ENABLE_HINT}", err=True)
        return f"no LLM provider configured: {ENABLE_HINT}"
    click.echo(privacy_notice(target, settings.redact), err=True)
    estimate = estimate_tokens(system) + estimate_tokens(user) + estimate_tokens(json.dumps(TOOL_SPECS))
    if not _confirm(estimate, settings):
        return "LLM stage declined at the cost prompt"
    path = (getattr(options, "extra", None) or {}).get("profile_path")
    try:
        outcome = _run(summary, rule_result, settings, target, redactor, system, user,
                       Path(path) if path else None)
    except Exception as exc:  # any provider failure must leave the rules-only report
        reason = f"LLM stage failed ({type(exc).__name__}: {str(exc)[:300]}); rules-only report"
        if settings.require:
            raise UserError(f"--require-llm: {reason}") from exc
        click.echo(f"pa: warning: {reason}", err=True)
        return reason
    hypotheses, usage, warnings = outcome
    for w in warnings:
        click.echo(f"pa: warning: {w}", err=True)
    result = LlmOutcome(hypotheses=hypotheses, provenance=LlmProvenance(
        mode="llm", provider=target.provider, model=target.model, turns=usage.turns,
        tool_calls=usage.tool_calls, input_tokens=usage.input_tokens or None,
        output_tokens=usage.output_tokens or None,
        log_path=str(settings.log) if settings.log else None))
    if hasattr(result, "warnings"):
        result.warnings.extend(warnings)
    return result


def _run(summary: Any, rule_result: Any, settings: LlmSettings, target: Target, redactor: Any,
         system: str, user: str, profile: Path | None) -> tuple[list[Any], Any, list[str]]:
    from engine.llm.agent import JsonlLog, Usage, converse, http_client, make_adapter

    log = JsonlLog(settings.log)
    transcript = JsonlLog(settings.transcript)
    sandbox = None
    if profile is not None and profile.is_file():
        sandbox = SqlSandbox(profile, SqlLimits(settings.sql_time_limit_s, settings.sql_max_rows,
                                                settings.sql_max_bytes))
    http = http_client(log, settings.timeout_s)
    try:
        tools = ToolBox(summary, rule_result, redactor, sandbox)
        usage = Usage()
        adapter = make_adapter(target, settings, http)
        answer = converse(adapter, system, user, tools, settings, usage, transcript.write)
    finally:
        http.close()
        log.close()
        transcript.close()
        if sandbox is not None:
            sandbox.close()
    answer = type(answer).model_validate(redactor.restore(answer.model_dump()))
    facts = numbers_of(summary.model_dump()) + numbers_of(
        [h.model_dump() for h in getattr(rule_result, "hypotheses", [])])
    facts += numbers_of(getattr(rule_result, "metrics", {}) or {})
    tool_facts = {cid: numbers_of(res) for cid, res in tools.results.items()}
    warnings: list[str] = []
    hyps = apply_answer(answer, list(getattr(rule_result, "hypotheses", [])), facts, tool_facts,
                        dict(getattr(rule_result, "buckets", {}) or {}), summary.span_ns, warnings)
    return hyps, usage, warnings


run_llm_stage = llm_stage  # the name the issue uses; the hook looks for `llm_stage`
