"""Host-side metrics: CPU blocked in sync, launch overhead, markers, MPI, profiler overhead.

Wall time spent by several threads at once is counted once: sync, MPI and overhead times are unions
over the threads of a process (then summed over processes, which run on their own cores).
"""

from __future__ import annotations

import heapq
from array import array
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.metrics import intervals as iv
from engine.metrics.activity import Ops
from engine.metrics.gaps import HostSets
from engine.metrics.model import (
    AllocSummary,
    ApiBlocked,
    LaunchApiStats,
    LaunchSummary,
    MarkerStats,
    MarkerSummary,
    MpiOpStats,
    MpiSummary,
    OverheadSummary,
    SyncSummary,
    TopLevelRange,
)
from engine.profile.relations import INTERVAL_COLUMNS, VALID, Relations, drop_open_intervals

TOP_LEVEL_LISTED = 50
# API kinds fetched as integers in one pass; "other" calls (tens of millions of HSA calls in rocpd
# files) are never fetched: only their time extent is asked for, for the span.
KIND_CODES = {"launch": 1, "graph_launch": 2, "memcpy": 3, "memcpy_async": 4, "memset": 5, "sync": 6,
              "alloc": 7, "free": 8, "module": 9}


@dataclass
class ApiCalls:
    """The GPU-relevant host API calls, one fetch: arrays of equal length in compact dtypes.

    Threads are not kept: every host-side metric is a union over the threads of a process.
    """

    pid: np.ndarray           # int32
    start: np.ndarray
    end: np.ndarray
    name_id: np.ndarray       # int32
    kind: np.ndarray          # int8, KIND_CODES value
    correlation_id: np.ndarray  # int32 unless a value needs int64
    names: dict[int, str]     # name_id -> API name, for the ids present
    other_extent: tuple[int | None, int | None]  # min start, max end of the "other" calls
    invalid: int              # calls with no end or end < start, ignored
    nested: int = 0           # inner records of one call (same process and correlation id), dropped

    def of(self, *kinds: str) -> np.ndarray:
        """Boolean mask of the calls of the given kinds.

        One comparison per kind, not np.isin: isin's lookup-table method makes an intp copy of the
        whole column (~90 MB per ten million calls) on every call.
        """
        return _equals_any(self.kind, [KIND_CODES[k] for k in kinds])


def _equals_any(values: np.ndarray, wanted: Sequence[int]) -> np.ndarray:
    """Values ∈ wanted as a boolean mask, for a short `wanted`, without temporaries wider than bool."""
    mask = np.zeros(len(values), dtype=bool)
    for w in wanted:
        mask |= values == w
    return mask


def fetch_api_calls(rel: Relations) -> ApiCalls:
    """One pass over api_calls for everything host metrics need, plus the extent of the rest."""
    case = " ".join(f"WHEN '{k}' THEN {v}" for k, v in KIND_CODES.items())
    # Compact dtypes: rocpd files hold tens of millions of calls (pid/tid/name ids fit in 32 bits).
    # The extent of the "other" calls (for the span) comes from the same pass over the relation.
    scan = rel.scan(
        "api_calls",
        {**INTERVAL_COLUMNS, "pid": "pid", "name_id": "name_id", "correlation_id": "correlation_id",
         "kind_code": f"CASE kind {case} ELSE 0 END"},
        dtypes={"pid": np.int32, "name_id": np.int32, "kind_code": np.int8, "correlation_id": np.int32},
        where="kind <> 'other'",
        aggregates={"other_lo": ("min", f"CASE WHEN kind = 'other' AND {VALID} THEN start END"),
                    "other_hi": ("max", f"CASE WHEN kind = 'other' AND {VALID} THEN \"end\" END")})
    cols, bad = drop_open_intervals(scan.columns)
    ids = {int(i) for i in np.unique(cols["name_id"]).tolist()}
    if rel.available("api_names") and ids:
        names = {int(i): str(n) for i, n in rel.query("SELECT name_id, name FROM pa_api_names") if i in ids}
    else:
        names = {}
    lo, hi = scan.aggregates["other_lo"], scan.aggregates["other_hi"]
    keep = ~_nested_records(cols["pid"], cols["correlation_id"], cols["start"], cols["end"])
    nested = int((~keep).sum())
    if nested:
        cols = {k: v[keep] for k, v in cols.items()}
    return ApiCalls(cols["pid"], cols["start"], cols["end"], cols["name_id"], cols["kind_code"],
                    cols["correlation_id"], names, (lo, hi), bad, nested)


def _nested_records(pid: np.ndarray, corr: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Mask of records nested inside another record of the same call (same process, same correlation id).

    Some exports write one call twice (a runtime record and the driver call it made, sharing the
    correlation id, the inner inside the outer): the call counts once, as the outermost record.
    Correlation ids <= 0 mean "none" and never match.
    """
    out = np.zeros(len(pid), dtype=bool)
    has = corr > 0
    if not np.any(has):
        return out
    idx = np.flatnonzero(has)
    key = (pid[idx].astype(np.int64) << 32) | (corr[idx].astype(np.int64) & 0xFFFFFFFF)
    order = np.lexsort((-end[idx], start[idx], key))
    k = key[order]
    dup = np.flatnonzero(k[1:] == k[:-1]) + 1          # rows that share a key with the row before
    if len(dup) == 0:
        return out
    e = end[idx][order]
    first = np.ones(len(k), dtype=bool)
    first[1:] = k[1:] != k[:-1]
    group_id = np.cumsum(first) - 1
    for g in np.unique(group_id[dup]).tolist():
        rows = np.flatnonzero(group_id == g)
        max_end = e[rows[0]]
        for r in rows[1:].tolist():
            if e[r] <= max_end:            # starts no earlier (sorted) and ends inside: nested
                out[idx[order[r]]] = True
            max_end = max(max_end, int(e[r]))
    return out


def _per_process_union(pid: np.ndarray, start: np.ndarray, end: np.ndarray) -> int:
    return sum(iv.grouped_union_length(pid, start, end).values())


def _pct(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None


def sync_summary(rel: Relations, api: ApiCalls, span_ns: int) -> SyncSummary:
    """CPU blocked in synchronising API calls, by API, plus GPU-side sync records.

    The share of the span is per process (blocked time summed over the processes that made GPU
    API calls, over span × their number), so two processes blocked half the time read 50 %, not 100 %.
    """
    m_all = api.of("sync")
    pid, start, end, nid = api.pid[m_all], api.start[m_all], api.end[m_all], api.name_id[m_all]
    by_api = []
    for n in np.unique(nid).tolist():
        m = nid == n
        by_api.append(ApiBlocked(name=api.names.get(int(n), str(n)), count=int(m.sum()),
                                 total_ns=int((end[m] - start[m]).sum()),
                                 union_ns=_per_process_union(pid[m], start[m], end[m])))
    by_api.sort(key=lambda a: (-a.union_ns, a.name))
    blocked = _per_process_union(pid, start, end)
    events: dict[str, int] = {}
    times: dict[str, int] = {}
    if rel.available("syncs"):
        for t, c, d in rel.query(f"SELECT coalesce(sync_type, 'unknown'), count(*), sum(\"end\" - start) "
                                 f"FROM pa_syncs WHERE {VALID} GROUP BY 1 ORDER BY 1"):
            events[t] = int(c)
            times[t] = int(d or 0)
    processes = max(len(np.unique(api.pid)), 1)
    return SyncSummary(cpu_blocked_ns=blocked, process_count=processes,
                       cpu_blocked_pct_of_span=_pct(blocked, span_ns * processes),
                       call_count=int(m_all.sum()), by_api=by_api, gpu_sync_events=events, gpu_sync_time_ns=times)


def launch_summary(api: ApiCalls, kernels: Ops, kernel_corr: np.ndarray, gpu_ops: Ops,
                   span_ns: int) -> LaunchSummary:
    """Launch overhead: API end → kernel start, only for launches whose stream was idle.

    A kernel is matched to its launch call by (pid, correlation id). The stream was idle when every
    earlier operation on the same (device, stream) had ended before the launch call returned;
    otherwise the kernel waited in the queue and its start says nothing about launch overhead.
    """
    lm = api.of("launch", "graph_launch")
    names = api.names
    n_calls = int(lm.sum())
    # Join kernels to calls on (pid, correlation id) by sorted keys. rocpd files hold millions of
    # launch calls: the key is built in place and only the matched calls' attributes are gathered,
    # so the transient memory is two int64 columns of the launches, not six.
    ckey = api.pid[lm].astype(np.int64)
    ckey <<= 32
    corr = api.correlation_id[lm].astype(np.int64)
    corr &= 0xFFFFFFFF
    ckey |= corr
    del corr
    order = np.argsort(ckey, kind="stable")
    ckey = ckey[order]
    kkey = (kernels.pid << 32) | (kernel_corr & 0xFFFFFFFF)
    if n_calls:
        pos = np.minimum(np.searchsorted(ckey, kkey), n_calls - 1)
        matched = (kernel_corr >= 0) & (ckey[pos] == kkey)
        call_idx = np.flatnonzero(lm)[order[pos[matched]]]   # rows of the api arrays
    else:
        matched = np.zeros(len(kernel_corr), dtype=bool)
        call_idx = np.zeros(0, dtype=np.int64)
    del ckey, order
    k_start = kernels.start[matched]
    k_dur = kernels.end[matched] - k_start
    api_start = api.start[call_idx]
    api_end = api.end[call_idx]
    api_name = api.name_id[call_idx]
    prev_end = _previous_end_on_stream(gpu_ops, len(kernels.start), matched)
    latency = k_start - api_end
    # A kernel that starts before its launch call returns waited behind the call itself, not in an
    # empty queue after it: it says nothing about launch latency (which is never negative).
    early = latency < 0
    idle = (prev_end < api_end) & ~early
    small = int((k_dur < (api_end - api_start)).sum())
    by_api = []
    api_time = 0
    for nid in np.unique(api.name_id[lm]).tolist() if n_calls else []:
        cm = lm & (api.name_id == nid)
        count = int(cm.sum())
        call_time = int((api.end[cm] - api.start[cm]).sum())
        api_time += call_time
        km = (api_name == nid) & idle
        lat = latency[km].astype(np.float64)
        by_api.append(LaunchApiStats(
            name=str(names.get(int(nid), nid)), count=count,
            api_mean_ns=call_time / count, idle_queue_launches=int(km.sum()),
            latency_mean_ns=float(lat.mean()) if len(lat) else None,
            latency_median_ns=float(np.median(lat)) if len(lat) else None,
            latency_p95_ns=float(np.percentile(lat, 95)) if len(lat) else None))
    by_api.sort(key=lambda a: (-a.count, a.name))
    n_matched = int(matched.sum())
    return LaunchSummary(
        launch_count=n_calls, launches_per_s=(n_calls / span_ns * 1e9) if span_ns else None,
        correlated_kernels=n_matched, small_kernel_count=small, started_before_return=int(early.sum()),
        small_kernel_fraction=(small / n_matched) if n_matched else None,
        api_time_ns=api_time, by_api=by_api)


def _previous_end_on_stream(ops: Ops, n_kernels: int, kmask: np.ndarray) -> np.ndarray:
    """For each selected kernel, the latest end of earlier operations on its (device, stream).

    `ops` holds the kernels first (indices 0..n_kernels-1), then copies and memsets. Sorting all
    operations by (device, stream, start), the running maximum of `end` within a stream, shifted by
    one, is the time the stream's queue drained before each operation.
    """
    if not np.any(kmask):
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((ops.start, ops.stream, ops.device))
    dev, st, e = ops.device[order], ops.stream[order], ops.end[order]
    group_start = np.ones(len(e), dtype=bool)
    group_start[1:] = (dev[1:] != dev[:-1]) | (st[1:] != st[:-1])
    run = np.empty_like(e)
    starts = np.flatnonzero(group_start)
    for lo, hi in zip(starts.tolist(), np.append(starts[1:], len(e)).tolist(), strict=True):
        run[lo:hi] = np.maximum.accumulate(e[lo:hi])
    prev_sorted = np.full(len(e), np.iinfo(np.int64).min, dtype=np.int64)
    prev_sorted[1:] = np.where(group_start[1:], prev_sorted[1:], run[:-1])
    prev = np.empty_like(prev_sorted)
    prev[order] = prev_sorted
    return prev[:n_kernels][kmask]


@dataclass
class MarkerScan:
    """One pass over the markers relation: per-name statistics, top-level ranges and the extent.

    Times are absolute here; `summary(span_start)` makes top-level starts relative once the span is
    known (the span itself needs the markers' extent, so this pass comes first).
    """

    stats: dict[tuple[str, str | None], list[int]]      # (name, domain) -> [count, total, max depth]
    top: list[tuple[int, int, int, int, int, str]]      # heap of (duration, -start, pid, tid, start, name)
    count: int
    top_count: int
    open_ranges: int
    extent: tuple[int | None, int | None]                # first start, last end of the valid ranges
    # Per thread, the ranges at depth 0 within their (domain, kind): the only candidates for a
    # thread's top-level ranges. Compact arrays ('q'), since rocprof-sys files hold millions.
    thread_tops: dict[tuple[int, int], tuple[array, array, array]]
    top_names: list[str]                                 # name code -> name, for thread_tops

    def top_level_runs(self) -> list[list[tuple[str, int, int]]]:
        """Per thread: runs (name, start, end) of consecutive same-named top-level ranges.

        Top-level across domains and kinds: sorted by start (longest first on ties), a range that
        starts inside the last kept range is not top-level. Ranges nested in their own domain never
        are, which is why only depth-0 ranges are kept as candidates.
        """
        out = []
        for starts, ends, codes in self.thread_tops.values():
            s = np.frombuffer(starts, dtype=np.int64)
            e = np.frombuffer(ends, dtype=np.int64)
            c = np.frombuffer(codes, dtype=np.int64)
            order = np.lexsort((-e, s))
            runs: list[tuple[str, int, int]] = []
            last_end: int | None = None
            # In slices: Python lists of millions of ints would cost ~80 MB each.
            for lo in range(0, len(order), 1 << 16):
                sl = order[lo:lo + (1 << 16)]
                for start, end, code in zip(s[sl].tolist(), e[sl].tolist(), c[sl].tolist(), strict=True):
                    if last_end is not None and start < last_end:
                        continue
                    last_end = end
                    name = self.top_names[code]
                    if runs and runs[-1][0] == name:
                        runs[-1] = (name, runs[-1][1], end)
                    else:
                        runs.append((name, start, end))
            out.append(runs)
        return out

    def summary(self, span_start: int) -> MarkerSummary:
        """The MarkerSummary, with top-level starts relative to `span_start`."""
        top_ranges = [TopLevelRange(pid=p, tid=t, name=n, start_ns=st - span_start, duration_ns=d)
                      for d, _, p, t, st, n in sorted(self.top, reverse=True)]
        by_name = [MarkerStats(name=n, domain=d, count=c, total_ns=t, mean_ns=t / c, max_depth=md)
                   for (n, d), (c, t, md) in self.stats.items()]
        by_name.sort(key=lambda m: (-m.total_ns, m.name))
        return MarkerSummary(count=self.count, open_ranges=self.open_ranges, by_name=by_name,
                             top_level_count=self.top_count, top_level=top_ranges)


def scan_markers(rel: Relations) -> MarkerScan:
    """NVTX/rocTX ranges by name, nesting depth per thread, the longest top-level ranges, the extent.

    Rows are streamed from SQLite in (thread, domain, kind, start) order and never held all at once:
    rocprof-sys files carry millions of marker ranges. Ranges still open at the end of the capture
    (no end, or end < start) are counted in the same pass, not summed.
    """
    # NVTX push/pop ranges form a stack per thread *and domain*; start/end ranges may cross
    # threads and never nest, so they are always at depth 0.
    cursor = rel.conn.execute(rel.cte(
        "SELECT pid, tid, start, \"end\", coalesce(name, ''), domain, kind, "
        f"CASE WHEN {VALID} THEN 1 ELSE 0 END FROM pa_markers "
        "ORDER BY pid, tid, coalesce(domain, ''), kind, start, \"end\" DESC"))
    stats: dict[tuple[str, str | None], list[int]] = defaultdict(lambda: [0, 0, 0])
    top: list[tuple[int, int, int, int, int, str]] = []
    stack: list[int] = []
    current: tuple[object, ...] | None = None
    top_count = count = open_ranges = 0
    first: int | None = None
    last: int | None = None
    thread_tops: dict[tuple[int, int], tuple[array, array, array]] = {}
    name_codes: dict[str, int] = {}
    for pid, tid, start, end, name, domain, kind, valid in cursor:
        if not valid:
            open_ranges += 1
            continue
        count += 1
        first = start if first is None or start < first else first
        last = end if last is None or end > last else last
        if (pid, tid, domain, kind) != current:
            current, stack = (pid, tid, domain, kind), []
        if kind == "push_pop":
            while stack and stack[-1] <= start:
                stack.pop()
            depth = len(stack)
            stack.append(end)
        else:
            depth = 0
        entry = stats[(name, domain)]
        entry[0] += 1
        entry[1] += end - start
        if depth > entry[2]:
            entry[2] = depth
        if depth == 0:
            top_count += 1
            cand = thread_tops.get((pid, tid))
            if cand is None:
                cand = thread_tops[(pid, tid)] = (array("q"), array("q"), array("q"))
            cand[0].append(start)
            cand[1].append(end)
            cand[2].append(name_codes.setdefault(name, len(name_codes)))
            item = (end - start, -start, pid, tid, start, name)
            if len(top) < TOP_LEVEL_LISTED:
                heapq.heappush(top, item)
            elif item > top[0]:
                heapq.heapreplace(top, item)
    return MarkerScan(dict(stats), top, count, top_count, open_ranges, (first, last), thread_tops,
                      list(name_codes))


def mpi_summary(rel: Relations, span_ns: int) -> MpiSummary:
    """MPI time per operation (merged per thread) and per process, with ranks and bytes."""
    rows = rel.query(f"SELECT pid, tid, start, \"end\", coalesce(name, '?'), coalesce(kind, 'other'), "
                     f"bytes, rank FROM pa_mpi_calls WHERE {VALID}")
    ranks = sorted({r[7] for r in rows if r[7] is not None})
    if not rows:
        return MpiSummary(ranks=ranks, call_count=0, total_ns=0, pct_of_span=_pct(0, span_ns), by_op=[])
    pid = np.array([r[0] for r in rows], dtype=np.int64)
    tid = np.array([r[1] for r in rows], dtype=np.int64)
    start = np.array([r[2] for r in rows], dtype=np.int64)
    end = np.array([r[3] for r in rows], dtype=np.int64)
    thread_key = (pid << 32) | tid
    by_op = []
    ops = sorted({(r[4], r[5]) for r in rows})
    names = np.array([r[4] for r in rows], dtype=object)
    for name, kind in ops:
        m = names == name
        dur = end[m] - start[m]
        nbytes = [r[6] for r, keep in zip(rows, m, strict=True) if keep and r[6] is not None]
        by_op.append(MpiOpStats(
            name=name, kind=kind, count=int(m.sum()),
            total_ns=sum(iv.grouped_union_length(thread_key[m], start[m], end[m]).values()),
            mean_ns=float(dur.mean()), max_ns=int(dur.max()), bytes=int(sum(nbytes)) if nbytes else None))
    by_op.sort(key=lambda o: (-o.total_ns, o.name))
    kinds = np.array([r[5] for r in rows], dtype=object)
    by_kind = {k: _per_process_union(pid[kinds == k], start[kinds == k], end[kinds == k])
               for k in sorted(set(kinds.tolist()))}
    total = _per_process_union(pid, start, end)
    processes = max(len(np.unique(pid)), 1)
    return MpiSummary(ranks=ranks, call_count=len(rows), total_ns=total, process_count=processes,
                      pct_of_span=_pct(total, span_ns * processes), by_kind=by_kind, by_op=by_op)


Intervals = tuple[np.ndarray, np.ndarray, np.ndarray]  # (pid, start, end), int64, valid rows only


def fetch_intervals(rel: Relations, relation: str) -> Intervals:
    """(pid, start, end) of the well-formed rows of an interval relation (mpi_calls, overhead)."""
    if not rel.available(relation):
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    arr = rel.fetch_ints(f"SELECT pid, start, \"end\" FROM pa_{relation} WHERE {VALID}", 3)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def overhead_summary(overhead: Intervals, span_ns: int) -> OverheadSummary:
    """Profiler overhead as a union per process; its share of the span per process."""
    pid, start, end = overhead
    total = _per_process_union(pid, start, end)
    processes = max(len(np.unique(pid)), 1)
    return OverheadSummary(count=len(pid), total_ns=total, process_count=processes,
                           pct_of_span=_pct(total, span_ns * processes))


def host_sets(api: ApiCalls | None, pids: set[int], mpi: Intervals, overhead: Intervals,
              driver_jit: Intervals | None = None) -> HostSets | None:
    """Merged host intervals of the processes `pids` by kind, for the gaps of one device.

    None when the profile holds no host API calls at all: nothing can then be said of what the host
    did during a gap. Calls of kind "other" are not fetched (rocpd files hold tens of millions of
    HSA calls): a gap that no launch, copy, sync, alloc or MPI call covers is host work.
    """
    if api is None or not pids:
        return None
    wanted = sorted(pids)

    def of_pids(pid: np.ndarray) -> np.ndarray:
        return _equals_any(pid, wanted) if len(wanted) <= 16 else np.isin(pid, wanted)

    pm = of_pids(api.pid)

    def merged(*kinds: str) -> iv.Merged:
        m = pm & api.of(*kinds)
        return iv.merge(api.start[m], api.end[m])

    def merged_iv(ivs: Intervals) -> iv.Merged:
        m = of_pids(ivs[0])
        return iv.merge(ivs[1][m], ivs[2][m])

    module = pm & api.of("module")
    jit = driver_jit if driver_jit is not None else (np.zeros(0, dtype=np.int64),) * 3
    jm = of_pids(jit[0])
    compile_set = iv.merge(np.concatenate([api.start[module], jit[1][jm]]),
                           np.concatenate([api.end[module], jit[2][jm]]))
    return HostSets(sync=merged("sync"), copy=merged("memcpy", "memcpy_async", "memset"),
                    launch=merged("launch", "graph_launch"), alloc=merged("alloc", "free"),
                    mpi=merged_iv(mpi), overhead=merged_iv(overhead), compile=compile_set)


def blocking_copy_rows(api: ApiCalls, copies: Ops, copy_corr: np.ndarray) -> np.ndarray:
    """Rows of `api` that are copy or memset calls which returned only after their copy had ended.

    Such a call blocks the host like a sync call, whatever its name says: cudaMemcpy does by contract,
    a cudaMemcpyAsync from pageable memory does in practice. A call is matched to its copy by
    (process, correlation id).
    """
    m = api.of("memcpy", "memcpy_async", "memset")
    if not np.any(m) or len(copy_corr) == 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.flatnonzero(m)
    ckey = (api.pid[rows].astype(np.int64) << 32) | (api.correlation_id[rows].astype(np.int64) & 0xFFFFFFFF)
    order = np.argsort(ckey, kind="stable")
    ckey = ckey[order]
    kkey = (copies.pid.astype(np.int64) << 32) | (copy_corr.astype(np.int64) & 0xFFFFFFFF)
    pos = np.minimum(np.searchsorted(ckey, kkey), len(ckey) - 1)
    hit = (copy_corr > 0) & (ckey[pos] == kkey)
    call = rows[order[pos[hit]]]
    blocking = api.end[call] >= copies.end[hit]
    return np.unique(call[blocking])


def blocked_sets(api: ApiCalls, copy_rows: np.ndarray) -> dict[int, iv.Merged]:
    """Per process, where the host was blocked on the GPU: sync calls and the blocking copy calls."""
    rows = np.union1d(np.flatnonzero(api.of("sync")), copy_rows)
    return iv.grouped_merge(api.pid[rows].astype(np.int64), api.start[rows], api.end[rows])


def alloc_summary(api: ApiCalls, window: tuple[int, int] | None) -> AllocSummary:
    """Allocation and free calls, in all and inside the GPUs' active window [first, last GPU operation)."""
    m = api.of("alloc", "free")
    pid, start, end = api.pid[m], api.start[m], api.end[m]
    inside = np.zeros(len(start), dtype=bool) if window is None else (start < window[1]) & (end > window[0])
    return AllocSummary(calls=int(m.sum()), time_ns=_per_process_union(pid, start, end),
                        calls_in_window=int(inside.sum()),
                        time_in_window_ns=_per_process_union(pid[inside], start[inside], end[inside]))
