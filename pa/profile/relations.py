"""Run a query set against an open profile: canonical relations as SQL, fetched as numpy columns.

A canonical relation is never materialised in the profile (that would write to it) nor fetched
whole into Python: each query file's SELECT becomes a common table expression, and metrics either
aggregate over it in SQL or fetch only the integer columns interval merging needs. A relation whose
required tables or columns are absent is recorded in `skipped` with the reason and behaves as an
empty relation of the right shape, so a caller can never mistake "not captured" for "zero".

Query files are data: their Jinja is rendered in pa's sandbox (pa.sandbox) seeing only
`has_table` and `has_column`. Every relation is read through its domain checks (pa.profile.domain):
rows no metric should see are dropped and counted. A statement that fails (a corrupt page, a broken
view) or runs past the connection's time limit becomes one UserError line naming the relation.
"""

from __future__ import annotations

import functools
import itertools
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from pa import sandbox
from pa.errors import UserError
from pa.profile.canonical import DOMAINS, MAX_DURATION_NS, MAX_TIMESTAMP_NS, RELATIONS, column_names
from pa.profile.detect import object_names
from pa.profile.domain import REJECT_FUNCTION, count_sql, domain_sql, flagged_sql
from pa.profile.open import read_error
from pa.profile.queryset import QueryFile, QuerySet

TABLE_PREFIX = "pa_"
# A well-formed interval: rows still open at the end of the capture (end NULL) or with end < start
# are excluded from every sum and counted instead.
VALID = 'start IS NOT NULL AND "end" IS NOT NULL AND "end" >= start'
# start and end as scanned when validity is checked in numpy: NULL becomes this sentinel.
MISSING = int(np.iinfo(np.int64).min)
INTERVAL_COLUMNS = {"start": f"coalesce(start, {MISSING})", "end": f'coalesce("end", {MISSING})'}
# Rows per keyset chunk of Relations.scan: a few MB of text per column in SQLite at a time.
SCAN_CHUNK_ROWS = 1 << 18
# How Relations.scan joins one row's values when it transports them as one string.
JOINED = " || ',' || "
_ROW_ID_MAX = int(np.iinfo(np.int64).max)
# The most rows Relations.scan reserves its columns for up front (512 MB of address space per int64
# column, only the written part of which is ever resident).
_RESERVE_ROWS_MAX = 1 << 26
# Wall-clock budget for rendering one query file's Jinja (a real one takes a millisecond).
QUERY_TEMPLATE_SECONDS = 5.0


@dataclass(frozen=True)
class Skipped:
    """An analysis or relation that could not be computed, and why."""

    what: str
    reason: str


def _table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    # PRAGMA table_info works on tables and views alike; the name is checked against
    # sqlite_master before it gets here, so quoting it is enough.
    try:
        return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")').fetchall()}
    except sqlite3.DatabaseError as exc:
        raise read_error(conn, f"the columns of {table}", exc) from exc


def words(text: str) -> set[str]:
    r"""The maximal runs of word characters in `text`: the identifiers a piece of SQL names.

    `name in words(sql)` is `re.search(rf"\b{name}\b", sql)` for a name of word characters (every
    canonical relation and column name), with one regex for the text instead of one compiled per
    name: ~150 such patterns cost ~10 ms of `pa summary`'s start-up (benchmarks/startup.py).
    """
    return set(_WORD.findall(text))


_WORD = re.compile(r"\w+")


def _relations_named(sql: str) -> list[str]:
    """The canonical relations `sql` names as pa_<relation>, in RELATIONS order."""
    named = words(sql)
    return [r for r in RELATIONS if TABLE_PREFIX + r in named]


_QUERY_SANDBOX = sandbox.sandbox(autoescape=False)


@functools.lru_cache(maxsize=256)
def _compiled_query(body: str) -> Any:
    """A query file's Jinja compiled once per process (a profile binds its relations three times)."""
    return _QUERY_SANDBOX.from_string(body)


def render_query(qf: QueryFile, has_table: Callable[[str], bool], has_column: Callable[[str, str], bool]) -> str:
    """Render a query file's Jinja in the sandbox, where has_table and has_column are the only names.

    A body with no Jinja syntax at all is its own rendering: compiling it would cost ~5 ms a file of
    pa's start-up (benchmarks/startup.py) for the same text.
    """
    if not any(mark in qf.body for mark in ("{{", "{%", "{#")):
        return qf.body
    try:
        template = _compiled_query(qf.body)
        return sandbox.render_bounded(template, {"has_table": has_table, "has_column": has_column},
                                      seconds=QUERY_TEMPLATE_SECONDS, max_chars=4 * len(qf.body) + 65536)
    except sandbox.TEMPLATE_FAILURES as exc:
        raise UserError(f"{qf.display_path}: template error: {sandbox.describe(exc)}") from None


@dataclass
class Relations:
    """The canonical relations of one profile, bound to its read-only connection."""

    conn: sqlite3.Connection
    query_set: QuerySet
    sql_by_relation: dict[str, str] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    raw_sql_by_relation: dict[str, str] = field(default_factory=dict)   # the query files' own SELECTs
    # The relations some statement has named so far, on this connection or any other the relations
    # were put `on` (one set, shared): domain_notes counts the dropped rows of these only.
    read: set[str] = field(default_factory=set)
    # Relations whose dropped rows were counted while read whole (read_whole), also shared.
    counted: set[str] = field(default_factory=set)

    @classmethod
    def bind(cls, conn: sqlite3.Connection, query_set: QuerySet) -> Relations:
        """Check each query file's requirements against the file and render its SQL."""
        try:
            names = object_names(conn)
        except sqlite3.DatabaseError as exc:
            raise read_error(conn, "the list of tables", exc) from exc
        columns_cache: dict[str, set[str]] = {}

        def columns(table: str) -> set[str]:
            if not isinstance(table, str):
                raise UserError(f"has_column: table name must be a string, got {type(table).__name__}")
            if table not in columns_cache:
                columns_cache[table] = _table_columns(conn, table) if table in names else set()
            return columns_cache[table]

        conn.create_function(REJECT_FUNCTION, -1, query_set.domain_log.reject, deterministic=False)
        rel = cls(conn=conn, query_set=query_set)
        for relation in RELATIONS:
            qf = query_set.files.get(relation)
            if qf is None:
                rel.skipped.append(Skipped(relation, f"no query file for {relation} in "
                                                     f"{query_set.name}"))
                continue
            reason = _missing_requirement(qf, names, columns)
            if reason:
                rel.skipped.append(Skipped(relation, reason))
                continue
            sql = render_query(qf, has_table=lambda t: t in names,
                               has_column=lambda t, c: c in columns(t))
            _check_output_columns(conn, qf, sql)
            if qf.when_empty and _is_empty(rel, relation, sql):
                rel.skipped.append(Skipped(relation, f"{qf.when_empty} (no rows from {qf.display_path})"))
                continue
            rel.raw_sql_by_relation[relation] = sql
            rel.sql_by_relation[relation] = domain_sql(relation, sql)
        return rel

    def on(self, conn: sqlite3.Connection) -> Relations:
        """The same relations on another connection to the same file (for another thread).

        Nothing is checked or rendered again: the file is the same, so are its tables, columns and
        rows (binding renders every query file and asks SQLite to prepare each one, which costs as
        much as reading a few hundred thousand rows).
        """
        conn.create_function(REJECT_FUNCTION, -1, self.query_set.domain_log.reject, deterministic=False)
        return Relations(conn=conn, query_set=self.query_set, sql_by_relation=dict(self.sql_by_relation),
                         skipped=list(self.skipped), raw_sql_by_relation=dict(self.raw_sql_by_relation),
                         read=self.read, counted=self.counted)

    def overlapping(self, lo: int, hi: int) -> Relations:
        """The same relations, each timed one keeping only its rows that overlap [lo, hi] (absolute ns).

        Rows are kept whole, never cut at the bounds (a copy's rate, a kernel's duration stay its own).
        How `pa analyze` judges a run on its steady state (pa.metrics.steady): every metric computed
        from these relations counts only what happened in that window, by construction. Relations with
        no time (names, devices, meta) are unchanged; cpu_samples keep the samples taken inside.
        """
        wrapped = {}
        for relation, sql in self.sql_by_relation.items():
            cols = column_names(relation)
            if "start" in cols and "end" in cols:
                cond = f'"end" >= {int(lo)} AND start <= {int(hi)}'
            elif "time" in cols:
                cond = f"time >= {int(lo)} AND time <= {int(hi)}"
            else:
                wrapped[relation] = sql
                continue
            wrapped[relation] = f"SELECT * FROM (\n{sql}\n) WHERE {cond}"
        return Relations(conn=self.conn, query_set=self.query_set, sql_by_relation=wrapped,
                         skipped=list(self.skipped), raw_sql_by_relation=dict(self.raw_sql_by_relation),
                         read=self.read, counted=self.counted)

    def of_process(self, pid: int) -> Relations:
        """The same relations, each one with a process column keeping only the rows of process `pid`.

        How one export of several processes is analysed as a rank set (pa.ranks.processes): every
        metric computed from these relations sees one process, as if its rank had been captured on
        its own. Relations with no process (names, devices, meta) are unchanged: a device the
        process never used is reported unused, not dropped.
        """
        wrapped = {}
        for relation, sql in self.sql_by_relation.items():
            wrapped[relation] = f"SELECT * FROM (\n{sql}\n) WHERE pid = {int(pid)}" \
                if "pid" in column_names(relation) else sql
        return Relations(conn=self.conn, query_set=self.query_set, sql_by_relation=wrapped,
                         skipped=list(self.skipped), raw_sql_by_relation=dict(self.raw_sql_by_relation),
                         read=self.read, counted=self.counted)

    def domain_notes(self) -> list[str]:
        """Warnings for the rows the domain checks dropped (call once every metric has read its relations).

        The relations marked counted_apart are counted here, one query each (pa.profile.domain), and
        only those some statement read: a relation nothing read (rocpd's memcpy_requests, read only
        for a degraded capture) had no row dropped from any figure, and counting it would cost a pass
        over every region of a rocpd file (~4.6 s of CPU at 20 M regions).
        """
        for relation, domain in DOMAINS.items():
            sql = count_sql(relation, self.raw_sql_by_relation[relation]) \
                if domain.counted_apart and relation in self.raw_sql_by_relation and relation in self.read \
                and relation not in self.counted else None
            if sql is not None:
                with self.reading(f"{TABLE_PREFIX}{relation}"):
                    row = self.conn.execute(sql).fetchone()
                self.query_set.domain_log.set_counts(relation, [int(n) for n in row])
        return self.query_set.domain_log.notes()

    @contextmanager
    def reading(self, sql: str) -> Iterator[None]:
        """Turn a failing statement over canonical relations into one UserError line naming them."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise read_error(self.conn, self._what(sql), exc) from exc

    def _what(self, sql: str) -> str:
        used = _relations_named(sql)
        files = [self.query_set.files[r].display_path for r in used if r in self.query_set.files]
        if not used:
            return "the profile"
        label = "relation" if len(used) == 1 else "relations"
        return f"{label} {', '.join(used)}" + (f" ({', '.join(files)})" if files else "")

    def available(self, relation: str) -> bool:
        """True when the relation's query ran against tables that exist in the file."""
        return relation in self.sql_by_relation

    def skip_reason(self, relation: str) -> str | None:
        """Why the relation is unavailable, or None when it is available."""
        for s in self.skipped:
            if s.what == relation:
                return s.reason
        return None

    def cte(self, sql: str) -> str:
        """`sql` with the canonical relations it names (pa_<relation>) prepended as CTEs."""
        # Canonical relations are named pa_<relation> in SQL: profiles have tables and views of
        # their own called "kernels", "processes" or "threads" (rocpd convenience views, the
        # PROCESSES table), and SQLite names are case-insensitive.
        used = _relations_named(sql)
        self.read.update(used)
        parts = []
        for r in used:
            body = self.sql_by_relation.get(r) or _empty_select(r)
            parts.append(f"{TABLE_PREFIX}{r} AS (\n{body}\n)")
        return ("WITH " + ",\n".join(parts) + "\n" + sql) if parts else sql

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        """Run `sql`, which names canonical relations as pa_<relation>, and return all rows."""
        with self.reading(sql):
            return self.conn.execute(self.cte(sql), tuple(params)).fetchall()

    def count(self, relation: str) -> int:
        """Number of rows of a relation (0 for a skipped one; check `available` first)."""
        return int(self.query(f"SELECT count(*) FROM {TABLE_PREFIX}{relation}")[0][0])

    def read_whole(self, relation: str) -> list[tuple]:
        """Every row of a relation the domain checks keep, counting the dropped rows in the same statement.

        Rows are tuples in the relation's canonical column order.
        For the small relations counted apart that a reader takes whole (kernel names, kernel
        classes): reading them through the checks and counting them afterwards were two passes over
        what they are drawn from (each a DISTINCT over the kernel table, ~0.2 s per million kernels).
        Returns [] for a relation that is not available.
        """
        if not DOMAINS[relation].counted_apart:
            raise ValueError(f"read_whole reads relations counted apart only, not {relation}")
        if relation not in self.raw_sql_by_relation:
            return []
        self.read.add(relation)
        sql = flagged_sql(relation, self.raw_sql_by_relation[relation])
        with self.reading(f"{TABLE_PREFIX}{relation}"):
            rows = self.conn.execute(sql).fetchall()
        counts = [0] * len(DOMAINS[relation].checks)
        for row in rows:
            if row[-1] is not None:
                counts[row[-1]] += 1
        self.query_set.domain_log.set_counts(relation, counts)
        self.counted.add(relation)
        return [row[:-2] for row in rows if row[-2]]

    def fetch_ints(self, sql: str, ncols: int, params: Sequence[object] = ()) -> np.ndarray:
        """Fetch an all-integer result (no NULLs) as an (n, ncols) int64 array, without per-row lists."""
        with self.reading(sql):
            cur = self.conn.execute(self.cte(sql), tuple(params))
            flat = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64)
        return flat.reshape(-1, ncols)

    def scan(self, relation: str, columns: Mapping[str, str], dtypes: Mapping[str, DTypeLike] | None = None,
             where: str | None = None, aggregates: Mapping[str, tuple[str, str]] | None = None,
             chunk_rows: int = SCAN_CHUNK_ROWS) -> Scan:
        """Fetch integer expressions over every row of `relation` (matching `where`) as numpy columns.

        `columns` maps output names to integer SQL expressions over the relation's columns (NULL
        becomes -1); `dtypes` narrows some of them (a column whose values do not fit stays int64).
        `aggregates` maps names to (min|max|sum, expression) computed over *all* rows of the
        relation, `where` notwithstanding, in the same pass. Every expression is written by pa,
        never taken from the profile.

        Transport: SQLite renders each column of a chunk as one comma-separated string
        (group_concat) that numpy parses in C. This moves a column of a million integers in about
        half the time of building a million Python ints and tuples through the cursor, and the
        work happens inside sqlite3_step, which runs without the GIL. Relations whose query file
        gives a `row_id` (the rowid of the table driving the scan) are read in chunks of at most
        `chunk_rows` rows (row_id ranges), so tens of millions of rows never exist as one string;
        chunking is used only when SQLite can find the next row_id without sorting.
        """
        dtypes = dict(dtypes or {})
        aggs = dict(aggregates or {})
        names = list(columns)
        exprs = [*columns.values(), *(expr for _, expr in aggs.values()), *([where] if where else [])]
        # The inner query carries only the raw columns the expressions use and, when a filter and
        # whole-relation aggregates meet, a keep flag: the per-column expressions run in the outer
        # aggregates, whose FILTER skips them for rows not kept (on rocpd files, 19 of 20 API calls
        # are read only for the extent of the others).
        named = set().union(*(words(e) for e in exprs))
        used = [c for c in ("row_id", *column_names(relation)) if c in named]
        inner = [f'"{c}"' for c in used]
        keep_filter = ""
        inner_where = []
        if where and aggs:
            inner.append(f"(({where}) IS 1) AS pa_keep")
            keep_filter = " FILTER (WHERE pa_keep)"
        elif where:
            inner_where.append(f"({where})")
        exprs_out = [f"coalesce(CAST(({columns[c]}) AS INTEGER), -1)" for c in names]
        # SQLite flattens the inner query into the aggregate, so the keep flag is an expression
        # each FILTER evaluates again. With a flag, the kept rows' values can travel as one
        # group_concat of each row's values joined by commas (parsed as rows of len(names)), which
        # tests the flag twice a row instead of once per column but builds a string per kept row:
        # cheaper when few rows are kept (rocpd API calls, 1 in 20), dearer when most are (Nsight
        # Systems API calls, all of them: 0.26 against 0.19 s per 200 k). So both forms are
        # prepared and each chunk uses the one the previous chunk's kept share favours (the first,
        # a sixteenth of a chunk, the interleaved one). Without a flag, a group_concat per column
        # needs no per-row string building.
        adaptive = bool(keep_filter) and len(exprs_out) > 1

        def outer(interleaved: bool) -> list[str]:
            cols = [f"count(*){keep_filter}", "count(*)"]
            if interleaved:
                cols.append(f"group_concat({JOINED.join(exprs_out)}){keep_filter}")
            else:
                cols += [f"group_concat({v}){keep_filter}" for v in exprs_out]
            return cols + [f"{fn}({expr})" for fn, expr in aggs.values()]

        with self.reading(f"{TABLE_PREFIX}{relation}"):
            keyset = self._keyset_ok(relation)
            # Without a row filter, the row_id range bounds the rows: the columns are reserved that
            # long once (pages never written cost nothing) instead of grown and copied chunk by chunk.
            reserve = self._row_id_bound(relation) if keyset and not where else None
        if keyset:
            inner_where.insert(0, "row_id BETWEEN ? AND ?")
        clause = (" WHERE " + " AND ".join(inner_where)) if inner_where else ""
        sqls = {form: self.cte(f"SELECT {', '.join(outer(form))} FROM (SELECT {', '.join(inner) or '1'} "
                               f"FROM {TABLE_PREFIX}{relation}{clause})")
                for form in ((True, False) if adaptive else (False,))}
        interleaved = adaptive
        # Chunks are row_id ranges [first, first + chunk_rows - 1] (at most chunk_rows rows each), each
        # starting at the first row_id past the previous one: a bounded range, unlike the keyset
        # form (row_id > last ORDER BY row_id LIMIT n), lets SQLite flatten the relation into the
        # aggregate instead of running it as a co-routine that copies every row (0.15 s of CPU per
        # 2 M rocpd regions).
        probe = self.cte(f"SELECT row_id FROM {TABLE_PREFIX}{relation} WHERE row_id > ? ORDER BY row_id LIMIT 1")
        out = _GrowingColumns([np.dtype(dtypes.get(c, np.int64)) for c in names], reserve or 0)
        partial: list[list[int]] = [[] for _ in aggs]
        last = np.iinfo(np.int64).min
        size = max(1, chunk_rows // 16) if adaptive else chunk_rows
        while True:
            params: tuple[int, ...] = ()
            if keyset:
                with self.reading(probe):
                    first = self.conn.execute(probe, (last,)).fetchone()
                if first is None or first[0] is None:
                    break
                last = min(int(first[0]) + size - 1, _ROW_ID_MAX)
                params = (int(first[0]), last)
                size = chunk_rows
            sql = sqls[interleaved]
            with self.reading(sql):
                row = self.conn.execute(sql, params).fetchone()
            kept, total = int(row[0]), int(row[1])
            if interleaved:
                parsed = list(_parse_ints(row[2], kept * len(names)).reshape(kept, len(names)).T)
            else:
                parsed = [_parse_ints(text, kept) for text in row[2:2 + len(names)]]
            out.append(parsed, kept)
            for i, value in enumerate(row[2 + (1 if interleaved else len(names)):]):
                if value is not None:
                    partial[i].append(int(value))
            if not keyset or last == _ROW_ID_MAX:
                break
            interleaved = adaptive and 2 * kept <= total
        combine: dict[str, Callable[[list[int]], int]] = {"min": min, "max": max, "sum": sum}
        values: dict[str, int | None] = {name: (int(combine[fn](partial[i])) if partial[i] else None)
                                         for i, (name, (fn, _)) in enumerate(aggs.items())}
        return Scan(dict(zip(names, out.columns(), strict=True)), values)

    def _keyset_ok(self, relation: str) -> bool:
        """True when `relation` gives a row_id and SQLite can read it in row_id order without sorting."""
        if relation not in self.sql_by_relation or "row_id" not in column_names(relation):
            return False
        if self.conn.execute(self.cte(f"SELECT row_id FROM {TABLE_PREFIX}{relation} LIMIT 1")).fetchone() in \
                (None, (None,)):
            return False
        # A sort would be repeated for every chunk.
        return not self._sorts_by_row_id(self.cte(
            f"SELECT start FROM {TABLE_PREFIX}{relation} WHERE row_id > ? ORDER BY row_id LIMIT ?"), (0, 1))

    def _sorts_by_row_id(self, sql: str, params: Sequence[object] = ()) -> bool:
        """True when SQLite's plan for `sql` sorts its outer query (parent 0) for the ORDER BY.

        Sorts inside the relation's own small CTEs (a window over kernel symbols, a GROUP BY over
        domains) do not count: they are not repeated per row_id range.
        """
        plan = self.conn.execute("EXPLAIN QUERY PLAN " + sql, tuple(params)).fetchall()
        return any(r[1] == 0 and "TEMP B-TREE" in str(r[3]) and "ORDER BY" in str(r[3]) for r in plan)

    def _row_id_bound(self, relation: str) -> int | None:
        """Last row_id − first row_id + 1 of a relation read in row_id order, or None when unknown.

        Two one-row seeks; None when the reverse order would need a sort (the forward order was
        checked by _keyset_ok) or the range is larger than _RESERVE_ROWS_MAX (sparse ids).
        """
        ends = []
        for order in ("", " DESC"):
            sql = self.cte(f"SELECT row_id FROM {TABLE_PREFIX}{relation} ORDER BY row_id{order} LIMIT 1")
            if self._sorts_by_row_id(sql):
                return None
            row = self.conn.execute(sql).fetchone()
            if row is None or not isinstance(row[0], int):
                return None
            ends.append(row[0])
        rows = ends[1] - ends[0] + 1
        return rows if 0 < rows <= _RESERVE_ROWS_MAX else None

    def intervals(self, relation: str, extra: Sequence[str] = (), expressions: Mapping[str, str] | None = None,
                  where: str | None = None) -> tuple[dict[str, np.ndarray], int]:
        """Fetch start, end and integer columns `extra` for the well-formed rows of `relation`.

        Rows still open at the end of the capture (end NULL) or with end < start are excluded and
        counted; the count is returned so the caller can warn instead of poisoning sums. NULLs in
        `extra` columns become -1. `expressions` maps further output names to integer SQL
        expressions over the relation's columns and `where` an optional row filter (both written by
        pa, never from the profile). One scan of the relation: validity filtering happens in numpy.
        """
        columns = dict(INTERVAL_COLUMNS)
        columns.update({c: c for c in extra})
        columns.update(expressions or {})
        return drop_open_intervals(self.scan(relation, columns, where=where).columns, relation)

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[dict[str, object]]:
        """Run `sql` and return rows as dicts keyed by column name (small results only)."""
        with self.reading(sql):
            cur = self.conn.execute(self.cte(sql), tuple(params))
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _missing_requirement(qf: QueryFile, names: set[str],
                         columns: Callable[[str], set[str]]) -> str | None:
    if qf.requires_any and not any(t in names for t in qf.requires_any):
        return f"none of {', '.join(qf.requires_any)} in the profile (needed by {qf.display_path})"
    # a table of requires_any that exists must have its columns, as a required one must
    present_any = {t: cols for t, cols in qf.requires_any.items() if t in names}
    for table, cols in {**qf.requires, **present_any}.items():
        if table not in names:
            return f"table {table} absent from the profile (needed by {qf.display_path})"
        missing = [c for c in cols if c not in columns(table)]
        if missing:
            return f"column(s) {', '.join(missing)} absent from {table} (needed by {qf.display_path})"
    return None


def _empty_select(relation: str) -> str:
    cols = ", ".join(f'NULL AS "{c}"' for c in column_names(relation))
    return f"SELECT {cols} WHERE 0"


def _is_empty(rel: Relations, relation: str, sql: str) -> bool:
    """True when the rendered query of `relation` returns no row (asked once, LIMIT 1)."""
    with rel.reading(f"{TABLE_PREFIX}{relation}"):
        return rel.conn.execute(f"SELECT 1 FROM ({sql}) LIMIT 1").fetchone() is None


def _check_output_columns(conn: sqlite3.Connection, qf: QueryFile, sql: str) -> None:
    try:
        cur = conn.execute(f"SELECT * FROM (\n{sql}\n) LIMIT 0")
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{qf.display_path}: query fails on this profile: {exc}") from exc
    got = {d[0] for d in cur.description}
    want = set(column_names(qf.relation))
    if got != want:
        missing = sorted(want - got)
        extra = sorted(got - want)
        raise UserError(f"{qf.display_path}: output columns differ from the canonical "
                        f"{qf.relation} relation (missing: {missing}, unexpected: {extra})")


def drop_open_intervals(cols: dict[str, np.ndarray], relation: str = "a relation"
                        ) -> tuple[dict[str, np.ndarray], int]:
    """Columns scanned with INTERVAL_COLUMNS without the rows VALID rejects, and how many those were.

    Each record lasts at most MAX_DURATION_NS (the domain checks), but tens of thousands of such
    records would still add up past what int64 sums hold: that profile is refused here, in one
    line, instead of wrapping around into negative times further down.
    """
    start, end = cols["start"], cols["end"]
    ok = (start != MISSING) & (end != MISSING) & (end >= start)
    bad = int(len(ok) - np.count_nonzero(ok))
    out = {c: v[ok] for c, v in cols.items()} if bad else cols
    if len(out["start"]) >= _SUM_CHECK_ROWS:
        total = float(np.sum(out["end"] - out["start"], dtype=np.float64))
        if total >= MAX_TIMESTAMP_NS:
            raise UserError(f"{relation}: record durations add up to {total / 3.15576e16:.0f} years; the "
                            "profile's timestamps are corrupt")
    return out, bad


# Below this many records, durations of at most MAX_DURATION_NS cannot add up past 2^62 ns.
_SUM_CHECK_ROWS = MAX_TIMESTAMP_NS // MAX_DURATION_NS


@dataclass(frozen=True)
class Scan:
    """What `Relations.scan` returns: the fetched columns and the whole-relation aggregates."""

    columns: dict[str, np.ndarray]
    aggregates: dict[str, int | None]


def _parse_ints(text: str | None, expected: int) -> np.ndarray:
    """Parse one group_concat column; its length must be the row count SQLite reported."""
    arr = np.fromstring(text, dtype=np.int64, sep=",") if text is not None and expected else np.zeros(0, np.int64)
    if len(arr) != expected:
        raise RuntimeError(f"column transport read {len(arr)} values where SQLite counted {expected}")
    return arr


class _GrowingColumns:
    """Columns appended chunk by chunk into arrays grown by 1.25x (at most a quarter spare).

    Neither thousands of small arrays (which fragment the heap) nor a final concatenate (which
    doubles the peak) for results of tens of millions of rows. `reserve`: rows to allocate up
    front when the caller knows a bound (only the pages written become resident). A narrow dtype
    that a value does not fit is widened to int64 rather than wrapped.
    """

    def __init__(self, dtypes: list[np.dtype], reserve: int = 0) -> None:
        self.arrays = [np.empty(reserve, dtype=dt) for dt in dtypes]
        self.n = 0

    def append(self, parts: list[np.ndarray], count: int) -> None:
        need = self.n + count
        for i, part in enumerate(parts):
            arr = self.arrays[i]
            if arr.dtype != np.int64 and len(part):
                info = np.iinfo(arr.dtype)
                if part.min() < info.min or part.max() > info.max:
                    wide = np.empty(len(arr), dtype=np.int64)   # only the rows written so far are copied
                    wide[:self.n] = arr[:self.n]
                    arr = wide
            if need > len(arr):
                grown = np.empty(max(need, int(len(arr) * 1.25)), dtype=arr.dtype)
                grown[:self.n] = arr[:self.n]
                arr = grown
            arr[self.n:need] = part
            self.arrays[i] = arr
        self.n = need

    def columns(self) -> list[np.ndarray]:
        return [a[:self.n] for a in self.arrays]
