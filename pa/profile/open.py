"""Open a profile strictly read-only and identify it.

The profile is untrusted input and must never change: it is opened through a SQLite URI with
`mode=ro&immutable=1`, so SQLite neither writes, locks, nor creates -wal/-journal/-shm files beside
it, and nothing (no index, no temp table) is ever created inside it.

Immutable mode has one price: SQLite then ignores a `-wal` or hot `-journal` beside the file, so
numbers would silently come from stale or torn pages. `check_sidecars` looks for both first and
refuses such a file with one line saying how to checkpoint a copy (pa never writes to recover it).

Every statement on the connection runs under a time limit (`QueryClock`): a view over an endless
recursive CTE, or a query file with one, is interrupted instead of hanging pa.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import sqlite3
import stat
import struct
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from pa.errors import UserError

SQLITE_MAGIC = b"SQLite format 3\x00"
WAL_MAGICS = (0x377F0682, 0x377F0683)
JOURNAL_MAGIC = bytes((0xD9, 0xD5, 0x05, 0xF9, 0x20, 0xA1, 0x63, 0xD7))
# Frames of a -wal file inspected for a commit before pa gives up and assumes there is one.
WAL_MAX_FRAMES = 1 << 16

# Time limit of one statement on an analysis connection, seconds; PA_QUERY_TIMEOUT overrides it.
QUERY_TIMEOUT_ENV = "PA_QUERY_TIMEOUT"
DEFAULT_QUERY_TIMEOUT_S = 600.0
# SQLite virtual-machine instructions between two looks at the clock (tens of milliseconds).
# The look is a Python call, so it waits for the GIL: with a look every millisecond, a scan on one
# thread stalled behind the other thread's Python and numpy work at every look, and pa's two
# threads ran one after the other (1 M-kernel Nsight Systems file: wall time equal to CPU time).
_PROGRESS_EVERY = 10_000_000

# Text that is not valid UTF-8 (a corrupt or hostile string table) is decoded with U+FFFD
# replacement characters instead of failing the whole query.
_decode_text = functools.partial(str, encoding="utf-8", errors="replace")


def check_file(path: Path) -> None:
    """Refuse anything that cannot be a SQLite profile, with one clear sentence."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{path}: is a directory, not a profile file")
    if not stat.S_ISREG(st.st_mode):
        # A FIFO would block the open forever, a device would be read without end.
        raise UserError(f"{path}: not a regular file (a FIFO, device or socket); give the profile file itself")
    if st.st_size == 0:
        raise UserError(f"{path}: empty file, not a profile")
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    if head != SQLITE_MAGIC:
        raise UserError(f"{path}: not a SQLite database (an Nsight Systems .nsys-rep must first be "
                        "exported with `nsys export --type sqlite`)")
    check_sidecars(path)


def check_sidecars(path: Path) -> None:
    """Refuse a profile whose -wal holds committed changes or whose -journal is hot.

    SQLite names the sidecars after the database path it opens (the resolved one, for a symlink),
    so both spellings are checked.
    """
    for base in dict.fromkeys((path, path.resolve())):
        wal = base.with_name(base.name + "-wal")
        if _wal_has_commit(wal):
            raise UserError(
                f"{path}: {wal.name} beside it holds changes that are not in the database file yet "
                f"(an un-checkpointed WAL); pa never writes to a profile and would read stale data. "
                f"Checkpoint a copy: cp {base.name} {wal.name} /tmp/ && "
                f"sqlite3 /tmp/{base.name} 'PRAGMA wal_checkpoint(TRUNCATE)', then run pa on /tmp/{base.name}")
        journal = base.with_name(base.name + "-journal")
        if _journal_is_hot(journal):
            raise UserError(
                f"{path}: {journal.name} beside it is a hot rollback journal (a write was interrupted, "
                f"or is still going on): the file may be torn. Once no program writes it, roll it back "
                f"in a copy: cp {base.name} {journal.name} /tmp/ && sqlite3 /tmp/{base.name} "
                f"'PRAGMA integrity_check', then run pa on /tmp/{base.name}")


def _read_head(path: Path, n: int) -> bytes | None:
    """The first n bytes of a regular file, or None when there is no such file."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with path.open("rb") as fh:
            return fh.read(n)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"{path}: exists beside the profile but cannot be read ({exc.strerror}); "
                        "pa cannot tell whether it holds changes the profile lacks") from None


def _wal_has_commit(wal: Path) -> bool:
    """True when the -wal file holds at least one commit frame of its current generation.

    WAL layout (sqlite.org/fileformat2.html#walformat): a 32-byte header (magic, version, page
    size, checkpoint sequence, salt-1, salt-2, checksums), then frames of a 24-byte header (page
    number, database size after commit or 0, salt-1, salt-2, checksums) and one page. A frame
    belongs to the current generation when its salts equal the header's; a commit frame has a
    non-zero size. An empty or reset -wal holds nothing pa would miss.
    """
    head = _read_head(wal, 32)
    if head is None or len(head) < 32:
        return False
    magic, _version, page_size, _seq, salt1, salt2 = struct.unpack(">6I", head[:24])
    if magic not in WAL_MAGICS or page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        return False
    frame = 24 + page_size
    with wal.open("rb") as fh:
        for i in range(WAL_MAX_FRAMES):
            fh.seek(32 + i * frame)
            fh_head = fh.read(24)
            if len(fh_head) < 24:
                return False
            _page, commit, s1, s2 = struct.unpack(">4I", fh_head[:16])
            if (s1, s2) != (salt1, salt2):
                return False
            if commit:
                return True
    return True  # a very long transaction: assume it committed rather than read stale data


def _journal_is_hot(journal: Path) -> bool:
    """True when a rollback journal beside the file starts with the journal magic (not committed)."""
    head = _read_head(journal, len(JOURNAL_MAGIC))
    return head is not None and head == JOURNAL_MAGIC


def query_timeout_s() -> float:
    """The per-statement time limit: PA_QUERY_TIMEOUT seconds if set, else the default."""
    raw = os.environ.get(QUERY_TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_QUERY_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{QUERY_TIMEOUT_ENV}={raw!r}: expected a positive number of seconds")
    return value


class QueryClock:
    """Interrupts any statement of one connection that runs longer than `seconds`.

    SQLite calls `started` (its trace hook) when a statement begins to run and `check` (its
    progress handler) every _PROGRESS_EVERY virtual-machine instructions; a non-zero answer
    interrupts the statement with "interrupted". `timed_out` lets the caller tell that apart from
    an interrupt of another cause, and name the relation.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = math.inf
        self.timed_out = False

    def started(self, _statement: str) -> None:
        """A statement begins: its own time budget starts now."""
        self.deadline = time.monotonic() + self.seconds
        self.timed_out = False

    def check(self) -> int:
        """Progress handler: 1 (interrupt) once the running statement is over its budget."""
        if time.monotonic() > self.deadline:
            self.timed_out = True
            return 1
        return 0


class ProfileConnection(sqlite3.Connection):
    """A read-only profile connection that knows its file and carries its query clock."""

    path: Path
    clock: QueryClock


# A profile's views run inside pa's queries (rocpd files are views over per-run tables), so a hostile
# view could build a 200 MB string or call a function for minutes inside one step, where the
# statement clock (a progress handler between steps) cannot stop it. No real export holds a value near
# this size (the largest string of the shared captures is 271 kB).
MAX_VALUE_BYTES = 16 << 20


def _instr(haystack: object, needle: object) -> int | None:
    """SQLite's instr(X, Y) in linear time (Python's string search), not SQLite's quadratic loop."""
    if haystack is None or needle is None:
        return None
    if isinstance(haystack, bytes) and isinstance(needle, bytes):
        return haystack.find(needle) + 1
    h = haystack.decode("utf-8", "replace") if isinstance(haystack, bytes) else str(haystack)
    n = needle.decode("utf-8", "replace") if isinstance(needle, bytes) else str(needle)
    return h.find(n) + 1


# Functions that turn a few bytes of SQL into megabytes (a width, a size): no query file of pa's uses
# them, and a profile's view calling them in every row costs seconds per row even under the value cap.
AMPLIFYING_FUNCTIONS = ("printf", "format", "zeroblob", "randomblob")


def _refuse(name: str) -> Callable[..., None]:
    def refused(*_args: object) -> None:
        raise sqlite3.DatabaseError(f"{name}() is not available to a profile's SQL (it builds values of any size)")
    return refused


def bound_functions(conn: sqlite3.Connection, max_value_bytes: int = MAX_VALUE_BYTES,
                    refuse_amplifiers: bool = True) -> None:
    """Bound what one SQL step can cost: a value cap, a linear-time instr, no size-amplifying functions.

    No value above max_value_bytes (a clear "string or blob too big" instead of gigabytes), instr in
    linear time (its built-in form is O(len X × len Y)), and (refuse_amplifiers) printf/format with a
    width and zeroblob/randomblob refused: a profile's view that calls them fails in one line.
    """
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
    conn.create_function("instr", 2, _instr, deterministic=True)
    if refuse_amplifiers:
        for name in AMPLIFYING_FUNCTIONS:
            conn.create_function(name, -1, _refuse(name))


def open_readonly(path: Path, timeout_s: float | None = None) -> ProfileConnection:
    """Open `path` read-only and immutable; verify that its schema can be read.

    timeout_s bounds every statement (default: query_timeout_s()).
    """
    path = Path(path)
    check_file(path)
    seconds = query_timeout_s() if timeout_s is None else timeout_s
    uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, factory=ProfileConnection)
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{path}: unreadable SQLite file ({exc}); truncated or corrupt?") from exc
    conn.path = path
    conn.clock = QueryClock(seconds)
    conn.text_factory = _decode_text
    conn.set_trace_callback(conn.clock.started)
    conn.set_progress_handler(conn.clock.check, _PROGRESS_EVERY)
    bound_functions(conn)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        # Keep SQLite's scratch space out of the profile's directory and in memory for small sorts.
        conn.execute("PRAGMA query_only = 1")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise UserError(f"{path}: unreadable SQLite file ({exc}); truncated or corrupt?") from exc
    return conn


def read_error(conn: sqlite3.Connection, what: str, exc: sqlite3.Error) -> UserError:
    """One line for a statement that failed while reading `what` (a relation, the schema, ...).

    A statement stopped by the connection's QueryClock says so and names the limit; anything else
    (a corrupt page, a view over a dropped table, a function the profile's view needs but SQLite
    does not offer) quotes SQLite's own message.
    """
    path = getattr(conn, "path", "profile")
    clock = getattr(conn, "clock", None)
    if clock is not None and clock.timed_out:
        return UserError(f"{path}: reading {what} took longer than {clock.seconds:g} s and was stopped "
                         f"(a view or query that never ends? {QUERY_TIMEOUT_ENV}=SECONDS allows more)")
    return UserError(f"{path}: cannot read {what}: {exc}")


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
