"""`pa example`: write a generated profile with planted behaviour (or list the scenarios)."""

from __future__ import annotations

from pathlib import Path

import click

from engine.errors import UserError, one_line_errors


@click.command()
@click.argument("out", type=click.Path(path_type=Path), required=False)
@click.option("--scenario", default="example", show_default=True,
              help="Planted scenario to write (see `pa example --list`).")
@click.option("--format", "fmt", type=click.Choice(["nsys", "rocpd"]), default="nsys", show_default=True)
@click.option("--list", "list_only", is_flag=True, help="List the scenarios and exit (no OUT needed).")
@one_line_errors
def example(out: Path | None, scenario: str, fmt: str, list_only: bool) -> None:
    """Write a generated example profile with planted behaviour to OUT."""
    from engine.synth import scenarios

    if list_only:
        for name in sorted(scenarios.ALL_SCENARIOS):
            click.echo(name)
        return
    if out is None:
        raise click.UsageError("Missing argument 'OUT' (or give --list).")
    builders = dict(scenarios.ALL_SCENARIOS)
    builders.setdefault("example", scenarios.example)
    if scenario not in builders:
        raise click.BadParameter(f"unknown scenario {scenario!r}; choose from {', '.join(sorted(builders))}")
    scen = builders[scenario]()
    if out.is_dir() or str(out).endswith("/"):
        raise UserError(f"{out}: is a directory; give a file name")
    if out.exists() or out.is_symlink():
        if not out.is_file() or out.is_symlink():
            raise UserError(f"{out}: exists and is not a regular file; pa example replaces only regular files")
        out.unlink()
    if not out.resolve().parent.is_dir():
        raise UserError(f"{out}: directory {out.resolve().parent} does not exist")
    if fmt == "nsys":
        from engine.synth.nsys_writer import write_nsys

        write_nsys(scen, out)
    else:
        from engine.synth.rocpd_writer import write_rocpd

        write_rocpd(scen, out)
    click.echo(f"wrote {out} ({fmt}, scenario {scenario})")
