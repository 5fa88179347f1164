"""`pa summary`: the offline summary of one profile, or of the rank files of one run."""

from __future__ import annotations

from pathlib import Path

import click

from engine.cli_options import queries_option
from engine.cli_ranks import RankOptions, rank_options
from engine.controls import escape_json_controls
from engine.errors import one_line_errors


@click.command()
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Print the ProfileSummary as JSON (several ranks: per-rank summaries and cross-rank facts).")
@click.option("--keep-paths", is_flag=True, help="Keep the absolute path of the profile in the output.")
@queries_option
@rank_options
@one_line_errors
def summary(profiles: tuple[Path, ...], as_json: bool, keep_paths: bool, query_dirs: tuple[Path, ...],
            ranks: RankOptions) -> None:
    """Summarise PROFILE(s) offline: kernels, copies, idle gaps, sync, streams, markers, MPI.

    Several files, or a directory of rank files (report.*.sqlite, rank_*.db), are one multi-rank run:
    the per-rank table and the cross-rank facts (straggler, imbalance, collective skew) are printed.
    """
    from engine.cli_ranks import expand, progress_bar, working_on

    files = expand(profiles)
    if len(files) == 1:
        from engine.metrics.summarize import summarize

        with working_on(files[0]):
            result = summarize(files[0], keep_paths=keep_paths, max_phases=ranks.max_phases,
                               query_dirs=query_dirs)
        if as_json:
            click.echo(escape_json_controls(result.model_dump_json(indent=2)))
        else:
            from engine.summary_render import print_summary  # rich loads only for the table view

            print_summary(result)
        return
    from engine.ranks import cross_rank, summarize_ranks
    from engine.ranks.model import MultiRankSummary, RankSummary
    from engine.summary_render import print_rank_summary

    with progress_bar(len(files)) as progress:
        rs = summarize_ranks(files, workers=ranks.workers, executor=ranks.executor, scheduler=ranks.scheduler,
                             max_phases=ranks.max_phases, keep_paths=keep_paths, progress=progress,
                             query_dirs=query_dirs)
    cr = cross_rank(rs, primary_rank=ranks.primary_rank)
    if as_json:
        doc = MultiRankSummary(ranks=[RankSummary(rank=r.rank, rank_source=r.rank_source, summary=r.summary)
                                      for r in rs.ranks], cross_rank=cr)
        click.echo(escape_json_controls(doc.model_dump_json(indent=2)))
    else:
        print_rank_summary(cr)
