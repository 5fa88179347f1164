"""Detect which profiler wrote a SQLite file and which export schema version it uses.

Nsight Systems: `META_DATA_EXPORT` (2023.3 and later) or the older `EXPORT_META_DATA` table carry
EXPORT_SCHEMA_VERSION and EXPORT_PRODUCT_VERSION; files from before 2021 carry neither and use the
"legacy" layout (recognised by their CUPTI/StringIds tables). rocpd: `rocpd_metadata` with a
`schema_version` tag, kept as written ("3", "3.0.5", "4.0.0") so the query set can be chosen by the
full version; a file whose tag is missing or unreadable but which has the 4.x timestamp table is
4.0.0. The `schema_version_major/_minor/_patch` tags are never read: a real 4.0.0 file holds them
as unsubstituted template text. Anything else is refused.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from pa.errors import UserError
from pa.profile.open import read_error

# rocpd schema majors pa has a query set for or below: older ones are refused; newer ones are read
# with the newest set and a warning (pa.profile.queryset).
OLDEST_ROCPD_MAJOR = 3
# A schema version: up to four dot-separated numbers of up to six digits ("3.13.2").
_VERSION = re.compile(r"\d{1,6}(\.\d{1,6}){0,3}")


@dataclass(frozen=True)
class ProfileFormat:
    """What wrote the file: `nsys` or `rocpd`, the vendor, and the schema version string."""

    format: str            # "nsys" | "rocpd"
    vendor: str            # "nvidia" | "amd"
    schema_version: str    # "3.13.2", "legacy", "3", "3.0.5", "4.0.0"
    product_version: str | None


def object_names(conn: sqlite3.Connection) -> set[str]:
    """Names of all tables and views in the file."""
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')").fetchall()
    return {r[0] for r in rows}


def _kv(conn: sqlite3.Connection, sql: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute(sql).fetchall() if k is not None}


def detect(conn: sqlite3.Connection, path: Path) -> ProfileFormat:
    """Return the format of the open profile or raise UserError naming what the file is not."""
    try:
        return _detect(conn, path)
    except sqlite3.DatabaseError as exc:  # a corrupt page, a metadata view over a dropped table
        raise read_error(conn, "the profile's version tables", exc) from exc


def _detect(conn: sqlite3.Connection, path: Path) -> ProfileFormat:
    names = object_names(conn)
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in names:
            meta = _kv(conn, f"SELECT name, value FROM {table}")
            version = meta.get("EXPORT_SCHEMA_VERSION")
            if not version:
                raise UserError(f"{path}: {table} has no EXPORT_SCHEMA_VERSION; not a complete "
                                "Nsight Systems export")
            if not _VERSION.fullmatch(version):
                raise UserError(f"{path}: EXPORT_SCHEMA_VERSION {version[:40]!r} is not a schema version "
                                "(numbers separated by dots)")
            return ProfileFormat("nsys", "nvidia", version, meta.get("EXPORT_PRODUCT_VERSION"))
    if "rocpd_metadata" in names:
        meta = _kv(conn, "SELECT tag, value FROM rocpd_metadata")
        return ProfileFormat("rocpd", "amd", _rocpd_version(meta.get("schema_version"), names, path),
                             meta.get("rocprofiler_version"))
    if "StringIds" in names and any(n.startswith("CUPTI_ACTIVITY_KIND_") or n.startswith("TARGET_INFO_")
                                    for n in names):
        return ProfileFormat("nsys", "nvidia", "legacy", None)
    if not names:
        raise UserError(f"{path}: SQLite database with no tables; not a profile")
    sample = ", ".join(sorted(names)[:5])
    raise UserError(f"{path}: SQLite file of another program (tables: {sample}...); expected an "
                    "Nsight Systems SQLite export or a rocpd database")


def _rocpd_version(tag: str | None, names: set[str], path: Path) -> str:
    """The file's rocpd schema version, checked: dotted digits, major 3 or later."""
    version = (tag or "").strip()
    if not version and "rocpd_timestamp" in names:
        version = "4.0.0"  # the timestamp table is the 4.x layout's mark
    if not version:
        raise UserError(f"{path}: rocpd_metadata has no schema_version; not a rocpd database")
    if not _VERSION.fullmatch(version):
        raise UserError(f"{path}: rocpd schema_version {version[:40]!r} is not a version number")
    if int(version.split(".")[0]) < OLDEST_ROCPD_MAJOR:
        raise UserError(f"{path}: rocpd schema_version {version} is not supported (pa reads schema_version "
                        f"{OLDEST_ROCPD_MAJOR} and later)")
    return version
