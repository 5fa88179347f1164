"""`pa summary`: the offline summary of one profile, or of the rank files of one run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pa.cli_options import (
    TEXT_OR_JSON,
    color_option,
    format_option_of,
    json_option,
    keep_paths_option,
    output_format,
    output_option,
    queries_option,
    use_color,
)
from pa.cli_ranks import rank_options
from pa.controls import escape_json_controls
from pa.errors import one_line_errors
from pa.pipeline import RunOptions

if TYPE_CHECKING:
    from pa.metrics.model import ProfileSummary


@click.command()
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@format_option_of(TEXT_OR_JSON, "text (the tables) or json (the ProfileSummary; several ranks: per-rank summaries "
                                "and cross-rank facts)")
@output_option
@json_option
@color_option
@click.option("--wide", is_flag=True,
              help="Every column (std, grid, block, wave fill, ...) and whole names, however wide the terminal.")
@keep_paths_option
@queries_option
@rank_options
@one_line_errors
def summary(profiles: tuple[Path, ...], fmt: str | None, output: Path | None, as_json: bool, color: str, wide: bool,
            keep_paths: bool, query_dirs: tuple[Path, ...], run: RunOptions) -> None:
    """Summarise PROFILE(s) offline: kernels, copies, idle gaps, sync, streams, markers, MPI.

    Several files, or a directory of rank files (report.*.sqlite, rank_*.db), are one multi-rank run
    when they are one (every file records its MPI rank, they run the same kernels, or --rank-set): the
    per-rank table and the cross-rank facts (straggler, imbalance, collective skew) are printed.
    Otherwise each file is summarised in turn (with --json, a JSON array of summaries).
    The tables fit the terminal: optional columns leave on a narrow one (--wide brings them back).
    """
    import sys

    from pa.cli_output import plan_output, write_output, wrote
    from pa.cli_ranks import progress_bar, working_on
    from pa.pipeline import expand_profiles, summarize_run

    files = expand_profiles(profiles)
    fmt = output_format(fmt, as_json, output, formats=TEXT_OR_JSON)
    out = plan_output(output, ".json" if fmt == "json" else ".txt", inputs=files)   # before any work
    with progress_bar(len(files)) as progress, working_on(files[0] if len(files) == 1 else None):
        stage1 = summarize_run(files, options=replace(run, keep_paths=keep_paths, query_dirs=query_dirs, steady=False),
                               progress=progress)
    if stage1.separate is not None:
        # As `nsys stats a b`: each file in turn. The reason goes to stderr, so stdout stays the summaries.
        click.echo(f"pa: {stage1.separate}: each is summarised on its own (--rank-set treats them as one run)",
                   err=True)
    in_order = _in_given_order(stage1.summaries, stage1.files, profiles) if stage1.separate is not None else []
    if fmt == "json":
        if stage1.separate is not None:
            text = "[\n" + ",\n".join(s.model_dump_json(indent=2) for s in in_order) + "\n]"
        elif stage1.cross is None or stage1.rank_set is None:
            text = stage1.main.model_dump_json(indent=2)
        else:
            from pa.ranks.model import MultiRankSummary, RankSummary

            text = MultiRankSummary(ranks=[RankSummary(rank=r.rank, rank_source=r.rank_source, summary=r.summary)
                                           for r in stage1.rank_set.ranks], cross_rank=stage1.cross
                                    ).model_dump_json(indent=2)
        text = escape_json_controls(text) + "\n"
    else:
        from pa.summary_render import output_console, print_rank_summary, print_summary  # rich: tables only

        console = output_console(use_color(color, out.is_stdout and sys.stdout.isatty()), to_file=not out.is_stdout)
        if stage1.separate is not None:
            for i, one in enumerate(in_order):
                if i:
                    console.print()
                print_summary(one, console=console, wide=wide)
        elif stage1.cross is None or stage1.rank_set is None:
            print_summary(stage1.main, console=console, wide=wide)
        else:
            print_rank_summary(stage1.cross, console=console, wide=wide)
        if out.is_stdout:
            return
        text = console.export_text()
    if out.is_stdout:
        click.echo(text, nl=False)
        return
    write_output(out, text)
    click.echo(wrote(out, fmt, keep_paths), err=True)


def _in_given_order(summaries: list[ProfileSummary], files: list[Path],
                    profiles: tuple[Path, ...]) -> list[ProfileSummary]:
    """The summaries in the order the PROFILE arguments named them (a directory's files keep their order).

    Why: the rank discovery sorts files by the number in their names, which means nothing for files
    that are not ranks; a person reading `pa summary a b` expects a, then b.
    """
    given = {p.resolve(): i for i, p in enumerate(profiles)}

    def position(pair: tuple[ProfileSummary, Path]) -> int:
        f = pair[1].resolve()
        return given.get(f, given.get(f.parent, len(given)))
    return [s for s, _ in sorted(zip(summaries, files, strict=True), key=position)]
