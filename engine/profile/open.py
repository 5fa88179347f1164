"""Open a profile strictly read-only and identify it.

The profile is untrusted input and must never change: it is opened through a SQLite URI with
`mode=ro&immutable=1`, so SQLite neither writes, locks, nor creates -wal/-journal/-shm files beside
it, and nothing (no index, no temp table) is ever created inside it.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from urllib.parse import quote

from engine.errors import UserError

SQLITE_MAGIC = b"SQLite format 3\x00"


def check_file(path: Path) -> None:
    """Refuse anything that cannot be a SQLite profile, with one clear sentence."""
    if not path.exists():
        raise UserError(f"{path}: no such file")
    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a profile file")
    size = path.stat().st_size
    if size == 0:
        raise UserError(f"{path}: empty file, not a profile")
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head != SQLITE_MAGIC:
        raise UserError(f"{path}: not a SQLite database (an Nsight Systems .nsys-rep must first be "
                        "exported with `nsys export --type sqlite`)")


def open_readonly(path: Path) -> sqlite3.Connection:
    """Open `path` read-only and immutable; verify that its schema can be read."""
    check_file(path)
    uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{path}: unreadable SQLite file ({exc}); truncated or corrupt?") from exc
    # Keep SQLite's scratch space out of the profile's directory and in memory for small sorts.
    conn.execute("PRAGMA query_only = 1")
    return conn


def sha256_of(path: Path, chunk: int = 1 << 22) -> str:
    """Return the hex SHA-256 of the file (provenance: which bytes the report describes)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while True:
            block = fh.read(chunk)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()
