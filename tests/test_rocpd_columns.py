"""Every column a rocpd query file reads exists in the writers' DDL, for both schema versions.

For each query set (3 and 4, with the files 4 inherits from 3), an empty database is built by
executing the writers' DDL; each relation's SQL is prepared there under an SQLite authorizer that
reports every (table, column) the statement reads. A column absent from the DDL fails here (the
statement does not prepare, or the relation is skipped for a missing requirement), and so does a
column read but not declared in the file's `requires` / `optional` header, which is what pa checks
against a profile before running the SQL. A double-quoted name that is neither read nor defined
would be taken by SQLite as a string literal: that fails too. pa runs no rocpd SQL outside query
files (the degraded-capture facts read the memcpy_requests and meta relations).
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from rocpd_ddl import needs_rocpd_ddl  # tests/ is on sys.path
from testkit.rocpd_writer import ddl_dir, render_ddl

from pa.paths import data_dir
from pa.profile.canonical import RELATIONS
from pa.profile.queryset import QueryFile, QuerySet, resolve
from pa.profile.relations import Relations

pytestmark = needs_rocpd_ddl

GUID = "01970000-aaaa-7bbb-8ccc-0123456789ab"
DDL = {
    ("3", "rocprofv3"): ("3/rocprofv3_rocpd_tables.sql", "3/rocprofv3_rocpd_views.sql",
                         "3/rocprofv3_data_views.sql", "3/rocprofv3_summary_views.sql"),
    ("3", "rocprof-sys"): ("3/rocprofv3_rocpd_tables.sql", "3/rocprofv3_rocpd_views.sql",
                           "3/rocprofsys_data_views.sql", "3/rocprofsys_summary_views.sql"),
    ("4", "rocprofv3"): ("4/rocprofv3_4.0.0_schema.sql",),
}
VERSION = {"3": "3", "4": "4.0.0"}


def ddl_database(tmp: Path, major: str, flavour: str) -> sqlite3.Connection:
    path = tmp / f"empty_{major}_{flavour}.db"
    conn = sqlite3.connect(path)
    for script in DDL[(major, flavour)]:
        conn.executescript(render_ddl((ddl_dir() / script).read_text(encoding="utf-8"), GUID))
    conn.commit()
    return conn


def reads_of(conn: sqlite3.Connection, sql: str) -> set[tuple[str, str]]:
    """(table or view, column) pairs a statement reads from the profile's un-suffixed views."""
    suffix = "_" + GUID.replace("-", "_")
    reads: set[tuple[str, str]] = set()

    def authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
        if action == sqlite3.SQLITE_READ and arg1 and arg2 and not arg1.endswith(suffix) and arg1.startswith("rocpd_"):
            reads.add((arg1, arg2))
        return sqlite3.SQLITE_OK

    conn.set_authorizer(authorizer)
    try:
        conn.execute(f"SELECT * FROM ({sql}) LIMIT 0")
    finally:
        conn.set_authorizer(None)
    return reads


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}


def problems(conn: sqlite3.Connection, qs: QuerySet) -> list[str]:
    """Everything wrong with the query set against this DDL database (empty list: all good)."""
    out = []
    rel = Relations.bind(conn, qs)
    for s in rel.skipped:
        if s.what in qs.files:
            out.append(f"{qs.files[s.what].display_path}: skipped on the writers' DDL: {s.reason}")
    for relation, sql in rel.raw_sql_by_relation.items():
        qf: QueryFile = qs.files[relation]
        declared = {**qf.requires, **qf.optional}
        reads = reads_of(conn, sql)
        for table, column in sorted(reads):
            if column not in columns(conn, table):
                out.append(f"{qf.display_path}: reads {table}.{column}, absent from the DDL")
            if table not in declared:
                out.append(f"{qf.display_path}: reads {table} without declaring it in its header")
            elif declared[table] and column not in declared[table]:
                out.append(f"{qf.display_path}: reads {table}.{column} without declaring it in its header")
        quoted = set(re.findall(r'"(\w+)"', sql))
        defined = set(re.findall(r'AS\s+"(\w+)"', sql, re.I))
        for name in sorted(quoted - defined - {c for _, c in reads}):
            out.append(f'{qf.display_path}: "{name}" is neither a column it reads nor one it defines')
    return out


@pytest.mark.parametrize(("major", "flavour"), list(DDL))
def test_query_files_read_only_columns_the_ddl_has(tmp_path: Path, major: str, flavour: str) -> None:
    conn = ddl_database(tmp_path, major, flavour)
    qs = resolve("rocpd", VERSION[major])
    assert qs.version == major and qs.warnings == []
    assert problems(conn, qs) == []
    # every relation pa reads from rocpd has a file in this set
    # (no GPU-side sync records, profiler overhead, OS runtime calls, CPU samples or driver JIT records)
    assert set(qs.files) == set(RELATIONS) - {"syncs", "overhead", "os_calls", "cpu_samples", "driver_jit"}


def test_the_guard_catches_a_column_the_ddl_lacks(tmp_path: Path) -> None:
    # A 3.x api_calls file used against the 4.0.0 DDL reads columns 4.0.0 dropped: reported.
    root = tmp_path / "queries"
    shutil.copytree(data_dir("queries"), root)
    (root / "rocpd" / "4" / "api_calls.sql").write_text((root / "rocpd" / "3" / "api_calls.sql").read_text())
    found = problems(ddl_database(tmp_path, "4", "rocprofv3"), resolve("rocpd", "4.0.0", root=root))
    assert any("rocpd/4/api_calls.sql" in p and "absent from rocpd_region" in p for p in found), found
    # and a column read without being declared in the header
    text = (root / "rocpd" / "3" / "processes.sql").read_text().replace("command AS name", "environment AS name")
    (root / "rocpd" / "3" / "processes.sql").write_text(text)
    found = problems(ddl_database(tmp_path, "3", "rocprofv3"), resolve("rocpd", "3", root=root))
    assert found == ["rocpd/3/processes.sql: reads rocpd_info_process.environment without declaring it in its header"]
