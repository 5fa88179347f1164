"""`pa analyze`: options in, the pipeline (pa/pipeline.py) in the middle, the rendered report out.

This module only parses options, checks what can be checked before any analysis (where the report
goes, the site templates), calls `pa.pipeline.analyze` and prints. Also the hidden `pa schema`
command that prints the generated report / summary / compare JSON Schemas committed under schemas/.
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from pa.cli_options import (
    color_option,
    format_option,
    json_option,
    keep_paths_option,
    output_format,
    output_option,
    queries_option,
    rules_option,
    templates_option,
    use_color,
)
from pa.cli_output import check_log_file, plan_output, write_output, wrote
from pa.cli_ranks import progress_bar, rank_options, working_on
from pa.errors import one_line_errors
from pa.llm.cli_options import llm_cli_options
from pa.pipeline import RunOptions


@click.command("analyze")
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@format_option
@output_option
@json_option
@color_option
@rules_option
@queries_option
@templates_option
@keep_paths_option
@click.option("--judge", "judge", type=click.Choice(["steady", "active"]), default="steady", show_default=True,
              help="The window findings are judged on: steady, from the first iteration of the loop the markers "
                   "show (the set-up before it left out), when they show one; active, the GPU's whole active window.")
@click.option("--evidence", "-v", "evidence", is_flag=True,
              help="Text: under each evidence sentence, the values with their metric paths and query files "
                   "(JSON, Markdown and HTML always hold them).")
@click.option("--no-llm", is_flag=True, help="Rules only: skip the LLM stage.")
@click.option("--model", default=None, help="LLM: provider:model, a provider, a model name or claude-cli "
                                            "(docs/llm.md).")
@click.option("--base-url", default=None, help="LLM: endpoint for the --model provider (its key goes there; "
                                               "none for a bare model name).")
@llm_cli_options
@rank_options
@one_line_errors
def analyze(profiles: tuple[Path, ...], fmt: str | None, output: Path | None, as_json: bool, color: str,
            site_packs: tuple[Path, ...],
            query_dirs: tuple[Path, ...], templates_dir: Path | None, keep_paths: bool, judge: str, evidence: bool,
            no_llm: bool,
            model: str | None,
            base_url: str | None, llm_extra: dict[str, Any], run: RunOptions) -> None:
    """Analyse PROFILE(s) and write a ranked, auditable report.

    Several files, a directory of rank files (report.*.sqlite, rank_*.db), or one export of several
    GPU processes (torchrun, mpirun under one nsys) are one multi-rank run: the rules see the primary
    rank (the idle-time outlier, or --primary-rank) and the cross-rank facts.
    """
    from pa import pipeline
    from pa.llm.model import LlmOptions
    from pa.pipeline import AnalyzeRequest
    from pa.report.render import EXTENSIONS, check_templates_dir

    started = time.monotonic()
    files = pipeline.expand_profiles(profiles)
    # Everything that can be checked without the profile is checked before any analysis (and any
    # LLM spend): where the report goes (an input or its sidecar first: `-o p.sqlite` is refused as
    # the profile, not as an unknown format), and the site templates it will be rendered with.
    plan_output(output, "", inputs=[*files, *site_packs])
    fmt = output_format(fmt, as_json, output)
    out = plan_output(output, EXTENSIONS[fmt], inputs=[*files, *site_packs])
    for flag, key in (("--log", "log"), ("--transcript", "transcript")):
        check_log_file(flag, llm_extra.get(key), inputs=[*files, *site_packs])
    if templates_dir is not None:
        check_templates_dir(templates_dir)
    is_tty = out.is_stdout and sys.stdout.isatty()
    request = AnalyzeRequest(site_packs=tuple(site_packs),
                             run=replace(run, keep_paths=keep_paths, query_dirs=query_dirs, steady=judge == "steady"),
                             llm=LlmOptions(enabled=not no_llm, model=model, base_url=base_url, extra=llm_extra),
                             command_line=("pa", *sys.argv[1:]), started=started)
    # One large file: a spinner, but not while the LLM stage may ask to confirm its cost on the terminal.
    spin = files[0] if len(files) == 1 and no_llm else None
    with progress_bar(len(files)) as progress, working_on(spin, "Analysing"):
        doc = pipeline.analyze(files, request, progress)
    # On a terminal the text wraps between words at its width (never inside a number); a file keeps whole lines.
    width = shutil.get_terminal_size().columns if is_tty else None
    colored = use_color(color, is_tty)
    text = pipeline.render_report(doc, fmt, templates_dir=templates_dir, color=colored, evidence=evidence,
                                  width=width)
    if out.path is None:
        click.echo(text, nl=False, color=colored)   # click would strip the styles off a pipe
        return
    write_output(out, text)
    click.echo(wrote(out, fmt, keep_paths), err=True)


@click.command("schema", hidden=True)
@click.argument("which", type=click.Choice(["report", "summary", "compare"]))
@one_line_errors
def schema(which: str) -> None:
    """Print the generated JSON Schema (report, summary or compare) as committed under schemas/."""
    from pa.report.schema import build_report_schema, build_summary_schema, dump_schema

    if which == "compare":
        from pa.compare.schema import build_compare_schema

        click.echo(dump_schema(build_compare_schema()), nl=False)
        return
    click.echo(dump_schema(build_report_schema() if which == "report" else build_summary_schema()), nl=False)
