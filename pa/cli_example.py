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
@one_line_errors
def example(out: Path | None, scenario: str, list_only: bool) -> None:
    """Write a generated example profile (Nsight Systems SQLite) with planted behaviour to OUT."""
    from pa.example_profile import EXAMPLE_PLANTED, write_example

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
