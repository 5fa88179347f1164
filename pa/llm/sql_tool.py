"""`sql_query` and `table_schema`: the LLM's read-only SQL window into the profile's relations.

What the model can read. By default, **pa's canonical relations** and nothing else: one view per
relation (`kernels`, `copies`, `memsets`, `api_calls`, `syncs`, `markers`, `mpi_calls`, `devices`,
`processes`, `threads`, `overhead`, `meta`, `kernel_names`, `api_names`), defined by the same
query files the summary used, plus two small tables of engine results (`gaps`: the largest idle
gaps; `phases`). The export's own tables are not readable: Nsight Systems' StringIds and
TARGET_INFO_SYSTEM_ENV, rocpd's process `command` and `environment` hold the job's environment
and command lines (PMI_SHARED_SECRET, tokens, home paths). In the views, `processes.name` is the
executable's base name only (rocpd gives the whole command line) and `meta` keeps only the
schema layout, product version, host names and capture start.

Under `--redact` every text column of the views goes through the run's redactor inside SQLite
(`pa_redact`): the model sees KERNEL_n / MARKER_n / STRING_n, its SQL filters on them, and no
string function (`unicode(substr(name, i, 1))`, `length(name)`, a CAST in an error message) can
reach a raw string, because raw strings never leave the views.

`--sql-raw-tables` (never with `--redact`) also exposes the export's own tables, except the ones
that hold the environment, command lines and host files (`DENIED_TABLES`, `DENIED_COLUMNS`).
Secret-looking values are scrubbed from every request body in any case (pa.llm.secrets).

How it is enforced, without parsing SQL: an in-memory main database with the profile ATTACHed
read-only and immutable (`mode=ro&immutable=1`), the views created as TEMP views before a SQLite
authorizer is installed; the authorizer is consulted for every table, column and function at
prepare time and allows SELECT, recursive CTEs, the whitelisted functions `SAFE_FUNCTIONS`, and
reading the attached profile only *through pa's views* (SQLite names the view responsible for
each read). Writes, ATTACH, PRAGMA, temp tables, `load_extension` and pa's own SQL functions
(outside its views) are refused.

Hard bounds (each stated in the tool result when hit; nothing raises out of `query`):
- wall-clock time limit: a progress handler interrupts the statement, and fetching stops too;
- strings and blobs at most `MAX_VALUE_BYTES` inside SQLite (SQLITE_LIMIT_LENGTH: a 900 MB string
  fails at once instead of running for seconds and gigabytes), SQL text at most 100,000 bytes;
- row cap (`max_rows`), result-size cap (`max_bytes` of JSON), each string cell cut at
  `max_string_chars`.

Evidence (pa.llm.grounding): a number of a result counts as a fact only when the query read one
of pa's views or tables (`SELECT 95.0` reads none), and the column does not move when the query's
own numeric literals move (`SELECT 95.0 FROM pa_kernels` and `SELECT 732 / 10.0 FROM pa_kernels` do). `evidence_columns`
re-runs the query with its literals nudged by one part in a million (LIMIT/OFFSET, ORDER/GROUP BY
ordinals and unit constants such as 100, 1e3, 1e6, 1e9, 1024 are left alone) and compares.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pa.llm.redact import Redactor, cap
from pa.profile.canonical import RELATIONS
from pa.profile.domain import REJECT_FUNCTION
from pa.profile.open import bound_functions, check_file, open_readonly
from pa.profile.relations import TABLE_PREFIX

#: Functions the model may call. Deterministic, cheap scalar/aggregate/window functions only: no
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
#: Never, not even inside pa's views.
_NEVER_FUNCTIONS = frozenset({"load_extension", "randomblob", "zeroblob", "readfile", "writefile",
                              "fts3_tokenizer", "edit", "sqlite_compileoption_get"})
#: Tables of an export that hold the environment, command lines or host files (prefix match, any case).
DENIED_TABLES = ("target_info_system_env", "target_info_process_env", "meta_data_capture", "meta_data_export",
                 "export_meta_data", "processstreams", "analysis_file", "osrt_callchains",
                 "sampling_callchains", "cuda_callchains", "diagnostic_event", "rocpd_info_process",
                 "rocpd_info_node", "processes")
DENIED_COLUMNS = frozenset({"command", "environment", "env", "environ", "argv", "args", "cmdline",
                            "command_line", "commandline", "machine_id"})
MAX_VALUE_BYTES = 1_000_000
MAX_SQL_BYTES = 100_000
_ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE}
_LEADING = re.compile(r"^\s*(?:(?:--[^\n]*\n)|(?:/\*.*?\*/)|\s)*(\w+)", re.S)
_META_KEYS = ("schema_layout", "product_version", "host_name", "export_host", "capture_start_utc")
# The text columns of the views and the placeholder kind they get under --redact.
_PUBLIC_TEXT = {("meta", "key"), ("copies", "direction"), ("copies", "src_kind"), ("copies", "dst_kind"),
                ("memsets", "mem_kind"), ("api_calls", "kind"), ("syncs", "sync_type"), ("markers", "kind"),
                ("mpi_calls", "kind")}  # pa's own vocabulary: never redacted
_TEXT_KIND = {("kernels", "name"): "KERNEL", ("kernels", "short_name"): "KERNEL",
              ("kernel_names", "name"): "KERNEL", ("kernel_names", "short_name"): "KERNEL",
              ("markers", "name"): "MARKER", ("markers", "domain"): "MARKER",
              ("devices", "bus_location"): "HOST", ("meta", "value"): "STRING"}


@dataclass(frozen=True)
class SqlLimits:
    """Bounds of one `sql_query` call (defaults documented in docs/llm.md)."""

    time_limit_s: float = 2.0
    max_rows: int = 200
    max_bytes: int = 16_000
    max_string_chars: int = 200


@dataclass
class QueryRecord:
    """What the sandbox remembers of one query, for the grounding check of the final answer."""

    sql: str
    reads_data: bool
    columns: list[str]
    rows: list[list[Any]]
    evidence: list[bool] | None = None  # per column: a measurement, not a literal (computed lazily)


@dataclass
class _Reads:
    data: bool = False  # the statement read one of pa's views or tables (set by the authorizer)


def _drop_row(*_args: object) -> int:
    """The domain checks' reject function in the SQL workspace: the row is dropped (0), not logged."""
    return 0


def _exe_name(command: str | None) -> str | None:
    """The executable's base name of a command line (never its arguments)."""
    if command is None:
        return None
    first = command.strip().split(" ", 1)[0] if command.strip() else ""
    return first.replace("\\", "/").rsplit("/", 1)[-1] or None


class SqlSandbox:
    """A read-only, authorizer-guarded SQL workspace over one profile, used only by the LLM's tools."""

    def __init__(self, path: Path, limits: SqlLimits | None = None, redactor: Redactor | None = None,
                 raw_tables: bool = False, engine_tables: dict[str, tuple[list[str], list[tuple]]] | None = None,
                 query_dirs: Sequence[Path] = ()) -> None:
        self.limits = limits or SqlLimits()
        self.redactor = redactor or Redactor(enabled=False)
        self.raw_tables = raw_tables and not self.redactor.enabled
        self.skipped: dict[str, str] = {}
        self.views: dict[str, list[str]] = {}
        self.engine_tables: dict[str, list[str]] = {}
        self.records: dict[str, QueryRecord] = {}
        self._reads = _Reads()
        self._engine_lower: set[str] = set()
        sql_by_relation = self._bind(path, query_dirs)
        check_file(path)
        conn = sqlite3.connect("file::memory:", uri=True, check_same_thread=False)
        conn.text_factory = lambda b: b.decode("utf-8", "replace")
        # Before any TEMP object: changing temp_store drops them. Large sorts spill to a temporary
        # file (never beside the profile), not to RAM.
        conn.execute("PRAGMA temp_store = FILE")
        conn.execute("PRAGMA cache_size = -65536")
        uri = f"file:{quote(str(path.resolve()))}?mode=ro&immutable=1"
        conn.execute("ATTACH DATABASE ? AS profile", (uri,))
        conn.create_function("pa_redact", 2, self._redact_fn, deterministic=True)
        conn.create_function("pa_exe", 1, _exe_name, deterministic=True)
        # The views are the relations as the summary reads them, domain checks included: a row the
        # summary dropped (pa.profile.domain) is dropped here too, without being counted again.
        conn.create_function(REJECT_FUNCTION, -1, _drop_row, deterministic=True)
        for relation, sql in sql_by_relation.items():
            self._create_view(conn, relation, sql)
        for name, (cols, rows) in (engine_tables or {}).items():
            conn.execute(f'CREATE TABLE "{name}" ({", ".join(cols)})')
            conn.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" * len(cols))})', rows)
            self.engine_tables[name] = cols
        self._engine_lower = {t.lower() for t in self.engine_tables}
        names = [r[0] for r in conn.execute(
            "SELECT name FROM profile.sqlite_master WHERE type IN ('table','view') AND name NOT LIKE 'sqlite_%'")]
        self._profile_views = {r[0].lower() for r in conn.execute(
            "SELECT name FROM profile.sqlite_master WHERE type = 'view'")}
        ours = set(self.views) | self._engine_lower
        if self.raw_tables:
            names = [n for n in names if n.lower().startswith(DENIED_TABLES)]
        own_functions = {"pa_redact", "pa_exe", REJECT_FUNCTION}
        words = sorted({n for n in names if n.lower() not in ours} | own_functions, key=len, reverse=True)
        self._forbidden: re.Pattern[str] | None = re.compile(
            "|".join(rf"(?<![\w$]){re.escape(w)}(?![\w$])" for w in words), re.I) if words else None
        self._builtins = SafeBuiltins()
        self._builtins.install(conn)  # after the views: pa's own query files keep SQLite's built-ins
        # the value cap and instr in linear time; printf/format stay (the model formats numbers), bounded
        # by the cap and the statement's time limit, and randomblob/zeroblob are never allowed anyway
        bound_functions(conn, MAX_VALUE_BYTES, refuse_amplifiers=False)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 1)
        conn.setlimit(sqlite3.SQLITE_LIMIT_EXPR_DEPTH, 200)
        conn.setlimit(sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, 50)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000)
        conn.set_authorizer(self._authorizer)
        self._conn = conn

    # ---- set-up

    def _bind(self, path: Path, query_dirs: Sequence[Path] = ()) -> dict[str, str]:
        """The rendered SQL of each canonical relation of this profile (skipped ones with reasons).

        query_dirs: the user query directories the summary was read with (the same relations).
        """
        from pa.profile.detect import detect
        from pa.profile.queryset import resolve
        from pa.profile.relations import Relations

        conn = open_readonly(path)
        try:
            fmt = detect(conn, path)
            rel = Relations.bind(conn, resolve(fmt.format, fmt.schema_version, query_dirs=query_dirs))
        finally:
            conn.close()
        self.skipped = {s.what: s.reason for s in rel.skipped}
        return dict(rel.sql_by_relation)

    def _create_view(self, conn: sqlite3.Connection, relation: str, sql: str) -> None:
        cols = []
        names = []
        for col in RELATIONS[relation]:
            name = col.name
            expr = f'"{name}"'
            if relation == "processes" and name == "name":
                expr = f"pa_exe({expr})"
            if col.type == "text" and self.redactor.enabled and (relation, name) not in _PUBLIC_TEXT:
                kind = _TEXT_KIND.get((relation, name), "STRING")
                expr = f"pa_redact('{kind}', {expr})"
            cols.append(f'{expr} AS "{name}"')
            names.append(name)
        where = (" WHERE key IN (" + ", ".join(f"'{k}'" for k in _META_KEYS) + ")") if relation == "meta" else ""
        view = f"{TABLE_PREFIX}{relation}"
        conn.execute(f'CREATE TEMP VIEW "{view}" AS SELECT {", ".join(cols)} FROM (\n{sql}\n){where}')
        self.views[view] = names

    def _redact_fn(self, kind: str, value: Any) -> Any:
        return self.redactor.datum(value, kind) if isinstance(value, str) else value

    def _authorizer(self, action: int, arg1: str | None, arg2: str | None, db: str | None,
                    view: str | None) -> int:
        """Allow reads through pa's views and tables and whitelisted functions; deny everything else.

        A read of the attached profile inside a view or CTE (`view` set) can only come from pa's
        views: `_precheck` refuses any SQL that names a table of the profile or one of pa's own SQL
        functions, so the model cannot write a CTE of its own over the export's tables.
        """
        if action in _ALLOWED_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            fn = (arg2 or "").lower()
            if fn in _NEVER_FUNCTIONS:
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK if fn in SAFE_FUNCTIONS or view is not None else sqlite3.SQLITE_DENY
        if action != sqlite3.SQLITE_READ:
            return sqlite3.SQLITE_DENY
        table = (arg1 or "").lower()
        column = (arg2 or "").lower()
        if db is None and not column:
            return sqlite3.SQLITE_OK  # a table scanned without reading a column (count(*) in a view)
        if db == "profile":
            if view is not None and view.lower() not in self._engine_lower and view.lower() not in self._profile_views:
                self._reads.data = True  # through pa's views: the query reads the profile's relations
                return sqlite3.SQLITE_OK
            # a read inside one of the profile's own views (rocpd's `threads`, ...) is a raw read like any
            # other: the denied tables and columns stay denied whatever view of the export leads to them
            if self.raw_tables and not table.startswith(DENIED_TABLES) and column not in DENIED_COLUMNS:
                self._reads.data = self._reads.data or bool(column)
                return sqlite3.SQLITE_OK
            return sqlite3.SQLITE_DENY
        if (db == "temp" and table in self.views) or (db == "main" and table in self._engine_lower):
            if view is None and column:
                self._reads.data = True
            return sqlite3.SQLITE_OK
        if table in ("sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema") and db != "profile":
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    def _precheck(self, sql: str) -> str | None:
        """Why `sql` is refused before SQLite sees it (it names an export table or a pa_ function), or None."""
        m = self._forbidden.search(sql) if self._forbidden is not None else None
        if m is None:
            return None
        if m.group(0).lower().startswith("pa_") and m.group(0).lower() in ("pa_redact", "pa_exe"):
            return f"{m.group(0)} is internal to pa's views"
        return (f"the export's own table {m.group(0)!r} is not available to the model (it may hold the job's "
                f"environment and command lines); query pa's views: {', '.join(sorted(self.views))}")

    def close(self) -> None:
        """Close the sandbox connection (the analysis connection is never shared with it)."""
        self._conn.close()
        self._builtins.close()

    def interrupt(self) -> None:
        """Stop a running statement (the stage's deadline passed)."""
        with contextlib.suppress(sqlite3.ProgrammingError):
            self._conn.interrupt()

    def __enter__(self) -> SqlSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- queries

    def _execute(self, sql: str) -> tuple[list[str], list[list[Any]], list[str], bool]:
        """Run `sql` under the limits: (columns, rows, notes, reads_data); raises sqlite3/Memory errors."""
        deadline = time.monotonic() + self.limits.time_limit_s

        def progress() -> int:
            return 1 if time.monotonic() > deadline else 0  # non-zero: SQLite interrupts the statement

        self._reads = _Reads()
        self._conn.set_progress_handler(progress, 1000)
        notes: list[str] = []
        rows: list[list[Any]] = []
        size = 2
        try:
            cur = self._conn.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            while True:
                if time.monotonic() > deadline:
                    raise _TimeUp
                row = cur.fetchone()
                if row is None:
                    break
                if len(rows) >= self.limits.max_rows:
                    notes.append(f"row cap hit: only the first {self.limits.max_rows} rows are shown")
                    break
                cells = [self._cell(c) for c in row]
                row_size = len(json.dumps(cells, default=str)) + 1
                if size + row_size > self.limits.max_bytes:
                    notes.append(f"result-size cap hit: output cut at {self.limits.max_bytes} bytes "
                                 f"after {len(rows)} rows")
                    break
                size += row_size
                rows.append(cells)
        except sqlite3.OperationalError as exc:
            if time.monotonic() > deadline or "interrupted" in str(exc):
                raise _TimeUp from exc
            raise
        finally:
            self._conn.set_progress_handler(None, 0)
        return columns, rows, notes, self._reads.data

    def _cell(self, c: Any) -> Any:
        if isinstance(c, bytes):
            return f"<blob {len(c)} bytes>"
        if isinstance(c, float) and not math.isfinite(c):
            return str(c)
        if isinstance(c, str):
            return cap(c, self.limits.max_string_chars)
        return c

    def query(self, sql: str, call_id: str | None = None) -> dict[str, Any]:
        """Run one SELECT/WITH statement; return columns, rows and the caps that were hit.

        Never raises: an error is the tool result (redacted under --redact), so the model can
        correct itself.
        """
        try:
            if not isinstance(sql, str):
                return {"error": "sql must be a string"}
            if len(sql) > MAX_SQL_BYTES:
                return {"error": f"the SQL text is longer than {MAX_SQL_BYTES:,} characters"}
            head = _LEADING.match(sql)
            keyword = head.group(1).upper() if head else ""
            if keyword not in ("SELECT", "WITH"):
                return {"error": "only a single SELECT or WITH statement is allowed"}
            refused = self._precheck(sql)
            if refused:
                return {"error": cap(self.redactor.text(refused), 600)}
            columns, rows, notes, reads_data = self._execute(sql)
        except _TimeUp:
            return {"error": f"time limit hit: query interrupted after {self.limits.time_limit_s:g} s; "
                             "aggregate more or add a LIMIT"}
        except (sqlite3.Error, sqlite3.Warning, MemoryError, OverflowError, RecursionError, ValueError,
                TypeError) as exc:
            msg = str(exc)
            if "user-defined function raised exception" in msg and self._builtins.last_error:
                msg = f"{msg}: {self._builtins.last_error}"
                self._builtins.last_error = None
            if "not authorized" in msg or "prohibited" in msg:
                msg += (" (read-only sandbox: SELECT/WITH over pa's relation views "
                        f"{', '.join(sorted(self.views))} and safe functions only)")
            elif "too big" in msg:
                msg += f" (strings and blobs are limited to {MAX_VALUE_BYTES:,} bytes in the sandbox)"
            return {"error": cap(self.redactor.text(msg), 400)}
        result: dict[str, Any] = {"columns": columns, "rows": rows, "row_count": len(rows)}
        if notes:
            result["truncated"] = "; ".join(notes)
        if call_id is not None:
            self.records[call_id] = QueryRecord(sql, reads_data, columns, rows)
        return result

    def internal(self, sql: str) -> dict[str, Any]:
        """A query of pa's own tools (same views, limits and authorizer); raises on error or timeout."""
        try:
            columns, rows, _notes, _reads = self._execute(sql)
        except _TimeUp as exc:
            raise TimeoutError(f"time limit hit after {self.limits.time_limit_s:g} s: narrow the scope") from exc
        return {"columns": columns, "rows": rows}

    def intervals(self, view: str, lo: int, hi: int, limit: int) -> Any:
        """(device, start, end) rows of `view` overlapping [lo, hi) as an int64 array; None above `limit` rows."""
        import numpy as np

        deadline = time.monotonic() + self.limits.time_limit_s
        self._conn.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
        try:
            cur = self._conn.execute(
                f'SELECT coalesce(device, -1), start, "end" FROM {view} '
                'WHERE start < ? AND "end" > ? AND "end" >= start LIMIT ?', (hi, lo, limit + 1))
            rows = cur.fetchall()
        except sqlite3.OperationalError as exc:
            if time.monotonic() > deadline:
                raise TimeoutError(f"time limit hit after {self.limits.time_limit_s:g} s: narrow the scope") from exc
            raise
        finally:
            self._conn.set_progress_handler(None, 0)
        if len(rows) > limit:
            return None
        return np.array(rows, dtype=np.int64).reshape(-1, 3)

    def evidence_columns(self, call_id: str) -> list[bool]:
        """Per column of the recorded result: True for a measurement, False for a literal (module docs)."""
        rec = self.records[call_id]
        if rec.evidence is not None:
            return rec.evidence
        if not rec.reads_data:
            rec.evidence = [False] * len(rec.columns)
            return rec.evidence
        nudged, count = nudge_literals(rec.sql)
        if count == 0:
            rec.evidence = [True] * len(rec.columns)
            return rec.evidence
        try:
            _cols, rows, _notes, _reads = self._execute(nudged)
        except (_TimeUp, sqlite3.Error, sqlite3.Warning, MemoryError, OverflowError, RecursionError,
                ValueError, TypeError):
            rec.evidence = [False] * len(rec.columns)
            return rec.evidence
        out = []
        for j in range(len(rec.columns)):
            a = [r[j] for r in rec.rows]
            b = [r[j] for r in rows[:len(rec.rows)]]
            out.append(len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True)))
        rec.evidence = out
        return out

    def schema(self, table: str | None = None) -> dict[str, Any]:
        """The views and tables the model can query (with column meanings), or one of them."""
        meaning = {r: {c.name: c.meaning for c in cols} for r, cols in RELATIONS.items()}
        if not table:
            out: dict[str, Any] = {
                "views": {v: ", ".join(cols) for v, cols in sorted(self.views.items())},
                "engine_tables": {t: ", ".join(cols) for t, cols in sorted(self.engine_tables.items())},
                "not_available": self.skipped,
                "units": "times are integer ns (start/end on the profile's clock), sizes bytes",
            }
            if self.raw_tables:
                out["export_tables"] = self._raw_table_names()
            if self.redactor.enabled:
                out["redacted"] = "text columns hold placeholders (KERNEL_n, MARKER_n, STRING_n)"
            return out
        key = table.lower()
        if key in RELATIONS:
            key = TABLE_PREFIX + key
        for v, cols in self.views.items():
            if v == key:
                return {"view": v, "columns": {c: meaning[v.removeprefix(TABLE_PREFIX)].get(c, "") for c in cols}}
        for t, cols in self.engine_tables.items():
            if t == key:
                return {"table": t, "columns": cols}
        if self.raw_tables and key in {n.lower() for n in self._raw_table_names()}:
            return {"table": table, "create": self._raw_create(table)}
        if key.removeprefix(TABLE_PREFIX) in self.skipped:
            return {"error": f"{key} is not available in this profile: {self.skipped[key.removeprefix(TABLE_PREFIX)]}"}
        return {"error": f"no view or table named {table!r}", "views": sorted(self.views)}

    def _raw_table_names(self) -> list[str]:
        self._conn.set_authorizer(None)
        try:
            names = [r[0] for r in self._conn.execute(
                "SELECT name FROM profile.sqlite_master WHERE type IN ('table','view') ORDER BY name")]
        finally:
            self._conn.set_authorizer(self._authorizer)
        return [n for n in names if not n.lower().startswith(DENIED_TABLES)]

    def _raw_create(self, table: str) -> str | None:
        self._conn.set_authorizer(None)
        try:
            row = self._conn.execute("SELECT sql FROM profile.sqlite_master WHERE lower(name) = ?",
                                     (table.lower(),)).fetchone()
        finally:
            self._conn.set_authorizer(self._authorizer)
        return None if row is None else row[0]


class _TimeUp(Exception):
    """The query's time limit passed."""


MAX_FORMAT_WIDTH = 1_000
MAX_PATTERN_WILDCARDS = 4
_FORMAT_SPEC = re.compile(r"%[-+ 0#,!]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")


class SafeBuiltins:
    """printf/format, like and glob with bounds SQLite itself does not enforce inside one call.

    SQLite checks SQLITE_LIMIT_LENGTH only after `printf('%.*c', 900000000, 'x')` has looped 900
    million times (~10 s, uninterruptible: the progress handler runs between VM steps, not inside a
    function), and LIKE/GLOB patterns with many wildcards backtrack exponentially on long strings.
    These wrappers refuse a width or precision above MAX_FORMAT_WIDTH and more than
    MAX_PATTERN_WILDCARDS wildcards, then run SQLite's own function on a helper connection with the
    same length limit, so results are SQLite's.
    """

    def __init__(self) -> None:
        self.helper = sqlite3.connect(":memory:", check_same_thread=False)
        self.helper.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        self.last_error: str | None = None

    def install(self, conn: sqlite3.Connection) -> None:
        """Override the built-ins on `conn` (application functions take precedence)."""
        conn.create_function("printf", -1, self.printf, deterministic=True)
        conn.create_function("format", -1, self.printf, deterministic=True)
        for name in ("like", "glob"):
            conn.create_function(name, 2, self._matcher(name), deterministic=True)
        conn.create_function("like", 3, self._matcher("like"), deterministic=True)

    def _fail(self, message: str) -> None:
        self.last_error = message
        raise ValueError(message)

    def printf(self, fmt: Any = None, *args: Any) -> Any:
        """SQLite's printf, refusing huge widths and precisions."""
        if isinstance(fmt, str):
            star = 0
            for m in _FORMAT_SPEC.finditer(fmt):
                for part in (m.group(1), m.group(2)):
                    if part == "*":
                        arg = args[star] if star < len(args) else 0
                        star += 1
                        if isinstance(arg, (int, float)) and abs(arg) > MAX_FORMAT_WIDTH:
                            self._fail(f"printf width or precision {arg} is above {MAX_FORMAT_WIDTH}")
                    elif part is not None and int(part) > MAX_FORMAT_WIDTH:
                        self._fail(f"printf width or precision {part} is above {MAX_FORMAT_WIDTH}")
        placeholders = ", ".join("?" * (1 + len(args)))
        return self.helper.execute(f"SELECT printf({placeholders})", (fmt, *args)).fetchone()[0]

    def _matcher(self, name: str) -> Any:
        wildcard = "%" if name == "like" else "*"

        def match(pattern: Any, value: Any, escape: Any = None) -> Any:
            if isinstance(pattern, str) and pattern.count(wildcard) > MAX_PATTERN_WILDCARDS:
                self._fail(f"{name.upper()} pattern with more than {MAX_PATTERN_WILDCARDS} '{wildcard}' wildcards")
            if escape is None:
                return self.helper.execute(f"SELECT {name}(?, ?)", (pattern, value)).fetchone()[0]
            return self.helper.execute("SELECT like(?, ?, ?)", (pattern, value, escape)).fetchone()[0]

        return match

    def close(self) -> None:
        """Close the helper connection."""
        self.helper.close()


_NUMBER_TOKEN = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?\*/"
    r"|(?<![\w.])(0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.])"
    r"|\b(LIMIT|OFFSET|BY)\b|([,()])|(\w+)", re.S | re.I)
_UNIT_CONSTANTS = frozenset({0.0, 1.0, 2.0, 100.0, 1e3, 1e6, 1e9, 1024.0, 1048576.0, 1073741824.0, 60.0,
                             3600.0})


def nudge_literals(sql: str) -> tuple[str, int]:
    """`sql` with its numeric literals nudged (the k-th by 1 + k·1e-6), and how many were changed (module docs).

    Left alone: literals inside strings, identifiers and comments, LIMIT/OFFSET arguments,
    ORDER BY / GROUP BY ordinals, and unit constants (0, 1, 2, 60, 100, 1e3, 1e6, 1e9, 3600, 1024…).
    """
    out: list[str] = []
    pos = 0
    count = 0
    after: str | None = None  # "LIMIT", "BY" while inside such a clause's top-level list
    depth = 0
    for m in _NUMBER_TOKEN.finditer(sql):
        num, keyword, punct, word = m.group(1), m.group(2), m.group(3), m.group(4)
        if keyword:
            after = keyword.upper()
            depth = 0
            continue
        if punct:
            depth += {"(": 1, ")": -1}.get(punct, 0)
            continue
        if word:
            if depth == 0 and after is not None and word.upper() not in ("ASC", "DESC", "NULLS", "FIRST", "LAST"):
                after = None
            continue
        if num is None:
            continue
        if after in ("LIMIT", "OFFSET") or (after == "BY" and depth == 0):
            continue
        try:
            value = float(int(num, 16)) if num.lower().startswith("0x") else float(num)
        except ValueError:
            continue
        if value in _UNIT_CONSTANTS:
            continue
        out.append(sql[pos:m.start(1)])
        out.append(repr(value * (1 + 1e-6 * (count + 1))))  # distinct factors: a ratio of literals moves too
        pos = m.end(1)
        count += 1
    out.append(sql[pos:])
    return "".join(out), count
