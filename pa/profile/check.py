"""`pa queries check DIR`: try each query file a profile resolves to, one relation at a time.

A query-set author drops the changed files of a new profiler version into DIR and asks, against a
real export, which relations DIR now provides (resolved), which still come from elsewhere
(inherited, from the bundled set or another query directory), which the profile cannot provide
(skipped: a table its header requires is absent) and which are broken (failed: a malformed
header, a template error, SQL the profile rejects, or output columns that differ from the
canonical relation). Each relation is bound on its own, so one broken file does not hide the rest.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pa.errors import UserError
from pa.inputs import read_text_file
from pa.profile.canonical import RELATIONS
from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import MAX_QUERY_FILE_BYTES, QuerySet, load_query_file, resolve
from pa.profile.relations import Relations

RESOLVED, INHERITED, SKIPPED, FAILED, ABSENT = "resolved", "inherited", "skipped", "failed", "absent"


@dataclass(frozen=True)
class RelationCheck:
    """What one relation's query file did on the profile."""

    relation: str
    status: str      # RESOLVED, INHERITED, SKIPPED, FAILED or ABSENT
    file: str        # the file's path under its query root ("" when there is none)
    detail: str      # rows read, or why it was skipped or failed


@dataclass(frozen=True)
class CheckResult:
    """The query set chosen for the profile and one line per relation (header failures first)."""

    set_name: str
    warnings: list[str]
    checks: list[RelationCheck]

    @property
    def failed(self) -> bool:
        """True when any file of the checked directory is broken on this profile."""
        return any(c.status == FAILED for c in self.checks)


def _header_failures(query_dir: Path, fmt: str) -> list[RelationCheck]:
    """Files of DIR/<fmt>/ whose header cannot be parsed (resolve() would stop at the first)."""
    out = []
    for path in sorted((query_dir / fmt).glob("*/*.sql")):
        try:
            load_query_file(path, path.parent.name, str(query_dir))
        except UserError as exc:
            out.append(RelationCheck(path.stem, FAILED, f"{fmt}/{path.parent.name}/{path.name}", str(exc)))
    return out


def check_queries(profile: Path, query_dir: Path, query_dirs: Sequence[Path] = ()) -> CheckResult:
    """Resolve the profile's set with `query_dir` first and try every relation's file on the profile."""
    if not query_dir.is_dir():
        raise UserError(f"query directory {query_dir}: not a directory")
    conn = open_readonly(profile)
    try:
        detected = detect(conn, profile)
        broken = _header_failures(query_dir, detected.format)
        if broken:
            return CheckResult(f"{detected.format}/?", [], broken)
        qs = resolve(detected.format, detected.schema_version, query_dirs=(query_dir, *query_dirs))
        checks = [_check_one(conn, qs, relation, str(query_dir)) for relation in RELATIONS]
    finally:
        conn.close()
    return CheckResult(qs.name, list(qs.warnings), checks)


def _check_one(conn: sqlite3.Connection, qs: QuerySet, relation: str, source: str) -> RelationCheck:
    qf = qs.files.get(relation)
    if qf is None:
        return RelationCheck(relation, ABSENT, "", f"no query file for {relation} in any query directory")
    origin = RESOLVED if qf.source == source else INHERITED
    where = "" if origin == RESOLVED else f" (from {qf.source})"
    one = QuerySet(format=qs.format, version=qs.version, files={relation: qf})
    try:
        rel = Relations.bind(conn, one)
        if relation not in rel.sql_by_relation:
            reason = next((s.reason for s in rel.skipped if s.what == relation), "skipped")
            return RelationCheck(relation, SKIPPED, qf.display_path, reason + where)
        rows = rel.count(relation)
    except (UserError, sqlite3.DatabaseError) as exc:
        return RelationCheck(relation, FAILED, qf.display_path, str(exc))
    return RelationCheck(relation, origin, qf.display_path, f"{rows:,} rows{where}")


@dataclass(frozen=True)
class RenderedQuery:
    """A relation's query file rendered for one profile: a drop-in file to start from, and where it came from."""

    display_path: str    # nsys/base/kernels.sql, or site-queries/nsys/3.24/kernels.sql
    path: Path           # the file itself (the bundled copy lives inside the installed package)
    text: str            # its header lines (`-- relation:`, `-- requires:` ...) then the rendered SELECT;


def rendered_sql(profile: Path, relation: str, query_dirs: Sequence[Path] = ()) -> RenderedQuery:
    """`relation`'s query file rendered for this profile: its header lines, then its own SELECT.

    Pasteable into sqlite3 (the header lines are SQL comments; pa's domain checks, which need pa's
    SQL functions, are not applied), and a valid query file: redirected into a query directory it
    is a starting point `pa queries check` accepts. Without the header it was neither (issue 30.3:
    "query set nsys/?", the file naming no relation).
    """
    if relation not in RELATIONS:
        raise UserError(f"unknown relation {relation!r} (known: {', '.join(RELATIONS)})")
    conn = open_readonly(profile)
    try:
        detected = detect(conn, profile)
        qs = resolve(detected.format, detected.schema_version, query_dirs=query_dirs)
        qf = qs.files.get(relation)
        if qf is None:
            raise UserError(f"{qs.name} has no query file for {relation}")
        rel = Relations.bind(conn, QuerySet(format=qs.format, version=qs.version, files={relation: qf}))
    finally:
        conn.close()
    if relation not in rel.raw_sql_by_relation:
        reason = next((s.reason for s in rel.skipped if s.what == relation), "skipped")
        raise UserError(f"{relation} is not available on {profile.name}: {reason}")
    header = []
    for line in read_text_file(qf.path, MAX_QUERY_FILE_BYTES, "query file").splitlines():
        if not line.strip().startswith("--"):
            break
        header.append(line)
    text = "\n".join([*header, rel.raw_sql_by_relation[relation].strip().rstrip(";") + ";"]) + "\n"
    return RenderedQuery(display_path=qf.display_path, path=qf.path, text=text)
