"""Which provider, model, key and endpoint the LLM stage uses, and the stage's settings.

Precedence, highest first: command-line flags, `pa.toml` (`./pa.toml`, then
`$XDG_CONFIG_HOME/pa/pa.toml` or `~/.config/pa/pa.toml`, section `[llm]`), environment, defaults.

Where a key may go (docs/llm.md, "What leaves the machine"): a provider's key is sent only to that
provider's default host, or to a base URL the user set *for that provider*: its own environment
variable (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL) or `--base-url` (or pa.toml
`base_url`) together with an explicit provider (`--model provider:name` or `--model provider`).

- `--model provider:name` / `--model provider`: that provider; endpoint `--base-url`, else the
  provider's base-URL variable, else its default host. No key: a reason (rules only), except for
  `openai` with a base URL (an on-prem OpenAI-compatible server: a placeholder key is sent).
- a bare model name with `--base-url`: an OpenAI-compatible server at that URL, **no key** sent.
- a bare model name pa can place (`claude*`, `gpt*`/`o1`/`o3`/`o4`, `gemini*`): that provider, its
  own base-URL variable or default host; no key for it: a reason naming the missing variable.
- a bare model name pa cannot place: OPENAI_BASE_URL's server when that is set, else an error that
  lists the accepted forms.
- no `--model`: the first provider with a key (ANTHROPIC_API_KEY, OPENAI_API_KEY,
  GOOGLE_API_KEY / GEMINI_API_KEY) at its default host or own base URL; else OPENAI_BASE_URL alone
  (an on-prem server); else nothing (rules only). `--base-url` without `--model` is an error: pa
  will not guess which key belongs to an endpoint.
- `--model claude-cli[:MODEL]`: the Claude Code command-line client (`claude -p`, one call, no
  tools; `$PA_CLAUDE_CLI` names another executable). Used only when asked for, never because it
  happens to be on PATH: data must not leave the machine unasked.

The transport (pa.llm.transport) enforces the same rule on every request: a request whose
origin is not the target's endpoint is refused before it is sent.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pa.errors import UserError

PROVIDERS = ("anthropic", "openai", "gemini")
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1", "gemini": "gemini-2.5-flash"}
KEY_ENV = {"anthropic": ("ANTHROPIC_API_KEY",), "openai": ("OPENAI_API_KEY",),
           "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
BASE_URL_ENV = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL",
                "gemini": "GOOGLE_GEMINI_BASE_URL"}
DEFAULT_HOSTS = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com",
                 "gemini": "https://generativelanguage.googleapis.com"}
_ALIASES = {"google": "gemini", "claude": "anthropic"}
_PRETTY = {"anthropic": "Anthropic", "openai": "OpenAI", "gemini": "Gemini"}
CLAUDE_CLI = "claude-cli"  # pseudo-provider: the `claude` command-line client, one call, no tools
CLAUDE_CLI_ENV = "PA_CLAUDE_CLI"  # executable name or path (default `claude`)
NO_KEY_PLACEHOLDER = "not-needed"  # sent to on-prem OpenAI-compatible servers that ignore keys
ENABLE_HINT = ("set ANTHROPIC_API_KEY, OPENAI_API_KEY or GOOGLE_API_KEY, or OPENAI_BASE_URL (or --model "
               "openai:NAME --base-url URL) for an OpenAI-compatible server, or use --model claude-cli, to "
               "enable the LLM stage")
ACCEPTED_FORMS = ("provider:model (anthropic:claude-sonnet-4-6, openai:gpt-4.1, gemini:gemini-2.5-flash; "
                  "openai:NAME with --base-url for an OpenAI-compatible server), a provider name (anthropic, "
                  "openai, gemini), a model name starting with claude, gpt, o1, o3, o4 or gemini, or "
                  "claude-cli[:MODEL]")


@dataclass(frozen=True)
class LlmSettings:
    """Everything the stage needs besides the profile (flags > pa.toml > defaults)."""

    model: str | None = None
    base_url: str | None = None
    max_turns: int = 8
    timeout_s: float = 120.0       # per HTTP request (bounded further by the stage deadline)
    deadline_s: float = 120.0      # the whole stage (--llm-timeout); then the rules-only report
    max_retries: int = 3
    validation_retries: int = 2
    redact: bool = False
    allow_app_knowledge: bool = False
    dry_run: bool = False
    exact_token_count: bool = False
    yes: bool = False
    require: bool = False
    log: Path | None = None
    transcript: Path | None = None
    sql_time_limit_s: float = 2.0
    sql_max_rows: int = 200
    sql_max_bytes: int = 16_000
    sql_raw_tables: bool = False   # --sql-raw-tables: the export's own tables (not the environment)
    tool_max_bytes: int = 12_000   # any tool result, after redaction
    max_string_chars: int = 200    # any one profile string in the prompt or a tool result
    max_cost_usd: float = 2.0      # refuse a run whose estimated cost (high end) is above this
    max_request_tokens: int = 100_000  # refuse any single request estimated above this
    retry_initial_s: float = 1.0   # first back-off of the Gemini SDK's retries (others: SDK default)
    config_file: Path | None = None


@dataclass(frozen=True)
class Target:
    """A resolved provider endpoint."""

    provider: str
    model: str
    api_key: str
    base_url: str | None
    cli: str | None = None            # the executable, for the claude-cli pseudo-provider
    key_from: str | None = None       # the environment variable the key came from; None: no key sent
    base_url_from: str | None = None  # "--base-url" or the variable the endpoint came from

    def endpoint(self) -> str:
        """Where requests go: the base URL, else the provider's default host."""
        return self.base_url or DEFAULT_HOSTS.get(self.provider, "")

    def label(self) -> str:
        """provider:model @ endpoint, for messages (never the key)."""
        if self.cli:
            return f"{self.provider}:{self.model} (the `claude` command-line client at {self.cli})"
        from pa.controls import escape_controls, shown_url

        return escape_controls(f"{self.provider}:{self.model}") + f" @ {shown_url(self.endpoint())}"

    def key_note(self) -> str:
        """Which key is sent, for the privacy line (never the key itself)."""
        if self.cli:
            return "under the `claude` client's own login"
        if self.key_from is None:
            return "no API key sent"
        return f"with the key from {self.key_from}"


def load_settings(flags: dict[str, Any], cwd: Path | None = None) -> LlmSettings:
    """Merge pa.toml's [llm] section (pa.config validates it) under the flags that were given.

    A flag of None is a flag not given. `flags["config"]` is the configuration the CLI read (its
    --config and trust decisions); without it the files are read here (pa.config.load_config). The
    [llm] limits of an untrusted project file only lower a limit: the smaller value wins.
    """
    from pa.config import Config, load_config

    given_config = flags.get("config")
    config = given_config if isinstance(given_config, Config) else load_config(cwd)
    settings = replace(LlmSettings(), config_file=config.path, **config.llm)
    settings = replace(settings, **{k: min(v, getattr(settings, k)) for k, v in config.llm_limits.items()})
    given = {k: v for k, v in flags.items() if v is not None and k != "config" and hasattr(settings, k)}
    return replace(settings, **given)


def _key_for(provider: str, env: dict[str, str]) -> tuple[str, str] | None:
    """(variable name, key) of the provider's first key variable that is set."""
    for name in KEY_ENV[provider]:
        if env.get(name):
            return name, env[name]
    return None


def _guess_provider(model: str) -> str | None:
    low = model.lower()
    if low.startswith("claude"):
        return "anthropic"
    if low.startswith("gemini"):
        return "gemini"
    if low.startswith(("gpt", "o1", "o3", "o4")):
        return "openai"
    return None


def claude_cli(env: dict[str, str]) -> str | None:
    """Path of the `claude` command-line client, or None ($PA_CLAUDE_CLI, else `claude` on PATH)."""
    name = env.get(CLAUDE_CLI_ENV, "claude")
    if not name.strip():
        return None
    return shutil.which(name, path=env.get("PATH"))


class NoProvider(str):
    """Why no provider can be used: the stage stays rules-only and says so (exit 2 with --require-llm)."""

    __slots__ = ()


def resolve(settings: LlmSettings, env: dict[str, str] | None = None) -> Target | NoProvider:
    """The provider to talk to, or why there is none (module docs: where a key may go).

    Raises UserError for a `--model` pa cannot place and for `--base-url` without `--model`.
    """
    env = dict(os.environ) if env is None else env
    if settings.model:
        return _explicit(settings.model.strip(), settings, env)
    if settings.base_url:
        from pa.controls import shown_url

        raise UserError(f"--base-url {shown_url(settings.base_url)}: also say which model to ask there "
                        "(--model openai:NAME for an OpenAI-compatible server, or --model anthropic:NAME / "
                        "gemini:NAME for that provider's API behind this URL, which then receives its key)")
    for provider in PROVIDERS:
        found = _key_for(provider, env)
        if found:
            var = BASE_URL_ENV[provider]
            return _target(provider, DEFAULT_MODELS[provider], found, env.get(var) or None,
                           var if env.get(var) else None)
    if env.get(BASE_URL_ENV["openai"]):
        return _target("openai", DEFAULT_MODELS["openai"], None, env[BASE_URL_ENV["openai"]],
                       BASE_URL_ENV["openai"])
    return NoProvider(f"no LLM provider configured: {ENABLE_HINT}")


def resolve_target(settings: LlmSettings, env: dict[str, str] | None = None) -> Target | None:
    """The provider to talk to, or None when none can be used (`resolve` says why)."""
    got = resolve(settings, env)
    return got if isinstance(got, Target) else None


def _explicit(spec: str, settings: LlmSettings, env: dict[str, str]) -> Target | NoProvider:
    head, _sep, tail = spec.partition(":")
    low = head.lower()
    if low == CLAUDE_CLI:
        cli = claude_cli(env)
        if cli is None:
            raise UserError(f"--model {spec}: the `claude` command-line client is not on PATH"
                            + (f" (${CLAUDE_CLI_ENV} is empty)" if not env.get(CLAUDE_CLI_ENV, "x").strip()
                               else ""))
        return Target(provider=CLAUDE_CLI, model=tail or "default", api_key="", base_url=None, cli=cli)
    provider = _ALIASES.get(low, low)
    if provider in PROVIDERS:
        # An explicit provider: --base-url (or pa.toml base_url) is set for it, so its key may go there.
        model = tail or DEFAULT_MODELS[provider]
        if settings.base_url:
            return _target(provider, model, _key_for(provider, env), settings.base_url, "--base-url", spec)
        var = BASE_URL_ENV[provider]
        return _target(provider, model, _key_for(provider, env), env.get(var) or None,
                       var if env.get(var) else None, spec)
    # A bare model name (an Ollama tag such as llama3.1:8b keeps its colon).
    if settings.base_url:
        return _target("openai", spec, None, settings.base_url, "--base-url", spec, keyless=True)
    guessed = _guess_provider(spec)
    if guessed is not None:
        var = BASE_URL_ENV[guessed]
        return _target(guessed, spec, _key_for(guessed, env), env.get(var) or None,
                       var if env.get(var) else None, spec)
    if env.get(BASE_URL_ENV["openai"]):
        return _target("openai", spec, _key_for("openai", env), env[BASE_URL_ENV["openai"]],
                       BASE_URL_ENV["openai"], spec)
    raise UserError(f"--model {spec}: pa cannot tell which provider serves {spec!r} and no OpenAI-compatible "
                    f"server is configured (--base-url or OPENAI_BASE_URL); accepted forms: {ACCEPTED_FORMS}")


def _target(provider: str, model: str, found: tuple[str, str] | None, base_url: str | None,
            base_url_from: str | None, spec: str | None = None, keyless: bool = False) -> Target | NoProvider:
    """A Target, or why not (no key for a provider that needs one)."""
    if keyless or (found is None and provider == "openai" and base_url):
        return Target(provider=provider, model=model, api_key=NO_KEY_PLACEHOLDER, base_url=base_url,
                      key_from=None, base_url_from=base_url_from)
    if found is None:
        names = " or ".join(KEY_ENV[provider])
        what = f"--model {spec}" if spec else provider
        hint = (" (--model claude-cli uses the `claude` command-line client instead)"
                if provider == "anthropic" else "")
        return NoProvider(f"{what}: no {_PRETTY[provider]} key ({names} is not set){hint}")
    var, key = found
    return Target(provider=provider, model=model, api_key=key, base_url=base_url, key_from=var,
                  base_url_from=base_url_from)
