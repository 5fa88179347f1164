"""Click options used by more than one command, each declared once here (STYLE: one definition).

Importing this module costs click alone: `pa --help` and every command's `--help` stay fast.
The defaults shown here are pa's built-in ones; pa.toml (pa.config) replaces them through
click's default map, and a flag given on the command line replaces both.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from pa.compare import DEFAULT_NOISE_FLOOR_PCT
from pa.metrics.phases import DEFAULT_MAX_PHASES

REPORT_FORMATS = ("text", "markdown", "html", "json")
QUERIES_ENV = "PA_QUERIES"

max_phases_option = click.option(
    "--max-phases", type=click.IntRange(1, 64), default=DEFAULT_MAX_PHASES, show_default=True,
    help="Most phases per profile (1 disables phase detection).")

queries_option = click.option(
    "--queries", "query_dirs", multiple=True, envvar=QUERIES_ENV,
    type=click.Path(path_type=Path, file_okay=False),
    help=f"Directory of query files (<format>/<version>/<relation>.sql) layered over the bundled sets; "
         f"repeatable, the first given wins. Default: ${QUERIES_ENV} ({os.pathsep}-separated), else pa.toml.")

format_option = click.option(
    "-f", "--format", "fmt", type=click.Choice(REPORT_FORMATS), default=None,
    help="Output format (default: from -o's extension, else text).")

output_option = click.option(
    "-o", "--output", type=click.Path(path_type=Path), default=None,
    help="Write to FILE (the format's extension is added when FILE has none; - is standard output).")

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
