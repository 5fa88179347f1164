"""`pa summary`: the offline summary of one profile, or of the rank files of one run."""

from __future__ import annotations

from pathlib import Path

import click

from pa.cli_options import keep_paths_option, queries_option
from pa.cli_ranks import RankOptions, rank_options
from pa.controls import escape_json_controls
from pa.errors import one_line_errors


@click.command()
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Print the ProfileSummary as JSON (several ranks: per-rank summaries and cross-rank facts).")
@keep_paths_option
@queries_option
@rank_options
@one_line_errors
def summary(profiles: tuple[Path, ...], as_json: bool, keep_paths: bool, query_dirs: tuple[Path, ...],
            ranks: RankOptions) -> None:
    """Summarise PROFILE(s) offline: kernels, copies, idle gaps, sync, streams, markers, MPI.

    Several files, or a directory of rank files (report.*.sqlite, rank_*.db), are one multi-rank run:
    the per-rank table and the cross-rank facts (straggler, imbalance, collective skew) are printed.
    """
    from pa.cli_ranks import expand, progress_bar, working_on
    from pa.pipeline import summarize_run

    files = expand(profiles)
    with progress_bar(len(files)) as progress, working_on(files[0] if len(files) == 1 else None):
        run = summarize_run(files, options=ranks.run_options(keep_paths, query_dirs), progress=progress)
    if run.cross is None or run.rank_set is None:
        if as_json:
            click.echo(escape_json_controls(run.main.model_dump_json(indent=2)))
        else:
            from pa.summary_render import print_summary  # rich loads only for the table view

            print_summary(run.main)
        return
    from pa.ranks.model import MultiRankSummary, RankSummary
    from pa.summary_render import print_rank_summary

    if as_json:
        doc = MultiRankSummary(ranks=[RankSummary(rank=r.rank, rank_source=r.rank_source, summary=r.summary)
                                      for r in run.rank_set.ranks], cross_rank=run.cross)
        click.echo(escape_json_controls(doc.model_dump_json(indent=2)))
    else:
        print_rank_summary(run.cross)
