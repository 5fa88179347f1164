"""Run a query set against an open profile: canonical relations as SQL, fetched as numpy columns.

A canonical relation is never materialised in the profile (that would write to it) nor fetched
whole into Python: each query file's SELECT becomes a common table expression, and metrics either
aggregate over it in SQL or fetch only the integer columns interval merging needs. A relation whose
required tables or columns are absent is recorded in `skipped` with the reason and behaves as an
empty relation of the right shape, so a caller can never mistake "not captured" for "zero".
"""

from __future__ import annotations

import itertools
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import jinja2
import numpy as np

from engine.errors import UserError
from engine.profile.canonical import RELATIONS, column_names
from engine.profile.detect import object_names
from engine.profile.queryset import QueryFile, QuerySet

TABLE_PREFIX = "pa_"
# A well-formed interval: rows still open at the end of the capture (end NULL) or with end < start
# are excluded from every sum and counted instead.
VALID = 'start IS NOT NULL AND "end" IS NOT NULL AND "end" >= start'


@dataclass(frozen=True)
class Skipped:
    """An analysis or relation that could not be computed, and why."""

    what: str
    reason: str


def _table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    # PRAGMA table_info works on tables and views alike; the name is checked against
    # sqlite_master before it gets here, so quoting it is enough.
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")').fetchall()}


@dataclass
class Relations:
    """The canonical relations of one profile, bound to its read-only connection."""

    conn: sqlite3.Connection
    query_set: QuerySet
    sql_by_relation: dict[str, str] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)

    @classmethod
    def bind(cls, conn: sqlite3.Connection, query_set: QuerySet) -> Relations:
        """Check each query file's requirements against the file and render its SQL."""
        names = object_names(conn)
        columns_cache: dict[str, set[str]] = {}

        def columns(table: str) -> set[str]:
            if table not in columns_cache:
                columns_cache[table] = _table_columns(conn, table) if table in names else set()
            return columns_cache[table]

        env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
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
            try:
                sql = env.from_string(qf.body).render(
                    has_table=lambda t: t in names,
                    has_column=lambda t, c: c in columns(t),
                )
            except jinja2.TemplateError as exc:
                raise UserError(f"{qf.display_path}: template error: {exc}") from exc
            _check_output_columns(conn, qf, sql)
            rel.sql_by_relation[relation] = sql
        return rel

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
        used = [r for r in RELATIONS if re.search(rf"\b{TABLE_PREFIX}{r}\b", sql)]
        parts = []
        for r in used:
            body = self.sql_by_relation.get(r) or _empty_select(r)
            parts.append(f"{TABLE_PREFIX}{r} AS (\n{body}\n)")
        return ("WITH " + ",\n".join(parts) + "\n" + sql) if parts else sql

    def query(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        """Run `sql`, which names canonical relations as pa_<relation>, and return all rows."""
        return self.conn.execute(self.cte(sql), tuple(params)).fetchall()

    def count(self, relation: str) -> int:
        """Number of rows of a relation (0 for a skipped one; check `available` first)."""
        return int(self.query(f"SELECT count(*) FROM {TABLE_PREFIX}{relation}")[0][0])

    def fetch_ints(self, sql: str, ncols: int, params: Sequence[object] = ()) -> np.ndarray:
        """Fetch an all-integer result (no NULLs) as an (n, ncols) int64 array, without per-row lists."""
        cur = self.conn.execute(self.cte(sql), tuple(params))
        flat = np.fromiter(itertools.chain.from_iterable(cur), dtype=np.int64)
        return flat.reshape(-1, ncols)

    def fetch_columns(self, sql: str, dtypes: Sequence[np.dtype | type], chunk: int = 1 << 16) -> list[np.ndarray]:
        """Fetch an all-integer result (no NULLs) column by column in compact dtypes, in chunks.

        For results of tens of millions of rows: rows are copied chunk by chunk into one growing
        array per column (grown by 1.25x, so at most a quarter is spare), never held as Python tuples
        all at once nor as thousands of small arrays (which fragment the heap and double the RSS).
        """
        cur = self.conn.execute(self.cte(sql))
        cols = [np.empty(chunk, dtype=dt) for dt in dtypes]
        n = 0
        while True:
            rows = cur.fetchmany(chunk)
            if not rows:
                break
            block = np.array(rows, dtype=np.int64).reshape(len(rows), len(dtypes))
            need = n + len(rows)
            if need > len(cols[0]):
                size = max(need, int(len(cols[0]) * 1.25) + chunk)
                for i in range(len(cols)):
                    grown = np.empty(size, dtype=cols[i].dtype)
                    grown[:n] = cols[i][:n]
                    cols[i] = grown
            for i in range(len(cols)):
                cols[i][n:need] = block[:, i]
            n = need
        return [c[:n] for c in cols]

    def intervals(self, relation: str, extra: Sequence[str] = (), expressions: Mapping[str, str] | None = None,
                  where: str | None = None) -> tuple[dict[str, np.ndarray], int]:
        """Fetch start, end and integer columns `extra` for the well-formed rows of `relation`.

        Rows still open at the end of the capture (end NULL) or with end < start are excluded and
        counted; the count is returned so the caller can warn instead of poisoning sums. NULLs in
        `extra` columns become -1. `expressions` maps further output names to integer SQL
        expressions over the relation's columns and `where` an optional row filter (both written by
        pa, never from the profile). One scan of the relation: validity filtering happens in numpy.
        """
        exprs = dict(expressions or {})
        cols = ["start", "end", *extra, *exprs]
        missing = np.iinfo(np.int64).min
        select = ", ".join([f"coalesce(start, {missing})", f'coalesce("end", {missing})']
                           + [f"coalesce({c}, -1)" for c in extra]
                           + [f"coalesce({e}, -1)" for e in exprs.values()])
        clause = f" WHERE {where}" if where else ""
        arr = self.fetch_ints(f"SELECT {select} FROM {TABLE_PREFIX}{relation}{clause}", len(cols))
        ok = (arr[:, 0] != missing) & (arr[:, 1] != missing) & (arr[:, 1] >= arr[:, 0])
        bad = int(len(arr) - np.count_nonzero(ok))
        if bad:
            arr = arr[ok]
        return {c: np.ascontiguousarray(arr[:, i]) for i, c in enumerate(cols)}, bad

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[dict[str, object]]:
        """Run `sql` and return rows as dicts keyed by column name (small results only)."""
        cur = self.conn.execute(self.cte(sql), tuple(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _missing_requirement(qf: QueryFile, names: set[str],
                         columns: Callable[[str], set[str]]) -> str | None:
    if qf.requires_any and not any(t in names for t in qf.requires_any):
        return f"none of {', '.join(qf.requires_any)} in the profile (needed by {qf.display_path})"
    for table, cols in qf.requires.items():
        if table not in names:
            return f"table {table} absent from the profile (needed by {qf.display_path})"
        missing = [c for c in cols if c not in columns(table)]
        if missing:
            return f"column(s) {', '.join(missing)} absent from {table} (needed by {qf.display_path})"
    return None


def _empty_select(relation: str) -> str:
    cols = ", ".join(f'NULL AS "{c}"' for c in column_names(relation))
    return f"SELECT {cols} WHERE 0"


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
