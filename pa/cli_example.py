"""`pa example`: write a generated profile with planted behaviour (or list the scenarios)."""

from __future__ import annotations

from pathlib import Path

import click

from pa.errors import UserError, one_line_errors


@click.command()
@click.argument("out", type=click.Path(path_type=Path), required=False)
@click.option("--scenario", default="example", show_default=True,
              help="Planted scenario to write (see `pa example --list`).")
@click.option("--list", "list_only", is_flag=True, help="List the scenarios and what each plants, and exit.")
@click.option("--ranks", type=click.IntRange(2, 64), default=None,
              help="Write a rank set instead: N rank files report.<rank>.sqlite into the directory OUT, one "
                   "straggler among them (for `pa summary OUT` / `pa analyze OUT`).")
@click.option("--straggler", type=int, default=None, help="With --ranks: the slow rank (default: N / 2).")
@click.option("--force", is_flag=True, help="Replace an existing OUT (with --ranks: existing rank files in OUT).")
@one_line_errors
def example(out: Path | None, scenario: str, list_only: bool, ranks: int | None, straggler: int | None,
            force: bool) -> None:
    """Write a generated example profile (Nsight Systems SQLite) with planted behaviour to OUT.

    With --ranks N, OUT is a directory (created when its parent exists) and receives N rank files of
    one MPI run with a planted straggler: the README's multi-rank commands can be tried on it.
    An existing file is never replaced without --force: OUT may be a real profile someone kept.
    """
    from pa.example_profile import EXAMPLE_PLANTED, RANKS_PLANTED, write_example

    if list_only:
        for name, planted in sorted(EXAMPLE_PLANTED.items()):
            click.echo(f"{name}: {planted}")
        click.echo(f"--ranks N DIR: {RANKS_PLANTED}")
        return
    if out is None:
        raise click.UsageError("missing argument OUT: the file to write the example profile to")
    if straggler is not None and ranks is None:
        raise click.BadParameter("--straggler needs --ranks", param_hint="--straggler")
    if ranks is not None:
        _write_ranks(out, ranks, straggler, force)
        return
    if scenario not in EXAMPLE_PLANTED:
        raise click.BadParameter(f"unknown scenario {scenario!r}; choose from {', '.join(sorted(EXAMPLE_PLANTED))}")
    if out.is_dir() or str(out).endswith("/"):
        raise UserError(f"{out}: is a directory; give a file name")
    if out.exists() or out.is_symlink():
        if not out.is_file() or out.is_symlink():
            raise UserError(f"{out}: exists and is not a regular file; pa example replaces only regular files")
        if not force:
            raise UserError(f"{out}: exists; give --force to replace it")
        out.unlink()
    if not out.resolve().parent.is_dir():
        raise UserError(f"{out}: directory {out.resolve().parent} does not exist")
    write_example(out, scenario)
    click.echo(f"wrote {out} (nsys, scenario {scenario})")


def _write_ranks(out: Path, ranks: int, straggler: int | None, force: bool) -> None:
    """`pa example --ranks N OUT`: the rank files into the directory OUT (made when its parent exists)."""
    from pa.example_profile import write_rank_set

    if straggler is not None and not 0 <= straggler < ranks:
        raise click.BadParameter(f"{straggler} is not a rank of 0..{ranks - 1}", param_hint="--straggler")
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a directory; --ranks writes one file per rank into a directory")
    if not out.exists():
        if not out.resolve().parent.is_dir():
            raise UserError(f"{out}: directory {out.resolve().parent} does not exist")
        out.mkdir()
    for p in (out / f"report.{r}.sqlite" for r in range(ranks)):
        if (p.exists() or p.is_symlink()) and (not p.is_file() or p.is_symlink()):
            raise UserError(f"{p}: exists and is not a regular file; pa example replaces only regular files")
        if p.exists() and not force:
            raise UserError(f"{p}: exists; give --force to replace the rank files in {out}")
    paths = write_rank_set(out, ranks, straggler)
    slow = ranks // 2 if straggler is None else straggler
    click.echo(f"wrote {len(paths)} rank files into {out} (nsys, report.0.sqlite … report.{ranks - 1}.sqlite; "
               f"rank {slow} is the straggler)")
