"""The `pa` command line: summary, analyze, compare, queries, rules, example.

Every command turns a PaError into one line on stderr and its exit code (2: bad input, 3: a bug
caught by pa's own validation); nothing below the CLI prints or exits.
"""

from __future__ import annotations

from pathlib import Path

import click

from engine.cli_ranks import RankOptions, rank_options
from engine.controls import escape_controls, escape_json_controls
from engine.errors import UserError, one_line_errors
from engine.version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pa")
def main() -> None:
    """pa: a performance advisor for GPU applications (Nsight Systems and rocpd profiles)."""


@main.command()
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help="Print the ProfileSummary as JSON (several ranks: per-rank summaries and cross-rank facts).")
@click.option("--keep-paths", is_flag=True, help="Keep the absolute path of the profile in the output.")
@rank_options
@one_line_errors
def summary(profiles: tuple[Path, ...], as_json: bool, keep_paths: bool, ranks: RankOptions) -> None:
    """Summarise PROFILE(s) offline: kernels, copies, idle gaps, sync, streams, markers, MPI.

    Several files, or a directory of rank files (report.*.sqlite, rank_*.db), are one multi-rank run:
    the per-rank table and the cross-rank facts (straggler, imbalance, collective skew) are printed.
    """
    from engine.cli_ranks import expand, progress_bar
    from engine.pipeline import summarize_run

    files = expand(profiles)
    with progress_bar(len(files)) as progress:
        run = summarize_run(files, options=ranks.run_options(keep_paths), progress=progress)
    if run.cross is None or run.rank_set is None:
        if as_json:
            click.echo(escape_json_controls(run.main.model_dump_json(indent=2)))
        else:
            from engine.summary_render import print_summary  # rich loads only for the table view

            print_summary(run.main)
        return
    from engine.ranks.model import MultiRankSummary, RankSummary
    from engine.summary_render import print_rank_summary

    if as_json:
        doc = MultiRankSummary(ranks=[RankSummary(rank=r.rank, rank_source=r.rank_source, summary=r.summary)
                                      for r in run.rank_set.ranks], cross_rank=run.cross)
        click.echo(escape_json_controls(doc.model_dump_json(indent=2)))
    else:
        print_rank_summary(run.cross)


@main.command()
@click.option("--profile", "profile", type=click.Path(path_type=Path), default=None,
              help="Show which query set this profile resolves to.")
@one_line_errors
def queries(profile: Path | None) -> None:
    """List the bundled query sets, or the set and files a PROFILE resolves to."""
    from engine.profile.queryset import available_versions, resolve

    if profile is None:
        for fmt in ("nsys", "rocpd"):
            click.echo(f"{fmt}: {', '.join(available_versions(fmt)) or '(none)'}")
        return
    from engine.profile.detect import detect
    from engine.profile.open import open_readonly

    conn = open_readonly(profile)
    try:
        detected = detect(conn, profile)
        qs = resolve(detected.format, detected.schema_version)
    finally:
        conn.close()
    click.echo(escape_controls(f"{profile.name}: {detected.format} schema {detected.schema_version} "
                               f"-> query set {qs.name}"))
    for relation, qf in sorted(qs.files.items()):
        inherited = "" if qf.version_dir == qs.version else f"  (inherited from {qf.version_dir})"
        click.echo(f"  {relation:<10} {qf.display_path}{inherited}")
    for w in qs.warnings:
        click.echo(f"  warning: {w}")


@main.command()
@click.argument("out", type=click.Path(path_type=Path), required=False)
@click.option("--scenario", default="example", show_default=True,
              help="Planted scenario to write (see `pa example --list`).")
@click.option("--list", "list_only", is_flag=True, help="List the scenarios and what each plants, and exit.")
@one_line_errors
def example(out: Path | None, scenario: str, list_only: bool) -> None:
    """Write a generated example profile (Nsight Systems SQLite) with planted behaviour to OUT."""
    from engine.example_profile import EXAMPLE_PLANTED, write_example

    if list_only:
        for name, planted in sorted(EXAMPLE_PLANTED.items()):
            click.echo(f"{name}: {planted}")
        return
    if out is None:
        raise click.UsageError("missing argument OUT: the file to write the example profile to")
    if scenario not in EXAMPLE_PLANTED:
        raise click.BadParameter(f"unknown scenario {scenario!r}; choose from {', '.join(sorted(EXAMPLE_PLANTED))}")
    if out.is_dir() or str(out).endswith("/"):
        raise UserError(f"{out}: is a directory; give a file name")
    if out.exists() or out.is_symlink():
        if not out.is_file() or out.is_symlink():
            raise UserError(f"{out}: exists and is not a regular file; pa example replaces only regular files")
        out.unlink()
    if not out.resolve().parent.is_dir():
        raise UserError(f"{out}: directory {out.resolve().parent} does not exist")
    write_example(out, scenario)
    click.echo(f"wrote {out} (nsys, scenario {scenario})")


from engine.cli_analyze import analyze, schema  # noqa: E402 - registered after the group exists

for _cmd in (analyze, schema): main.add_command(_cmd)  # noqa: E701
from engine.cli_compare import compare  # noqa: E402 - registered after the group exists

main.add_command(compare)
from engine.cli_rules import rules_group  # noqa: E402 - registered after the group exists

main.add_command(rules_group)

if __name__ == "__main__":  # pragma: no cover
    main()
