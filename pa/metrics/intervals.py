"""Interval algebra on integer nanoseconds, vectorised with numpy.

Busy time is the length of the union of intervals, never the sum of durations (concurrent streams
would push utilisation above 100 %); gaps are taken between *merged* intervals (a long kernel on
another stream covers the short ones' gaps); exposed time is what is left of one union after
subtracting another. Every function takes half-open intervals [start, end) as int64 arrays.

Shapes: `starts`, `ends` are 1-D int64 arrays of equal length; a merged set is a pair of sorted,
disjoint, non-touching arrays.
"""

from __future__ import annotations

import numpy as np

from pa.metrics.grouping import stable_order

Merged = tuple[np.ndarray, np.ndarray]
EMPTY: Merged = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


def merge(starts: np.ndarray, ends: np.ndarray) -> Merged:
    """Union of intervals as sorted disjoint intervals (touching intervals are joined).

    Formula: sort by start; a new merged interval begins where start > running max of previous ends.
    """
    if len(starts) == 0:
        return EMPTY
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    # Events usually arrive in time order: then the sort (an identity permutation) and the two
    # gathers it feeds are skipped (~0.2 ms to check a million starts, ~25 ms to sort and gather).
    if len(s) > 1 and not bool(np.all(s[1:] >= s[:-1])):
        order = np.argsort(s, kind="stable")
        s = s[order]
        e = e[order]
    run_max = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_max[:-1]
    idx = np.flatnonzero(new)
    merged_starts = s[idx]
    # the end of each merged interval is the running max just before the next one starts
    last = np.append(idx[1:] - 1, len(s) - 1)
    merged_ends = run_max[last]
    return merged_starts, merged_ends


def length(merged: Merged) -> int:
    """Total length of a merged set."""
    return int(np.sum(merged[1] - merged[0])) if len(merged[0]) else 0


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length of the union of the given intervals."""
    return length(merge(starts, ends))


def intersect(a: Merged, b: Merged) -> Merged:
    """Intersection of two merged sets (result merged)."""
    if len(a[0]) == 0 or len(b[0]) == 0:
        return EMPTY
    # Sweep over all boundaries: coverage count 2 means both sets cover the point.
    points = np.concatenate([a[0], a[1], b[0], b[1]])
    delta = np.concatenate([np.ones(len(a[0]), np.int64), -np.ones(len(a[1]), np.int64),
                            np.ones(len(b[0]), np.int64), -np.ones(len(b[1]), np.int64)])
    # at equal coordinates process ends (-1) before starts (+1): half-open intervals
    order = np.lexsort((delta, points))
    p = points[order]
    cover = np.cumsum(delta[order])
    inside = cover == 2
    starts = p[:-1][inside[:-1]]
    ends = p[1:][inside[:-1]]
    keep = ends > starts
    if not np.any(keep):
        return EMPTY
    return merge(starts[keep], ends[keep])


def intersect_length(a: Merged, b: Merged) -> int:
    """Length of the intersection of two merged sets."""
    return length(intersect(a, b))


def subtract_length(a: Merged, b: Merged) -> int:
    """Length of a minus b: the part of a not covered by b (e.g. exposed copy time)."""
    return length(a) - intersect_length(a, b)


def gaps(merged: Merged) -> Merged:
    """Gaps between consecutive merged intervals (inside the window first start → last end)."""
    if len(merged[0]) < 2:
        return EMPTY
    return merged[1][:-1].copy(), merged[0][1:].copy()


def clip(starts: np.ndarray, ends: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Clip intervals to [lo, hi), keeping those that overlap it (never drop a straddling event)."""
    s = np.maximum(starts, lo)
    e = np.minimum(ends, hi)
    keep = e > s
    return s[keep], e[keep]


def grouped_union_length(keys: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> dict[int, int]:
    """Union length per integer key (e.g. per device, per process)."""
    return {k: length(m) for k, m in grouped_merge(keys, starts, ends).items()}


def grouped_merge(keys: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> dict[int, Merged]:
    """Merged set per integer key."""
    out: dict[int, Merged] = {}
    if len(keys) == 0:
        return out
    order = stable_order(keys)
    k = keys[order]
    s = starts[order]
    e = ends[order]
    bounds = np.flatnonzero(np.diff(k)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(k)], strict=True):
        out[int(k[lo])] = merge(s[lo:hi], e[lo:hi])
    return out


def union_of(sets: list[Merged]) -> Merged:
    """Union of several merged sets."""
    if not sets:
        return EMPTY
    return merge(np.concatenate([m[0] for m in sets]), np.concatenate([m[1] for m in sets]))


def covered_many(merged: Merged, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Length of each [lo[i], hi[i]) covered by a merged set, for many windows at once.

    Formula: with C(t) = |merged ∩ (-inf, t)| from prefix sums of the merged lengths, the covered
    length of [lo, hi) is C(hi) - C(lo). O((n + m) log n) for n merged intervals and m windows.
    """
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    starts, ends = merged
    if len(starts) == 0 or len(lo) == 0:
        return np.zeros(len(lo), dtype=np.int64)
    prefix = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(ends - starts)])

    def before(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(starts, t, side="right")  # merged intervals starting at or before t
        last_end = ends[np.maximum(k - 1, 0)]
        beyond = np.where(k > 0, np.maximum(last_end - t, 0), 0)
        return prefix[k] - beyond

    return np.maximum(before(hi) - before(lo), 0)


def contains_many(merged: Merged, t: np.ndarray) -> np.ndarray:
    """For each time t[i], whether some merged interval [s, e) holds it (s <= t < e)."""
    t = np.asarray(t, dtype=np.int64)
    starts, ends = merged
    if len(starts) == 0 or len(t) == 0:
        return np.zeros(len(t), dtype=bool)
    k = np.searchsorted(starts, t, side="right")
    return (k > 0) & (ends[np.maximum(k - 1, 0)] > t)


def coverage(merged: Merged, lo: int, hi: int) -> int:
    """Length of [lo, hi) covered by a merged set, in O(log n) plus the overlapping intervals."""
    starts, ends = merged
    if len(starts) == 0 or hi <= lo:
        return 0
    i = int(np.searchsorted(ends, lo, side="right"))
    j = int(np.searchsorted(starts, hi, side="left"))
    if j <= i:
        return 0
    s = np.maximum(starts[i:j], lo)
    e = np.minimum(ends[i:j], hi)
    return int(np.sum(np.clip(e - s, 0, None)))
