"""Entry point of the LLM stage, called by the pipeline (pa.pipeline) through `run`.

`llm_stage(summary, rule_result, options)` returns an `LlmOutcome`, or a string saying why the
report stays rules-only (no provider, --dry-run, declined, refused, or what failed). It never
raises for a provider failure: timeouts, rate limits and server errors (after the SDK's retries),
malformed tool arguments, an answer still invalid after the validation retries, the overall
deadline, all become the rules-only report with the reason and one warning line on stderr, unless
`--require-llm` was given (then a UserError, exit 2; also when no provider can be used).

Order: settings and target (a `--model` pa cannot place is an error); the prompt; `--dry-run`
prints it with one token estimate and stops; the privacy line (what goes where, with which key);
the pre-flight estimate (tokens, `--exact-token-count` from the provider, cost from prices.toml);
the ceilings (`max_cost_usd`, `max_request_tokens`: refused even with --yes); confirmation on a
TTY; then the conversation (SDK adapters) or the single `claude -p` call, in a worker thread
bounded by the stage deadline (`--llm-timeout`); then the engine's re-checks of the answer, whose
warnings travel with the outcome into the report. Token use and the estimated cost are in the
report's provenance, also when the stage failed after spending tokens.

The SDKs' own log lines and warnings are silenced for the stage: stderr gets pa's lines only.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import click

from pa.errors import UserError
from pa.llm.context import (
    build_context,
    estimate_tokens,
    render_dry_run,
    system_prompt,
    user_prompt,
)
from pa.llm.model import LlmFailure, LlmOptions, LlmOutcome, LlmProvenance
from pa.llm.output import LlmAnswer, Review, Scope, apply_answer, context_facts, hypothesis_facts
from pa.llm.pricing import Estimate, cost_of, estimate_run, load_prices, price_for
from pa.llm.providers import LlmSettings, NoProvider, Target, load_settings, resolve
from pa.llm.redact import Redactor, from_summary
from pa.llm.secrets import env_secrets, scrub
from pa.llm.tools import ENGINE_TOOLS, TOOL_SPECS, ToolBox, engine_tables
from pa.metrics.model import ProfileSummary
from pa.rules.evaluate import RuleResult

_LIBRARY_LOGGERS = ("openai", "anthropic", "httpx", "httpx2", "httpcore", "httpcore2", "google_genai", "google",
                    "instructor", "tenacity", "urllib3")


class StageTimeout(Exception):
    """The stage's overall deadline passed."""


def settings_from_options(options: Any) -> LlmSettings:
    """LlmOptions (model, base_url, extra flags) merged over pa.toml."""
    flags = {"model": getattr(options, "model", None), "base_url": getattr(options, "base_url", None)}
    flags.update({k: v for k, v in (getattr(options, "extra", None) or {}).items()
                  if k not in ("profile_path", "ranks", "query_dirs")})
    settings = load_settings(flags)
    if settings.sql_raw_tables and settings.redact:
        raise UserError("--sql-raw-tables cannot be combined with --redact: the export's own tables hold "
                        "unredacted strings")
    return settings


def privacy_notice(target: Target, settings: LlmSettings) -> str:
    """What leaves the machine, to whom and with which key, said before anything is sent."""
    names = ("names replaced by placeholders (--redact)" if settings.redact
             else "kernel names, marker text and other profile strings (use --redact to replace them)")
    sql = "the export's own tables (--sql-raw-tables)" if settings.sql_raw_tables else "pa's relation views"
    return (f"pa: LLM stage: sending summary metrics, candidate hypotheses, tool results over {sql} and {names} "
            f"to {target.label()}, {target.key_note()}; secret-looking values are removed")


def _confirm(text: str, settings: LlmSettings) -> bool:
    """Pre-flight confirmation on a TTY; never prompts when stdin is not a TTY or with --yes."""
    if settings.yes or not sys.stdin.isatty():
        return True
    return click.confirm(f"pa: {text}; continue?", default=True, err=True)


def first_request_tokens(system: str, user: str) -> int:
    """The estimate of the first request: system prompt, first message and tool schemas."""
    return estimate_tokens(system) + estimate_tokens(user) + estimate_tokens(json.dumps(TOOL_SPECS))


def preflight(target: Target, settings: LlmSettings, system: str, user: str, log: Any) -> Estimate:
    """Token (and, with --exact-token-count, the provider's own count) and cost estimate."""
    first = first_request_tokens(system, user)
    exact: int | None = None
    if settings.exact_token_count:
        if target.cli:
            click.echo("pa: --exact-token-count: the claude CLI has no token-counting call; using the "
                       "estimate", err=True)
        elif target.provider == "openai":
            click.echo("pa: --exact-token-count: OpenAI has no token-counting endpoint; using the estimate",
                       err=True)
        else:
            from pa.llm.agent import guarded_client, make_adapter
            from pa.llm.transport import Deadline

            http = guarded_client(target, settings, Deadline.after(min(settings.timeout_s, settings.deadline_s)),
                                  log, env_secrets())
            try:
                exact = make_adapter(target, settings, http).count_tokens(system, user)
            except Exception as exc:  # a count that fails must not stop the stage
                click.echo(f"pa: --exact-token-count failed ({type(exc).__name__}: {scrub(str(exc))[:200]}); "
                           "using the estimate", err=True)
            finally:
                http.close()
    return estimate_run(exact if exact is not None else first, exact is not None, target, settings)


def _quiet_libraries() -> None:
    """No SDK log line or Python warning beside pa's own lines (module docs)."""
    for name in _LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 10)
    warnings.filterwarnings("ignore", module=r"(instructor|pydantic|google|openai|anthropic|httpx2?|tenacity)(\.|$)")


def _ceiling(estimate: Estimate, target: Target, settings: LlmSettings) -> str | None:
    """Why the run is refused whatever --yes says (cost or request size above the ceilings), or None."""
    if estimate.first_input > settings.max_request_tokens:
        return (f"the first request is about {estimate.first_input:,} tokens, above the ceiling of "
                f"{settings.max_request_tokens:,} (max_request_tokens in pa.toml)")
    if estimate.cost_high is not None and estimate.cost_high > settings.max_cost_usd:
        return (f"the run may cost up to ${estimate.cost_high:.2f}, above the ceiling of ${settings.max_cost_usd:.2f} "
                "(--max-cost or max_cost_usd in pa.toml; --max-turns lowers the estimate)")
    return None


def run(summary: ProfileSummary, rule_result: RuleResult, options: LlmOptions) -> tuple[LlmOutcome | None, str]:
    """Run the LLM stage when enabled: (outcome, "") or (None, why the report stays rules-only).

    The reason may be an `LlmFailure` (the report then also lists it under warnings).
    """
    if not options.enabled:
        return None, "--no-llm given"
    outcome = llm_stage(summary, rule_result, options)
    if isinstance(outcome, str):  # why it stayed rules-only (no key, failure, --dry-run)
        return None, outcome
    return outcome, ""


def llm_stage(summary: ProfileSummary, rule_result: RuleResult, options: LlmOptions) -> LlmOutcome | str:
    """Run the LLM stage; an LlmOutcome, or a str reason for the rules-only report.

    The reason is an `LlmFailure` (a str the report also lists under warnings, carrying the token
    use so far) when the stage was configured and tried but failed or was refused.
    """
    from pa.llm.transport import JsonlLog

    settings = settings_from_options(options)
    resolved = resolve(settings)
    target = resolved if isinstance(resolved, Target) else None
    extra = getattr(options, "extra", None) or {}
    redactor = from_summary(summary, settings.redact, ranks=extra.get("ranks"), rule_result=rule_result)
    system = system_prompt(settings.allow_app_knowledge)
    context = build_context(summary, rule_result, ranks=extra.get("ranks"))
    user = user_prompt(context, redactor, settings.max_string_chars)
    if settings.dry_run:
        first = first_request_tokens(system, user)
        if target is not None:
            line = estimate_run(first, False, target, settings).text(target)
        else:
            line = f"first request {first:,} input tokens (estimated, ceil(chars/4)); {resolved}"
        click.echo(render_dry_run(system, user, TOOL_SPECS, target.label() if target else "none", line), err=True)
        return "--dry-run: prompt printed, nothing sent"
    if target is None:
        reason = str(resolved) if isinstance(resolved, NoProvider) else "no LLM provider configured"
        if settings.require:
            raise UserError(f"--require-llm: {reason}")
        click.echo(f"pa: rules-only report; {reason}", err=True)
        return reason
    _quiet_libraries()
    click.echo(privacy_notice(target, settings), err=True)
    log = JsonlLog(settings.log)
    from pa.llm.agent import Usage

    usage = Usage()
    try:
        estimate = preflight(target, settings, system, user, log)
        click.echo(f"pa: LLM pre-flight: {estimate.text(target)}", err=True)
        refused = _ceiling(estimate, target, settings)
        if refused:
            reason = f"LLM stage refused: {refused}; rules-only report"
            if settings.require:
                raise UserError(f"--require-llm: {reason}")
            click.echo(f"pa: warning: {reason}", err=True)
            return LlmFailure(reason)
        if not _confirm(estimate.text(target), settings):
            return "LLM stage declined at the cost prompt"
        path = extra.get("profile_path")
        try:
            review, answer = _run_bounded(summary, rule_result, settings, target, redactor, system, user, context,
                                          Path(path) if path else None, log, usage, extra.get("ranks"),
                                          tuple(Path(d) for d in extra.get("query_dirs") or ()))
        except Exception as exc:  # any provider failure must leave the rules-only report
            if isinstance(exc, StageTimeout):
                reason = (f"LLM stage stopped at its deadline of {settings.deadline_s:g} s (--llm-timeout); "
                          "rules-only report")
            else:
                reason = f"LLM stage failed ({type(exc).__name__}: {scrub(str(exc))[:300]}); rules-only report"
            if settings.require:
                raise UserError(f"--require-llm: {reason}") from exc
            click.echo(f"pa: warning: {reason}", err=True)
            failure = LlmFailure(reason)
            failure.provenance = _provenance(target, settings, usage, mode="rules_only", reason=reason)
            return failure
    finally:
        log.close()

    for w in review.warnings:
        click.echo(f"pa: warning: {w}", err=True)
    return LlmOutcome(hypotheses=review.hypotheses, provenance=_provenance(target, settings, usage),
                      narrative=answer.narrative, warnings=review.warnings,
                      narrative_ungrounded=review.narrative_ungrounded, engine_order=review.engine_order,
                      moves=review.moves, refined=review.refined, speculative=review.speculative,
                      fraction_basis=review.fraction_basis)


def _provenance(target: Target, settings: LlmSettings, usage: Any, mode: str = "llm",
                reason: str | None = None) -> Any:

    prices = load_prices()
    price = None if target.cli else price_for(target, prices)
    cost = cost_of(usage.input_tokens, usage.cached_input_tokens, usage.output_tokens, target, prices) \
        if usage.input_tokens or usage.output_tokens else None
    basis = (f"list price ${price.input:g}/${price.output:g} per M input/output tokens as of {price.as_of}, cached "
             f"input × {price.cached_factor:g}" if price is not None else "no list price for this model or endpoint")
    return LlmProvenance(
        mode=mode, reason=reason, provider=target.provider, model=target.model, turns=usage.turns,
        tool_calls=usage.tool_calls, input_tokens=usage.input_tokens or None,
        output_tokens=usage.output_tokens or None, cached_input_tokens=usage.cached_input_tokens or None,
        estimated_cost_usd=None if cost is None else round(cost, 6), cost_basis=basis,
        log_path=str(settings.log) if settings.log else None)


def run_with_deadline(fn: Any, deadline: Any, parts: dict[str, Any]) -> Any:
    """Run `fn()` in a worker thread; abandon it at the deadline (StageTimeout).

    On timeout the SQL statement in flight is interrupted and the HTTP client closed (the guarded
    transport refuses any further request anyway), so the worker ends on its own.
    """
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the main thread
            box["error"] = exc

    worker = threading.Thread(target=work, name="pa-llm-stage", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline.remaining()))
    if worker.is_alive():
        sandbox = parts.get("sandbox")
        if sandbox is not None:
            sandbox.interrupt()
        http = parts.get("http")
        if http is not None:
            http.close()
        raise StageTimeout
    if "error" in box:
        raise box["error"]
    return box["value"]


def _run_bounded(summary: Any, rule_result: Any, settings: LlmSettings, target: Target, redactor: Redactor,
                 system: str, user: str, context: dict[str, Any], profile: Path | None, log: Any, usage: Any,
                 ranks: Any = None, query_dirs: tuple[Path, ...] = ()) -> tuple[Review, LlmAnswer]:
    """The conversation and the re-checks in a worker thread, abandoned at the stage deadline.

    query_dirs: the user query directories the summary was read with; the SQL workspace uses the same.
    """
    from pa.llm.transport import Deadline

    deadline = Deadline.after(settings.deadline_s)
    parts: dict[str, Any] = {}
    result: tuple[Review, LlmAnswer] = run_with_deadline(
        lambda: _run(summary, rule_result, settings, target, redactor, system, user, context, profile, log, usage,
                     deadline, parts, ranks, query_dirs), deadline, parts)
    return result


def _run(summary: Any, rule_result: Any, settings: LlmSettings, target: Target, redactor: Redactor,
         system: str, user: str, context: dict[str, Any], profile: Path | None, log: Any, usage: Any,
         deadline: Any, parts: dict[str, Any], ranks: Any = None,
         query_dirs: tuple[Path, ...] = ()) -> tuple[Review, LlmAnswer]:
    from pa.llm.agent import converse, guarded_client, make_adapter
    from pa.llm.sql_tool import SqlLimits, SqlSandbox
    from pa.llm.transport import JsonlLog

    transcript = JsonlLog(settings.transcript)
    tools = ToolBox(summary, rule_result, redactor, None, ranks=ranks, max_string_chars=settings.max_string_chars,
                    max_bytes=settings.tool_max_bytes)
    try:
        if target.cli:
            from pa.llm.claude_cli import run_claude_cli

            answer = run_claude_cli(target, settings, system, user, log, usage, LlmAnswer, deadline=deadline)
            transcript.write({"turn": usage.turns, "role": "final", "answer": answer.model_dump()})
        else:
            if profile is not None and profile.is_file():
                try:
                    tools.sandbox = parts["sandbox"] = SqlSandbox(
                        profile, SqlLimits(settings.sql_time_limit_s, settings.sql_max_rows, settings.sql_max_bytes,
                                           settings.max_string_chars),
                        redactor=redactor, raw_tables=settings.sql_raw_tables,
                        engine_tables=engine_tables(summary, redactor), query_dirs=query_dirs)
                except Exception as exc:  # a profile the SQL workspace cannot open: the other tools still work
                    tools.unavailable = f"{type(exc).__name__}: {scrub(str(exc))[:200]}"
            http = parts["http"] = guarded_client(target, settings, deadline, log, env_secrets())
            try:
                adapter = make_adapter(target, settings, http)
                answer = converse(adapter, system, user, tools, settings, usage, transcript.write)
            finally:
                http.close()
        answer = type(answer).model_validate(redactor.restore(answer.model_dump()))
        return _review(answer, summary, rule_result, context, tools), answer
    finally:
        transcript.close()
        if tools.sandbox is not None:
            tools.sandbox.close()


def _review(answer: LlmAnswer, summary: Any, rule_result: Any, context: dict[str, Any], tools: ToolBox) -> Review:
    """The engine's re-checks (pa.llm.output) with the run's scoped facts."""
    from pa.llm.grounding import ungrounded

    rule_hyps = list(getattr(rule_result, "hypotheses", []))
    mask = name_mask(summary, tools)
    scope = Scope(context=context_facts(context), tools={cid: tools.facts(cid) for cid in tools.results},
                  mask=mask.text)
    warnings_: list[str] = []
    review = apply_answer(answer, rule_hyps, scope, dict(getattr(rule_result, "buckets", {}) or {}), summary,
                          warnings_, params=rule_result.params or None,
                          analysis_ns=getattr(rule_result, "analysis_ns", 0) or None)
    narrative_facts = scope.context + scope.tool_facts() + [f for h in rule_hyps for f in hypothesis_facts(h)]
    loose = ungrounded(mask.text(answer.narrative), narrative_facts)
    if loose:
        warnings_.append(f"llm: the narrative cites numbers {', '.join(loose)} that are not facts of the candidates, "
                         "the context or a tool result (units and quantities checked; kept, flagged)")
    review.narrative_ungrounded = loose
    review.warnings = warnings_
    return review


def name_mask(summary: Any, tools: ToolBox) -> Redactor:
    """A redactor over every name the model may quote (summary names, device names, engine-tool strings).

    Used only locally, to hide the digits inside names from the grounding check. Strings of
    sql_query results are not included: a string literal there must not hide a claimed number.
    """
    mask = from_summary(summary, True)
    for d in summary.devices:
        mask.add("STRING", d.name)
    for group in ((summary.sync.by_api if summary.sync else []), (summary.launch.by_api if summary.launch else []),
                  (summary.mpi.by_op if summary.mpi else [])):
        for item in group:
            mask.add("STRING", item.name)
    stack: list[Any] = [r for cid, r in tools.results.items() if tools.names.get(cid) in ENGINE_TOOLS]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if len(v) <= 2_000 and any(c.isalpha() for c in v):
                mask.add("STRING", v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return mask
