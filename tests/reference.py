"""Reference computations for tests, sharing no code with pa/ (tests/ is on sys.path).

The engine merges intervals with numpy (pa.metrics.intervals); tests check its numbers against
this plain sweep instead.
"""

from __future__ import annotations

from collections.abc import Iterable


def reference_union(intervals: Iterable[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals: sort, then extend or close the current run."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_s is not None and cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_s is not None and cur_e is not None:
        total += cur_e - cur_s
    return total


def reference_merge(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of [start, end) intervals as sorted, disjoint (start, end) pairs (touching ones joined)."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]
