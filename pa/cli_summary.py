"""`pa summary`: the offline summary of one profile, or of the rank files of one run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pa.cli_options import keep_paths_option, queries_option
from pa.cli_ranks import rank_options
from pa.controls import escape_json_controls
from pa.errors import one_line_errors
from pa.pipeline import RunOptions

if TYPE_CHECKING:
    from pa.metrics.model import ProfileSummary


@click.command()
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Print the ProfileSummary as JSON (several ranks: per-rank summaries and cross-rank facts).")
@keep_paths_option
@queries_option
@rank_options
@one_line_errors
def summary(profiles: tuple[Path, ...], as_json: bool, keep_paths: bool, query_dirs: tuple[Path, ...],
            run: RunOptions) -> None:
    """Summarise PROFILE(s) offline: kernels, copies, idle gaps, sync, streams, markers, MPI.

    Several files, or a directory of rank files (report.*.sqlite, rank_*.db), are one multi-rank run
    when they are one (every file records its MPI rank, they run the same kernels, or --rank-set): the
    per-rank table and the cross-rank facts (straggler, imbalance, collective skew) are printed.
    Otherwise each file is summarised in turn (with --json, a JSON array of summaries).
    """
    from pa.cli_ranks import progress_bar, working_on
    from pa.pipeline import expand_profiles, summarize_run

    files = expand_profiles(profiles)
    with progress_bar(len(files)) as progress, working_on(files[0] if len(files) == 1 else None):
        stage1 = summarize_run(files, options=replace(run, keep_paths=keep_paths, query_dirs=query_dirs),
                               progress=progress)
    if stage1.separate is not None:
        # As `nsys stats a b`: each file in turn. The reason goes to stderr, so stdout stays the summaries.
        click.echo(f"pa: {stage1.separate}: each is summarised on its own (--rank-set treats them as one run)",
                   err=True)
        if as_json:
            docs = ",\n".join(s.model_dump_json(indent=2)
                               for s in _in_given_order(stage1.summaries, stage1.files, profiles))
            click.echo(escape_json_controls(f"[\n{docs}\n]"))
        else:
            from pa.summary_render import print_summary

            for i, s in enumerate(_in_given_order(stage1.summaries, stage1.files, profiles)):
                if i:
                    click.echo()
                print_summary(s)
        return
    if stage1.cross is None or stage1.rank_set is None:
        if as_json:
            click.echo(escape_json_controls(stage1.main.model_dump_json(indent=2)))
        else:
            from pa.summary_render import print_summary  # rich loads only for the table view

            print_summary(stage1.main)
        return
    from pa.ranks.model import MultiRankSummary, RankSummary
    from pa.summary_render import print_rank_summary

    if as_json:
        doc = MultiRankSummary(ranks=[RankSummary(rank=r.rank, rank_source=r.rank_source, summary=r.summary)
                                      for r in stage1.rank_set.ranks], cross_rank=stage1.cross)
        click.echo(escape_json_controls(doc.model_dump_json(indent=2)))
    else:
        print_rank_summary(stage1.cross)


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
