"""Click options used by more than one command, each declared once here (STYLE: one definition).

Importing this module costs click alone: `pa --help` and every command's `--help` stay fast.
The defaults shown here are pa's built-in ones; pa.toml (pa.config) replaces them through
click's default map, and a flag given on the command line replaces both.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from pa.compare import DEFAULT_NOISE_FLOOR_PCT
from pa.metrics.phases import DEFAULT_MAX_PHASES

REPORT_FORMATS = ("text", "markdown", "html", "json")
QUERIES_ENV = "PA_QUERIES"
F = TypeVar("F", bound=Callable[..., Any])

max_phases_option = click.option(
    "--max-phases", type=click.IntRange(1, 64), default=DEFAULT_MAX_PHASES, show_default=True,
    help="Most phases per profile (1 disables phase detection).")

queries_option = click.option(
    "--queries", "query_dirs", multiple=True, envvar=QUERIES_ENV,
    type=click.Path(path_type=Path, file_okay=False),
    help=f"Directory of query files (<format>/<version>/<relation>.sql) layered over the bundled sets; "
         f"repeatable, the first given wins. Default: ${QUERIES_ENV} ({os.pathsep}-separated), else pa.toml.")

TEXT_OR_JSON = ("text", "json")


def format_option_of(formats: tuple[str, ...], meaning: str = "") -> Callable[[F], F]:
    """`-f/--format` for a command that writes `formats` (one declaration, so every command spells it alike)."""
    return click.option("-f", "--format", "fmt", type=click.Choice(formats), default=None,
                        help=f"Output format{': ' + meaning if meaning else ''} (default: from -o's extension, "
                             "else text).")


format_option = format_option_of(REPORT_FORMATS)

output_option = click.option(
    "-o", "--output", type=click.Path(path_type=Path), default=None,
    help="Write to FILE (the format's extension is added when FILE has none; - is standard output).")

json_option = click.option("--json", "as_json", is_flag=True, help="Same as --format json.")

color_option = click.option(
    "--color", "color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
    help="Colour: auto (on a terminal, unless $NO_COLOR is set; $FORCE_COLOR forces it), always or never.")


def use_color(choice: str, is_tty: bool) -> bool:
    """Whether to colour the output: --color, then $NO_COLOR / $FORCE_COLOR (no-color.org), then the terminal."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return is_tty


def json_format(fmt: str | None, as_json: bool) -> str | None:
    """The format `-f` and `--json` ask for together (--json is -f json); a contradiction is a bad input."""
    from pa.errors import UserError

    if not as_json:
        return fmt
    if fmt not in (None, "json"):
        raise UserError(f"--json and --format {fmt} disagree: give one of them")
    return "json"


def choose_format(fmt: str | None, output: Path | None, fallback: str = "text") -> str:
    """--format wins; else the extension of -o; else `fallback` (pa.toml's format, else text).

    An -o extension that names no format (`-o x.pdf`) is refused rather than filled with text.
    """
    from pa.errors import UserError

    if fmt:
        return fmt
    if output is not None and output.suffix and str(output) != "-":
        from pa.report.render import EXTENSIONS

        by_ext = {ext: name for name, ext in EXTENSIONS.items()}
        by_ext[".markdown"] = "markdown"
        by_ext[".htm"] = "html"
        if output.suffix.lower() not in by_ext:
            known = ", ".join(sorted(by_ext))
            raise UserError(f"-o {output}: no output format for {output.suffix!r} (known: {known}); "
                            "give -f/--format or one of those extensions")
        return by_ext[output.suffix.lower()]
    return fallback


def output_format(fmt: str | None, as_json: bool, output: Path | None,
                  formats: tuple[str, ...] = REPORT_FORMATS) -> str:
    """The format a command writes, by one rule for every command (`pa summary`, `analyze`, `compare`).

    On the command line `-f` or `--json` (they must agree); else the extension of `-o`; else pa.toml's
    `format` (it reaches `fmt` through click's default map, so it must not beat `-o x.html` or
    `--json` given by hand); else text. A format the command cannot write is one line, exit 2.
    """
    from click.core import ParameterSource

    from pa.errors import UserError

    ctx = click.get_current_context()
    command: list[str] = []
    c = ctx
    while c.parent is not None:   # "pa rules explain", whatever the executable was called
        command.insert(0, c.info_name or "")
        c = c.parent
    from_file = ctx.get_parameter_source("fmt") == ParameterSource.DEFAULT_MAP
    chosen = choose_format(json_format(None if from_file else fmt, as_json), output,
                           fallback=(fmt if from_file and fmt else "text"))
    if chosen not in formats:
        raise UserError(f"pa {' '.join(command)} writes {', '.join(formats[:-1])} or {formats[-1]}, not {chosen}")
    return chosen


rules_option = click.option(
    "--rules", "site_packs", multiple=True, type=click.Path(path_type=Path),
    help="Site rule pack (YAML), applied after the built-in packs; repeatable, in order.")

templates_option = click.option(
    "--templates", "templates_dir", type=click.Path(path_type=Path), default=None,
    help="Directory of site templates (report.*.j2 / compare.*.j2).")

noise_floor_option = click.option(
    "--noise-floor", type=click.FloatRange(0, 100), default=DEFAULT_NOISE_FLOOR_PCT, show_default=True,
    help="Changes smaller than this % of the larger value are noise.")

keep_paths_option = click.option("--keep-paths", is_flag=True, help="Keep absolute paths in the output.")
