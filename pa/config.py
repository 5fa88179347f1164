"""pa.toml: the one configuration file of every command, read once before the command runs.

Where, and how far each file is trusted (docs/security.md, "Configuration files"):

- `$XDG_CONFIG_HOME/pa/pa.toml` (default `~/.config/pa/pa.toml`), the user's own file: trusted.
- `./pa.toml` (the project directory, i.e. the current directory): it may have come with the data
  (a cloned repository, an unpacked archive), so unless the user trusted it it may only set what
  cannot send data anywhere, load code-like data or weaken a guard: `format`, `noise_floor`,
  `max_phases`, and [llm] values that *tighten* a limit (`redact = true`, a lower cost ceiling, ...).
  Every other key it sets is ignored and named in one warning. It is trusted when the user says so:
  `pa config trust` records its path and SHA-256 in the user's config directory (`trusted.json`);
  an edited file is no longer trusted.
- `pa --config FILE` (or `$PA_CONFIG`): that file alone, trusted: the user named it.

The user's file is the base and the project file is laid over it, key by key. Precedence, highest
first: a command-line flag, an environment variable where one exists (PA_QUERIES), the files, pa's
built-in default.

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

from pa.errors import UserError, closest

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
            "Stage 1 processes for several rank files", minimum=1, maximum=256),
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


# What a project file (./pa.toml, not trusted) may set: nothing that sends data anywhere, loads
# code-like data (rule packs, templates, query files), starts processes or weakens a guard.
PROJECT_SAFE_KEYS = frozenset({"format", "noise_floor", "max_phases"})
# [llm] limits an untrusted project file may only tighten: numbers where the smaller wins, and
# switches it may set only to the value given here (redact on, the raw tables and app knowledge off).
LLM_LOWER_IS_TIGHTER = frozenset({
    "max_turns", "timeout_s", "deadline_s", "max_retries", "validation_retries", "sql_time_limit_s",
    "sql_max_rows", "sql_max_bytes", "tool_max_bytes", "max_string_chars", "max_cost_usd",
    "max_request_tokens"})
LLM_TIGHT_SWITCHES = {"redact": True, "sql_raw_tables": False, "allow_app_knowledge": False}
TRUST_FILE = "trusted.json"
CONFIG_ENV = "PA_CONFIG"


@dataclass(frozen=True)
class Config:
    """The validated configuration in use: the user's file with the project file laid over it.

    `llm_limits` are the [llm] numbers of an untrusted project file: they can only lower a limit
    (pa.llm.providers.load_settings takes the smaller). `ignored` names what an untrusted project
    file set and pa did not use (said once on stderr, and by `pa config show`).
    """

    path: Path | None = None                               # the last file read (the project's, if any)
    values: dict[str, Any] = field(default_factory=dict)   # top-level keys; paths made absolute
    llm: dict[str, Any] = field(default_factory=dict)
    llm_limits: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, Path] = field(default_factory=dict)  # "max_phases" / "llm.model" -> its file
    untrusted: Path | None = None                          # a project file read with the limits above
    ignored: tuple[str, ...] = ()

    def missing_path(self, given: Mapping[str, Any]) -> str | None:
        """A missing path among the option values this configuration gave a command (missing_config_path)."""
        return missing_config_path(self, given) if self.values else None


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user's own configuration directory ($XDG_CONFIG_HOME/pa, default ~/.config/pa)."""
    environ = os.environ if env is None else env
    return Path(environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")) / "pa"


def config_paths(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> list[Path]:
    """Where pa.toml is looked for: the project's file, then the user's (both are read)."""
    return [(cwd or Path.cwd()) / CONFIG_NAME, user_config_dir(env) / CONFIG_NAME]


def load_config(cwd: Path | None = None, env: Mapping[str, str] | None = None,
                explicit: Path | None = None) -> Config:
    """The configuration in use (module docs): `explicit` alone, else the user's file under the project's.

    `explicit` (pa --config, else $PA_CONFIG) is trusted: the user named it.
    """
    environ = os.environ if env is None else env
    if explicit is None and environ.get(CONFIG_ENV):
        explicit = Path(environ[CONFIG_ENV])
    if explicit is not None:
        if not explicit.is_file():
            raise UserError(f"--config {explicit}: no such file")
        return _layer(Config(), parse_config(explicit), trusted=True)
    project, user = config_paths(cwd, env)
    config = Config()
    if user.is_file():
        config = _layer(config, parse_config(user), trusted=True)
    if project.is_file() and not _same_file(project, user):
        config = _layer(config, parse_config(project), trusted=is_trusted(project, env))
    return config


def _same_file(a: Path, b: Path) -> bool:
    try:
        return b.exists() and a.samefile(b)
    except OSError:
        return False


def _layer(base: Config, top: Config, *, trusted: bool) -> Config:
    """`top`'s values over `base`'s; an untrusted `top` only where PROJECT_SAFE_KEYS / the [llm] limits allow."""
    assert top.path is not None
    values, llm, limits = dict(base.values), dict(base.llm), dict(base.llm_limits)
    sources, ignored = dict(base.sources), list(base.ignored)
    for key, val in top.values.items():
        if trusted or key in PROJECT_SAFE_KEYS:
            values[key], sources[key] = val, top.path
        else:
            ignored.append(key)
    for key, val in top.llm.items():
        if trusted:
            llm[key] = val
        elif key in LLM_LOWER_IS_TIGHTER:
            limits[key] = val
        elif key in LLM_TIGHT_SWITCHES and val == LLM_TIGHT_SWITCHES[key]:
            llm[key] = val
        else:
            ignored.append(f"llm.{key}")
            continue
        sources[f"llm.{key}"] = top.path
    return Config(path=top.path, values=values, llm=llm, llm_limits=limits, sources=sources,
                  untrusted=base.untrusted if trusted else top.path, ignored=tuple(ignored))


def ignored_warning(config: Config) -> str | None:
    """The one line that says what an untrusted project file set and pa did not use, and how to trust it."""
    if not config.ignored or config.untrusted is None:
        return None
    return (f"{config.untrusted} is not trusted (it may have come with the data): ignored "
            f"{', '.join(config.ignored)}. If you wrote it, trust it with `pa config trust` "
            f"(or run pa --config {config.untrusted}); docs/security.md")


def _digest(path: Path) -> str:
    import hashlib

    from pa.inputs import read_text_file

    return hashlib.sha256(read_text_file(path, MAX_CONFIG_BYTES, "configuration file").encode()).hexdigest()


def _trust_store(env: Mapping[str, str] | None) -> Path:
    return user_config_dir(env) / TRUST_FILE


def _trusted_files(env: Mapping[str, str] | None) -> dict[str, str]:
    """Each trusted project file's path -> its sha256 the user trusted; an unreadable store trusts nothing."""
    import json

    store = _trust_store(env)
    try:
        data = json.loads(store.read_text(encoding="utf-8")) if store.is_file() else {}
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def is_trusted(path: Path, env: Mapping[str, str] | None = None) -> bool:
    """Whether the user recorded trust in this file with exactly these contents."""
    recorded = _trusted_files(env).get(str(path.resolve()))
    return recorded is not None and recorded == _digest(path)


def set_trust(path: Path, trusted: bool, env: Mapping[str, str] | None = None) -> Path:
    """Record (or withdraw) trust in `path` as it is now; returns the store written."""
    import json
    import tempfile

    if trusted:
        parse_config(path)          # a file pa cannot read is not trusted into use
    files = _trusted_files(env)
    key = str(path.resolve())
    if trusted:
        files[key] = _digest(path)
    else:
        files.pop(key, None)
    store = _trust_store(env)
    store.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=store.parent, delete=False, suffix=".tmp") as fh:
        json.dump({"files": files}, fh, indent=1, sort_keys=True)
    Path(fh.name).replace(store)
    return store


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
            raise UserError(f"{path}: unknown key {key!r}; "
                            f"{closest(key, [*BY_KEY, 'llm'], '`pa config show` lists the keys')}")
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
        raise UserError(f"{path}: unknown key 'llm.{key}'; {closest(key, LLM_KEYS, 'docs/llm.md lists them')}")
    if typ is float and isinstance(val, int) and not isinstance(val, bool):
        val = float(val)
    if not isinstance(val, typ) or (typ is int and isinstance(val, bool)):
        raise UserError(f"{path}: llm.{key} must be {typ.__name__}")
    if isinstance(val, (int, float)) and not isinstance(val, bool) and not val > 0:  # also NaN
        raise UserError(f"{path}: llm.{key} must be positive")
    return val


def missing_config_path(config: Config, given: Mapping[str, Any]) -> str | None:
    """The problem with a path a pa.toml gave a command's option, naming the file and the key; None if none.

    `given`: the command's parameters whose value came from the configuration (click's default
    map), by parameter name. Why here and not where the path is used: there the value is only an
    option's value, and the error read "--templates …/site-templates: not a directory", a flag the
    user never typed. Directories (queries, templates) must be directories, rule packs files.
    """
    for name, value in given.items():
        setting = next((st for st in SETTINGS if st.kind in ("path", "paths")
                        and any(t[-1] == name for t in st.targets)), None)
        if setting is None or value is None:
            continue
        where = config.sources.get(setting.key, config.path)
        want_dir = setting.key != "rules"
        for path in (value if isinstance(value, (list, tuple)) else [value]):
            path = Path(path)
            if want_dir and not path.is_dir():
                return (f"{where}: {setting.key} names {path}, which is not a directory; create it, or remove "
                        f"{setting.key} from that file")
            if not want_dir and not path.is_file():
                return (f"{where}: {setting.key} names {path}, which is not a file; write it, or remove it from "
                        f"{setting.key}")
    return None


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
