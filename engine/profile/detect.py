"""Detect which profiler wrote a SQLite file and which export schema version it uses.

Nsight Systems: `META_DATA_EXPORT` (2023.3 and later) or the older `EXPORT_META_DATA` table carry
EXPORT_SCHEMA_VERSION and EXPORT_PRODUCT_VERSION; files from before 2021 carry neither and use the
"legacy" layout (recognised by their CUPTI/StringIds tables). rocpd: `rocpd_metadata` with a
`schema_version` tag. Anything else is refused.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from engine.errors import UserError
from engine.profile.open import read_error

SUPPORTED_ROCPD_MAJORS = (3,)
# A schema version: up to four dot-separated numbers of up to six digits ("3.13.2").
_VERSION = re.compile(r"\d{1,6}(\.\d{1,6}){0,3}")


@dataclass(frozen=True)
class ProfileFormat:
    """What wrote the file: `nsys` or `rocpd`, the vendor, and the schema version string."""

    format: str            # "nsys" | "rocpd"
    vendor: str            # "nvidia" | "amd"
    schema_version: str    # "3.13.2", "legacy", "3"
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
        version = meta.get("schema_version")
        if version is None:
            raise UserError(f"{path}: rocpd_metadata has no schema_version; not a rocpd database")
        try:
            major = int(version.split(".")[0])
        except ValueError as exc:
            raise UserError(f"{path}: rocpd schema_version {version!r} is not a number") from exc
        if major not in SUPPORTED_ROCPD_MAJORS:
            raise UserError(f"{path}: rocpd schema_version {version} is not supported (pa reads "
                            f"schema_version {', '.join(map(str, SUPPORTED_ROCPD_MAJORS))}); "
                            "add queries/rocpd/<version>/ to support it")
        return ProfileFormat("rocpd", "amd", str(major), meta.get("rocprofiler_version"))
    if "StringIds" in names and any(n.startswith("CUPTI_ACTIVITY_KIND_") or n.startswith("TARGET_INFO_")
                                    for n in names):
        return ProfileFormat("nsys", "nvidia", "legacy", None)
    if not names:
        raise UserError(f"{path}: SQLite database with no tables; not a profile")
    sample = ", ".join(sorted(names)[:5])
    raise UserError(f"{path}: SQLite file of another program (tables: {sample}...); expected an "
                    "Nsight Systems SQLite export or a rocpd database")
