"""scan_markers (vectorised) gives exactly what the range-by-range walk it replaced gave.

The reference below is the previous implementation, kept verbatim in substance: rows in (pid, tid,
domain, kind, start, end descending) order, a stack per (thread, domain, kind) for push/pop ranges, a
heap of the longest top-level ranges, and the sequential top-level-run rule. Random markers (nested
properly or not, several threads and domains, open ranges, touching and zero-length ranges) are
written as Nsight Systems files and both scans must agree on every field and on the top-level runs.
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit.nsys_writer import write_nsys
from testkit.scenario import Device, Kernel, Marker, Process, Scenario

from pa.metrics.host import scan_markers
from pa.metrics.marker_names import RAW_NAMING
from pa.metrics.summarize import summarize
from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import resolve
from pa.profile.relations import VALID, Relations

LISTED = 50


def reference_scan(rel: Relations) -> dict:
    """The walk scan_markers replaced, returning every field it computed."""
    cursor = rel.conn.execute(rel.cte(
        "SELECT pid, tid, start, \"end\", coalesce(name, ''), domain, kind, "
        f"CASE WHEN {VALID} THEN 1 ELSE 0 END FROM pa_markers "
        "ORDER BY pid, tid, coalesce(domain, ''), kind, start, \"end\" DESC"))
    stats: dict = defaultdict(lambda: [0, 0, 0])
    top: list = []
    stack: list[int] = []
    current = None
    top_count = count = open_ranges = 0
    first = last = None
    thread_tops: dict = {}
    name_codes: dict[str, int] = {}
    for pid, tid, start, end, name, domain, kind, valid in cursor:
        if not valid:
            open_ranges += 1
            continue
        count += 1
        first = start if first is None or start < first else first
        last = end if last is None or end > last else last
        if (pid, tid, domain, kind) != current:
            current, stack = (pid, tid, domain, kind), []
        if kind == "push_pop":
            while stack and stack[-1] <= start:
                stack.pop()
            depth = len(stack)
            stack.append(end)
        else:
            depth = 0
        entry = stats[(name, domain)]
        entry[0] += 1
        entry[1] += end - start
        entry[2] = max(entry[2], depth)
        if depth == 0:
            top_count += 1
            cand = thread_tops.setdefault((pid, tid), ([], [], []))
            cand[0].append(start)
            cand[1].append(end)
            cand[2].append(name_codes.setdefault(name, len(name_codes)))
            item = (end - start, -start, pid, tid, start, name)
            if len(top) < LISTED:
                heapq.heappush(top, item)
            elif item > top[0]:
                heapq.heapreplace(top, item)
    names = list(name_codes)
    runs_by_thread = []
    for starts, ends, codes in thread_tops.values():
        s, e, c = np.array(starts, np.int64), np.array(ends, np.int64), np.array(codes, np.int64)
        runs: list = []
        last_end = None
        for i in np.lexsort((-e, s)).tolist():
            if last_end is not None and s[i] < last_end:
                continue
            last_end = int(e[i])
            if runs and runs[-1][0] == names[c[i]]:
                runs[-1] = (names[c[i]], runs[-1][1], int(e[i]))
            else:
                runs.append((names[c[i]], int(s[i]), int(e[i])))
        runs_by_thread.append(runs)
    return {"stats": list(stats.items()), "top": sorted(top), "count": count, "top_count": top_count,
            "open": open_ranges, "extent": (first, last), "runs": runs_by_thread}


def new_scan(rel: Relations) -> dict:
    m = scan_markers(rel, RAW_NAMING)  # the walk it replaced aggregated raw names
    return {"stats": list(m.stats.items()), "top": sorted(m.top), "count": m.count, "top_count": m.top_count,
            "open": m.open_ranges, "extent": m.extent, "runs": m.top_level_runs()}


def bind(path: Path) -> Relations:
    conn = open_readonly(path)
    fmt = detect(conn, path)
    return Relations.bind(conn, resolve(fmt.format, fmt.schema_version))


marker = st.tuples(
    st.sampled_from([(1, 1), (1, 2), (2, 3)]),                      # (pid, tid)
    st.sampled_from([None, "A", "3:x-y"]),                           # domain
    st.sampled_from(["push_pop", "push_pop", "start_end"]),
    st.integers(0, 60),                                              # start
    st.integers(-3, 40),                                             # length (< 0: still open)
    st.sampled_from(["solve", "io", "x:1", "-", ""]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(marker, min_size=0, max_size=70))
def test_vectorised_scan_equals_the_walk(tmp_path_factory, rows):
    seen = set()
    markers = []
    for (pid, tid), domain, kind, start, length, name in rows:
        ident = (pid, tid, domain, kind, start, start + length)
        if ident in seen:  # exact twins are ordered arbitrarily by SQLite: depth is then a coin toss
            continue
        seen.add(ident)
        markers.append(Marker(pid, tid, 1000 + start, 1000 + start + length, name, kind, domain))  # type: ignore[arg-type]
    sc = Scenario(name="m", description="", devices=[Device(id=0)],
                  processes=[Process(1, "a", {1: "a", 2: "b"}), Process(2, "b", {3: "c"})], markers=markers)
    path = write_nsys(sc, tmp_path_factory.mktemp("mk") / "m.sqlite")
    rel = bind(path)
    assert new_scan(rel) == reference_scan(rel)


def test_deep_and_improper_nesting_match(tmp_path: Path) -> None:
    # 80 levels of proper nesting (beyond the vectorised depth limit) on one thread, and ranges that
    # overlap without nesting on another: both take the walk and must agree with the reference
    deep = [Marker(1, 1, 1000 + i, 10_000 - i, f"level {i % 7}") for i in range(80)]
    deep.append(Marker(1, 1, 1500, 1600, "a\x1eb"))  # the transport's separator inside a name
    crossing = [Marker(1, 2, 1000 + 10 * i, 1000 + 10 * i + 25, f"step {i}") for i in range(30)]
    sc = Scenario(name="m", description="", devices=[Device(id=0)],
                  processes=[Process(1, "a", {1: "a", 2: "b"})], markers=deep + crossing)
    rel = bind(write_nsys(sc, tmp_path / "deep.sqlite"))
    got, want = new_scan(rel), reference_scan(rel)
    assert got == want
    assert max(d for (_, (_, _, d)) in got["stats"]) == 80


def test_many_ranges_one_statement(tmp_path: Path) -> None:
    # 3 threads x 2000 nested pairs: the result matches the reference (and takes no Python loop per row)
    markers = list(itertools.chain.from_iterable(
        (Marker(1, t, 10_000 * i, 10_000 * i + 9_000, "outer"),
         Marker(1, t, 10_000 * i + 10, 10_000 * i + 500, "inner"))
        for t in (1, 2, 3) for i in range(2000)))
    sc = Scenario(name="m", description="", devices=[Device(id=0)],
                  processes=[Process(1, "a", {1: "a", 2: "b", 3: "c"})], markers=markers)
    rel = bind(write_nsys(sc, tmp_path / "many.sqlite"))
    assert new_scan(rel) == reference_scan(rel)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), min_size=1, max_size=60))
def test_counted_depth_is_the_stack_depth_on_proper_nesting(ops):
    """The fast path itself (not its fallback): on properly nested push/pop ranges, zero-length ones
    at shared starts included, the counted depth equals the stack walk and no group is re-walked."""
    from pa.metrics.host import _counted_depth, _improper_groups, _stack_depth

    # build a proper nesting by simulating pushes and pops on one clock: (pops, gap) per step
    t, stack, ranges = 0, [], []
    for pops, gap in ops:
        for _ in range(min(pops, len(stack))):
            ranges.append((stack.pop(), t))
        stack.append(t)
        t += gap
    while stack:
        ranges.append((stack.pop(), t))
    start = np.array([r[0] for r in ranges], np.int64)
    end = np.array([r[1] for r in ranges], np.int64)
    order = np.lexsort((-end, start))
    start, end = start[order], end[order]
    group = np.zeros(len(start), np.int64)
    first = np.zeros(len(start), bool)
    first[0] = True
    want = _stack_depth(start, end)
    depth, gstart = _counted_depth(start, end, group, first)
    assert np.array_equal(depth, want)
    assert _improper_groups(end, group, depth, gstart).size == 0  # no group would be re-walked


@pytest.mark.parametrize("markers", [
    [],                                                        # no marker at all
    [Marker(1, 1, 2_000, 1_000, "still open")],                # only a range still open (end < start)
    [Marker(1, 1, 1_000, 2_000, "done"), Marker(1, 1, 3_000, 2_500, "open")],
])
def test_captured_markers_is_whether_the_relation_has_a_row(tmp_path: Path, markers: list[Marker]) -> None:
    # the summary takes it from the marker scan (valid and open rows); the reference asks SQL
    sc = Scenario(name="m", description="", devices=[Device(id=0)], processes=[Process(1, "a", {1: "a"})],
                  kernels=[Kernel(1, 0, 7, 1_000, 5_000, "k")], markers=markers)
    path = write_nsys(sc, tmp_path / "c.sqlite")
    rel = bind(path)
    want = rel.available("markers") and bool(rel.query("SELECT EXISTS (SELECT 1 FROM pa_markers)")[0][0])
    assert want == bool(markers)
    assert summarize(path).captured["markers"] is want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.one_of(st.integers(0, 50), st.integers(0, 2**62 - 1)),
                          st.integers(0, 50)), min_size=1, max_size=40))
def test_group_time_keys_sort_as_the_group_and_time_pairs(rows):
    """Both ways of packing (offsets, and ranks when a capture's span times its groups exceeds 62
    bits) order every start and end exactly as the (group, time) pairs, and each group's key is
    below all of its times and above every time of the groups before it."""
    from pa.metrics.host import _group_time_keys

    group = np.array(sorted(g for g, _, _ in rows), np.int64)
    start = np.array([s for _, s, _ in rows], np.int64)
    end = np.array([min(s + d, 2**62 - 1) for _, s, d in rows], np.int64)
    start_key, end_key, base = _group_time_keys(start, end, group)
    keys = np.concatenate([start_key, end_key]).tolist()
    pairs = list(zip(np.concatenate([group, group]).tolist(), np.concatenate([start, end]).tolist(), strict=True))
    for i in range(len(keys)):
        for j in range(len(keys)):
            assert (keys[i] < keys[j]) == (pairs[i] < pairs[j])
    for g, b in zip(group.tolist(), base.tolist(), strict=True):
        assert all(k >= b for k, (h, _) in zip(keys, pairs, strict=True) if h == g)
        assert all(k < b for k, (h, _) in zip(keys, pairs, strict=True) if h < g)


def test_open_ranges_leave_the_names_in_the_order_the_valid_rows_give(tmp_path: Path) -> None:
    # Open ranges travel with the valid ones and numpy drops them: a name first seen on an open
    # range, or only there, must not change the codes' order of first appearance among valid rows.
    from pa.metrics.host import _fetch_markers

    markers = [Marker(1, 1, 5_000, 4_000, "b"), Marker(1, 1, 6_000, 5_500, "only open"),
               Marker(1, 1, 1_000, 2_000, "a"), Marker(1, 1, 3_000, 3_500, "b"), Marker(1, 1, 7_000, 8_000, "c")]
    sc = Scenario(name="m", description="", devices=[Device(id=0)], processes=[Process(1, "a", {1: "a"})],
                  markers=markers)
    rel = bind(write_nsys(sc, tmp_path / "open.sqlite"))
    rows = _fetch_markers(rel)
    want: list[str] = []
    for (name,) in rel.query(f"SELECT coalesce(name, '') FROM pa_markers WHERE {VALID}"):
        if name not in want:
            want.append(name)
    assert [name for name, _ in rows.keys] == want == ["a", "b", "c"]
    assert [rows.keys[k][0] for k in rows.key.tolist()] == ["a", "b", "c"]
    assert rows.open_ranges == 2
    assert new_scan(rel) == reference_scan(rel)


def test_a_real_valued_timestamp_is_read_like_every_other_number(tmp_path: Path) -> None:
    # The domain checks admit REAL timestamps; every scan casts them to integers, the markers too.
    sc = Scenario(name="m", description="", devices=[Device(id=0)], processes=[Process(1, "a", {1: "a"})],
                  markers=[Marker(1, 1, 1_000, 2_000, "a"), Marker(1, 1, 3_000, 4_000, "b")])
    path = write_nsys(sc, tmp_path / "real.sqlite")
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("UPDATE NVTX_EVENTS SET start = start + 0.75, \"end\" = \"end\" + 0.25")
    conn.commit()
    conn.close()
    m = new_scan(bind(path))
    assert m["count"] == 2 and m["open"] == 0
    assert m["extent"] == (1_000, 4_000)            # CAST truncates toward zero, as in Relations.scan
    assert sorted((name, total) for (name, _), (_, total, _) in m["stats"]) == [("a", 1_000), ("b", 1_000)]
