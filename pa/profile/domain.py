"""Keep rows outside a relation's domain away from the metrics, and count them.

Each canonical relation is read through a wrapper around its query file's SELECT:

    SELECT <columns, text ones CAST AS TEXT> FROM (<query file>)
    WHERE <fast> OR ((<check 1> OR pa_domain_reject('kernels', 0, <row key>)) AND (<check 2> OR ...))

so every consumer (numpy scans, SQL aggregates, phase detection) sees the same rows, and a row
failing a check (pa.profile.canonical.DOMAINS: timestamps that are not numbers in
[0, 2^62) ns, a NULL device, negative bytes, ...) is dropped. SQLite evaluates `OR` left to right
and stops at the first true operand: almost every row passes `fast` (a few comparisons, about 0.1 s
per million rows read), the checks run only for the others, and `pa_domain_reject` only for failing
rows, so the count needs no pass of its own. It records the failing row's key
(a set, so a relation read by several statements or threads is counted once per distinct row)
and returns 0, which drops the row. The log is shared by every connection bound to one QuerySet,
and `notes()` turns it into the summary's warnings.
"""

from __future__ import annotations

import re
import threading

from pa.profile.canonical import DOMAINS, RELATIONS

REJECT_FUNCTION = "pa_domain_reject"
# Distinct failing rows remembered per relation and check; beyond this the count says "at least".
MAX_KEYS = 1_000_000


def _key_columns(relation: str) -> list[str]:
    """Columns identifying a failing row, so repeated reads count it once.

    Only row_id and the columns the checks read anyway: naming a column a query file takes from a
    LEFT JOIN (a rocpd kernel's correlation_id) would force SQLite to perform that join for every row.
    """
    names = [c.name for c in RELATIONS[relation]]
    used = " ".join(c.sql for c in DOMAINS[relation].checks)
    named = set(re.findall(r"\w+", used))   # a name quoted or bare: every column name is word characters
    return [c for c in names if c == "row_id" or c in named]


class DomainLog:
    """Distinct rows each relation dropped, per failed check (thread-safe)."""

    def __init__(self) -> None:
        self._keys: dict[tuple[str, int], set[tuple[object, ...]]] = {}
        self._exact: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def set_counts(self, relation: str, counts: list[int]) -> None:
        """Counts per check from count_sql; they replace what reading the relation recorded."""
        with self._lock:
            self._exact[relation] = list(counts)

    def reject(self, relation: str, check: int, *key: object) -> int:
        """SQL function body: remember the failing row; 0 drops it from the relation."""
        with self._lock:
            keys = self._keys.setdefault((relation, check), set())
            if len(keys) < MAX_KEYS:
                keys.add(key)
        return 0

    def counts(self) -> dict[str, list[tuple[str, int]]]:
        """{relation: [(check label, distinct rows dropped), ...]} in relation and check order."""
        with self._lock:
            snapshot = {k: len(v) for k, v in self._keys.items()}
            snapshot.update({(r, i): n for r, ns in self._exact.items() for i, n in enumerate(ns)})
        out: dict[str, list[tuple[str, int]]] = {}
        for relation, domain in DOMAINS.items():
            for i, check in enumerate(domain.checks):
                n = snapshot.get((relation, i), 0)
                if n:
                    out.setdefault(relation, []).append((check.label, n))
        return out

    def notes(self) -> list[str]:
        """One warning per relation that dropped rows, naming the checks and counts."""
        notes = []
        for relation, items in self.counts().items():
            total = sum(n for _, n in items)
            parts = "; ".join(f"{n} {label}" for label, n in items)
            at_least = "at least " if any(n >= MAX_KEYS for _, n in items) else ""
            notes.append(f"{relation}: {at_least}{total} row(s) outside the relation's domain were dropped "
                         f"before any metric ({parts}; see docs/relations.md)")
        return notes


def count_sql(relation: str, body: str) -> str | None:
    """One query counting the rows of `body` each check drops (a row counts for its first failed check)."""
    checks = DOMAINS[relation].checks
    if not checks:
        return None
    sums = []
    for i, check in enumerate(checks):
        passed = "".join(f"({c.sql}) AND " for c in checks[:i])
        sums.append(f"coalesce(sum(CASE WHEN {passed}NOT ({check.sql}) THEN 1 ELSE 0 END), 0)")
    fast = DOMAINS[relation].fast
    return f"SELECT {', '.join(sums)} FROM (\n{body}\n)" + (f" WHERE NOT coalesce({fast}, 0)" if fast else "")


def flagged_sql(relation: str, body: str) -> str:
    """Every row of `body` as domain_sql selects it, with pa_keep and pa_failed columns.

    pa_keep is 1 when every check passes (the rows domain_sql keeps) and pa_failed the check
    count_sql counts the row for, or NULL: a reader of a whole relation gets its rows and its
    counts in one statement.
    """
    checks = DOMAINS[relation].checks
    failed = " ".join(f"WHEN {''.join(f'({c.sql}) AND ' for c in checks[:i])}NOT ({check.sql}) THEN {i}"
                      for i, check in enumerate(checks))
    keep = " AND ".join(f"({c.sql})" for c in checks) or "1"
    return (f"SELECT {_select(relation)}, coalesce({keep}, 0) AS pa_keep, "
            f"{f'CASE {failed} END' if failed else 'NULL'} AS pa_failed FROM (\n{body}\n)")


# Text columns whose values the query files write as literals (CASE ... THEN 'HtoD'): no cast needed,
# and a cast would cost a string copy on every read of columns that scans test row by row.
_VOCABULARY_COLUMNS = frozenset({"kind", "direction", "src_kind", "dst_kind", "mem_kind", "sync_type", "key"})


def domain_sql(relation: str, body: str) -> str:
    """The query file's SELECT wrapped in the relation's domain checks and text casts.

    Text read from the profile (names, domains, bus locations, meta values) is cast to TEXT: a BLOB
    or an integer stored where a name belongs must reach Python as a string.
    """
    select = _select(relation)
    key = ", ".join(f'"{c}"' for c in _key_columns(relation))
    domain = DOMAINS[relation]
    where = " AND ".join(f"(({check.sql}) OR {REJECT_FUNCTION}('{relation}', {i}, {key}))"
                         for i, check in enumerate(domain.checks))
    if where and domain.fast:
        where = f"({domain.fast}) OR ({where})"
    return f"SELECT {select} FROM (\n{body}\n)" + (f" WHERE {where}" if where else "")


def _select(relation: str) -> str:
    """The relation's columns, text read from the profile cast to TEXT (see domain_sql)."""
    return ", ".join(f'CAST("{c.name}" AS TEXT) AS "{c.name}"'
                     if c.type == "text" and c.name not in _VOCABULARY_COLUMNS else f'"{c.name}"'
                     for c in RELATIONS[relation])
