"""The iterations of a run as its markers show them: the repeated same-named top-level range.

An application that marks each step of its main loop (`nvtx.range("iteration")`, `Iteration #` after
name normalisation) gives `pa compare` a measure that does not depend on how long the capture ran or
how long start-up took: the median time per iteration. Chosen among the ranges at depth 0 of their
own domain on each thread (a name's range starting inside an earlier range of the same name is
dropped: loop steps do not nest; a loop a library marks in its own domain inside an application's
range, cuDF's GROUPBY_AGG inside a user range, counts): a name with at
least ITERATION_MIN_COUNT ranges whose count × median duration covers at least
ITERATION_MIN_COVERAGE of the time from its first range's start to its last range's end (a loop
marks its steps back to back; a name repeated now and then, or one long outlier among short calls,
is not a loop). Among those, the largest count × median wins.
"""

from __future__ import annotations

import numpy as np

from pa.metrics.model import IterationStats

ITERATION_MIN_COUNT = 3
ITERATION_MIN_COVERAGE = 0.5


def _kept(s: np.ndarray, e: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The top-level ranges of one thread, sorted by start (longest first on ties).

    A range starting inside the last kept one is dropped. Vectorised where "after the latest end so
    far" gives the same answer, else walked one by one (partly overlapping ranges of two domains).
    """
    order = np.lexsort((-e, s))
    s, e, c = s[order], e[order], c[order]
    if len(s) == 0:
        return s, e, c
    latest = np.maximum.accumulate(e)
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = s[1:] >= latest[:-1]
    kept_at = np.maximum.accumulate(np.where(keep, np.arange(len(s)), 0))
    if not np.array_equal(e[kept_at], latest):
        keep[:] = False
        last_end: int | None = None
        for i, (start, end) in enumerate(zip(s.tolist(), e.tolist(), strict=True)):
            if last_end is None or start >= last_end:
                keep[i] = True
                last_end = end
    return s[keep], e[keep], c[keep]


def _per_name_kept(s: np.ndarray, e: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One thread's candidate ranges grouped by name code, each name's own ranges kept as by _kept."""
    order = np.argsort(c, kind="stable")
    s, e, c = s[order], e[order], c[order]
    first = np.flatnonzero(np.r_[True, c[1:] != c[:-1]]) if len(c) else np.zeros(0, dtype=np.int64)
    parts = [_kept(s[lo:hi], e[lo:hi], c[lo:hi])
             for lo, hi in zip(first.tolist(), np.r_[first[1:], len(c)].tolist(), strict=True)]
    if not parts:
        return s, e, c
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]))


def iteration_stats(thread_tops: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]],
                    names: list[str], span_start: int = 0) -> IterationStats | None:
    """The iteration range (module docs) and its duration statistics; None when no name repeats enough.

    The first iteration's start and the last one's end are given relative to `span_start`.
    """
    # (count × median, pid, tid, code, durations, first start, last end)
    best: tuple[int, int, int, int, np.ndarray, int, int] | None = None
    for (pid, tid), (s, e, c) in sorted(thread_tops.items()):
        s, e, c = _per_name_kept(np.asarray(s, np.int64), np.asarray(e, np.int64), np.asarray(c, np.int64))
        if len(c) < ITERATION_MIN_COUNT:
            continue
        first = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        for lo, hi in zip(first.tolist(), np.r_[first[1:], len(c)].tolist(), strict=True):
            if hi - lo < ITERATION_MIN_COUNT:
                continue
            d = e[lo:hi] - s[lo:hi]
            robust = int(np.median(d)) * (hi - lo)
            extent = int(e[lo:hi].max() - s[lo:hi].min())
            if extent <= 0 or robust < ITERATION_MIN_COVERAGE * extent:
                continue
            if best is None or robust > best[0]:
                best = (robust, pid, tid, int(c[lo]), d, int(s[lo:hi].min()), int(e[lo:hi].max()))
    if best is None:
        return None
    _, pid, tid, code, d, first_start, last_end = best
    return IterationStats(name=names[code], pid=pid, tid=tid, count=len(d), total_ns=int(d.sum()),
                          median_ns=int(np.median(d)), min_ns=int(d.min()), max_ns=int(d.max()),
                          start_ns=first_start - span_start, end_ns=last_end - span_start)
