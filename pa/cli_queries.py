"""`pa queries`: the query sets, and which file a profile reads for each relation and from where.

`pa queries check DIR` tries a query directory under development; `pa queries show RELATION` prints
the SQL a relation runs on a profile.
"""

from __future__ import annotations

from pathlib import Path

import click

from pa.cli import SuggestingGroup
from pa.cli_options import queries_option
from pa.controls import escape_controls
from pa.errors import one_line_errors

_PROFILE = click.option("--profile", "profile", type=click.Path(path_type=Path), default=None,
                        help="Show which query set and files this profile resolves to.")


@click.group(cls=SuggestingGroup, invoke_without_command=True)
@_PROFILE
@queries_option
@click.pass_context
@one_line_errors
def queries(ctx: click.Context, profile: Path | None, query_dirs: tuple[Path, ...]) -> None:
    """List the query sets, or the set and files a PROFILE resolves to."""
    if ctx.invoked_subcommand is not None:
        return
    from pa.profile.queryset import BUNDLED, available_versions, query_roots, resolve

    if profile is None:
        for root in query_roots(query_dirs):
            name = "bundled" if root.source == BUNDLED else root.source
            for fmt in ("nsys", "rocpd"):
                versions = available_versions(fmt, root=root.path) if (root.path / fmt).is_dir() else []
                if versions or root.source == BUNDLED:
                    click.echo(escape_controls(f"{fmt}: {', '.join(versions) or '(none)'}  [{name}]"))
        return
    from pa.profile.detect import detect
    from pa.profile.open import open_readonly

    conn = open_readonly(profile)
    try:
        detected = detect(conn, profile)
        qs = resolve(detected.format, detected.schema_version, query_dirs=query_dirs)
    finally:
        conn.close()
    click.echo(escape_controls(f"{profile.name}: {detected.format} schema {detected.schema_version} "
                               f"-> query set {qs.name}"))
    for relation, qf in sorted(qs.files.items()):
        inherited = "" if qf.version_dir == qs.version else f"  (inherited from {qf.version_dir})"
        origin = "bundled" if qf.source == BUNDLED else qf.source
        click.echo(escape_controls(f"  {relation:<14} {qf.display_path:<40} [{origin}]{inherited}"))
    for w in qs.warnings:
        click.echo(escape_controls(f"  warning: {w}"))


@queries.command("check")
@click.argument("query_dir", type=click.Path(path_type=Path))
@click.option("--profile", "profile", type=click.Path(path_type=Path), required=True,
              help="The profile to try the query files on.")
@queries_option
@one_line_errors
def check(query_dir: Path, profile: Path, query_dirs: tuple[Path, ...]) -> None:
    """Try QUERY_DIR's files on PROFILE: resolved, inherited, skipped or failed, per relation.

    Exit 1 when a file fails (header, template, SQL or output columns), so a CI job can gate on it.
    """
    from pa.profile.check import FAILED, check_queries

    result = check_queries(profile, query_dir, query_dirs)
    click.echo(escape_controls(f"{profile.name}: query set {result.set_name} with {query_dir} first"))
    for c in result.checks:
        click.echo(escape_controls(f"  {c.relation:<14} {c.status:<9} {c.file:<36} {c.detail}"))
    for w in result.warnings:
        click.echo(escape_controls(f"  warning: {w}"))
    n_failed = sum(c.status == FAILED for c in result.checks)
    if n_failed:
        click.echo(f"pa: {n_failed} query file(s) failed", err=True)
        raise SystemExit(1)


@queries.command("show")
@click.argument("relation")
@click.option("--profile", "profile", type=click.Path(path_type=Path), required=True,
              help="The profile whose schema the query file is rendered for.")
@queries_option
@one_line_errors
def show(relation: str, profile: Path, query_dirs: tuple[Path, ...]) -> None:
    """Print RELATION's query file as rendered for PROFILE (its Jinja evaluated): header lines, then the SQL.

    Ready for sqlite3, and a starting point for your own query directory: `> site-queries/nsys/3.24/
    kernels.sql` gives a file `pa queries check` accepts. Which file it came from (the bundled one
    inside the installed package, or yours) is said on stderr, so the redirected file is only the query.
    """
    from pa.profile.check import rendered_sql

    q = rendered_sql(profile, relation, query_dirs)
    where = "bundled with pa" if q.path.resolve().is_relative_to(_bundled_root()) else "from your query directory"
    click.echo(escape_controls(f"pa: {relation} for {profile.name}: {q.display_path} ({where}: {q.path}), "
                               "rendered for this profile's schema"), err=True)
    for line in q.text.splitlines():
        click.echo(escape_controls(line))


def _bundled_root() -> Path:
    """The installed package's query directory (where the bundled query sets live)."""
    from pa.paths import data_dir

    return data_dir("queries").resolve()
