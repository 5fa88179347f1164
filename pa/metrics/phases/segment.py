"""Kernel-mix segmentation: windowed distributions, Jensen-Shannon divergence, optimal k-segmentation.

The timeline [t0, t1) is cut into `n` equal windows. Each window gets a probability vector over
D components: the top kernels by total time, one "other kernels" bucket and one "idle" bucket:

    p[j, d]    = busy_frac[j] × kt[j, d] / Σ_d kt[j, d]     (kernel components)
    p[j, idle] = 1 − busy_frac[j]

where kt[j, d] is the kernel time of component d clipped to window j (a kernel straddling a window
edge contributes to both windows) and busy_frac[j] the fraction of window j covered by the union of
kernels. Putting idle in the mix makes GPU idle/active transitions boundaries of the same kind as
kernel-mix changes.

A segment of windows [a, b) costs the generalised Jensen-Shannon divergence of its windows times
their number, which is additive and so optimised exactly by dynamic programming:

    cost(a, b) = (b − a) × H(mean_{a≤j<b} p_j) − Σ_{a≤j<b} H(p_j)          (H: entropy in nats)

For a split of a segment into two parts with mixes P and Q, the saving is n × JS_π(P, Q): large
for a real change, small (a χ²-like fluctuation) for sampling noise. The number of phases k
minimises  cost_k + λ (k − 1),  a BIC-style penalty per extra phase

    λ = max(λ_min, κ × noise × ln n)

where noise is the mean JS divergence of adjacent windows after dropping the 2 × max_phases largest
(an estimate of the within-phase fluctuation robust to the few real boundaries), κ = PENALTY_SCALE
and λ_min = MIN_PENALTY: a floor so a perfectly regular profile, where noise ≈ 0, is not cut by
rounding errors; 2 nats × windows is about three windows of a completely different mix.

A phase spans at least MIN_SEGMENT_WINDOWS windows: the window that straddles a real boundary holds
a blend of the two mixes, and would otherwise come out as a spurious one-window phase. A planted
phase shorter than that is absorbed by its neighbours (its events still count, clipped, in them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

PENALTY_SCALE = 8.0
MIN_PENALTY = 2.0
MIN_SEGMENT_WINDOWS = 2
DEFAULT_WINDOWS = 128
TOP_COMPONENTS = 12


@dataclass(frozen=True)
class Segmentation:
    """Result of segmenting n windows: boundaries as window indices, and the audit numbers."""

    bounds: list[int]           # [0, b1, ..., n]: segment i is windows [bounds[i], bounds[i+1])
    penalty: float
    noise: float
    costs: list[float]          # optimal cost for k = 1 .. k_max


def clipped_time(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray, presorted: bool = False) -> np.ndarray:
    """Σ |[start, end) ∩ [edges[j], edges[j+1])| for each j, exactly, in O((n + m) log n).

    Formula: with C(t) = Σ_i clip(t − start_i, 0, end_i − start_i)
                      = Σ_{start_i < t} (t − start_i) − Σ_{end_i < t} (t − end_i),
    the time in window j is C(edges[j+1]) − C(edges[j]). `presorted`: starts and ends are each
    sorted already (the starts need not stay paired with their ends), as by_group gives them.
    """
    if len(starts) == 0:
        return np.zeros(len(edges) - 1, dtype=np.int64)
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    if not presorted:
        # Timsort ("stable"): events arrive nearly in time order, which it sorts in one pass; the
        # default introsort takes ~50 ms per million values whatever the order.
        s, e = np.sort(s, kind="stable"), np.sort(e, kind="stable")
    cs = np.concatenate([[0], np.cumsum(s)])
    ce = np.concatenate([[0], np.cumsum(e)])
    ns = np.searchsorted(s, edges, side="left")
    ne = np.searchsorted(e, edges, side="left")
    c = ns * edges - cs[ns] - (ne * edges - ce[ne])
    return np.diff(c)


def by_group(starts: np.ndarray, ends: np.ndarray, group: np.ndarray
             ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(group, sorted starts, sorted ends) per distinct value of `group`, ascending.

    Two sorts of the whole columns by (group, time) instead of two sorts per group, then each
    group is a slice, ready for clipped_time(..., presorted=True).
    """
    if len(group) == 0:
        return
    by_start = np.lexsort((starts, group))
    g = group[by_start]
    s = starts[by_start]
    e = ends[np.lexsort((ends, group))]
    cut = np.flatnonzero(g[1:] != g[:-1]) + 1
    lo = np.concatenate([[0], cut]).tolist()
    hi = np.concatenate([cut, [len(g)]]).tolist()
    for a, b in zip(lo, hi, strict=True):
        yield int(g[a]), s[a:b], e[a:b]


def entropy(p: np.ndarray) -> np.ndarray:
    """Shannon entropy in nats along the last axis (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return np.asarray(-terms.sum(axis=-1))


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence (nats, equal weights): H((p + q)/2) − (H(p) + H(q))/2."""
    return np.asarray(entropy((p + q) / 2) - (entropy(p) + entropy(q)) / 2)


def segment_costs(p: np.ndarray, min_len: int = 1) -> np.ndarray:
    """cost[a, b] for b − a ≥ min_len (+inf elsewhere), formula in the module docs."""
    n = len(p)
    cum = np.vstack([np.zeros((1, p.shape[1])), np.cumsum(p, axis=0)])
    hcum = np.concatenate([[0.0], np.cumsum(entropy(p))])
    cost = np.full((n + 1, n + 1), np.inf)
    for a in range(n):
        b = np.arange(a + min_len, n + 1)
        if len(b) == 0:
            break
        length = (b - a).astype(float)
        mean = (cum[b] - cum[a]) / length[:, None]
        cost[a, b] = np.maximum(length * entropy(mean) - (hcum[b] - hcum[a]), 0.0)
    return cost


def optimal_segmentation(p: np.ndarray, max_segments: int,
                         penalty: float | None = None) -> Segmentation:
    """Exact minimum of Σ cost(segment) + λ (k − 1) over k ≤ max_segments, by dynamic programming.

    best[k][b] = min_a best[k−1][a] + cost(a, b); O(k n²). λ as in the module docs unless given.
    """
    n = len(p)
    adjacent = js_divergence(p[:-1], p[1:]) if n > 1 else np.zeros(0)
    # trimmed mean: drop the largest 2 × max_segments values (the real boundaries and their
    # straddling windows); a median would be fooled by noiseless single-kernel phases
    trimmed = np.sort(adjacent)[: max(1, len(adjacent) - 2 * max_segments)]
    noise = float(trimmed.mean()) if len(adjacent) else 0.0
    lam = penalty if penalty is not None else max(MIN_PENALTY, PENALTY_SCALE * noise * np.log(max(n, 2)))
    k_max = max(1, min(max_segments, n // MIN_SEGMENT_WINDOWS))
    if k_max == 1:
        return Segmentation([0, n], lam, noise, [])
    cost = segment_costs(p, MIN_SEGMENT_WINDOWS)
    best = np.full((k_max + 1, n + 1), np.inf)
    arg = np.zeros((k_max + 1, n + 1), dtype=np.int64)
    best[1] = cost[0]
    for k in range(2, k_max + 1):
        # cand[a, b] = best[k-1][a] + cost[a, b]
        cand = best[k - 1][:, None] + cost
        arg[k] = np.argmin(cand, axis=0)
        best[k] = cand[arg[k], np.arange(n + 1)]
    totals = [float(best[k][n]) + lam * (k - 1) for k in range(1, k_max + 1)]
    k_best = int(np.argmin(totals)) + 1
    bounds = [n]
    b = n
    for k in range(k_best, 1, -1):
        b = int(arg[k][b])
        bounds.append(b)
    bounds.append(0)
    return Segmentation(sorted(set(bounds)), lam, noise, [float(best[k][n]) for k in range(1, k_max + 1)])


def window_mix(t0: int, t1: int, n: int, k_starts: np.ndarray, k_ends: np.ndarray, k_comp: np.ndarray,
               n_comp: int, busy: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Window edges and kernel-mix matrix of [t0, t1) (formula in the module docs).

    Returns (edges, p): n + 1 edges covering [t0, t1] (the last window ends at t1, so it is always
    included) and the n × (n_comp + 1) mix, the last column being idle.
    """
    edges = np.unique(np.linspace(t0, t1, n + 1).round().astype(np.int64))
    m = len(edges) - 1
    kt = np.zeros((m, n_comp))
    for c, s, e in by_group(k_starts, k_ends, k_comp):
        if 0 <= c < n_comp:
            kt[:, c] = clipped_time(s, e, edges, presorted=True)
    width = np.diff(edges).astype(float)
    busy_frac = np.clip(clipped_time(busy[0], busy[1], edges) / width, 0.0, 1.0)
    total = kt.sum(axis=1)
    share = np.divide(kt, total[:, None], out=np.zeros_like(kt), where=total[:, None] > 0)
    p = np.hstack([share * busy_frac[:, None], (1.0 - busy_frac)[:, None]])
    return edges, p
