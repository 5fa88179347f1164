"""`pa queries`: the query sets pa has, and which files a profile resolves to."""

from __future__ import annotations

from pathlib import Path

import click

from engine.controls import escape_controls
from engine.errors import one_line_errors


@click.command()
@click.option("--profile", "profile", type=click.Path(path_type=Path), default=None,
              help="Show which query set this profile resolves to.")
@one_line_errors
def queries(profile: Path | None) -> None:
    """List the query sets, or the set and files a PROFILE resolves to."""
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
