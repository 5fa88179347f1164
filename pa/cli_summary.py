"""`pa summary`: the offline summary of one profile, or of the rank files of one run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from pa.cli_options import keep_paths_option, queries_option
from pa.cli_ranks import rank_options
from pa.controls import escape_json_controls
from pa.errors import one_line_errors
from pa.pipeline import RunOptions


@click.command()
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Print the ProfileSummary as JSON (several ranks: per-rank summaries and cross-rank facts).")
@click.option("--wide", is_flag=True,
              help="Every column (std, grid, block, wave fill, ...) and whole names, however wide the terminal.")
@keep_paths_option
@queries_option
@rank_options
@one_line_errors
def summary(profiles: tuple[Path, ...], as_json: bool, wide: bool, keep_paths: bool, query_dirs: tuple[Path, ...],
            run: RunOptions) -> None:
    """Summarise PROFILE(s) offline: kernels, copies, idle gaps, sync, streams, markers, MPI.

    Several files, or a directory of rank files (report.*.sqlite, rank_*.db), are one multi-rank run:
    the per-rank table and the cross-rank facts (straggler, imbalance, collective skew) are printed.
    The tables fit the terminal: optional columns leave on a narrow one (--wide brings them back).
    """
    from pa.cli_ranks import progress_bar, working_on
    from pa.pipeline import expand_profiles, summarize_run

    files = expand_profiles(profiles)
    with progress_bar(len(files)) as progress, working_on(files[0] if len(files) == 1 else None):
        stage1 = summarize_run(files, options=replace(run, keep_paths=keep_paths, query_dirs=query_dirs, steady=False),
                               progress=progress)
    if stage1.cross is None or stage1.rank_set is None:
        if as_json:
            click.echo(escape_json_controls(stage1.main.model_dump_json(indent=2)))
        else:
            from pa.summary_render import print_summary  # rich loads only for the table view

            print_summary(stage1.main, wide=wide)
        return
    from pa.ranks.model import MultiRankSummary, RankSummary
    from pa.summary_render import print_rank_summary

    if as_json:
        doc = MultiRankSummary(ranks=[RankSummary(rank=r.rank, rank_source=r.rank_source, summary=r.summary)
                                      for r in stage1.rank_set.ranks], cross_rank=stage1.cross)
        click.echo(escape_json_controls(doc.model_dump_json(indent=2)))
    else:
        print_rank_summary(stage1.cross, wide=wide)
