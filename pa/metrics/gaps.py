"""Idle gaps of a device: what the host was doing while the GPU waited, and what a fix could recover.

A gap is an interval between two merged busy intervals of one device, inside its active window
(first to last GPU operation). Leading and trailing idle (before the first and after the last GPU
operation) are start-up and tear-down: they are reported apart and never attributed here.

Every gap has one owner, so the idle time of a device is partitioned by cause (time has one owner):

1. `overhead`: the part of the gap that profiler overhead of the device's processes covers. It is the
   profiler's time, not the application's; the rest of the gap goes to one of the causes below.
2. `cpu_stall` for host work of its own: more than half of the rest, and at least host_work_min_ns
   (1 ms), is host time outside every GPU API call the profile records (launch, copy, sync,
   alloc/free) and outside MPI. Work of that size is computation or I/O the host does for itself
   (writing a checkpoint, preparing the next batch), whatever wait came before it. The part of such
   a gap that MPI calls cover is MPI's, not host work (a `GapPart`): a host phase with an MPI_Recv in
   the middle is two causes with two fixes, and each owns the time it covers (issue 25, item 5).
3. `sync` / `copy_wait`: the host was blocked in a synchronising call (sync) or in a copy call
   (copy_wait, e.g. a synchronous or pageable cudaMemcpy) when the GPU ran out of work, and had it
   run ahead instead of waiting, at least half of the gap would have been hidden behind the GPU work
   before it (see below): a synchronisation round trip. The little the host did after the wait (loop
   bookkeeping, the next launch) was serialised by the wait.
   Not when MPI calls cover at least half of the rest: a sync or a blocking copy right before an MPI
   call hands the GPU's result to MPI (kernel → cudaDeviceSynchronize → MPI_Allreduce). That wait is
   needed; the gap is MPI's (item 4), and the lever is overlapping communication with computation,
   not removing the sync (issue 25, item 6).
   Otherwise `cpu_stall` too when more than half of the rest is the host's own time: more host work
   than GPU work it could hide behind; except in a short gap (under dispatch_max_ns, 100 µs) in which
   the host issues the next operation (a launch or copy call), which is `dispatch`: the host's own
   time between two GPU operations that short is the per-operation dispatch path of the program
   issuing them (an eager framework's Python and operator dispatch between small kernels, a
   runtime's per-call bookkeeping), not a host phase. Many short gaps are dispatch overhead, a few
   long ones are host work: the gap length tells them apart. A gap under QUEUE_GAP_MAX_NS (10 µs)
   with no host call in it is `dispatch` too: the device's own latency between operations queued
   back to back (the host was ahead), which recovers ~nothing.
4. otherwise the kind of call covering most of the gap: `compile` (module-load and JIT calls, the
   driver's JIT records, NVTX/rocTX ranges named as compiling), `load` (lazy loading: the driver's
   loading records, and a kernel's first launch call in its process when it lasts at least
   lazy_load_min_ns, 1 ms: a launch costs microseconds, and while the GPU idles no full queue
   blocks it, so it is loading the kernel's module), `launch`, `alloc`, `mpi` (or `sync` /
   `copy_wait` for blocking calls that began inside the gap). In a gap owned by `launch`, `compile`,
   `load`, `sync` or `copy_wait` the allocation and free calls own the part they cover (outside the launch,
   compile, sync and copy calls; in a round trip that part's recoverable time is taken out of the
   round trip's, which already hid it): a
   loop that allocates, launches and synchronises every iteration (OpenACC data clauses, a
   malloc/launch/free per step) has launch-owned gaps with an allocation in each, and a pool removes
   that part whoever owns the rest (issue 25, item 7).
5. `unknown`: the profile holds no host API calls at all, so nothing can be said of the host.

Recoverable time, per gap, is what the trace proves the named fix can remove (the counterfactual):
- sync, copy_wait: the host stops blocking and runs ahead; its post-wait work then overlaps the GPU
  work it was waiting for, so the gap shrinks by at most the busy interval just before it:
  min(gap, preceding busy interval);
- cpu_stall, mpi: the host work is overlapped with GPU work (reordered, prefetched, moved to another
  thread or made non-blocking). Host work can hide only behind GPU work that exists, anywhere in the
  run (a checkpoint written while the next phase computes), so per device the gaps of these causes
  recover at most the device's busy time in all: each gap is scaled by min(1, busy / their idle).
  Host work that reads the GPU's results cannot run beside the GPU work that produces them: where
  the trace proves the read (a fault-driven device-to-host migration of managed memory beside the
  gap: the host touched pages the GPU wrote), the gap hides only behind the GPU work after it, less
  the migrations such reads cause (output written after the last kernel recovers nothing);
- launch: the per-kernel launch calls go (CUDA/HIP graphs, fused kernels): at most the part of the
  gap the launch calls cover; the rest of the gap (the host's other work between launches, allocation
  or copy calls that did not own the gap) stays;
- dispatch: the per-operation dispatch goes (a CUDA/HIP graph replaying the operations, a compiled or
  fused region): consecutive operations then follow each other as closely as the closest two on
  this device already do, so each gap recovers its length minus the device's shortest gap;
- alloc: the allocation calls go (a memory pool, allocations hoisted out of the loop): at most the
  part of the gap those calls cover;
- compile: the kernels are compiled before the timed work (a warm-up, cached or ahead-of-time
  compiled kernels): at most the part of the gap the JIT covers;
- load: nothing. Lazy loading happens once per kernel and process, on first use or eagerly at
  start-up (CUDA_MODULE_LOADING=EAGER): either way the run pays it once, as start-up (issue 25).
  A module the program loads or compiles itself in its loop (cuModuleLoad*, NVRTC) is `compile`;
- overhead, unknown: nothing.

Busy time is on the critical path when the host waited for it: the busy intervals that end while the
host is blocked in a sync, copy or MPI call, and the last one of the window (critical_busy_ns). Faster
kernels shorten the run only there; a kernel that ends while the host is launching or doing its own
work only makes the following gap longer when it runs faster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pa.metrics import intervals as iv
from pa.metrics.idle import idle_ns
from pa.metrics.model import DeviceGaps, Gap, GapBucket
from pa.metrics.thresholds import DEFAULT_THRESHOLDS

GAP_CAUSES = ("sync", "copy_wait", "launch", "alloc", "compile", "load", "mpi", "dispatch", "cpu_stall",
              "overhead", "unknown")
_CODE = {c: i for i, c in enumerate(GAP_CAUSES)}
# What each cause is called in reports and findings.
GAP_CAUSE_NAMES = {"cpu_stall": "host work", "sync": "sync round trips", "copy_wait": "copy waits",
                   "launch": "launch calls", "alloc": "alloc/free", "compile": "compilation/JIT",
                   "load": "module loading (start-up)", "mpi": "MPI",
                   "dispatch": "per-op dispatch", "overhead": "profiler overhead",
                   "unknown": "host not captured"}

# Idle-gap histogram buckets, ns: <10 µs, 10–100 µs, 100 µs–1 ms, 1–10 ms, 10–100 ms, >100 ms.
GAP_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("<10 µs", 0, 10_000),
    ("10–100 µs", 10_000, 100_000),
    ("100 µs–1 ms", 100_000, 1_000_000),
    ("1–10 ms", 1_000_000, 10_000_000),
    ("10–100 ms", 10_000_000, 100_000_000),
    (">100 ms", 100_000_000, None),
)
LARGEST_GAPS = 10
# Shorter than this, a gap with no host call in it is the device's own latency between operations the
# host queued ahead (a few µs), not host work: no host change removes it.
QUEUE_GAP_MAX_NS = 10_000
# Host kinds whose coverage of a gap is measured, in the order ties are broken: a launch call that
# loads its kernel's module (lazy loading) is `load`, not launch overhead.
_KINDS = ("sync", "copy", "compile", "load", "launch", "alloc", "mpi")
_OWNER_OF_KIND = {"sync": "sync", "copy": "copy_wait", "compile": "compile", "load": "load", "launch": "launch",
                  "alloc": "alloc", "mpi": "mpi"}


@dataclass(frozen=True)
class HostSets:
    """Merged host intervals of the processes using one device, by kind (calls of all their threads).

    sync: synchronising calls; copy: memcpy/memset calls; launch: kernel and graph launches (not
    the slow first ones that load a module); alloc: allocation and free calls; compile: module-load
    and JIT calls (cuModuleLoad*, NVRTC, cuLink: a program may call them in its loop), the driver's
    JIT records, ranges the application names as compiling; load: lazy loading, once per kernel and
    process (the driver's loading records, a kernel's first launch call when it loads the module);
    mpi: MPI calls; overhead: profiler overhead records.
    """

    sync: iv.Merged
    copy: iv.Merged
    launch: iv.Merged
    alloc: iv.Merged
    mpi: iv.Merged
    overhead: iv.Merged
    compile: iv.Merged = iv.EMPTY
    load: iv.Merged = iv.EMPTY

    def kinds(self) -> dict[str, iv.Merged]:
        """The API and MPI sets by kind name (overhead apart)."""
        return {"sync": self.sync, "copy": self.copy, "compile": self.compile, "load": self.load,
                "launch": self.launch, "alloc": self.alloc, "mpi": self.mpi}


@dataclass(frozen=True)
class GapPart:
    """The part of each gap that `cause` owns although another cause owns the gap.

    idle_ns: time taken from the gap's owner; recoverable_ns: what `cause`'s fix recovers of it;
    taken_ns: how much of the owner's recoverable time that is (a share of it when both fixes hide the
    same time behind GPU work, as MPI and host work do; 0 when the part's recovery is its own, as a
    pool's is beside a graph's).
    """

    cause: str
    idle_ns: np.ndarray
    recoverable_ns: np.ndarray
    taken_ns: np.ndarray


@dataclass
class GapTable:
    """Every in-window gap of one device with its owner and the time a fix could recover."""

    device: int
    start: np.ndarray          # absolute ns
    end: np.ndarray
    owner: np.ndarray          # int8 index into GAP_CAUSES
    owned_ns: np.ndarray       # gap length minus its overhead part, owned by `owner`
    overhead_ns: np.ndarray    # part covered by profiler overhead
    recoverable_ns: np.ndarray
    cover: dict[str, np.ndarray]  # per host kind, covered ns of each gap
    critical_busy_ns: int = 0     # busy time the host waited on (see classify_gaps)
    # Parts of gaps owned by another cause than the gap's owner (MPI inside host work, allocation
    # inside launch gaps); empty when no gap has one.
    parts: tuple[GapPart, ...] = ()

    def totals(self, weights: np.ndarray | None = None) -> tuple[dict[str, int], dict[str, int]]:
        """(idle by cause, recoverable by cause), each gap weighted by `weights` (default 1)."""
        w = np.ones(len(self.start)) if weights is None else weights
        idle = {c: 0 for c in GAP_CAUSES}
        rec = {c: 0 for c in GAP_CAUSES}
        owned, recoverable = self.owned_ns, self.recoverable_ns
        for part in self.parts:
            idle[part.cause] += round(float((part.idle_ns * w).sum()))
            rec[part.cause] += round(float((part.recoverable_ns * w).sum()))
            owned, recoverable = owned - part.idle_ns, recoverable - part.taken_ns
        for c, code in _CODE.items():
            m = self.owner == code
            idle[c] += round(float((owned[m] * w[m]).sum()))
            rec[c] += round(float((recoverable[m] * w[m]).sum()))
        idle["overhead"] += round(float((self.overhead_ns * w).sum()))
        return idle, rec


def classify_gaps(device: int, busy: iv.Merged, host: HostSets | None,
                  host_work_min_ns: int = DEFAULT_THRESHOLDS.host_work_min_ns,
                  dispatch_max_ns: int = DEFAULT_THRESHOLDS.dispatch_max_ns,
                  host_reads: iv.Merged = iv.EMPTY) -> GapTable:
    """Owner and recoverable time of every gap between the merged busy intervals `busy`.

    `host_work_min_ns` and `dispatch_max_ns` are the site-tunable thresholds (pa.metrics.thresholds)
    from which the host's own work in a gap makes it host work even after a round trip, and below
    which a gap of the host's own time is per-operation dispatch. `host_reads`: the device's
    fault-driven device-to-host migrations (the host touching managed memory the GPU wrote).
    """
    bs, be = busy
    gs, ge = (be[:-1].copy(), bs[1:].copy()) if len(bs) > 1 else (be[:0].copy(), bs[:0].copy())
    length = ge - gs
    n = len(gs)
    if host is None:
        z = np.zeros(n, dtype=np.int64)
        return GapTable(device, gs, ge, np.full(n, _CODE["unknown"], dtype=np.int8), length, z, z.copy(), {},
                        iv.length(busy))
    prev_seg = be[:-1] - bs[:-1]
    overhead = np.minimum(iv.covered_many(host.overhead, gs, ge), length)
    rest = length - overhead
    kinds = host.kinds()
    cover = {k: np.minimum(iv.covered_many(m, gs, ge), rest) for k, m in kinds.items()}
    every = iv.union_of([*kinds.values(), host.overhead])
    own = np.maximum(length - iv.covered_many(every, gs, ge), 0)
    r_prev = np.minimum(rest, prev_seg)
    # A wait that hands the GPU's result to MPI (MPI covers half the gap or more) is no round trip.
    round_trip = (2 * r_prev >= rest) & (2 * cover["mpi"] < rest)
    sync_at = iv.contains_many(host.sync, gs) & round_trip
    copy_at = iv.contains_many(host.copy, gs) & round_trip & ~sync_at
    stall = 2 * own > rest

    stacked = np.vstack([cover[k] for k in _KINDS]) if n else np.zeros((len(_KINDS), 0), dtype=np.int64)
    top = np.argmax(stacked, axis=0) if n else np.zeros(0, dtype=np.int64)  # first kind on ties
    owner = np.array([_CODE[_OWNER_OF_KIND[k]] for k in _KINDS], dtype=np.int8)[top] if n \
        else np.zeros(0, dtype=np.int8)
    recoverable = np.zeros(n, dtype=np.int64)
    top_cover = stacked[top, np.arange(n)] if n else np.zeros(0, dtype=np.int64)
    # Fallback owners (the call kind covering most of the gap) and their recoverable time.
    # Module loading and JIT run inside other calls (a launch that loads its module lazily): when they
    # cover most of the gap, they are its cause, whatever call contains them.
    loading = 2 * cover["load"] >= rest
    owner[loading] = _CODE["load"]
    compiling = 2 * cover["compile"] >= rest
    owner[compiling] = _CODE["compile"]
    top_cover = np.where(compiling, cover["compile"], top_cover)
    # module loading recovers nothing: loaded eagerly or lazily, it is paid once per process (start-up)
    for name, rec in (("sync", r_prev), ("copy_wait", r_prev), ("launch", cover["launch"]), ("alloc", top_cover),
                      ("compile", top_cover), ("load", np.zeros(n, dtype=np.int64)), ("mpi", rest)):
        m = owner == _CODE[name]
        recoverable[m] = rec[m]
    # Host work dominates a gap that no wait explains; in a short gap that is the dispatch path, whose
    # floor is the shortest gap of the device (operations issued back to back, host out of the way).
    owner[stall] = _CODE["cpu_stall"]
    recoverable[stall] = rest[stall]
    issued = (cover["launch"] > 0) | (cover["copy"] > 0)
    dispatch = stall & (length < dispatch_max_ns) & (issued | (length < QUEUE_GAP_MAX_NS))
    floor = int(length.min()) if n else 0
    owner[dispatch] = _CODE["dispatch"]
    recoverable[dispatch] = np.maximum(rest[dispatch] - floor, 0)
    # Round trips: blocked when the GPU drained, and running ahead would hide most of the gap ...
    owner[sync_at] = _CODE["sync"]
    owner[copy_at] = _CODE["copy_wait"]
    recoverable[sync_at | copy_at] = r_prev[sync_at | copy_at]
    # ... unless the host then worked for itself for a millisecond or more: that is host work.
    big = stall & (own >= host_work_min_ns)
    owner[big] = _CODE["cpu_stall"]
    recoverable[big] = rest[big]
    all_overhead = rest <= 0
    owner[all_overhead] = _CODE["overhead"]
    recoverable[all_overhead] = 0
    # Host work that reads the GPU's results (a fault-driven device-to-host migration beside the gap)
    # waits for the GPU work before it: it hides only behind GPU work after it, other than the
    # migrations the host's own reads cause.
    reads = _reads_results(busy, host_reads, n) & (owner == _CODE["cpu_stall"])
    if reads.any():
        recoverable[reads] = np.minimum(recoverable[reads], _later_work(busy, host_reads, ge[reads]))
    # Host work and MPI hide only behind GPU work that exists: together they recover at most the
    # device's busy time, shared in proportion to each gap.
    overlap = (owner == _CODE["cpu_stall"]) | (owner == _CODE["mpi"])
    want = int(recoverable[overlap].sum())
    busy_len = iv.length(busy)
    if want > busy_len:
        recoverable[overlap] = np.floor(recoverable[overlap] * (busy_len / want)).astype(np.int64)
    # A busy interval is on the critical path when the host waited for it to end (blocked in a sync,
    # copy or MPI call as the GPU ran dry) or when it ends the window: shortening its work shortens
    # the run. Work ending while the host was busy elsewhere (launching, its own work) only lengthens
    # the gap that follows when it gets faster.
    blocked = iv.union_of([host.sync, host.copy, host.mpi])
    waited = iv.contains_many(blocked, gs)
    seg = be - bs
    critical = int(seg[:-1][waited].sum()) + int(seg[-1]) if len(seg) else 0
    # MPI inside a host-work gap is MPI's time (the MPI calls covered by no GPU API call), and takes
    # its share of the gap's recoverable time (both hide behind the same GPU work).
    parts: list[GapPart] = []
    stall_gap = owner == _CODE["cpu_stall"]
    if n and np.any(stall_gap & (cover["mpi"] > 0)):
        api_only = iv.union_of([host.sync, host.copy, host.compile, host.launch, host.alloc])
        mpi_only = np.maximum(cover["mpi"] - iv.covered_many(iv.intersect(host.mpi, api_only), gs, ge), 0)
        part = np.where(stall_gap, np.minimum(mpi_only, rest), 0)
        share = np.where(rest > 0, part / np.maximum(rest, 1), 0.0)
        taken = np.floor(recoverable * share).astype(np.int64)
        parts.append(GapPart("mpi", part.astype(np.int64), taken, taken))
    # Allocation inside a launch-, compile- or load-owned gap is the allocation's: a pool removes it, beside
    # whatever the graph or the warm-up removes (the owner keeps the calls it covers).
    cover_gap = (owner == _CODE["launch"]) | (owner == _CODE["compile"]) | (owner == _CODE["load"])
    trip_gap = (owner == _CODE["sync"]) | (owner == _CODE["copy_wait"])
    if n and np.any((cover_gap | trip_gap) & (cover["alloc"] > 0)):
        others = iv.union_of([host.launch, host.compile, host.load, host.sync, host.copy])
        alloc_only = np.maximum(cover["alloc"] - iv.covered_many(iv.intersect(host.alloc, others), gs, ge), 0)
        # beside a launch or compile owner, the pool's recovery is its own; in a round trip, running
        # ahead already hides the allocation, so its part of the gap's recoverable time is taken over
        # (the allocation after a sync is named, the total unchanged: issue 25, item 7)
        part = np.where(cover_gap, np.minimum(alloc_only, np.maximum(rest - recoverable, 0)),
                        np.where(trip_gap, np.minimum(alloc_only, rest), 0)).astype(np.int64)
        taken = np.where(trip_gap, np.minimum(part, recoverable), 0).astype(np.int64)
        rec_part = np.where(trip_gap, taken, part).astype(np.int64)
        parts.append(GapPart("alloc", part, rec_part, taken))
    return GapTable(device, gs, ge, owner, rest, overhead, recoverable, cover, critical, tuple(parts))


def _reads_results(busy: iv.Merged, host_reads: iv.Merged, n: int) -> np.ndarray:
    """Which of the `n` gaps of `busy` border a busy interval holding a host-read migration."""
    if n == 0 or not len(host_reads[0]):
        return np.zeros(n, dtype=bool)
    bs, be = busy
    touched = iv.covered_many(host_reads, bs, be) > 0
    return touched[:-1] | touched[1:]


def _later_work(busy: iv.Merged, host_reads: iv.Merged, t: np.ndarray) -> np.ndarray:
    """The device's busy time after each time in `t`, less the host-read migrations in it."""
    be = busy[1]
    end = int(be[-1]) if len(be) else 0
    hi = np.full(len(t), end, dtype=np.int64)
    later = iv.covered_many(busy, t, hi) - iv.covered_many(host_reads, t, hi)
    return np.maximum(later, 0).astype(np.int64)


def device_gaps(busy: iv.Merged, table: GapTable, span_start: int, span_end: int,
                last_kernel_end: int | None = None) -> DeviceGaps:
    """The DeviceGaps summary of one device: window, histogram, idle by cause, the largest gaps.

    `last_kernel_end` (absolute ns): the end of the device's last kernel; the host work in the gaps
    after it is the run's wind-down (output of the results, verification, clean-up), with no GPU
    computation after it, and is counted apart (wind_down_host_work_ns).
    """
    durations = table.end - table.start
    window = int(busy[1][-1] - busy[0][0]) if len(busy[0]) else 0
    busy_len = iv.length(busy)
    hist = []
    for label, lo, hi in GAP_BUCKETS:
        mask = (durations >= lo) if hi is None else ((durations >= lo) & (durations < hi))
        hist.append(GapBucket(label=label, lower_ns=lo, upper_ns=hi, count=int(mask.sum()),
                              total_ns=int(durations[mask].sum())))
    idle, rec = table.totals()
    order = np.argsort(-durations, kind="stable")[:LARGEST_GAPS]
    largest = []
    for i in order.tolist():
        length = int(durations[i])
        cover = {k: round(100.0 * int(v[i]) / length, 3) for k, v in table.cover.items()} if length else {}
        owner = GAP_CAUSES[int(table.owner[i])]
        if 2 * int(table.overhead_ns[i]) > length:
            owner = "overhead"
        largest.append(Gap(device=table.device, start_ns=int(table.start[i]) - span_start, duration_ns=length,
                           host_activity=owner, host_cover_pct=cover,
                           recoverable_ns=int(table.recoverable_ns[i])))
    return DeviceGaps(
        device=table.device, window_ns=window, busy_ns=busy_len, idle_ns=idle_ns(window, busy_len),
        gap_count=len(durations),
        leading_idle_ns=int(busy[0][0] - span_start) if len(busy[0]) else 0,
        trailing_idle_ns=int(span_end - busy[1][-1]) if len(busy[0]) else 0,
        idle_by_cause={c: v for c, v in idle.items() if v}, recoverable_by_cause={c: v for c, v in rec.items() if v},
        critical_busy_ns=table.critical_busy_ns, histogram=hist, largest=largest,
        wind_down_host_work_ns=_wind_down(table, last_kernel_end))


def _wind_down(table: GapTable, last_kernel_end: int | None) -> int:
    """Host-work idle of the gaps that start at or after `last_kernel_end` (0 when it is None)."""
    if last_kernel_end is None or not len(table.start):
        return 0
    after = (table.start >= last_kernel_end).astype(np.float64)
    return table.totals(after)[0].get("cpu_stall", 0)


def clipped_totals(tables: list[GapTable], lo: int, hi: int) -> tuple[dict[str, int], dict[str, int]]:
    """Idle and recoverable time by cause of the gaps of `tables` inside [lo, hi) (absolute ns).

    A gap straddling a boundary counts in proportion to its overlap, so the phases' totals add up to
    the whole run's.
    """
    idle = {c: 0 for c in GAP_CAUSES}
    rec = {c: 0 for c in GAP_CAUSES}
    for t in tables:
        length = t.end - t.start
        overlap = np.clip(np.minimum(t.end, hi) - np.maximum(t.start, lo), 0, None)
        weights = np.where(length > 0, overlap / np.maximum(length, 1), 0.0)
        i, r = t.totals(weights)
        for c in GAP_CAUSES:
            idle[c] += i[c]
            rec[c] += r[c]
    return {c: v for c, v in idle.items() if v}, {c: v for c, v in rec.items() if v}
