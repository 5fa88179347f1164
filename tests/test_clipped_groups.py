"""by_group + clipped_time(presorted=True) gives, per group, exactly the brute-force clipped time."""

from __future__ import annotations

import numpy as np

from pa.metrics.phases.segment import by_group, clipped_time


def _brute(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> list[int]:
    return [int(sum(max(0, min(e, hi) - max(s, lo)) for s, e in zip(starts.tolist(), ends.tolist(), strict=True)))
            for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True)]


def test_groups_match_brute_force() -> None:
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 10_000, 3_000)
    ends = starts + rng.integers(0, 700, 3_000)
    group = rng.integers(0, 9, 3_000) * 3          # ids with gaps, unsorted
    edges = np.array([0, 1_234, 5_000, 5_001, 9_000, 11_000])
    seen = []
    for g, s, e in by_group(starts, ends, group):
        sel = group == g
        got = clipped_time(s, e, edges, presorted=True).tolist()
        assert got == _brute(starts[sel], ends[sel], edges)
        assert got == clipped_time(starts[sel], ends[sel], edges).tolist()
        seen.append(g)
    assert seen == sorted(set(group.tolist()))
    assert list(by_group(starts[:0], ends[:0], group[:0])) == []
