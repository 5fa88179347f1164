"""Per-rank comparison of two rank sets (`Comparison.ranks`, issue 28).

A side is a rank set when it is an export of several rank processes (pa.ranks.processes: torchrun,
mpirun under one nsys); its cross-rank facts (pa.ranks.cross.CrossRank) are compared here. A
`pa summary --json` file or a one-process export is no rank set: its side is None, and said.

- Ranks are matched by rank number, never by pid (pids always differ between two runs) and never
  guessed: a rank on one side only has None on the other, and `notes` says when the rank counts or
  the pids differ.
- Per rank: span, GPU busy, compute kernel time, communication (NCCL/RCCL) kernel time, exposed
  communication and GPU collective wait, as pa.compare.changes.change (noise floor included).
- Per GPU collective kind (the gpu_collectives names): instances, total wait and max skew.
- The late rank: gpu_straggler_rank with its pid, lead and late_because; the MPI straggler likewise.
  A late rank whose lead is below the noise floor (% of the rank set's longest span) is arrival
  noise: `late` is false and the run has no late rank (a balanced run's rotating last arrivals).

Key differences (kind "ranks", `rank_key_differences`): when both sides are rank sets of the same
rank count, a change in who is late, or a significant change of the ranks' total collective wait
(at least the comparison's minimum key-difference time), is one key difference per library (GPU
collectives, MPI collectives) with before/after = the ranks' total wait and a sentence saying who
waits for whom, how long, and why the late rank is late. With differing rank counts the totals are
not like for like: the block shows both sides and no key difference is drawn from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pa import formatting
from pa.compare.changes import change, pct_change
from pa.compare.model import (
    Change,
    CollectiveKindChange,
    KeyDifference,
    LateRank,
    RankChange,
    RanksComparison,
)
from pa.ranks.model import CrossRank, RankOverview

RANK_METRICS = (("span", "span_ns"), ("gpu busy", "busy_ns"), ("compute kernel time", "kernel_time_ns"),
                ("communication time", "communication_ns"), ("exposed communication", "communication_exposed_ns"),
                ("GPU collective wait", "gpu_collective_wait_ns"))
WAIT = "GPU collective wait"
MAX_PIDS_LISTED = 8
_BECAUSE = {"compute": "more compute on its GPU than the other ranks'",
            "idle": "idle time on its GPU (its host, a sync or data loading held it back)",
            "mixed": "both more compute and more idle time on its GPU"}


def _late(cr: CrossRank, rank: int | None, lead: int | None, because: str | None, floor: float) -> LateRank | None:
    if rank is None or lead is None:
        return None
    span = max((r.span_ns for r in cr.ranks), default=0)
    pct = 100.0 * lead / span if span else 0.0
    pid = next((r.pid for r in cr.ranks if r.rank == rank), None)
    return LateRank(rank=rank, pid=pid, lead_ns=lead, lead_pct=pct, late=pct > floor, because=because)


def _total(cr: CrossRank | None, attr: str) -> int | None:
    return None if cr is None else sum(int(getattr(r, attr)) for r in cr.ranks)


def compare_ranks(before: CrossRank | None, after: CrossRank | None, floor: float) -> RanksComparison | None:
    """The ranks block (module docs); None when neither side is a rank set."""
    if before is None and after is None:
        return None
    notes = [f"{side} is not a rank set (one process, or a pa summary JSON file): its ranks are not compared"
             for side, cr in (("BEFORE", before), ("AFTER", after)) if cr is None]
    rb = {r.rank: r for r in before.ranks} if before else {}
    ra = {r.rank: r for r in after.ranks} if after else {}
    if before is not None and after is not None:
        if len(rb) != len(ra):
            only_b = sorted(set(rb) - set(ra))
            only_a = sorted(set(ra) - set(rb))
            where = "; ".join(f"rank{'s' if len(x) > 1 else ''} {', '.join(map(str, x))} only in {side}"
                              for side, x in (("BEFORE", only_b), ("AFTER", only_a)) if x)
            notes.append(f"rank counts differ ({len(rb)} in BEFORE, {len(ra)} in AFTER): ranks matched by rank "
                         f"number ({where}); the ranks' totals are not like for like and give no key difference")
        moved = [(k, rb[k].pid, ra[k].pid) for k in sorted(set(rb) & set(ra))
                 if rb[k].pid is not None and ra[k].pid is not None and rb[k].pid != ra[k].pid]
        if moved:
            listed = ", ".join(f"rank {k}: pid {p} → {q}" for k, p, q in moved[:MAX_PIDS_LISTED])
            more = f", and {len(moved) - MAX_PIDS_LISTED} more" if len(moved) > MAX_PIDS_LISTED else ""
            notes.append(f"the processes differ ({listed}{more}): ranks matched by rank number, not by pid")

    def row(k: int) -> RankChange:
        b, a = rb.get(k), ra.get(k)

        def v(r: RankOverview | None, attr: str) -> int | None:
            return None if r is None else int(getattr(r, attr))
        return RankChange(rank=k, before_pid=b.pid if b else None, after_pid=a.pid if a else None,
                          changes=[change(m, "ns", v(b, attr), v(a, attr), floor) for m, attr in RANK_METRICS])

    gb = {g.name: g for g in before.gpu_collectives} if before else {}
    ga = {g.name: g for g in after.gpu_collectives} if after else {}
    kinds = []
    for name in set(gb) | set(ga):
        b, a = gb.get(name), ga.get(name)
        # a side that is a rank set but never ran this kind waited 0 in it; a side that is no rank set: unknown
        wb = b.total_wait_ns if b else (0 if before else None)
        wa = a.total_wait_ns if a else (0 if after else None)
        kinds.append(CollectiveKindChange(
            name=name, before_instances=b.instances if b else None, after_instances=a.instances if a else None,
            total_wait=change("total wait", "ns", wb, wa, floor),
            max_skew=change("max skew", "ns", b.max_skew_ns if b else wb, a.max_skew_ns if a else wa, floor)))
    kinds.sort(key=lambda c: (-abs(c.total_wait.delta if c.total_wait.delta is not None
                                   else c.total_wait.before or c.total_wait.after or 0), c.name))
    mpi = any(cr is not None and cr.collective_count for cr in (before, after))
    return RanksComparison(
        before_rank_count=len(rb) if before else None, after_rank_count=len(ra) if after else None, notes=notes,
        ranks=[row(k) for k in sorted(set(rb) | set(ra))],
        gpu_collective_wait=change(WAIT, "ns", _total(before, "gpu_collective_wait_ns"),
                                   _total(after, "gpu_collective_wait_ns"), floor),
        gpu_collectives=kinds,
        gpu_late_before=_late(before, before.gpu_straggler_rank, before.gpu_straggler_delay_ns,
                              before.gpu_late_because, floor) if before else None,
        gpu_late_after=_late(after, after.gpu_straggler_rank, after.gpu_straggler_delay_ns,
                             after.gpu_late_because, floor) if after else None,
        mpi_collective_wait=change("MPI collective wait", "ns", _total(before, "collective_wait_ns"),
                                   _total(after, "collective_wait_ns"), floor) if mpi else None,
        mpi_late_before=_late(before, before.straggler_rank, before.straggler_delay_ns, None, floor)
        if before else None,
        mpi_late_after=_late(after, after.straggler_rank, after.straggler_delay_ns, None, floor) if after else None)


def _who(rank: int, pid: int | None, inner: bool = False) -> str:
    """'rank 1 (pid 145)'; inside parentheses 'rank 1, pid 145'."""
    if pid is None:
        return f"rank {rank}"
    return f"rank {rank}, pid {pid}" if inner else f"rank {rank} (pid {pid})"


def _names(names: Sequence[str], cap: int = 3, rest: str = "other kinds") -> str:
    """'SendRecv', 'AllReduce and SendRecv', 'A, B and C' (at most `cap`, the largest waits first)."""
    shown = list(names[:cap])
    if len(names) > cap:
        shown[-1] = f"{len(names) - cap + 1} {rest}"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _sentence(rc: RanksComparison, lib: str, late_b: LateRank | None, late_a: LateRank | None,
              total: Change, waits: tuple[dict[int, int], dict[int, int]] | None) -> str:
    """Who is late at `lib`'s collectives now, who waits how long for it, and why (module docs)."""
    tb, ta = int(total.before or 0), int(total.after or 0)
    kinds = [c.name for c in sorted(rc.gpu_collectives, key=lambda c: -(c.total_wait.after or c.total_wait.before
                                                                          or 0))] if lib == "GPU" else []
    where = f" in the {_names(kinds)} collectives" if kinds else f" at the {lib} collectives"
    first, then = formatting.duration_pair(tb, ta)
    totals = f"the ranks' total {lib} collective wait is {then} (was {first})"
    if late_a is None:
        if late_b is None:
            return (f"The ranks' total {lib} collective wait{where} is {then} (was {first}); no rank is late on "
                    "either side (every rank's lead over the next-latest rank is below the noise floor).")
        return (f"No rank is late at the {lib} collectives any more ({_who(late_b.rank, late_b.pid, inner=True)} was, "
                f"{formatting.duration(late_b.lead_ns)} ahead of the next-latest rank in all); {totals}.")
    who = _who(late_a.rank, late_a.pid)
    if late_b is None:
        head = f"{who} is now late at the {lib} collectives (no rank was late in BEFORE)"
    elif late_b.rank != late_a.rank:
        head = f"{who} is now the late rank at the {lib} collectives (was {_who(late_b.rank, late_b.pid, inner=True)})"
    else:
        head = f"{who} is still the late rank at the {lib} collectives"
    others = sorted(set(waits[0]) & set(waits[1]) - {late_a.rank}) if waits else []
    if len(others) == 1:
        o = others[0]
        wb_, wa_ = formatting.duration_pair(waits[0][o], waits[1][o]) if waits else ("", "")
        body = f"rank {o} now waits {wa_} for rank {late_a.rank}{where} (was {wb_})"
    elif others and waits:
        wb_, wa_ = formatting.duration_pair(sum(waits[0][o] for o in others), sum(waits[1][o] for o in others))
        waiting = _names([str(o) for o in others], MAX_PIDS_LISTED, "other ranks")
        body = (f"ranks {waiting} now wait {wa_} in all{where} (was {wb_}), "
                f"rank {late_a.rank} arriving {formatting.duration(late_a.lead_ns)} after the next-latest rank "
                "in all")
    else:
        body = (f"{totals}; rank {late_a.rank} leads the next-latest rank by "
                f"{formatting.duration(late_a.lead_ns)} in all")
    head = head[:1].upper() + head[1:]
    why = f"; rank {late_a.rank}'s late arrivals follow {_BECAUSE[late_a.because]}" \
        if late_a.because in _BECAUSE else ""
    return f"{head}: {body}{why}."


def rank_key_differences(rc: RanksComparison | None, min_ns: float) -> list[KeyDifference]:
    """Key differences of the ranks block (module docs), ids unset (pa.compare.diff.key_differences numbers them)."""
    if rc is None or rc.before_rank_count is None or rc.before_rank_count != rc.after_rank_count:
        return []
    per = {r.rank: {c.metric: c for c in r.changes} for r in rc.ranks}
    waits = ({k: int(m[WAIT].before or 0) for k, m in per.items()},
             {k: int(m[WAIT].after or 0) for k, m in per.items()})
    out = []
    for lib, late_b, late_a, total, w in (
            ("GPU", rc.gpu_late_before, rc.gpu_late_after, rc.gpu_collective_wait, waits),
            ("MPI", rc.mpi_late_before, rc.mpi_late_after, rc.mpi_collective_wait, None)):
        if total is None or total.before is None or total.after is None:
            continue
        lb = late_b if late_b is not None and late_b.late else None
        la = late_a if late_a is not None and late_a.late else None
        moved = (lb.rank if lb else None) != (la.rank if la else None)
        grew = total.significant and total.delta is not None and abs(total.delta) >= min_ns
        if not moved and not grew:
            continue
        pct, note = pct_change(total.before, total.after)
        out.append(KeyDifference(id="", what=f"{lib} collective wait (all ranks)", kind="ranks",
                                 before_ns=int(total.before), after_ns=int(total.after),
                                 delta_ns=int(total.after - total.before), delta_pct=pct, note=note,
                                 sentence=_sentence(rc, lib, lb, la, total, w)))
    return out
