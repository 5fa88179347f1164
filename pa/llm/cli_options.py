"""The LLM stage's `pa analyze` options, defined once here and collected into one `llm_extra` dict.

`pa.cli_analyze` applies `@llm_cli_options` and passes `llm_extra` through `LlmOptions.extra`,
so adding a stage option never touches the report engineer's CLI code. Importing this module is
cheap: it imports click only, never an SDK. --model, --base-url and --no-llm stay in cli_analyze.
`pa compare` takes the subset `COMPARE_OPTIONS` through `llm_cli_options_for` (one call, no tools,
so no --max-turns, --transcript or --allow-app-knowledge).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("--max-turns", "max_turns", {"type": click.IntRange(1, 50), "default": None,
                                  "help": "LLM: model requests at most, the forced final answer included "
                                          "(default 8)."}),
    ("--dry-run", "dry_run", {"is_flag": True, "default": None,
                              "help": "LLM: print the exact prompt and tool schemas to stderr, send nothing."}),
    ("--redact", "redact", {"is_flag": True, "default": None,
                            "help": "LLM: replace every profile string (kernel names, marker text and domains, "
                                    "host names, paths, ...) by placeholders in everything sent."}),
    ("--allow-app-knowledge", "allow_app_knowledge", {
        "is_flag": True, "default": None,
        "help": "LLM: let the model use what it knows about the application and its libraries."}),
    ("--log", "log", {"type": click.Path(path_type=Path), "default": None,
                      "help": "LLM: append every HTTP request/response body as JSON lines to FILE."}),
    ("--transcript", "transcript", {"type": click.Path(path_type=Path), "default": None,
                                    "help": "LLM: write the conversation (turns, tool calls, answer) to FILE."}),
    ("--exact-token-count", "exact_token_count", {
        "is_flag": True, "default": None,
        "help": "LLM: ask the provider's token-counting endpoint (Anthropic, Gemini) for the pre-flight "
                "estimate; sends the prompt there (not billed). OpenAI has none: the estimate is used."}),
    ("--yes", "yes", {"is_flag": True, "default": None,
                      "help": "LLM: skip the cost confirmation (never asked when stdin is not a TTY); the "
                              "cost and request-size ceilings still apply."}),
    ("--require-llm", "require", {"is_flag": True, "default": None,
                                  "help": "LLM: fail (exit 2) when no provider can be used or the stage fails, "
                                          "instead of falling back to rules only."}),
    ("--llm-timeout", "deadline_s", {"type": click.FloatRange(min=1.0), "default": None, "metavar": "SECONDS",
                                     "help": "LLM: overall deadline of the stage, retries included (default 120); "
                                             "then the rules-only report."}),
    ("--max-cost", "max_cost_usd", {"type": click.FloatRange(min=0.0), "default": None, "metavar": "USD",
                                    "help": "LLM: refuse a run whose estimated cost may exceed USD, even with --yes "
                                            "(default 2.00)."}),
    ("--sql-raw-tables", "sql_raw_tables", {
        "is_flag": True, "default": None,
        "help": "LLM: let sql_query read the export's own tables too (not the environment or command-line "
                "tables; never with --redact). Default: pa's relation views only."}),
]


def _apply(func: F, options: list[tuple[str, str, dict[str, Any]]]) -> F:
    names = [dest for _, dest, _ in options]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        extra = {n: kwargs.pop(n) for n in names if n in kwargs}
        # click gives False for an absent flag; None means "not given" so pa.toml can decide.
        kwargs["llm_extra"] = {k: v for k, v in extra.items() if v is not None and v is not False}
        # The configuration the group read (pa.cli.main: --config, the trust model), so that the
        # stage's settings come from the same files and not from a second look at the directory.
        root = click.get_current_context(silent=True)
        config = root.find_root().obj if root is not None else None
        if config is not None:
            kwargs["llm_extra"]["config"] = config
        return func(*args, **kwargs)

    cmd: Any = wrapper
    for flag, dest, kw in reversed(options):
        cmd = click.option(flag, dest, **kw)(cmd)
    return cmd


def llm_cli_options(func: F) -> F:
    """Add the LLM options to a click command; the command receives them as `llm_extra`."""
    return _apply(func, _OPTIONS)


COMPARE_OPTIONS = ("dry_run", "redact", "log", "yes", "require", "deadline_s", "max_cost_usd")


def llm_cli_options_for(*dests: str) -> Callable[[F], F]:
    """Add a subset of the LLM options (by destination name), e.g. for `pa compare` (one call, no tools)."""
    chosen = [o for o in _OPTIONS if o[1] in dests]
    missing = set(dests) - {o[1] for o in chosen}
    if missing:
        raise ValueError(f"unknown LLM options: {', '.join(sorted(missing))}")
    return lambda func: _apply(func, chosen)
