"""Cross-rank analysis: overview, imbalance per phase, collective skew, straggler, primary rank.

Formulas (all from each rank's full totals, never from a truncated top-N list):

- imbalance of a quantity x over ranks = (max_r x_r − min_r x_r) / mean_r x_r.
- collective wait: instance k of collective name N is the k-th call of N on every rank (MPI orders
  collectives identically on all ranks of a communicator); wait(r, k) = max_q start(q, k) − start(r, k).
  Only the first min_r count(r, N) instances are matched; differing counts give a warning.
  Starts are compared on the profiles' clocks, assumed synchronised (one session, or one node).
- straggler rank: arrives last at the most instances (ties: larger summed wait caused).
  most_waited_on rank: Σ over instances where it arrived last of the others' waits, maximal.
- straggler delay: Σ over the instances the straggler arrived last at of its lead over the next
  latest rank, max_q start(q, k) − second-largest start(·, k). It is the part of every other rank's
  wait the straggler alone causes: had it arrived with the next-latest rank, each of those
  collectives would have completed that much earlier on every rank, so the run shortens by it. A
  loss every rank waits for, claimed once and whole whichever rank is primary (MPI-IMB-002/003).
- imbalance side: "compute" when the kernel-time imbalance ≥ imbalance_side_min and the straggler is
  (one of) the rank(s) with the most kernel time; "communication" when compute is not and either
  the MPI-time imbalance is ≥ imbalance_side_min or the straggler has the most MPI time outside
  collectives (p2p, waits) and that quantity's imbalance is ≥ imbalance_side_min (its lateness comes from
  its own communication); else "balanced".
- primary rank: the rank whose idle time is furthest from the median idle time (the outlier);
  `primary_rank` overrides it.
- phase alignment: by label when every rank has the same set of phase labels; else by order when
  every rank has the same number of phases and each phase's durations agree within
  phase_order_tolerance (max/min − 1); else none, with a warning (only whole-run figures).

imbalance_side_min and phase_order_tolerance are site-tunable thresholds (pa.metrics.thresholds,
rule-pack params in rules/thresholds.yaml) passed in by the caller.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pa.errors import UserError
from pa.metrics.gaps import GAP_CAUSE_NAMES
from pa.metrics.idle import run_idle_ns
from pa.metrics.phases.model import PhaseSummary
from pa.metrics.thresholds import DEFAULT_THRESHOLDS, Thresholds
from pa.ranks.model import (
    CollectiveSkew,
    CrossRank,
    Imbalance,
    PhaseImbalance,
    RankOverview,
    RankResult,
    RankSet,
)


def imbalance(values: dict[int, int]) -> Imbalance:
    """(max − min)/mean of a per-rank quantity, with the ranks holding the extremes."""
    ranks = sorted(values)
    arr = np.array([values[r] for r in ranks], dtype=np.float64)
    mean = float(arr.mean())
    hi = ranks[int(np.argmax(arr))]
    lo = ranks[int(np.argmin(arr))]
    return Imbalance(min_ns=values[lo], max_ns=values[hi], mean_ns=mean, max_rank=hi, min_rank=lo,
                     imbalance=(values[hi] - values[lo]) / mean if mean > 0 else None)


Skews = tuple[list[CollectiveSkew], dict[int, int], dict[int, int], dict[int, int]]
PhaseGetter = Callable[[RankResult, int], PhaseSummary]


def _instance_skew(name: str, starts: np.ndarray, ids: np.ndarray, wait: dict[int, int], caused: dict[int, int],
                   lead: dict[int, int]) -> tuple[CollectiveSkew, np.ndarray]:
    """One collective's skew from its starts (ranks × matched instances), MPI calls or GPU kernels alike.

    Adds each rank's wait, the wait it caused (as the last arrival) and its lead over the next-latest
    rank into the given per-rank totals (module docs); returns the CollectiveSkew and, per instance,
    the index of the rank that arrived last.
    """
    latest = starts.max(axis=0)
    w = latest[None, :] - starts
    last = np.argmax(starts, axis=0)
    for i, rk in enumerate(ids.tolist()):
        wait[rk] += int(w[i].sum())
    col_wait = w.sum(axis=0)
    # the latest start minus the second-latest: what the last rank alone adds to the instance
    second = np.sort(starts, axis=0)[-2] if len(ids) > 1 else latest
    for k in range(starts.shape[1]):
        rk = int(ids[last[k]])
        caused[rk] += int(col_wait[k])
        lead[rk] += int(latest[k] - second[k])
    arrivals = np.bincount(last, minlength=len(ids))
    return CollectiveSkew(name=name, instances=int(starts.shape[1]), total_wait_ns=int(w.sum()),
                          max_skew_ns=int((latest - starts.min(axis=0)).max()),
                          last_arrivals={int(ids[i]): int(c) for i, c in enumerate(arrivals) if c}), last


def collective_skew(ranks: Sequence[RankResult], warnings: list[str]) -> Skews:
    """Per-collective skew, wait per rank, wait caused per rank and lead over the next-latest rank (module docs)."""
    names = sorted({n for r in ranks for n in r.collectives.calls})
    wait: dict[int, int] = {r.rank: 0 for r in ranks}
    caused: dict[int, int] = {r.rank: 0 for r in ranks}
    lead: dict[int, int] = {r.rank: 0 for r in ranks}
    out: list[CollectiveSkew] = []
    ids = np.array([r.rank for r in ranks])
    for name in names:
        counts = [len(r.collectives.calls.get(name, ((), ()))[0]) for r in ranks]
        n = min(counts)
        offsets = [0] * len(ranks)
        if len(set(counts)) > 1 and n:
            # A capture that began or ended inside a collective on some ranks only: line the calls up by
            # their common end (a blocking collective returns on every rank when it completes) when the
            # ends allow it, else match the first calls.
            aligned = align_instances([r.collectives.calls[name][1] for r in ranks])
            if aligned is not None:
                offsets, n = aligned
            how = "by their common end" if aligned is not None else "from the first call"
            warnings.append(f"{name}: call counts differ between ranks ({min(counts)}–{max(counts)}); "
                            f"matched {n} instances {how}")
        if n == 0:
            continue
        starts = np.vstack([r.collectives.calls[name][0][o:o + n]
                            for r, o in zip(ranks, offsets, strict=True)])   # ranks × instances
        out.append(_instance_skew(name, starts, ids, wait, caused, lead)[0])
    return out, wait, caused, lead


# Point-to-point kernels (SendRecv, Send, Recv) pair two ranks, not all: they are matched only when every
# rank launched the same number (a symmetric exchange, as all_to_all over SendRecv is), else left
# unmatched with a note. Other GPU collectives with differing counts are lined up by their common end.
_POINT_TO_POINT = ("SendRecv", "Send", "Recv")


# How far apart (median over the instances) the ranks' kernels of one collective may end: it completes
# on every rank at once, up to the last hop's latency (NCCL's ends agree within tens of µs on one node).
END_TOLERANCE_NS = 100_000
# Instances a capture boundary may cut from one rank's sequence and not another's (a kernel already
# running when the capture started is not recorded): the alignment tries shifts up to this many.
MAX_SHIFT = 3


def align_instances(ends: Sequence[np.ndarray]) -> tuple[list[int], int] | None:
    """Offsets into each rank's kernel sequence that line up one collective's kernels, and how many line up.

    A collective's kernels end together on every rank, so the k-th instance of rank q is the one whose
    end matches the k-th of the first rank: each rank's shift (at most MAX_SHIFT, for kernels the
    capture cut at either end) is the one with the smallest median end difference. None when no
    shift brings the ends within tolerance (not one collective, or unsynchronised clocks).
    """
    ref = ends[0]
    shifts = [0]
    for e in ends[1:]:
        best: tuple[float, int] | None = None
        for d in range(-MAX_SHIFT, MAX_SHIFT + 1):
            lo, hi = max(0, -d), min(len(ref), len(e) - d)
            if hi - lo < 1:
                continue
            diff = float(np.median(np.abs(e[lo + d:hi + d] - ref[lo:hi])))
            if best is None or diff < best[0]:
                best = (diff, d)
        if best is None:
            return None
        shifts.append(best[1])
    # ref index k is index k + shift on each rank; the k every rank holds
    lo = max(0, *(-d for d in shifts))
    hi = min(len(e) - d for e, d in zip(ends, shifts, strict=True))
    n = max(0, hi - lo)
    if n == 0:
        return [0] * len(ends), 0
    block = np.vstack([e[lo + d:lo + d + n] for e, d in zip(ends, shifts, strict=True)])
    spread = float(np.median(block.max(axis=0) - block.min(axis=0)))
    if spread > END_TOLERANCE_NS:
        return None
    return [lo + d for d in shifts], n


@dataclass(frozen=True)
class GpuSkew:
    """What collective_skew_gpu finds: per-key skews, per-rank wait, the straggler and why it is late."""

    skews: list[CollectiveSkew]
    wait: dict[int, int]
    straggler: int | None
    delay: int | None
    most_waiting: int | None
    late_compute: int | None
    late_idle: int | None
    late_because: str | None


def collective_skew_gpu(ranks: Sequence[RankResult], warnings: list[str]) -> GpuSkew:
    """Arrival skew of the NCCL/RCCL collective kernels across ranks (pa.ranks.gpu_collectives).

    wait, last arrivals and leads over the next-latest rank as for MPI collectives (module docs);
    the late rank (straggler) is the one with the largest summed lead: the rank the others wait for
    most, not the one last most often (a few microseconds late at many collectives costs nothing).
    Over the instances the straggler arrived last at, late_compute / late_idle are its compute /
    non-compute time in the segment before its arrival minus the other ranks' mean over theirs;
    late_because is compute or idle when that side is at least two thirds of the two
    (positive parts), else mixed.
    """
    wait = {r.rank: 0 for r in ranks}
    caused = {r.rank: 0 for r in ranks}
    lead = {r.rank: 0 for r in ranks}
    last_counts = {r.rank: 0 for r in ranks}
    ids = np.array([r.rank for r in ranks])
    out: list[CollectiveSkew] = []
    per_instance: list[tuple[int, np.ndarray, np.ndarray]] = []   # (last rank index, compute, idle) per instance
    if len(ranks) < 2:
        return GpuSkew([], wait, None, None, None, None, None, None)
    keys = sorted({k for r in ranks for k in r.gpu_collectives.calls})
    for key in keys:
        got = [r.gpu_collectives.calls.get(key) for r in ranks]
        if any(c is None or not len(c["start"]) for c in got):
            warnings.append(f"GPU {key}: not launched on every rank, so not matched as a collective")
            continue
        calls = [c for c in got if c is not None]
        counts = [len(c["start"]) for c in calls]
        p2p = key.split(" ")[0] in _POINT_TO_POINT
        if len(set(counts)) > 1 and p2p:
            warnings.append(f"GPU {key}: kernel counts differ between ranks ({min(counts)}–{max(counts)}); "
                            "point-to-point kernels pair some ranks, not all, so they are not matched")
            continue
        aligned = align_instances([c["end"] for c in calls])
        if aligned is None:
            warnings.append(f"GPU {key}: the ranks' kernels do not end together at any alignment (a collective's "
                            "kernels all end when it completes): not matched; are the clocks synchronised?")
            continue
        offsets, n = aligned
        if len(set(counts)) > 1 or any(offsets):
            warnings.append(f"GPU {key}: kernel counts differ between ranks ({min(counts)}–{max(counts)}: the capture "
                            f"cut some collectives); matched {n} instances by their common end")
        if n == 0:
            continue
        starts = np.vstack([c["start"][o:o + n] for c, o in zip(calls, offsets, strict=True)])
        comp = np.vstack([c["before_compute_ns"][o:o + n] for c, o in zip(calls, offsets, strict=True)])
        idle = np.vstack([(c["before_ns"] - c["before_compute_ns"])[o:o + n]
                          for c, o in zip(calls, offsets, strict=True)])
        skew, last = _instance_skew(key, starts, ids, wait, caused, lead)
        out.append(skew)
        for k in range(n):
            last_counts[int(ids[last[k]])] += 1
            per_instance.append((int(last[k]), comp[:, k], idle[:, k]))
    if not out:
        return GpuSkew([], wait, None, None, None, None, None, None)
    # The late rank is the one whose lateness costs the others most (its summed lead), not the one
    # last most often: a rank last by a few microseconds at many collectives holds nobody back.
    straggler = max(lead, key=lambda rk: (lead[rk], last_counts[rk], -rk))
    if lead[straggler] == 0:
        return GpuSkew(out, wait, None, None, max(wait, key=lambda rk: (wait[rk], -rk)), None, None, None)
    index = int(np.flatnonzero(ids == straggler)[0])
    extra_c = extra_i = 0.0
    for li, comp_k, idle_k in per_instance:
        if li != index:
            continue
        others = np.arange(len(ranks)) != index
        extra_c += float(comp_k[index] - comp_k[others].mean())
        extra_i += float(idle_k[index] - idle_k[others].mean())
    pos_c, pos_i = max(extra_c, 0.0), max(extra_i, 0.0)
    because = "compute" if pos_c >= 2 * pos_i and pos_c > 0 else "idle" if pos_i >= 2 * pos_c and pos_i > 0 \
        else "mixed"
    return GpuSkew(out, wait, straggler, lead[straggler], max(wait, key=lambda rk: (wait[rk], -rk)),
                   round(extra_c), round(extra_i), because)


def align_phases(ranks: Sequence[RankResult], warnings: list[str],
                 order_tolerance: float = DEFAULT_THRESHOLDS.phase_order_tolerance
                 ) -> tuple[str, list[str], PhaseGetter]:
    """How phases line up across ranks: (mode, phase names, getter(rank, i) -> that rank's phase i)."""
    lists = [r.summary.phases or [] for r in ranks]
    if not all(lists):
        warnings.append("some ranks have no phases; per-phase imbalance not computed")
        return "none", [], lambda r, i: (r.summary.phases or [])[i]
    labels = [[p.label for p in ph] for ph in lists]
    if all(set(lab) == set(labels[0]) for lab in labels):
        names = labels[0]
        return "name", names, lambda r, i: next(p for p in (r.summary.phases or []) if p.label == names[i])
    counts = {len(ph) for ph in lists}
    if len(counts) == 1:
        durs = np.array([[p.duration_ns for p in ph] for ph in lists], dtype=np.float64)
        lo = np.maximum(durs.min(axis=0), 1.0)
        if np.all(durs.max(axis=0) / lo - 1 <= order_tolerance):
            names = [f"phase {i} ({labels[0][i]})" for i in range(len(labels[0]))]
            return "order", names, lambda r, i: (r.summary.phases or [])[i]
    warnings.append("phases differ between ranks (names, count or durations); only whole-run imbalance "
                    "is reported")
    return "none", [], lambda r, i: (r.summary.phases or [])[i]


def cross_rank(rs: RankSet, primary_rank: int | None = None,
               thresholds: Thresholds = DEFAULT_THRESHOLDS) -> CrossRank:
    """Cross-rank facts of a RankSet (formulas in the module docs; `thresholds` as RuleSet.thresholds)."""
    side_min = thresholds.imbalance_side_min
    ranks = rs.ranks
    if not ranks:
        raise UserError("no ranks to compare")
    warnings = list(rs.warnings)
    if len({r.summary.profile.host_name for r in ranks}) > 1:
        warnings.append("ranks ran on several hosts: collective skew assumes their clocks are synchronised")
    skews, wait, caused, lead = collective_skew(ranks, warnings)
    gpu = collective_skew_gpu(ranks, warnings)
    rows = []
    for r in ranks:
        s = r.summary
        coll = s.mpi.by_kind.get("collective", 0) if s.mpi else 0
        rows.append(RankOverview(
            rank=r.rank, rank_source=r.rank_source, file_name=s.profile.file_name, span_ns=s.span_ns,
            kernel_time_ns=s.gpu.kernel_time_ns - s.gpu.communication_time_ns, busy_ns=s.gpu.busy_ns,
            idle_ns=run_idle_ns(s),
            mpi_ns=s.mpi.total_ns if s.mpi else None, collective_wait_ns=wait[r.rank],
            noncollective_mpi_ns=max(0, s.mpi.total_ns - coll) if s.mpi else None,
            utilization_pct=s.gpu.utilization_pct, pid=r.pid, communication_ns=s.gpu.communication_time_ns,
            communication_exposed_ns=s.gpu.communication_exposed_ns,
            communication_recoverable_ns=s.gpu.communication_recoverable_ns or 0,
            gpu_collective_wait_ns=gpu.wait[r.rank]))
    has_mpi = all(r.mpi_ns is not None for r in rows)
    overall = PhaseImbalance(
        phase="(whole run)", kernel_time=imbalance({r.rank: r.kernel_time_ns for r in rows}),
        mpi=imbalance({r.rank: r.mpi_ns or 0 for r in rows}) if has_mpi else None)

    mode, names, get = align_phases(ranks, warnings, thresholds.phase_order_tolerance)
    phases = []
    for i, name in enumerate(names):
        per = {r.rank: get(r, i) for r in ranks}
        mpi_vals = {k: p.mpi_ns for k, p in per.items()}
        phases.append(PhaseImbalance(
            phase=name, kernel_time=imbalance({k: p.kernel_time_ns for k, p in per.items()}),
            mpi=imbalance({k: v or 0 for k, v in mpi_vals.items()})
            if all(v is not None for v in mpi_vals.values()) else None))

    straggler = most_waited = most_waiting = None
    if skews:
        last_counts: dict[int, int] = defaultdict(int)
        for sk in skews:
            for rk, c in sk.last_arrivals.items():
                last_counts[rk] += c
        straggler = max(last_counts, key=lambda rk: (last_counts[rk], caused[rk], -rk))
        most_waited = max(caused, key=lambda rk: (caused[rk], -rk))
        most_waiting = max(wait, key=lambda rk: (wait[rk], -rk))

    comp = overall.kernel_time.imbalance
    comm = overall.mpi.imbalance if overall.mpi else None
    other = {r.rank: r.noncollective_mpi_ns or 0 for r in rows}
    noncoll = imbalance(other).imbalance if has_mpi and any(other.values()) else None
    max_kernel = overall.kernel_time.max_ns
    straggler_heavy = straggler is None or next(r.kernel_time_ns for r in rows if r.rank == straggler) >= \
        (1 - side_min / 2) * max_kernel
    if comp is not None and comp >= side_min and straggler_heavy:
        side = "compute"
    elif (comm is not None and comm >= side_min) or (
            noncoll is not None and noncoll >= side_min and straggler is not None
            and other[straggler] == max(other.values())):
        side = "communication"
    else:
        side = "balanced"

    if primary_rank is not None:
        if primary_rank not in {r.rank for r in rows}:
            raise UserError(f"--primary-rank {primary_rank}: no such rank "
                            f"({', '.join(str(r.rank) for r in rows)})")
        primary, reason = primary_rank, "chosen with --primary-rank"
    else:
        idle = {r.rank: r.idle_ns for r in rows}
        med = float(np.median(list(idle.values())))
        primary = max(idle, key=lambda rk: (abs(idle[rk] - med), -rk))
        reason = f"idle time {idle[primary] / 1e6:.1f} ms is furthest from the median {med / 1e6:.1f} ms"

    cause, cause_share = None, None
    late = next((r.summary for r in ranks if r.rank == gpu.straggler), None)
    if late is not None and late.gpu.idle_by_cause and late.gpu.idle_in_window_ns:
        code = max(late.gpu.idle_by_cause, key=lambda c: (late.gpu.idle_by_cause[c], c))
        if late.gpu.idle_by_cause[code] > 0:
            cause = GAP_CAUSE_NAMES.get(code, code)
            cause_share = late.gpu.idle_by_cause[code] / late.gpu.idle_in_window_ns
    return CrossRank(
        gpu_late_idle_cause=cause, gpu_late_idle_cause_share=cause_share,
        rank_count=len(rows), ranks=rows, phase_alignment=mode, overall=overall, phases=phases,
        collectives=sorted(skews, key=lambda sk: (-sk.total_wait_ns, sk.name)), collective_count=len(skews),
        collective_instances=sum(sk.instances for sk in skews), straggler_rank=straggler,
        straggler_delay_ns=lead[straggler] if straggler is not None else None,
        most_waited_on_rank=most_waited, most_waiting_rank=most_waiting, compute_imbalance=comp,
        communication_imbalance=comm, noncollective_imbalance=noncoll, imbalance_side=side,
        primary_rank=primary, primary_reason=reason, warnings=warnings,
        rank_source=ranks[0].rank_source if len({r.rank_source for r in ranks}) == 1 else "mixed",
        gpu_collectives=sorted(gpu.skews, key=lambda sk: (-sk.total_wait_ns, sk.name)),
        gpu_collective_instances=sum(sk.instances for sk in gpu.skews), gpu_straggler_rank=gpu.straggler,
        gpu_straggler_delay_ns=gpu.delay, gpu_most_waiting_rank=gpu.most_waiting,
        gpu_late_compute_ns=gpu.late_compute, gpu_late_idle_ns=gpu.late_idle, gpu_late_because=gpu.late_because)
