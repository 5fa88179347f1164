"""Which provider, model, key and endpoint the LLM stage uses, and the stage's settings.

Precedence, highest first: command-line flags, `pa.toml` (`./pa.toml`, then
`$XDG_CONFIG_HOME/pa/pa.toml` or `~/.config/pa/pa.toml`, section `[llm]`), environment, defaults.

Provider selection: `--model provider:model`, or a bare provider name for its default model, or a
bare model name whose provider is auto-detected; with no `--model`, the first provider with a key
in the order ANTHROPIC_API_KEY, OPENAI_API_KEY, GOOGLE_API_KEY / GEMINI_API_KEY. Endpoints:
`--base-url`, else ANTHROPIC_BASE_URL / OPENAI_BASE_URL / GOOGLE_GEMINI_BASE_URL. An OpenAI-
compatible on-prem server (vLLM, llama.cpp, Ollama) given by a base URL needs no key; a placeholder
key is sent because the SDK insists on one.

`claude` CLI fallback: with no API key for the chosen (or any) provider, no base URL, and the Claude
Code command-line client on PATH (`$PA_CLAUDE_CLI` names another executable; set it empty to
disable the fallback), the stage makes one single-shot `claude -p` call (provider `claude-cli`,
no tools). `--model claude-cli[:MODEL]` selects it explicitly.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomllib

from engine.errors import UserError

PROVIDERS = ("anthropic", "openai", "gemini")
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4.1", "gemini": "gemini-2.5-flash"}
KEY_ENV = {"anthropic": ("ANTHROPIC_API_KEY",), "openai": ("OPENAI_API_KEY",),
           "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
BASE_URL_ENV = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL",
                "gemini": "GOOGLE_GEMINI_BASE_URL"}
_ALIASES = {"google": "gemini", "claude": "anthropic"}
CLAUDE_CLI = "claude-cli"  # pseudo-provider: the `claude` command-line client, one call, no tools
CLAUDE_CLI_ENV = "PA_CLAUDE_CLI"  # executable name or path; empty disables the fallback
NO_KEY_PLACEHOLDER = "not-needed"  # sent to on-prem OpenAI-compatible servers that ignore keys
ENABLE_HINT = ("set ANTHROPIC_API_KEY, OPENAI_API_KEY or GOOGLE_API_KEY (or --model/--base-url for an "
               "OpenAI-compatible server, or put the `claude` command-line client on PATH) to enable the "
               "LLM stage")


@dataclass(frozen=True)
class LlmSettings:
    """Everything the stage needs besides the profile (flags > pa.toml > defaults)."""

    model: str | None = None
    base_url: str | None = None
    max_turns: int = 8
    timeout_s: float = 120.0
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
    retry_initial_s: float = 1.0   # first back-off of the Gemini SDK's retries (others: SDK default)
    config_file: Path | None = None
    unknown: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Target:
    """A resolved provider endpoint."""

    provider: str
    model: str
    api_key: str
    base_url: str | None
    cli: str | None = None  # the executable, for the claude-cli pseudo-provider

    def label(self) -> str:
        """provider:model @ endpoint, for messages (never the key)."""
        if self.cli:
            return f"{self.provider}:{self.model} (the `claude` command-line client at {self.cli})"
        return f"{self.provider}:{self.model}" + (f" @ {self.base_url}" if self.base_url else "")


def config_paths(cwd: Path | None = None) -> list[Path]:
    """Where pa.toml is looked for, first match wins."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [(cwd or Path.cwd()) / "pa.toml", Path(base) / "pa" / "pa.toml"]


_TOML_KEYS = {"model": str, "base_url": str, "max_turns": int, "timeout_s": float, "max_retries": int,
              "validation_retries": int, "redact": bool, "allow_app_knowledge": bool,
              "sql_time_limit_s": float, "sql_max_rows": int, "sql_max_bytes": int,
              "exact_token_count": bool, "retry_initial_s": float}


def load_settings(flags: dict[str, Any], cwd: Path | None = None) -> LlmSettings:
    """Merge pa.toml's [llm] section under the flags that were given (None = not given)."""
    settings = LlmSettings()
    for path in config_paths(cwd):
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise UserError(f"{path}: invalid TOML ({exc})") from exc
            section = data.get("llm", {})
            values: dict[str, Any] = {}
            unknown = []
            for key, val in section.items():
                typ = _TOML_KEYS.get(key)
                if typ is None:
                    unknown.append(key)
                    continue
                if typ is float and isinstance(val, int) and not isinstance(val, bool):
                    val = float(val)
                if not isinstance(val, typ) or (typ is int and isinstance(val, bool)):
                    raise UserError(f"{path}: [llm] {key} must be {typ.__name__}")
                values[key] = val
            settings = replace(settings, config_file=path, unknown=tuple(unknown), **values)
            break
    given = {k: v for k, v in flags.items() if v is not None and hasattr(settings, k)}
    return replace(settings, **given)


def _key_for(provider: str, env: dict[str, str]) -> str | None:
    for name in KEY_ENV[provider]:
        if env.get(name):
            return env[name]
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


def resolve_target(settings: LlmSettings, env: dict[str, str] | None = None) -> Target | None:
    """The provider to talk to, or None when nothing is configured (rules only)."""
    env = dict(os.environ) if env is None else env
    provider: str | None = None
    model: str | None = None
    if settings.model:
        head, sep, tail = settings.model.partition(":")
        if head.lower() == CLAUDE_CLI:
            cli = claude_cli(env)
            if cli is None:
                raise UserError(f"--model {settings.model}: the `claude` command-line client is not on PATH")
            return Target(provider=CLAUDE_CLI, model=tail or "default", api_key="", base_url=None, cli=cli)
        head = _ALIASES.get(head.lower(), head.lower()) if sep or head.lower() in (*PROVIDERS, *_ALIASES) \
            else head
        if sep:
            if head not in PROVIDERS:
                raise UserError(f"--model {settings.model}: unknown provider {head!r}; "
                                f"use one of {', '.join((*PROVIDERS, CLAUDE_CLI))}")
            provider, model = head, tail or DEFAULT_MODELS[head]
        elif head in PROVIDERS:
            provider, model = head, DEFAULT_MODELS[head]
        else:
            model = settings.model
            provider = _guess_provider(model) or ("openai" if settings.base_url else None)
    if provider is None:
        provider = next((p for p in PROVIDERS if _key_for(p, env)), None)
        if provider is None and settings.base_url:
            provider = "openai"
    if provider is None:
        return _cli_fallback(None, env)
    base_url = settings.base_url or env.get(BASE_URL_ENV[provider]) or None
    key = _key_for(provider, env)
    if key is None:
        if provider == "openai" and base_url:
            key = NO_KEY_PLACEHOLDER
        elif provider == "anthropic" and not base_url:
            explicit = model if settings.model and model != DEFAULT_MODELS["anthropic"] else None
            return _cli_fallback(explicit, env)
        else:
            return None
    return Target(provider=provider, model=model or DEFAULT_MODELS[provider], api_key=key,
                  base_url=base_url)


def _cli_fallback(model: str | None, env: dict[str, str]) -> Target | None:
    """No API key: the `claude` command-line client when it is on PATH, else None (rules only)."""
    cli = claude_cli(env)
    if cli is None:
        return None
    return Target(provider=CLAUDE_CLI, model=model or "default", api_key="", base_url=None, cli=cli)
