"""Relations.scan: the group_concat column transport with keyset chunks gives exactly the rows a
plain cursor over the same relation gives, whatever the chunk size, filter or aggregate."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from rocpd_ddl import rocpd_flavours  # tests/ is on sys.path
from testkit.nsys_writer import write_nsys
from testkit.rocpd_writer import write_rocpd
from testkit.scenarios import mpi_collectives, nvtx_nested, pageable_htod, sync_after_launch

from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import resolve
from pa.profile.relations import Relations, _parse_ints

CHUNKED = ("kernels", "copies", "api_calls", "markers")


def _bind(path: Path) -> Relations:
    conn = open_readonly(path)
    fmt = detect(conn, path)
    return Relations.bind(conn, resolve(fmt.format, fmt.schema_version))


@pytest.fixture(scope="module", params=["nsys", *rocpd_flavours()])
def profiles(request, tmp_path_factory) -> list[Relations]:
    out = []
    for make in (sync_after_launch, pageable_htod, nvtx_nested, mpi_collectives):
        path = tmp_path_factory.mktemp("scan") / f"{make.__name__}.{request.param}.db"
        if request.param == "nsys":
            write_nsys(make(), path)
        else:
            write_rocpd(make(), path, flavour=request.param)
        out.append(_bind(path))
    return out


def _plain(rel: Relations, relation: str, exprs: list[str], where: str | None = None) -> np.ndarray:
    """The reference: the same expressions through an ordinary cursor, in row_id order."""
    clause = f" WHERE {where}" if where else ""
    # relations without a driving table (row_id NULL: MPI calls; rocpd markers, from regions and
    # samples) are read in one piece, in the order SQLite gives
    keyed = rel.query(f"SELECT count(row_id) FROM pa_{relation}")[0][0] > 0
    order = " ORDER BY row_id" if keyed else ""
    cols = ", ".join(f"coalesce(CAST(({e}) AS INTEGER), -1)" for e in exprs)
    rows = rel.query(f"SELECT {cols} FROM pa_{relation}{clause}{order}")
    return np.array(rows, dtype=np.int64).reshape(len(rows), len(exprs))


@pytest.mark.parametrize("chunk", [1, 7, 1 << 18])
def test_scan_equals_a_plain_cursor(profiles, chunk):
    seen = 0
    for rel in profiles:
        for relation in (*CHUNKED, "mpi_calls"):
            if not rel.available(relation):
                continue
            exprs = ["start", '"end"', "pid"]
            got = rel.scan(relation, {f"c{i}": e for i, e in enumerate(exprs)}, chunk_rows=chunk).columns
            want = _plain(rel, relation, exprs)
            assert np.array_equal(np.stack([got[f"c{i}"] for i in range(3)], axis=1).reshape(-1, 3), want), relation
            seen += len(want)
    assert seen > 100


def test_filter_and_whole_relation_aggregates_in_one_pass(profiles):
    kept = 0
    for rel in profiles:
        if not rel.available("api_calls"):
            continue
        scan = rel.scan("api_calls", {"s": "start", "n": "name_id"}, where="kind = 'sync'",
                        aggregates={"lo": ("min", "CASE WHEN kind <> 'sync' THEN start END"),
                                    "hi": ("max", '"end"'), "n": ("sum", "1")}, chunk_rows=5)
        want = _plain(rel, "api_calls", ["start", "name_id"], where="kind = 'sync'")
        assert np.array_equal(np.stack([scan.columns["s"], scan.columns["n"]], axis=1).reshape(-1, 2), want)
        lo, hi, n = rel.query("SELECT min(CASE WHEN kind <> 'sync' THEN start END), max(\"end\"), count(*) "
                              "FROM pa_api_calls")[0]
        assert scan.aggregates == {"lo": lo, "hi": hi, "n": n}
        kept += len(want)
    assert kept > 0


def test_large_relations_are_read_in_keyset_chunks_without_a_sort(profiles):
    """Every query set gives the big relations a unique, non-NULL row_id SQLite can seek on.

    rocpd markers are the exception: rocTX ranges are regions and instant marks samples, two tables
    and no single driving one, so that relation is read in one piece (row_id NULL)."""
    for rel in profiles:
        rocpd = rel.query_set.format == "rocpd"
        for relation in CHUNKED:
            if rocpd and relation == "markers":
                assert rel.query("SELECT count(row_id) FROM pa_markers") == [(0,)]
                continue
            if not rel.available(relation) or rel.count(relation) == 0:
                continue
            n, non_null, distinct = rel.query(f"SELECT count(*), count(row_id), count(DISTINCT row_id) "
                                              f"FROM pa_{relation}")[0]
            assert n == non_null == distinct, relation
            assert rel._keyset_ok(relation), f"{relation}: chunked read would sort"


def test_narrow_dtype_widens_instead_of_wrapping(profiles):
    rel = profiles[0]
    got = rel.scan("kernels", {"start": "start"}, dtypes={"start": np.int8}, chunk_rows=3).columns["start"]
    want = _plain(rel, "kernels", ["start"])[:, 0]
    assert got.dtype == np.int64 and np.array_equal(got, want) and want.max() > 127


def test_a_transport_count_mismatch_is_an_error_not_silent_loss():
    assert list(_parse_ints("1,2,3", 3)) == [1, 2, 3]
    with pytest.raises(RuntimeError, match="read 2 values where SQLite counted 3"):
        _parse_ints("1,2", 3)


def _api_calls_on_table(tmp_path, pid: str, kind: str, rows: list[tuple[int, int]],
                        factory: type[sqlite3.Connection] = sqlite3.Connection) -> Relations:
    """Relations over a one-table profile t(id, s) whose api_calls query file reads it.

    `pid` and `kind` are the SQL of those columns (over t's id); start is s, end s + 5, name_id the
    id. A query set of its own ("x", version "1"), so the test decides the row_ids and which rows a
    filter keeps.
    """
    from pa.profile.queryset import QuerySet, load_query_file

    qdir = tmp_path / "x" / "1"
    qdir.mkdir(parents=True)
    (qdir / "api_calls.sql").write_text(
        "-- relation: api_calls\n-- requires: t(id, s)\n"
        f"SELECT id AS row_id, {pid} AS pid, 1 AS tid, s AS start, s + 5 AS \"end\", "
        f"id AS name_id, NULL AS name, {kind} AS kind, NULL AS correlation_id FROM t\n")
    db = tmp_path / "p.sqlite"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, s)")
        c.executemany("INSERT INTO t VALUES (?, ?)", rows)
    return Relations.bind(sqlite3.connect(db, factory=factory), QuerySet(
        format="x", version="1", files={"api_calls": load_query_file(qdir / "api_calls.sql", "1")}))


def test_chunks_follow_sparse_row_ids(tmp_path):
    # row_ids far apart (and one past 2^62): each chunk is a row_id range starting at the next
    # row_id, so no row is skipped however wide the gaps, and the filter and aggregates still hold
    ids = [3, 4, 5, 1000, 1001, 10**9, 10**12 + 7, 2**62 + 1, 2**63 - 1]
    rel = _api_calls_on_table(tmp_path, "1", "CASE WHEN id % 2 THEN 'sync' ELSE 'other' END",
                              [(i, 10 * n) for n, i in enumerate(ids)])
    for chunk in (1, 2, 1 << 18):
        scan = rel.scan("api_calls", {"id": "row_id", "s": "start"}, where="kind = 'sync'",
                        aggregates={"n": ("sum", "1"), "hi": ("max", '"end"')}, chunk_rows=chunk)
        odd = [(i, 10 * n) for n, i in enumerate(ids) if i % 2]
        assert scan.columns["id"].tolist() == [i for i, _ in odd]
        assert scan.columns["s"].tolist() == [s for _, s in odd]
        assert scan.aggregates == {"n": len(ids), "hi": 10 * (len(ids) - 1) + 5}


def test_words_names_exactly_what_a_word_boundary_search_finds():
    """`name in words(sql)` stands for `re.search(rf"\\b{name}\\b", sql)` (relations.cte and scan use it)."""
    import re

    from pa.profile.canonical import RELATIONS
    from pa.profile.queryset import resolve
    from pa.profile.relations import TABLE_PREFIX, words

    names = {f"{TABLE_PREFIX}{r}" for r in RELATIONS} | {c.name for cols in RELATIONS.values() for c in cols}
    texts = [qf.body for fmt, version in (("nsys", "3.24"), ("rocpd", "3.0"))
             for qf in resolve(fmt, version).files.values()]
    texts += ['x.pa_kernels_old, "start" + pa_kernels', "start_ns end", "é_start (start)", ""]
    checked = 0
    for text in texts:
        found = words(text)
        for name in names:
            assert (name in found) == bool(re.search(rf"\b{name}\b", text)), (name, text[:60])
            checked += 1
    assert checked > 1000


@pytest.mark.parametrize("ids, bound", [([3, 4, 5, 1000, 1001], 999),
                                        ([3, 4, 10**12 + 7, 2**63 - 1], None)])
def test_reserved_columns_hold_exactly_the_rows(tmp_path, ids, bound):
    # without a filter the columns are reserved for the row_id range (999 rows for 5) unless the
    # range is too wide; values past int8 arrive in a later chunk and widen what was reserved
    values = [1, 2, 3, 300, 70_000][:len(ids)]
    rel = _api_calls_on_table(tmp_path, "1", "'other'", list(zip(ids, values, strict=True)))
    assert rel._row_id_bound("api_calls") == bound
    for chunk in (1, 2, 1 << 18):
        cols = rel.scan("api_calls", {"id": "row_id", "s": "start"}, dtypes={"s": np.int8}, chunk_rows=chunk).columns
        assert cols["id"].tolist() == ids and cols["s"].tolist() == values
        assert cols["s"].dtype == np.int64 and len(cols["s"]) == len(ids)


def test_filtered_scan_switches_transport_with_the_kept_share(tmp_path):
    # rows 1-100 all kept, 101-300 one in ten: chunks read with the per-column form while most rows
    # are kept and with the interleaved one when few are; every kept row arrives once, in order
    statements: list[str] = []

    class Spy(sqlite3.Connection):
        def execute(self, sql, *args):  # type: ignore[override]
            statements.append(sql)
            return super().execute(sql, *args)

    rel = _api_calls_on_table(tmp_path, "id % 3", "CASE WHEN id <= 100 OR id % 10 = 0 THEN 'sync' ELSE 'other' END",
                              [(i, 7 * i) for i in range(1, 301)], factory=Spy)
    want = [i for i in range(1, 301) if i <= 100 or i % 10 == 0]
    for chunk in (16, 64, 1 << 18):
        statements.clear()
        scan = rel.scan("api_calls", {"id": "row_id", "pid": "pid", "s": "start"}, where="kind = 'sync'",
                        aggregates={"n": ("sum", "1"), "hi": ("max", '"end"')}, chunk_rows=chunk)
        assert scan.columns["id"].tolist() == want
        assert scan.columns["pid"].tolist() == [i % 3 for i in want]
        assert scan.columns["s"].tolist() == [7 * i for i in want]
        assert scan.aggregates == {"n": 300, "hi": 7 * 300 + 5}
        reads = [s for s in statements if "group_concat" in s]
        if chunk == 16:   # a 1-row first chunk (interleaved), then chunks of 16: per column while
            # every row is kept, interleaved again once one in ten is
            interleaved = ["|| ',' ||" in s for s in reads]
            assert interleaved[0] and not any(interleaved[1:7]) and all(interleaved[9:])
