"""pa.toml: the one configuration file of every command, read once before the command runs.

Where: `./pa.toml` (the project directory, i.e. the current directory), else
`$XDG_CONFIG_HOME/pa/pa.toml` (default `~/.config/pa/pa.toml`); the first file found is the whole
configuration (the two are not merged). Precedence, highest first: a command-line flag, an
environment variable where one exists (PA_QUERIES), the file, pa's built-in default.

    rules = ["site.yaml"]            # site rule packs after the built-in ones (pa analyze, pa rules)
    queries = ["my-queries"]         # query directories over the bundled sets (every profile reader)
    templates = "site-templates"     # report / compare templates
    format = "html"                  # pa analyze / pa compare output format (an -o extension still wins)
    noise_floor = 5.0                # pa compare
    max_phases = 4                   # pa summary / analyze / compare
    workers = 4                      # Stage 1 processes for several rank files
    executor = "process"             # or "dask"

    [llm]                            # the LLM stage (docs/llm.md); keys in LLM_KEYS
    model = "anthropic"

Relative paths are relative to the file's directory. A key pa does not know, a value of the wrong
type or a file that is not TOML is one error line naming the file and the key (exit 2): a typo
must not silently fall back to a default. The values reach the commands as click's default map
(`default_map`), so every option keeps exactly one declaration (pa.cli_options) and a flag
always wins over the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from pa.errors import UserError

CONFIG_NAME = "pa.toml"
MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class Setting:
    """One top-level key of pa.toml: its type and the command options it gives a default to."""

    key: str
    kind: str                                  # "paths", "path", "str", "int" or "float"
    targets: tuple[tuple[str, ...], ...]       # (command, [subcommand,] parameter name)
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None


SETTINGS: tuple[Setting, ...] = (
    Setting("rules", "paths", (("analyze", "site_packs"), ("rules", "list", "site_packs"),
                               ("rules", "show", "site_packs"), ("rules", "explain", "site_packs")),
            "site rule packs applied after the built-in ones"),
    Setting("queries", "paths", (("summary", "query_dirs"), ("analyze", "query_dirs"), ("compare", "query_dirs"),
                                 ("queries", "query_dirs"), ("queries", "show", "query_dirs"),
                                 ("queries", "check", "query_dirs"), ("rules", "explain", "query_dirs"),
                                 ("rules", "validate", "query_dirs")),
            "query directories layered over the bundled query sets, first wins"),
    Setting("templates", "path", (("analyze", "templates_dir"), ("compare", "templates_dir")),
            "directory of site templates"),
    Setting("format", "str", (("analyze", "fmt"), ("compare", "fmt")), "output format when -o has no extension",
            choices=("text", "markdown", "html", "json")),
    Setting("noise_floor", "float", (("compare", "noise_floor"),), "pa compare: changes below this % are noise",
            minimum=0, maximum=100),
    Setting("max_phases", "int", (("summary", "max_phases"), ("analyze", "max_phases"), ("compare", "max_phases")),
            "most phases per profile", minimum=1, maximum=64),
    Setting("workers", "int", (("summary", "workers"), ("analyze", "workers")),
            "Stage 1 processes for several rank files", minimum=1),
    Setting("executor", "str", (("summary", "executor"), ("analyze", "executor")), "Stage 1 executor",
            choices=("process", "dask")),
)
BY_KEY = {s.key: s for s in SETTINGS}

# The [llm] section (pa.llm.providers.LlmSettings): key -> type. Values must be positive.
LLM_KEYS: dict[str, type] = {
    "model": str, "base_url": str, "max_turns": int, "timeout_s": float, "deadline_s": float,
    "max_retries": int, "validation_retries": int, "redact": bool, "allow_app_knowledge": bool,
    "sql_time_limit_s": float, "sql_max_rows": int, "sql_max_bytes": int, "sql_raw_tables": bool,
    "tool_max_bytes": int, "max_string_chars": int, "max_cost_usd": float,
    "max_request_tokens": int, "exact_token_count": bool, "retry_initial_s": float}


@dataclass(frozen=True)
class Config:
    """The validated contents of the pa.toml in use (empty when there is none)."""

    path: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)   # top-level keys; paths made absolute
    llm: dict[str, Any] = field(default_factory=dict)


def config_paths(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> list[Path]:
    """Where pa.toml is looked for, first match wins."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [(cwd or Path.cwd()) / CONFIG_NAME, Path(base) / "pa" / CONFIG_NAME]


def load_config(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Read and validate the first pa.toml found (module docs); no file is an empty Config."""
    for path in config_paths(cwd, env):
        if path.is_file():
            return parse_config(path)
    return Config()


def parse_config(path: Path) -> Config:
    """Validate one pa.toml; every problem is a UserError naming the file and the key."""
    from pa.inputs import read_text_file

    try:
        data = tomllib.loads(read_text_file(path, MAX_CONFIG_BYTES, "configuration file"))
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML ({exc})") from None
    values: dict[str, Any] = {}
    llm: dict[str, Any] = {}
    for key, val in data.items():
        if key == "llm":
            if not isinstance(val, dict):
                raise UserError(f"{path}: [llm] must be a table")
            llm = {k: _llm_value(path, k, v) for k, v in val.items()}
            continue
        setting = BY_KEY.get(key)
        if setting is None:
            known = ", ".join([*BY_KEY, "[llm]"])
            raise UserError(f"{path}: unknown key {key!r} (known: {known})")
        values[key] = _value(path, setting, val)
    return Config(path=path, values=values, llm=llm)


def _value(path: Path, s: Setting, val: Any) -> Any:
    where = f"{path}: {s.key}"
    if s.kind == "paths":
        if isinstance(val, str):
            val = [val]
        if not isinstance(val, list) or not all(isinstance(v, str) and v for v in val):
            raise UserError(f"{where} must be a list of paths (strings)")
        return [str(path.parent / Path(v).expanduser()) for v in val]
    if s.kind == "path":
        if not isinstance(val, str) or not val:
            raise UserError(f"{where} must be a path (a string)")
        return str(path.parent / Path(val).expanduser())
    if s.kind == "str":
        if not isinstance(val, str):
            raise UserError(f"{where} must be a string")
        if s.choices and val not in s.choices:
            raise UserError(f"{where} must be one of {', '.join(s.choices)} (got {val!r})")
        return val
    number = int if s.kind == "int" else float
    if isinstance(val, bool) or not isinstance(val, (int, float)) or (number is int and not isinstance(val, int)):
        raise UserError(f"{where} must be {'an integer' if number is int else 'a number'}")
    if not (s.minimum is None or val >= s.minimum) or not (s.maximum is None or val <= s.maximum):
        bound = f"between {s.minimum} and {s.maximum}" if s.maximum is not None else f"at least {s.minimum}"
        raise UserError(f"{where} must be {bound}")
    return number(val)


def _llm_value(path: Path, key: str, val: Any) -> Any:
    typ = LLM_KEYS.get(key)
    if typ is None:
        raise UserError(f"{path}: unknown key 'llm.{key}' (known: {', '.join(LLM_KEYS)})")
    if typ is float and isinstance(val, int) and not isinstance(val, bool):
        val = float(val)
    if not isinstance(val, typ) or (typ is int and isinstance(val, bool)):
        raise UserError(f"{path}: llm.{key} must be {typ.__name__}")
    if isinstance(val, (int, float)) and not isinstance(val, bool) and not val > 0:  # also NaN
        raise UserError(f"{path}: llm.{key} must be positive")
    return val


def default_map(config: Config) -> dict[str, Any]:
    """Click's default map: for each command (and subcommand) the option defaults the file sets."""
    out: dict[str, Any] = {}
    for key, val in config.values.items():
        for target in BY_KEY[key].targets:
            node = out
            for name in target[:-1]:
                node = node.setdefault(name, {})
            node[target[-1]] = val
    return out
