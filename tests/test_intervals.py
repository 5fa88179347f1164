"""Interval algebra against a brute-force reference (unit grid) and property-based invariants."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pa.metrics import intervals as iv

interval_lists = st.lists(
    st.tuples(st.integers(0, 200), st.integers(0, 60)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=30)


def _arr(pairs):
    s = np.array([p[0] for p in pairs], dtype=np.int64)
    e = np.array([p[1] for p in pairs], dtype=np.int64)
    return s, e


def _covered(pairs) -> set[int]:
    """Reference: the set of unit cells [t, t+1) covered by any interval."""
    cells: set[int] = set()
    for s, e in pairs:
        cells.update(range(s, e))
    return cells


@given(interval_lists)
def test_union_matches_reference(pairs):
    s, e = _arr(pairs)
    assert iv.union_length(s, e) == len(_covered(pairs))


@given(interval_lists)
def test_union_at_most_sum_and_merged_is_disjoint(pairs):
    s, e = _arr(pairs)
    ms, me = iv.merge(s, e)
    assert iv.length((ms, me)) <= int((e - s).sum())
    assert np.all(ms[1:] > me[:-1])  # disjoint and not touching
    assert np.all(me >= ms)


@given(interval_lists)
def test_gaps_plus_busy_equals_window(pairs):
    s, e = _arr([p for p in pairs if p[1] > p[0]])
    merged = iv.merge(s, e)
    if len(merged[0]) == 0:
        return
    window = int(merged[1][-1] - merged[0][0])
    assert iv.length(iv.gaps(merged)) + iv.length(merged) == window


@given(interval_lists, interval_lists)
def test_intersection_and_subtraction_match_reference(a, b):
    ma, mb = iv.merge(*_arr(a)), iv.merge(*_arr(b))
    ca, cb = _covered(a), _covered(b)
    assert iv.intersect_length(ma, mb) == len(ca & cb)
    assert iv.subtract_length(ma, mb) == len(ca - cb)


@given(interval_lists, st.integers(0, 250), st.integers(0, 250))
def test_clip_keeps_straddling_events(pairs, lo, hi):
    if hi <= lo:
        return
    s, e = _arr(pairs)
    cs, ce = iv.clip(s, e, lo, hi)
    assert iv.union_length(cs, ce) == len(_covered(pairs) & set(range(lo, hi)))


@given(interval_lists, st.integers(0, 250), st.integers(1, 80))
def test_coverage_matches_reference(pairs, lo, width):
    merged = iv.merge(*_arr(pairs))
    hi = lo + width
    assert iv.coverage(merged, lo, hi) == len(_covered(pairs) & set(range(lo, hi)))


@settings(max_examples=50)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 100), st.integers(0, 30)), max_size=40))
def test_grouped_union_never_merges_keys(rows):
    keys = np.array([r[0] for r in rows], dtype=np.int64)
    s = np.array([r[1] for r in rows], dtype=np.int64)
    e = s + np.array([r[2] for r in rows], dtype=np.int64)
    got = iv.grouped_union_length(keys, s, e)
    for k in set(keys.tolist()):
        ref = _covered([(int(a), int(b)) for kk, a, b in zip(keys, s, e, strict=True) if kk == k])
        assert got[k] == len(ref)


def test_busy_never_exceeds_span_with_concurrent_streams():
    # Two fully overlapping kernels on two streams: sum is 2x, busy is 1x the span.
    s = np.array([0, 0], dtype=np.int64)
    e = np.array([100, 100], dtype=np.int64)
    assert iv.union_length(s, e) == 100
    assert int((e - s).sum()) == 200


def test_gaps_are_taken_after_merging():
    # A long kernel [0, 100) on one stream covers the "gap" between [10, 20) and [50, 60).
    s = np.array([10, 50, 0], dtype=np.int64)
    e = np.array([20, 60, 100], dtype=np.int64)
    assert iv.length(iv.gaps(iv.merge(s, e))) == 0


@given(interval_lists, st.lists(st.tuples(st.integers(0, 260), st.integers(0, 80)), max_size=12))
def test_covered_many_matches_reference(pairs, windows):
    merged = iv.merge(*_arr(pairs))
    cells = _covered(pairs)
    lo = np.array([w[0] for w in windows], dtype=np.int64)
    hi = np.array([w[0] + w[1] for w in windows], dtype=np.int64)
    got = iv.covered_many(merged, lo, hi)
    assert got.tolist() == [len(cells & set(range(a, b))) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]


@given(interval_lists, st.lists(st.integers(-5, 265), max_size=20))
def test_contains_many_matches_reference(pairs, times):
    merged = iv.merge(*_arr(pairs))
    cells = _covered(pairs)
    got = iv.contains_many(merged, np.array(times, dtype=np.int64))
    assert got.tolist() == [t in cells for t in times]

