"""`pa config show|trust|untrust`: the configuration in use, where each value came from, and trust.

A project's `./pa.toml` may have come with the data, so until the user trusts it pa uses only its
harmless settings (pa.config, docs/security.md); `pa config trust` records the user's decision for
the file as it is now, `pa config untrust` withdraws it.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from pa.cli import SuggestingGroup
from pa.errors import one_line_errors

config_group: click.Group = SuggestingGroup(
    "config", help="Show the configuration pa.toml and the environment give.")


@config_group.command("show")
@click.pass_context
@one_line_errors
def show(ctx: click.Context) -> None:
    """Print every setting with its value and its source (flag-free: what a command starts from)."""
    from pa.cli_options import QUERIES_ENV
    from pa.config import LLM_KEYS, SETTINGS, Config, config_paths, ignored_warning, load_config
    from pa.controls import escape_controls, shown_url

    root = ctx.find_root().obj
    config = root if isinstance(root, Config) else load_config()
    looked = ", ".join(str(p) for p in config_paths())
    files = sorted({str(p) for p in config.sources.values()} | ({str(config.path)} if config.path else set()))
    listed = ", ".join(files) if files else f"(none; looked for {looked})"
    click.echo(escape_controls(f"configuration files: {listed}"))
    if config.untrusted is not None:
        click.echo(escape_controls(f"not trusted: {config.untrusted} (only format, noise_floor, max_phases and "
                                   "tighter [llm] limits are used; `pa config trust` to trust it)"))
    env_queries = os.environ.get(QUERIES_ENV)
    for s in SETTINGS:
        value: object
        commands = sorted({" ".join(t[:-1]) for t in s.targets})
        if s.key == "queries" and env_queries:
            value, source = [d for d in env_queries.split(os.pathsep) if d], f"${QUERIES_ENV}"
        elif s.key in config.values:
            value, source = config.values[s.key], str(config.sources.get(s.key, config.path))
        else:
            value, source = f"({_builtin_default(s.targets[0])})", "built-in default"
        click.echo(escape_controls(f"{s.key:<12} = {_show(value):<40} # {source}; {s.help} ({', '.join(commands)})"))
    for key in LLM_KEYS:
        source = str(config.sources.get(f"llm.{key}", config.path))
        if key in config.llm:
            value = shown_url(config.llm[key]) if key == "base_url" else _show(config.llm[key])
            click.echo(escape_controls(f"llm.{key:<8} = {value:<40} # {source}"))
        elif key in config.llm_limits:
            click.echo(escape_controls(f"llm.{key:<8} = {_show(config.llm_limits[key]):<40} # {source} "
                                       "(untrusted: can only lower the limit)"))
    warning = ignored_warning(config)
    if warning:
        click.echo(escape_controls(warning))
    click.echo("(a command-line flag overrides any of these; `pa COMMAND --help` shows the built-in defaults)")


@config_group.command("trust")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), default=Path("pa.toml"))
@one_line_errors
def trust(file: Path) -> None:
    """Trust FILE (default ./pa.toml) as it is now: its rules, queries, templates and [llm] apply."""
    from pa.config import set_trust
    from pa.controls import escape_controls
    from pa.errors import UserError

    if not file.is_file():
        raise UserError(f"{file}: no such file")
    store = set_trust(file, True)
    click.echo(escape_controls(f"trusted {file.resolve()} (recorded in {store}; editing the file withdraws it)"))


@config_group.command("untrust")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path), default=Path("pa.toml"))
@one_line_errors
def untrust(file: Path) -> None:
    """Withdraw the trust recorded for FILE (default ./pa.toml)."""
    from pa.config import set_trust
    from pa.controls import escape_controls

    store = set_trust(file, False)
    click.echo(escape_controls(f"no longer trusted: {file.resolve()} (recorded in {store})"))


def _builtin_default(target: tuple[str, ...]) -> str:
    """The default of the option a setting feeds, read from the command itself (one definition)."""
    from pa.cli import main

    ctx = click.Context(main)
    cmd: click.Command | None = main
    for name in target[:-1]:
        cmd = cmd.get_command(ctx, name) if isinstance(cmd, click.Group) else None
    param = next((p for p in cmd.params if p.name == target[-1]), None) if cmd is not None else None
    if param is None or cmd is None:
        return "none"
    default = param.get_default(click.Context(cmd), call=True)
    if isinstance(default, bool) or not isinstance(default, (str, int, float)) or default == "":
        return "none"   # None, an empty multiple option (click's UNSET sentinel): the option is off
    return str(default)


def _show(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)
