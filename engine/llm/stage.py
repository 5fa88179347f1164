"""Entry point of the LLM stage, called by `engine.report.llm_hook` (issue 6).

`llm_stage(summary, rule_result, options)` returns an `LlmOutcome`, or a string saying why the
report stays rules-only (no key, --dry-run, declined, or what failed). It never raises for a
provider failure: timeouts, rate limits and server errors (after the SDK's retries), malformed
tool arguments, an answer still invalid after the validation retries, all become the rules-only
report with the reason, unless `--require-llm` was given (then a UserError, exit code ≠ 0).

Order: settings and target; the prompt; `--dry-run` prints it and stops; the privacy line; the
pre-flight estimate (tokens, `--exact-token-count` from the provider, cost from prices.toml),
confirmed on a TTY; then the conversation (SDK adapters) or the single `claude -p` call; then the
engine's re-checks of the answer, whose warnings travel with the outcome into the report.
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
from engine.llm.output import LlmAnswer, apply_answer, ungrounded_numbers
from engine.llm.pricing import Estimate, estimate_run
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


def _confirm(text: str, settings: LlmSettings) -> bool:
    """Pre-flight confirmation on a TTY; never prompts when stdin is not a TTY or with --yes."""
    if settings.yes or not sys.stdin.isatty():
        return True
    return click.confirm(f"pa: {text}; continue?", default=True, err=True)


def preflight(target: Target, settings: LlmSettings, system: str, user: str, log: Any) -> Estimate:
    """Token (and, with --exact-token-count, the provider's own count) and cost estimate."""
    first = estimate_tokens(system) + estimate_tokens(user) + estimate_tokens(json.dumps(TOOL_SPECS))
    exact: int | None = None
    if settings.exact_token_count:
        if target.cli:
            click.echo("pa: --exact-token-count: the claude CLI has no token-counting call; using the "
                       "estimate", err=True)
        elif target.provider == "openai":
            click.echo("pa: --exact-token-count: OpenAI has no token-counting endpoint; using the estimate",
                       err=True)
        else:
            from engine.llm.agent import http_client, make_adapter

            http = http_client(log, settings.timeout_s)
            try:
                exact = make_adapter(target, settings, http).count_tokens(system, user)
            except Exception as exc:  # a count that fails must not stop the stage
                click.echo(f"pa: --exact-token-count failed ({type(exc).__name__}: {str(exc)[:200]}); "
                           "using the estimate", err=True)
            finally:
                http.close()
    return estimate_run(exact if exact is not None else first, exact is not None, target, settings)


def llm_stage(summary: Any, rule_result: Any, options: Any) -> Any:
    """Run the LLM stage; an LlmOutcome, or a str reason for the rules-only report.

    The reason is an `LlmFailure` (a str the report also lists under warnings) when the stage was
    configured and tried but failed.
    """
    from engine.llm.agent import JsonlLog
    from engine.report.llm_hook import LlmFailure, LlmOutcome
    from engine.report.model import LlmProvenance

    settings = settings_from_options(options)
    target = resolve_target(settings)
    redactor = from_summary(summary, settings.redact)
    system = system_prompt(settings.allow_app_knowledge)
    extra = getattr(options, "extra", None) or {}
    user = user_prompt(build_context(summary, rule_result, ranks=extra.get("ranks")), redactor)
    if settings.dry_run:
        label = target.label() if target else "no provider configured"
        text = render_dry_run(system, user, TOOL_SPECS, label)
        if target is not None:
            first = estimate_tokens(system) + estimate_tokens(user) + estimate_tokens(json.dumps(TOOL_SPECS))
            text = text.replace("\n", f"\n# {estimate_run(first, False, target, settings).text(target)}\n", 1)
        click.echo(text, err=True)
        return "--dry-run: prompt printed, nothing sent"
    if target is None:
        click.echo(f"pa: rules-only report; {ENABLE_HINT}", err=True)
        return f"no LLM provider configured: {ENABLE_HINT}"
    click.echo(privacy_notice(target, settings.redact), err=True)
    log = JsonlLog(settings.log)
    try:
        estimate = preflight(target, settings, system, user, log)
        click.echo(f"pa: LLM pre-flight: {estimate.text(target)}", err=True)
        if not _confirm(estimate.text(target), settings):
            return "LLM stage declined at the cost prompt"
        path = extra.get("profile_path")
        try:
            outcome = _run(summary, rule_result, settings, target, redactor, system, user,
                           Path(path) if path else None, log, extra.get("ranks"))
        except Exception as exc:  # any provider failure must leave the rules-only report
            reason = f"LLM stage failed ({type(exc).__name__}: {str(exc)[:300]}); rules-only report"
            if settings.require:
                raise UserError(f"--require-llm: {reason}") from exc
            click.echo(f"pa: warning: {reason}", err=True)
            return LlmFailure(reason)
    finally:
        log.close()
    hypotheses, usage, warnings, narrative, loose = outcome
    for w in warnings:
        click.echo(f"pa: warning: {w}", err=True)
    return LlmOutcome(hypotheses=hypotheses, provenance=LlmProvenance(
        mode="llm", provider=target.provider, model=target.model, turns=usage.turns,
        tool_calls=usage.tool_calls, input_tokens=usage.input_tokens or None,
        output_tokens=usage.output_tokens or None,
        log_path=str(settings.log) if settings.log else None),
        narrative=narrative, warnings=warnings, narrative_ungrounded=loose)


def _run(summary: Any, rule_result: Any, settings: LlmSettings, target: Target, redactor: Any,
         system: str, user: str, profile: Path | None, log: Any,
         ranks: Any = None) -> tuple[list[Any], Any, list[str], str, list[str]]:
    from engine.llm.agent import JsonlLog, Usage, converse, http_client, make_adapter

    transcript = JsonlLog(settings.transcript)
    usage = Usage()
    tools = ToolBox(summary, rule_result, redactor, None, ranks=ranks)
    if target.cli:
        from engine.llm.claude_cli import run_claude_cli

        try:
            answer = run_claude_cli(target, settings, system, user, log, usage, LlmAnswer)
            transcript.write({"turn": usage.turns, "role": "final", "answer": answer.model_dump()})
        finally:
            transcript.close()
    else:
        if profile is not None and profile.is_file():
            tools.sandbox = SqlSandbox(profile, SqlLimits(settings.sql_time_limit_s, settings.sql_max_rows,
                                                          settings.sql_max_bytes))
        http = http_client(log, settings.timeout_s)
        try:
            adapter = make_adapter(target, settings, http)
            answer = converse(adapter, system, user, tools, settings, usage, transcript.write)
        finally:
            http.close()
            transcript.close()
            if tools.sandbox is not None:
                tools.sandbox.close()
    answer = type(answer).model_validate(redactor.restore(answer.model_dump()))
    facts = numbers_of(summary.model_dump()) + numbers_of(
        [h.model_dump() for h in getattr(rule_result, "hypotheses", [])])
    facts += numbers_of(getattr(rule_result, "metrics", {}) or {})
    facts += numbers_of(build_context(summary, rule_result, ranks=ranks))
    tool_facts = {cid: numbers_of(res) for cid, res in tools.results.items()}
    warnings: list[str] = []
    hyps = apply_answer(answer, list(getattr(rule_result, "hypotheses", [])), facts, tool_facts,
                        dict(getattr(rule_result, "buckets", {}) or {}), summary.span_ns, warnings)
    loose = ungrounded_numbers(answer.narrative, facts + [x for xs in tool_facts.values() for x in xs])
    if loose:
        warnings.append(f"llm: the narrative cites numbers {', '.join(loose)} that match no fact of the "
                        "summary or a tool result (kept, flagged)")
    return hyps, usage, warnings, answer.narrative, loose


run_llm_stage = llm_stage  # the name the issue uses; the hook looks for `llm_stage`
