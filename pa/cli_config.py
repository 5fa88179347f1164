"""`pa config show`: the merged configuration and where each value came from."""

from __future__ import annotations

import os

import click

from pa.errors import one_line_errors

config_group = click.Group("config", help="Show the configuration pa.toml and the environment give.")


@config_group.command("show")
@one_line_errors
def show() -> None:
    """Print every setting with its value and its source (flag-free: what a command starts from)."""
    from pa.cli_options import QUERIES_ENV
    from pa.config import LLM_KEYS, SETTINGS, config_paths, load_config

    config = load_config()
    looked = ", ".join(str(p) for p in config_paths())
    click.echo(f"configuration file: {config.path if config.path else '(none; looked for ' + looked + ')'}")
    env_queries = os.environ.get(QUERIES_ENV)
    for s in SETTINGS:
        value: object
        commands = sorted({" ".join(t[:-1]) for t in s.targets})
        if s.key == "queries" and env_queries:
            value, source = [d for d in env_queries.split(os.pathsep) if d], f"${QUERIES_ENV}"
        elif s.key in config.values:
            value, source = config.values[s.key], str(config.path)
        else:
            value, source = f"({_builtin_default(s.targets[0])})", "built-in default"
        click.echo(f"{s.key:<12} = {_show(value):<40} # {source}; {s.help} ({', '.join(commands)})")
    for key in LLM_KEYS:
        if key in config.llm:
            click.echo(f"llm.{key:<8} = {_show(config.llm[key]):<40} # {config.path}")
    click.echo("(a command-line flag overrides any of these; `pa COMMAND --help` shows the built-in defaults)")


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
