"""The `pa` command line: a group whose commands are imported only when they run.

`pa --help` imports click and this module alone (benchmarks/startup.py measures it): each command
lives in its own module, named in COMMANDS with the one-line help `pa --help` lists, and is
imported by `LazyGroup.get_command` when it is invoked. tests/test_cli_startup.py checks that the
listed help is the command's own first help line, so the two cannot drift apart.

Every command turns a PaError into one line on stderr and its exit code (2: bad input, 3: a bug
caught by pa's own validation); nothing below the CLI prints or exits. The group reads pa.toml
(pa.config) before any command runs and hands its values to click as option defaults, so a
flag always overrides the file.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import gc
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import click

from pa.version import __version__

# name -> ("module:attribute", short help shown by `pa --help`)
COMMANDS: dict[str, tuple[str, str]] = {
    "analyze": ("pa.cli_analyze:analyze", "Analyse PROFILE(s) and write a ranked, auditable report."),
    "compare": ("pa.cli_compare:compare",
                "Compare BEFORE with AFTER: what got faster or slower, and which findings went away."),
    "config": ("pa.cli_config:config_group", "Show the configuration pa.toml and the environment give."),
    "example": ("pa.cli_example:example",
                "Write a generated example profile (Nsight Systems SQLite) with planted behaviour to OUT."),
    "mcp": ("pa.cli_mcp:mcp", "Serve pa's tools to coding agents over the Model Context Protocol (stdio)."),
    "queries": ("pa.cli_queries:queries",
                "List the query sets, or the set and files a PROFILE resolves to."),
    "rules": ("pa.cli_rules:rules_group", "Inspect, validate and explain the declarative rule packs."),
    "schema": ("pa.cli_analyze:schema", ""),
    "skill": ("pa.cli_skill:skill_group", "Install pa's agent skill (SKILL.md) for coding agents."),
    "summary": ("pa.cli_summary:summary",
                "Summarise PROFILE(s) offline: kernels, copies, idle gaps, sync, streams, markers, MPI."),
}
HIDDEN = frozenset({"schema"})
# Other spellings a command answers to (hidden from the list): the help says "Analyse".
ALIASES = {"analyse": "analyze", "summarise": "summary", "summarize": "summary"}


class SuggestingGroup(click.Group):
    """A command group that answers a mistyped subcommand with the nearest names, as git and pip do.

    Every pa group uses it (the root `pa` and `pa rules|config|queries|skill`), so `pa anlyze` and
    `pa rules lst` say the same kind of thing on every click pa supports (click 8.1 names none).
    `aliases` are other spellings a subcommand answers to, hidden from the help; they resolve to the
    canonical name, so pa.toml's per-command defaults (click's default map, keyed by that name) apply
    to `pa analyse` as to `pa analyze`.
    """

    aliases: ClassVar[dict[str, str]] = {}

    def visible_commands(self, ctx: click.Context) -> list[str]:
        """The names a suggestion may offer: the listed subcommands (hidden ones stay hidden)."""
        return [name for name, cmd in self.commands.items() if not cmd.hidden]

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """The subcommand named by args[0] (an alias: its canonical name); an unknown one fails with the nearest."""
        name = args[0] if args else ""
        if args and not name.startswith("-") and not ctx.resilient_parsing:
            canonical = self.aliases.get(name, name)
            if self.get_command(ctx, canonical) is None:
                from pa.errors import nearest

                near = dict.fromkeys(self.aliases.get(n, n)
                                     for n in nearest(name, [*self.visible_commands(ctx), *self.aliases]))
                hint = " Did you mean " + " or ".join(f"'{n}'" for n in near) + "?" if near else ""
                ctx.fail(f"No such command '{name}'.{hint}")
            args = [canonical, *args[1:]]
        return super().resolve_command(ctx, args)


class LazyGroup(SuggestingGroup):
    """A click group that imports a command's module only when that command is looked up.

    It is also the one place where a closed pipe ends pa (`pa summary X | head -1`, `pa --help |
    head -1`): the reader going away is no failure, so pa exits 0 as git does, with nothing on stderr.
    Click's own answer is exit 1, the code pa documents for `--fail-on` alone.
    """

    aliases: ClassVar[dict[str, str]] = ALIASES

    def list_commands(self, ctx: click.Context) -> list[str]:
        """All command names, sorted (none imported)."""
        return sorted(COMMANDS)

    def visible_commands(self, ctx: click.Context) -> list[str]:
        """The listed command names, from COMMANDS (nothing imported)."""
        return [c for c in COMMANDS if c not in HIDDEN]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import and return the command `cmd_name` (or an alias of it), or None for an unknown name."""
        spec = COMMANDS.get(ALIASES.get(cmd_name, cmd_name))
        if spec is None:
            return None
        module, attr = spec[0].split(":")
        cmd = getattr(importlib.import_module(module), attr)
        assert isinstance(cmd, click.Command)
        return cmd

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        """Parse pa's own options; `--help` and `--version` print here, so a closed pipe is met here too."""
        with _closed_pipe_exits_zero():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command (and any subcommand's --help); a closed pipe ends it with 0."""
        with _closed_pipe_exits_zero():
            return super().invoke(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands with their short help from COMMANDS, without importing them."""
        rows = [(name, short) for name, (_, short) in sorted(COMMANDS.items()) if name not in HIDDEN]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pa")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Use this pa.toml alone, trusted (default: ~/.config/pa/pa.toml under ./pa.toml; $PA_CONFIG).")
@click.pass_context
def main(ctx: click.Context, config_file: Path | None) -> None:
    """pa: a performance advisor for GPU applications (Nsight Systems and rocpd profiles).

    Configuration: ~/.config/pa/pa.toml, and ./pa.toml over it (limited until `pa config trust`:
    docs/security.md); `pa config show` lists both; flags override them.
    """
    from pa.config import default_map, ignored_warning, load_config
    from pa.errors import PaError

    try:
        config = load_config(explicit=config_file)
    except PaError as exc:
        click.echo(f"pa: error: {exc}", err=True)
        ctx.exit(exc.exit_code)
    warning = ignored_warning(config)
    if warning and ctx.invoked_subcommand != "config":
        from pa.controls import escape_controls

        click.echo(f"pa: warning: {escape_controls(warning)}", err=True)
    ctx.obj = config
    ctx.default_map = default_map(config)


@contextlib.contextmanager
def _closed_pipe_exits_zero() -> Iterator[None]:
    """Turn EPIPE on stdout into exit 0 (LazyGroup's docs); every command's BrokenPipeError reaches here."""
    try:
        yield
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        silence_stdout()
        raise click.exceptions.Exit(0) from None


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that nothing left in its buffer fails again at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):   # no file descriptor (a test's captured stdout)
        pass


def run() -> None:
    """The `pa` executable (and `python -m pa.cli`): main() in a process that ends with the command.

    At exit CPython's cyclic garbage collector walks every object still alive, and a command leaves
    a great many (numpy, pydantic's model schemas, rich, jinja2, pa's modules): ~70 ms of `pa
    summary`'s start-up on a 0.5 s run (benchmarks/startup.py). Freezing them (gc.freeze, registered
    first so that it is the last exit handler to run) lets the process end without that walk; the
    memory goes back with the process anyway. Collection during the command is untouched. Only the
    executable does this, never main(): a caller running pa in its own process (tests, CliRunner)
    keeps its collector as it was.
    """
    atexit.register(gc.freeze)
    try:
        main()
    except SystemExit as exc:
        # Output still buffered when the command returned meets a closed pipe here, at the last flush.
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            silence_stdout()
        raise SystemExit(exc.code) from None


if __name__ == "__main__":  # pragma: no cover
    run()
