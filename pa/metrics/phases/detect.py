"""Phase detection on one profile: NVTX/rocTX phases when markers tile the timeline, else kernel mix.

    phases = detect_phases(rel, span_start, span_end, max_phases=8)

1. Markers: the top-level ranges (depth 0) of the thread whose top-level ranges cover most of the
   span; consecutive ranges with the same name form one run ("iteration" × 500 is one phase). When
   the runs cover at least thresholds.marker_coverage_min of the span and there are 2 … max_phases of them, each
   run is a phase, extended back to the end of the previous one (the first to the span start, the
   last to the span end) so the phases tile the span.
2. Otherwise the kernel-mix segmentation of `pa.metrics.phases.segment` over the span.

Every phase's metrics clip events to the phase (an event straddling a boundary counts in both, for
the part inside each), so phase totals add up to the profile's. The first of several phases is
marked warm-up when its marker says so (init, warmup, setup, startup) or its GPU utilisation is
below thresholds.warmup_util_ratio × that of the rest of the run. The thresholds are the site-tunable
ones of pa.metrics.thresholds (rule-pack params, rules/thresholds.yaml).
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from pa.metrics import intervals as iv
from pa.metrics.host import scan_markers
from pa.metrics.idle import idle_ns
from pa.metrics.kernels import kernel_names
from pa.metrics.phases import DEFAULT_MAX_PHASES
from pa.metrics.phases.model import PhaseKernel, PhaseSummary
from pa.metrics.phases.segment import (
    DEFAULT_WINDOWS,
    TOP_COMPONENTS,
    by_group,
    clipped_time,
    optimal_segmentation,
    window_mix,
)
from pa.metrics.thresholds import DEFAULT_THRESHOLDS, Thresholds
from pa.profile.relations import VALID, Relations

WARMUP_WORDS = re.compile(r"warm|init|setup|start", re.IGNORECASE)
TOP_KERNELS_LISTED = 5


@dataclass(frozen=True)
class Cut:
    """Phase boundaries on the profile clock: edges[0] = span start … edges[-1] = span end."""

    edges: list[int]
    source: str
    markers: list[str | None]
    window_ns: int | None = None


def detect_phases(rel: Relations, span_start: int, span_end: int, max_phases: int = DEFAULT_MAX_PHASES,
                  windows: int = DEFAULT_WINDOWS, kernels: dict[str, np.ndarray] | None = None,
                  names: dict[int, tuple[str, str | None]] | None = None,
                  prefetched: dict[str, dict[str, np.ndarray]] | None = None,
                  marker_runs: list[list[tuple[str, int, int]]] | None = None,
                  thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[PhaseSummary] | None:
    """Phases of the profile, or None when there are no kernels to segment (nothing to say).

    `kernels` (start, end, name_id, device arrays), `names` (name_id -> (name, short name)),
    `prefetched` (relation -> columns: copies and memsets with start, end, device, bytes; "sync" with
    pid, start, end) and `marker_runs` (MarkerScan.top_level_runs()) may be passed when the caller
    has read them already: on large profiles every second pass over a relation costs seconds.
    """
    if not rel.available("kernels") or span_end <= span_start:
        return None
    k = kernels if kernels is not None else rel.intervals("kernels", ("name_id", "device"))[0]
    if len(k["start"]) == 0:
        return None
    if names is None:
        names = {i: (n or f"<name id {i}>", sn) for i, (n, sn) in kernel_names(rel).items()}
    if marker_runs is None and max_phases > 1 and rel.available("markers"):
        marker_runs = scan_markers(rel).top_level_runs()
    cut = marker_cut(marker_runs or [], span_start, span_end, max_phases, thresholds) if max_phases > 1 else None
    if cut is None:
        cut = mix_cut(k, span_start, span_end, max_phases, windows, thresholds)
    return phase_metrics(rel, cut, k, names, span_start, prefetched, thresholds)


def marker_cut(runs_by_thread: list[list[tuple[str, int, int]]], span_start: int, span_end: int,
               max_phases: int, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Cut | None:
    """Phases from top-level NVTX/rocTX ranges when they tile most of the span (see module docs).

    `runs_by_thread` is MarkerScan.top_level_runs(). Among threads with 2 … max_phases runs
    covering ≥ thresholds.marker_coverage_min of the span, the one covering the most wins (a thread with one range
    around the whole run says nothing about phases).
    """
    best: tuple[int, list[tuple[str, int, int]]] | None = None
    for runs in runs_by_thread:
        if not 2 <= len(runs) <= max_phases:
            continue
        covered = iv.union_length(np.array([s for _, s, _ in runs]), np.array([e for _, _, e in runs]))
        if covered >= thresholds.marker_coverage_min * (span_end - span_start) and (best is None or covered > best[0]):
            best = (covered, runs)
    if best is None:
        return None
    runs = best[1]
    edges = [span_start] + [max(span_start, min(s, span_end)) for _, s, _ in runs[1:]] + [span_end]
    if any(b <= a for a, b in itertools.pairwise(edges)):
        return None
    return Cut(edges, "markers", [n for n, _, _ in runs])


def mix_cut(k: dict[str, np.ndarray], span_start: int, span_end: int, max_phases: int,
            windows: int, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Cut:
    """Phases from the kernel-mix segmentation of [span_start, span_end) (pa.metrics.phases.segment)."""
    n = max(1, min(windows, len(k["start"]) // thresholds.phase_min_kernels_per_window, span_end - span_start))
    if max_phases <= 1 or n < 2:
        return Cut([span_start, span_end], "single", [None])
    # Components: the TOP_COMPONENTS kernels by total time (ties by name id), everything else pooled.
    # Vectorised: a Python loop over a million kernels costs more than the segmentation itself.
    uniq, inv = np.unique(k["name_id"], return_inverse=True)
    inv = inv.reshape(-1)
    totals = np.bincount(inv, weights=(k["end"] - k["start"]).astype(np.float64))
    top = sorted(range(len(uniq)), key=lambda i: (-totals[i], int(uniq[i])))[:TOP_COMPONENTS]
    comp_of = np.full(len(uniq), len(top), dtype=np.int64)
    comp_of[top] = np.arange(len(top))
    comp = comp_of[inv]
    busy = iv.merge(k["start"], k["end"])
    edges, p = window_mix(span_start, span_end, n, k["start"], k["end"], comp, len(top) + 1, busy)
    seg = optimal_segmentation(p, max_phases)
    cut_edges = [int(edges[b]) for b in seg.bounds]
    return Cut(cut_edges, "kernel_mix" if len(cut_edges) > 2 else "single", [None] * (len(cut_edges) - 1),
               window_ns=int((span_end - span_start) // (len(edges) - 1)))


def _per_key_merged(rel: Relations, sql: str) -> list[iv.Merged] | None:
    arr = rel.fetch_ints(sql, 3)
    if len(arr) == 0:
        return []
    return list(iv.grouped_merge(arr[:, 0], arr[:, 1], arr[:, 2]).values())


def _clipped_sets(sets: list[iv.Merged] | None, edges: np.ndarray) -> np.ndarray | None:
    if sets is None:
        return None
    out = np.zeros(len(edges) - 1, dtype=np.int64)
    for s, e in sets:
        out += clipped_time(s, e, edges)
    return out


def phase_metrics(rel: Relations, cut: Cut, k: dict[str, np.ndarray],
                  names: dict[int, tuple[str, str | None]], span_start: int,
                  prefetched: dict[str, dict[str, np.ndarray]] | None = None,
                  thresholds: Thresholds = DEFAULT_THRESHOLDS) -> list[PhaseSummary]:
    """Per-phase metrics with every event clipped to each phase it overlaps."""
    pre = prefetched or {}
    edges = np.array(cut.edges, dtype=np.int64)
    n_ph = len(edges) - 1
    ktime = clipped_time(k["start"], k["end"], edges)
    kcount = np.bincount(np.clip(np.searchsorted(edges, k["start"], side="right") - 1, 0, n_ph - 1),
                         minlength=n_ph)
    by_name: dict[int, np.ndarray] = {}
    for nid, starts, ends in by_group(k["start"], k["end"], k["name_id"]):
        t = clipped_time(starts, ends, edges, presorted=True)
        cnt = np.bincount(np.clip(np.searchsorted(edges, starts, side="right") - 1, 0, n_ph - 1),
                          minlength=n_ph)
        by_name[nid] = np.vstack([t, cnt])

    dev_sets: dict[int, list[np.ndarray]] = defaultdict(list)
    for d in np.unique(k["device"]).tolist():
        sel = k["device"] == d
        dev_sets[d] += [k["start"][sel], k["end"][sel]]
    copy_time = np.zeros(n_ph, dtype=np.int64)
    copy_bytes = np.zeros(n_ph, dtype=np.int64)
    for relation in ("copies", "memsets"):
        if not rel.available(relation):
            continue
        ops = pre[relation] if relation in pre else rel.intervals(relation, ("device", "bytes"))[0]
        for d in np.unique(ops["device"]).tolist():
            sel = ops["device"] == d
            dev_sets[d] += [ops["start"][sel], ops["end"][sel]]
        if relation == "copies":
            copy_time = clipped_time(ops["start"], ops["end"], edges)
            idx = np.clip(np.searchsorted(edges, ops["start"], side="right") - 1, 0, n_ph - 1)
            weights = np.maximum(ops["bytes"], 0)
            copy_bytes = np.bincount(idx, weights=weights, minlength=n_ph).astype(np.int64)
    busy = np.zeros(n_ph, dtype=np.int64)
    largest_gap = np.zeros(n_ph, dtype=np.int64)
    for parts in dev_sets.values():
        merged = iv.merge(np.concatenate(parts[0::2]), np.concatenate(parts[1::2]))
        busy += clipped_time(merged[0], merged[1], edges)
        # idle intervals of this device over the whole span, then clipped to each phase
        gs = np.concatenate([[edges[0]], merged[1]])
        ge = np.concatenate([merged[0], [edges[-1]]])
        for i in range(n_ph):
            s, e = iv.clip(gs, ge, int(edges[i]), int(edges[i + 1]))
            if len(s):
                largest_gap[i] = max(largest_gap[i], int((e - s).max()))
    n_dev = len(dev_sets)

    sync_sql = f"SELECT pid, start, \"end\" FROM pa_api_calls WHERE kind = 'sync' AND {VALID}"
    mpi_sql = f"SELECT pid, start, \"end\" FROM pa_mpi_calls WHERE {VALID}"
    if "sync" in pre:
        sy = pre["sync"]
        sync_sets: list[iv.Merged] | None = list(iv.grouped_merge(sy["pid"], sy["start"], sy["end"]).values())
    else:
        sync_sets = _per_key_merged(rel, sync_sql) if rel.available("api_calls") else None
    sync = _clipped_sets(sync_sets, edges)
    mpi = _clipped_sets(_per_key_merged(rel, mpi_sql) if rel.available("mpi_calls") else None, edges)

    phases: list[PhaseSummary] = []
    for i in range(n_ph):
        dur = int(edges[i + 1] - edges[i])
        ranked = sorted(((nid, int(v[0, i]), int(v[1, i])) for nid, v in by_name.items() if v[0, i] > 0),
                        key=lambda x: (-x[1], names.get(x[0], ("", None))[0]))
        tops = [PhaseKernel(name=names.get(nid, (f"#{nid}", None))[0],
                            short_name=names.get(nid, ("", None))[1],
                            time_ns=t, count=c) for nid, t, c in ranked[:TOP_KERNELS_LISTED]]
        cap = dur * n_dev
        phases.append(PhaseSummary(
            index=i, label="", source=cut.source, start_ns=int(edges[i] - span_start),
            end_ns=int(edges[i + 1] - span_start), duration_ns=dur, kernel_count=int(kcount[i]),
            kernel_time_ns=int(ktime[i]), busy_ns=int(busy[i]), idle_ns=idle_ns(dur, int(busy[i]), n_dev),
            utilization_pct=(100.0 * int(busy[i]) / cap) if cap else None, largest_gap_ns=int(largest_gap[i]),
            copy_time_ns=int(copy_time[i]), copy_bytes=int(copy_bytes[i]),
            sync_ns=None if sync is None else int(sync[i]), mpi_ns=None if mpi is None else int(mpi[i]),
            top_kernels=tops, marker=cut.markers[i]))
    _label(phases, thresholds.phase_idle_busy_max)
    _mark_warmup(phases, thresholds.warmup_util_ratio)
    return phases


def _label(phases: list[PhaseSummary], idle_busy_max: float) -> None:
    """Label by marker, else 'idle' when busy < idle_busy_max of capacity, else the dominant kernel; unique."""
    seen: dict[str, int] = defaultdict(int)
    for ph in phases:
        if ph.marker:
            base = ph.marker
        elif not ph.top_kernels or (ph.utilization_pct or 0.0) < 100 * idle_busy_max:
            base = "idle"
        else:
            top = ph.top_kernels[0]
            base = top.short_name or top.name
        seen[base] += 1
        ph.label = base if seen[base] == 1 else f"{base} ({seen[base]})"


def _mark_warmup(phases: list[PhaseSummary], util_ratio: float) -> None:
    if len(phases) < 2:
        return
    first = phases[0]
    if first.marker is not None:
        first.warmup = bool(WARMUP_WORDS.search(first.marker))
        return
    rest_cap = sum(p.duration_ns for p in phases[1:])
    rest_busy = sum(p.busy_ns for p in phases[1:])
    n_dev_cap_first = first.busy_ns + first.idle_ns
    if not rest_cap or not n_dev_cap_first:
        return
    first_util = first.busy_ns / n_dev_cap_first
    rest_util = rest_busy / (rest_cap * (n_dev_cap_first / first.duration_ns))
    first.warmup = first_util < util_ratio * rest_util
