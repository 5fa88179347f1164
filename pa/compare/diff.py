"""Structural diff of two ProfileSummary objects (formulas in pa.compare.model).

Kernels are matched by full name (a rename is a vanished plus a new kernel). Phases are compared
one to one when they align: by label when both captures have the same labels, else by order when
both have the same number of phases; otherwise only the whole run is compared (mode "overall").
Key differences are the significant time changes whose |delta| is also at least
KEY_MIN_SPAN_FRACTION of the larger span, ordered by |delta| (largest first).

Only what both captures hold is compared. When one side holds no GPU activity records
(pa.metrics.idle.gpu_activity_captured: GPU tracing off, a degraded capture, a CPU-only build), its
GPU figures are unknown, not 0: the GPU rows of the overview are n/a on that side, kernels, devices
and phases are not compared, a warning names the side, and there is no verdict (`not_comparable`),
since the measure the verdict would rest on exists on one side only, unless both captures mark the
same iteration range: the median iteration, a host-side measure both hold, still decides (a GPU build
against the CPU build of the same code). Otherwise a capture without GPU
work would read as "every kernel vanished, GPU idle +39 s, regression".
"""

from __future__ import annotations

from collections.abc import Sequence

from pa import formatting
from pa.compare import DEFAULT_NOISE_FLOOR_PCT
from pa.compare.changes import change, pct_change, significant
from pa.compare.facets import (
    capture_warnings,
    comparability_warnings,
    device_changes,
    iteration_change,
    verdict,
)
from pa.compare.model import (
    CaptureRef,
    Change,
    Comparison,
    HypothesisChange,
    KernelChange,
    KeyDifference,
    PhaseComparison,
)
from pa.compare.narrative import narrate
from pa.compare.ranks import compare_ranks, rank_key_differences
from pa.metrics.idle import gpu_activity_captured, run_idle_ns, window_per_device_ns
from pa.metrics.model import ProfileSummary
from pa.metrics.phases.model import PhaseSummary
from pa.ranks.model import CrossRank
from pa.rules.hypothesis import Hypothesis

KEY_MIN_SPAN_FRACTION = 0.001


# The overview rows measured on the GPU: unknown (None) on a side without GPU activity records.
GPU_METRICS = frozenset({"gpu window", "start-up", "gpu busy", "gpu idle", "utilization", "kernel time",
                         "kernel count", "copy time", "copy bytes"})


def overview(b: ProfileSummary, a: ProfileSummary, floor: float) -> list[Change]:
    """Whole-run scalars: span, busy, idle, utilisation, kernels, copies, sync, MPI.

    A GPU row is None on a side that holds no GPU activity records (module docs): never a 0 that
    would compare as "GPU busy -100 %".
    """
    def opt(s: ProfileSummary, f: str) -> int | None:
        obj = {"copy": s.copies, "sync": s.sync, "mpi": s.mpi}[f]
        if obj is None:
            return None
        return int(getattr(obj, "cpu_blocked_ns" if f == "sync" else "total_ns"))

    def values(s: ProfileSummary) -> dict[str, float | None]:
        v: dict[str, float | None] = {
            "span": s.span_ns, "gpu window": window_per_device_ns(s), "start-up": s.gpu.first_operation_ns,
            "gpu busy": s.gpu.busy_ns, "gpu idle": run_idle_ns(s), "utilization": s.gpu.utilization_pct,
            "kernel time": s.gpu.kernel_time_ns, "kernel count": s.gpu.kernel_count, "copy time": opt(s, "copy"),
            "copy bytes": s.copies.bytes if s.copies else None, "sync (CPU blocked)": opt(s, "sync"),
            "MPI time": opt(s, "mpi")}
        if not gpu_activity_captured(s):
            v.update(dict.fromkeys(GPU_METRICS))
        return v
    vb, va = values(b), values(a)
    units = {"utilization": "pct", "kernel count": "count", "copy bytes": "bytes"}
    return [change(m, units.get(m, "ns"), vb[m], va[m], floor) for m in vb]


def kernel_changes(b: ProfileSummary, a: ProfileSummary, floor: float) -> list[KernelChange]:
    """Every kernel of either side, matched by name, largest |delta| first."""
    bk = {k.name: k for k in b.kernels}
    ak = {k.name: k for k in a.kernels}
    out = []
    for name in set(bk) | set(ak):
        kb, ka = bk.get(name), ak.get(name)
        bt, at = (kb.total_ns if kb else 0), (ka.total_ns if ka else 0)
        status = "new" if kb is None else "vanished" if ka is None else \
            "changed" if significant(bt, at, floor) else "unchanged"
        pct, note = pct_change(bt, at)
        out.append(KernelChange(name=name, status=status, before_ns=bt, after_ns=at, delta_ns=at - bt,
                                delta_pct=pct, note=note, before_count=kb.count if kb else 0,
                                after_count=ka.count if ka else 0))
    out.sort(key=lambda k: (-abs(k.delta_ns), k.name))
    return out


def align(b: list[PhaseSummary] | None, a: list[PhaseSummary] | None) -> tuple[str, str,
                                                                             list[tuple[PhaseSummary, PhaseSummary]]]:
    """(mode, reason, pairs) — module docs."""
    if not b or not a or (len(b) == 1 and len(a) == 1):
        return "overall", "a single phase (or none) on at least one side", []
    bl = [p.label for p in b]
    al = [p.label for p in a]
    if sorted(bl) == sorted(al):
        by = {p.label: p for p in a}
        return "per_phase", "phases aligned by name", [(p, by[p.label]) for p in b]
    if len(b) == len(a):
        return "per_phase", "phases aligned by order (labels differ)", list(zip(b, a, strict=True))
    return "overall", f"phases do not align ({len(b)} before, {len(a)} after, labels differ)", []


def phase_changes(pairs: list[tuple[PhaseSummary, PhaseSummary]], floor: float) -> list[PhaseComparison]:
    """Per aligned phase: duration, kernel time, busy, idle, copy, sync, MPI."""
    out = []
    for pb, pa in pairs:
        out.append(PhaseComparison(phase=pb.label, before_label=pb.label, after_label=pa.label, changes=[
            change("duration", "ns", pb.duration_ns, pa.duration_ns, floor),
            change("kernel time", "ns", pb.kernel_time_ns, pa.kernel_time_ns, floor),
            change("gpu busy", "ns", pb.busy_ns, pa.busy_ns, floor),
            change("gpu idle", "ns", pb.idle_ns, pa.idle_ns, floor),
            change("copy time", "ns", pb.copy_time_ns, pa.copy_time_ns, floor),
            change("sync (CPU blocked)", "ns", pb.sync_ns, pa.sync_ns, floor),
            change("MPI time", "ns", pb.mpi_ns, pa.mpi_ns, floor)]))
    return out


_KIND = {"span": "overall", "gpu busy": "overall", "kernel time": "overall", "gpu idle": "idle",
         "copy time": "copy", "sync (CPU blocked)": "sync", "MPI time": "mpi", "duration": "overall"}


def key_differences(ov: list[Change], kernels: list[KernelChange], phases: list[PhaseComparison],
                    min_ns: float, extra: Sequence[KeyDifference] = ()) -> list[KeyDifference]:
    """Significant time changes of at least min_ns, and `extra` (the ranks block's), largest |delta| first."""
    out: list[KeyDifference] = list(extra)

    def add(c: Change, phase: str | None) -> None:
        if c.unit == "ns" and c.significant and c.delta is not None and abs(c.delta) >= min_ns \
                and c.before is not None and c.after is not None:
            out.append(KeyDifference(id="", what=c.metric, kind=_KIND.get(c.metric, "overall"), phase=phase,
                                     before_ns=int(c.before), after_ns=int(c.after), delta_ns=int(c.delta),
                                     delta_pct=c.delta_pct, note=c.note))
    for c in ov:
        add(c, None)
    for pc in phases:
        for c in pc.changes:
            add(c, pc.phase)
    for k in kernels:
        if k.status != "unchanged" and abs(k.delta_ns) >= min_ns:
            out.append(KeyDifference(id="", what=f"{k.status} kernel {k.name}" if k.status in ("new", "vanished")
                                     else f"kernel {k.name}", kind="kernel", before_ns=k.before_ns,
                                     after_ns=k.after_ns, delta_ns=k.delta_ns, delta_pct=k.delta_pct,
                                     note=k.note))
    out.sort(key=lambda d: (-abs(d.delta_ns), d.phase or "", d.what))
    return [d.model_copy(update={"id": f"K{n}"}) for n, d in enumerate(out, start=1)]


def hypothesis_changes(before: Sequence[Hypothesis], after: Sequence[Hypothesis],
                       floor: float) -> list[HypothesisChange]:
    """Match hypotheses by rule id (and phase); classify by runtime fraction with the noise floor."""
    def key(h: Hypothesis) -> str:
        return f"{h.rule_id or h.id}" + (f"@{h.phase}" if h.phase else "")
    bh = {key(h): h for h in before}
    ah = {key(h): h for h in after}
    out = []
    for k in sorted(set(bh) | set(ah)):
        hb, ha = bh.get(k), ah.get(k)
        bp = hb.runtime_fraction_pct if hb else None
        ap = ha.runtime_fraction_pct if ha else None
        if ha is None:
            status = "disappeared"
        elif hb is None:
            status = "appeared"
        elif bp is not None and ap is not None and significant(bp, ap, floor):
            status = "shrank" if ap < bp else "grew"
        else:
            status = "unchanged"
        title = (hb or ha).title if (hb or ha) else k  # type: ignore[union-attr]
        out.append(HypothesisChange(rule_id=k, title=title, status=status, before_pct=bp, after_pct=ap))
    return out


def compare(before: ProfileSummary, after: ProfileSummary, noise_floor_pct: float = DEFAULT_NOISE_FLOOR_PCT,
            before_hypotheses: Sequence[Hypothesis] | None = None,
            after_hypotheses: Sequence[Hypothesis] | None = None,
            before_ranks: CrossRank | None = None, after_ranks: CrossRank | None = None) -> Comparison:
    """Compare BEFORE with AFTER (module docs); hypotheses are compared when both lists are given.

    `before_ranks` / `after_ranks`: the cross-rank facts of a side that is a rank set (pa.compare.ranks);
    they add the `ranks` block and its key differences, never the verdict (pa.compare.model).
    """
    floor = noise_floor_pct
    ov = overview(before, after, floor)
    lacking = [side for side, s in (("BEFORE", before), ("AFTER", after)) if not gpu_activity_captured(s)]
    one_lacks = len(lacking) == 1
    kernels = [] if one_lacks else kernel_changes(before, after, floor)
    mode, reason, pairs = align(before.phases, after.phases)
    if one_lacks:
        mode, reason, pairs = "overall", f"{lacking[0]} holds no GPU activity records", []
    phases = phase_changes(pairs, floor)
    min_ns = KEY_MIN_SPAN_FRACTION * max(before.span_ns, after.span_ns)
    ranks = compare_ranks(before_ranks, after_ranks, floor)
    rank_keys = rank_key_differences(ranks, min_ns)
    keys = key_differences(ov, kernels, phases, min_ns, rank_keys)
    hyps = hypothesis_changes(before_hypotheses, after_hypotheses, floor) \
        if before_hypotheses is not None and after_hypotheses is not None else None
    identical = before.profile.sha256 == after.profile.sha256
    within = not any(c.significant for c in ov) and all(k.status == "unchanged" for k in kernels) \
        and not any(c.significant for p in phases for c in p.changes) and not rank_keys
    it, it_reason = iteration_change(before, after, floor)
    by_metric = {c.metric: c for c in ov}
    verdict_, basis, verdict_reason = verdict(by_metric["span"], it, identical, by_metric["gpu window"])
    if one_lacks and not identical and it is None:
        verdict_, basis = "not_comparable", "none"
        verdict_reason = (f"No verdict: {lacking[0]} holds no GPU activity records, so the GPU's active window "
                          "the verdict rests on exists on one side only; only what both captured is compared.")
    startup = by_metric["start-up"]
    if basis != "span" and startup.significant and startup.before is not None and startup.after is not None:
        first, then = formatting.duration_pair(startup.before, startup.after)
        verdict_reason += (f" Start-up (to the first GPU operation) went from {first} to {then}: reported apart, "
                           "not in the verdict.")
    comp = Comparison(
        before=CaptureRef(file_name=before.profile.file_name, sha256=before.profile.sha256, span_ns=before.span_ns),
        after=CaptureRef(file_name=after.profile.file_name, sha256=after.profile.sha256, span_ns=after.span_ns),
        noise_floor_pct=floor, identical=identical, within_noise=within and verdict_ == "within_noise",
        verdict=verdict_, verdict_basis=basis, verdict_reason=verdict_reason, mode=mode, mode_reason=reason,
        overview=ov, kernels=kernels, key_differences=keys, phases=phases,
        devices=[] if one_lacks else device_changes(before, after, floor), iterations=it,
        iterations_reason=it_reason, ranks=ranks, hypotheses=hyps, narrative=[],
        warnings=capture_warnings(before, after, it is not None) + comparability_warnings(before, after)
        + [f"ranks: {n}" for n in (ranks.notes if ranks else []) if n.startswith("rank counts differ")])
    comp.narrative = narrate(comp)
    return comp
