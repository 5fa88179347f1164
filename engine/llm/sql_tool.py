"""`sql_query`: the LLM's read-only SQL window into the profile, and the table schema lookup.

The profile is untrusted input and the query text is untrusted output of a model, so the sandbox
does not rely on parsing SQL. It uses a *separate* connection opened by
`engine.profile.open.open_readonly` (URI `mode=ro&immutable=1`, `PRAGMA query_only`) and a SQLite
authorizer that is consulted for every table, column and function at prepare time:

- allowed: SQLITE_SELECT, SQLITE_READ (reading a column), SQLITE_RECURSIVE (recursive CTEs) and
  SQLITE_FUNCTION for the whitelisted functions in `SAFE_FUNCTIONS` only;
- denied: everything else (INSERT/UPDATE/DELETE, CREATE/DROP, ATTACH/DETACH, PRAGMA, transactions,
  `load_extension`, which CPython also leaves disabled on new connections).

Bounds, each stated in the tool result when hit (a model must know that it saw a cut):
- a wall-clock time limit enforced by the progress handler (SQLite interrupts the statement);
- a row cap (`max_rows`) and a result-size cap (`max_bytes`, the JSON size of the rows returned).
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.profile.open import open_readonly

#: Functions the model may call. Deterministic, cheap scalar/aggregate functions only: no
#: randomblob/zeroblob (memory), no load_extension, no functions that touch files.
SAFE_FUNCTIONS = frozenset({
    "abs", "avg", "char", "coalesce", "count", "date", "datetime", "format", "glob", "group_concat",
    "hex", "ifnull", "iif", "instr", "julianday", "length", "like", "lower", "ltrim", "max", "min",
    "nullif", "printf", "quote", "replace", "round", "rtrim", "sign", "string_agg", "strftime",
    "substr", "substring", "sum", "time", "total", "trim", "typeof", "unicode", "upper",
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
    "first_value", "last_value", "nth_value", "floor", "ceil", "ceiling", "sqrt", "pow", "power",
    "log", "log10", "log2", "exp", "mod", "median", "json_extract",
})

_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
_LEADING = re.compile(r"^\s*(?:(?:--[^\n]*\n)|(?:/\*.*?\*/)|\s)*(\w+)", re.S)


@dataclass(frozen=True)
class SqlLimits:
    """Bounds of one `sql_query` call (defaults documented in docs/llm.md)."""

    time_limit_s: float = 2.0
    max_rows: int = 200
    max_bytes: int = 16_000


def _authorizer(action: int, arg1: str | None, arg2: str | None, _db: str | None,
                _trigger: str | None) -> int:
    """Allow reads only; for SQLITE_FUNCTION the function name is in arg2."""
    if action in _ALLOWED_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in SAFE_FUNCTIONS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


class SqlSandbox:
    """A read-only, authorizer-guarded connection to one profile, used only by the LLM's tools."""

    def __init__(self, path: Path, limits: SqlLimits | None = None) -> None:
        self.limits = limits or SqlLimits()
        self._conn = open_readonly(path)
        # sqlite_master is readable under SQLITE_READ, so one guarded connection serves both tools.
        self._conn.set_authorizer(_authorizer)

    def close(self) -> None:
        """Close the sandbox connection (the analysis connection is never shared with it)."""
        self._conn.close()

    def __enter__(self) -> SqlSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def query(self, sql: str) -> dict[str, Any]:
        """Run one SELECT/WITH statement; return columns, rows and the caps that were hit.

        Never raises for a bad query: the error is the tool result, so the model can correct itself.
        """
        head = _LEADING.match(sql)
        keyword = head.group(1).upper() if head else ""
        if keyword not in ("SELECT", "WITH"):
            return {"error": "only a single SELECT or WITH statement is allowed"}
        deadline = time.monotonic() + self.limits.time_limit_s
        timed_out = False

        def progress() -> int:
            nonlocal timed_out
            if time.monotonic() > deadline:
                timed_out = True
                return 1  # non-zero: SQLite interrupts the statement
            return 0

        self._conn.set_progress_handler(progress, 1000)
        notes: list[str] = []
        rows: list[list[Any]] = []
        size = 2
        try:
            cur = self._conn.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            while True:
                row = cur.fetchone()
                if row is None:
                    break
                if len(rows) >= self.limits.max_rows:
                    notes.append(f"row cap hit: only the first {self.limits.max_rows} rows are shown")
                    break
                cells = [c if not isinstance(c, bytes) else f"<blob {len(c)} bytes>" for c in row]
                row_size = len(json.dumps(cells, default=str)) + 1
                if size + row_size > self.limits.max_bytes:
                    notes.append(f"result-size cap hit: output cut at {self.limits.max_bytes} bytes "
                                 f"after {len(rows)} rows")
                    break
                size += row_size
                rows.append(cells)
        except sqlite3.DatabaseError as exc:
            if timed_out:
                return {"error": f"time limit hit: query interrupted after {self.limits.time_limit_s} s; "
                                 "aggregate more or add a LIMIT"}
            msg = str(exc)
            if "not authorized" in msg or "prohibited" in msg:
                msg += " (read-only sandbox: SELECT/WITH over the profile's tables and safe functions only)"
            return {"error": msg}
        except sqlite3.Warning as exc:  # e.g. "You can only execute one statement at a time."
            return {"error": str(exc)}
        finally:
            self._conn.set_progress_handler(None, 0)
        result: dict[str, Any] = {"columns": columns, "rows": rows, "row_count": len(rows)}
        if notes:
            result["truncated"] = "; ".join(notes)
        return result

    def tables(self) -> list[str]:
        """Names of the profile's tables and views."""
        cur = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table','view') ORDER BY name")
        return [r[0] for r in cur.fetchall()]

    def schema(self, table: str | None = None) -> dict[str, Any]:
        """Columns of `table` (name, declared type) from sqlite_master, or the list of tables."""
        if not table:
            return {"tables": self.tables()}
        cur = self._conn.execute("SELECT sql FROM sqlite_master WHERE type IN ('table','view') AND name = ?",
                                 (table,))
        row = cur.fetchone()
        if row is None:
            return {"error": f"no table named {table!r}", "tables": self.tables()}
        return {"table": table, "create": row[0]}
