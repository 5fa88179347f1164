"""Host-side metrics: CPU blocked in sync, launch overhead, markers, MPI, profiler overhead.

Wall time spent by several threads at once is counted once: sync, MPI and overhead times are unions
over the threads of a process (then summed over processes, which run on their own cores).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pa.metrics import intervals as iv
from pa.metrics.activity import Ops
from pa.metrics.gaps import HostSets
from pa.metrics.grouping import unique_inverse
from pa.metrics.iterations import iteration_stats
from pa.metrics.marker_names import DEFAULT_NAMING, MarkerNaming
from pa.metrics.model import (
    AllocSummary,
    ApiBlocked,
    LaunchApiStats,
    LaunchSummary,
    MarkerStats,
    MarkerSummary,
    MpiOpStats,
    MpiSummary,
    OverheadSummary,
    StartupCall,
    SyncSummary,
    TopLevelRange,
)
from pa.profile.relations import INTERVAL_COLUMNS, VALID, Relations, drop_open_intervals

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
    extent: tuple[int | None, int | None]  # min start, max end of every valid call, "other" ones included
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
    """One pass over api_calls for everything host metrics need, plus the extent of every call."""
    case = " ".join(f"WHEN '{k}' THEN {v}" for k, v in KIND_CODES.items())
    # Compact dtypes: rocpd files hold tens of millions of calls (pid/tid/name ids fit in 32 bits).
    # The extent of all valid calls (for the span; the "other" ones are not fetched) comes from the
    # same pass over the relation. Over all calls, not only the "other" ones: the span is the same
    # (the fetched calls count in it anyway), and the aggregate then tests one comparison per row
    # ("end" >= start is NULL, so not true, when either is NULL: exactly VALID) instead of the kind
    # and VALID; on 20 M-region rocpd files that test is a tenth of the whole scan.
    scan = rel.scan(
        "api_calls",
        {**INTERVAL_COLUMNS, "pid": "pid", "name_id": "name_id", "correlation_id": "correlation_id",
         "kind_code": f"CASE kind {case} ELSE 0 END"},
        dtypes={"pid": np.int32, "name_id": np.int32, "kind_code": np.int8, "correlation_id": np.int32},
        where="kind <> 'other'",
        aggregates={"lo": ("min", 'CASE WHEN "end" >= start THEN start END'),
                    "hi": ("max", 'CASE WHEN "end" >= start THEN "end" END')})
    cols, bad = drop_open_intervals(scan.columns)
    ids = {int(i) for i in np.unique(cols["name_id"]).tolist()}
    if rel.available("api_names") and ids:
        names = {int(i): str(n) for i, n in rel.query("SELECT name_id, name FROM pa_api_names") if i in ids}
    else:
        names = {}
    lo, hi = scan.aggregates["lo"], scan.aggregates["hi"]
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

    A graph launch call (cudaGraphLaunch, hipGraphLaunch) issues a whole graph: one record of the
    execution when the graph was traced whole (Nsight Systems' default), or every kernel of the
    graph, all sharing the call's correlation id (nsys --cuda-graph-trace=node; HIP graphs in rocpd).
    It is paired with one GPU execution, the first of its records to start: the latency is the
    call's, not one per node. Graph launches stay out of the small-kernel share, whose question is
    whether one kernel outlasts the call that launched it alone.
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
    graph_call = api.kind[call_idx] == KIND_CODES["graph_launch"]
    graph_kernels = int(graph_call.sum())
    if graph_kernels:
        matched, call_idx, graph_call = _first_per_graph_launch(kernels.start, matched, call_idx, graph_call)
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
    kernel_pairs = int((~graph_call).sum())
    small = int(((k_dur < (api_end - api_start)) & ~graph_call).sum())
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
        small_kernel_fraction=(small / kernel_pairs) if kernel_pairs else None,
        api_time_ns=api_time, by_api=by_api, graph_launch_count=int(api.of("graph_launch").sum()),
        graph_launched_kernels=graph_kernels)


def _first_per_graph_launch(start: np.ndarray, matched: np.ndarray, call_idx: np.ndarray,
                            graph_call: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep, of the kernels matched to each graph launch call, only the first to start (ties: row order).

    `matched` masks the kernels, `call_idx` (the matched kernels' calls, in kernel order) and
    `graph_call` (whether that call is a graph launch) follow it; all three come back narrowed.
    """
    rows = np.flatnonzero(matched)                      # kernel rows, aligned with call_idx
    g = np.flatnonzero(graph_call)                      # positions of graph-launched kernels
    by_call = g[np.lexsort((rows[g], start[rows[g]], call_idx[g]))]
    first = np.ones(len(by_call), dtype=bool)
    first[1:] = call_idx[by_call[1:]] != call_idx[by_call[:-1]]
    keep = ~graph_call
    keep[by_call[first]] = True
    out = matched.copy()
    out[rows[~keep]] = False
    return out, call_idx[keep], graph_call[keep]


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


@dataclass(frozen=True)
class NamedRanges:
    """The valid markers (start <= end) whose raw name a caller asked scan_markers to keep.

    Raw: before marker-name normalisation, as the relation gives it (NULL as ''). Columns in the
    relation's row order; `names[code[i]]` is row i's name. Metrics that look for a few names
    (compiling, device reads) take their rows from here instead of scanning the markers again:
    on rocpd files, each scan of the relation parses the JSON of millions of rocTX ranges.
    """

    pid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    code: np.ndarray
    names: list[str]

    @classmethod
    def of(cls, names: list[str]) -> NamedRanges:
        """No rows (names may still be listed)."""
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z, z, names)

    def where(self, wanted: Callable[[str], bool]) -> np.ndarray:
        """Boolean mask of the rows whose name satisfies `wanted` (asked once per distinct name)."""
        ok = np.array([bool(wanted(n)) for n in self.names], dtype=bool)
        return ok[self.code] if len(ok) else np.zeros(len(self.code), dtype=bool)


@dataclass
class MarkerScan:
    """One pass over the markers relation: per-name statistics, top-level ranges and the extent.

    Times are absolute here; `summary(span_start)` makes top-level starts relative once the span is
    known (the span itself needs the markers' extent, so this pass comes first).
    """

    stats: dict[tuple[str, str | None], list[int]]      # (name, domain) -> [count, total, max depth]
    top: list[tuple[int, int, int, int, int, str]]      # the longest (duration, -start, pid, tid, start, name)
    count: int
    top_count: int
    open_ranges: int
    extent: tuple[int | None, int | None]                # first start, last end of the valid ranges
    # Per thread, the ranges at depth 0 within their (domain, kind): the only candidates for a
    # thread's top-level ranges (start, end, name code arrays; rocpd files hold millions).
    thread_tops: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]
    top_names: list[str]                                 # name code -> name, for thread_tops
    variants: dict[tuple[str, str | None], int] = field(default_factory=dict)  # raw names per normalised one
    kept: NamedRanges = field(default_factory=lambda: NamedRanges.of([]))  # the rows scan_markers was asked to keep

    def top_level_runs(self) -> list[list[tuple[str, int, int]]]:
        """Per thread: runs (name, start, end) of consecutive same-named top-level ranges.

        Top-level across domains and kinds: sorted by start (longest first on ties), a range that
        starts inside the last kept range is not top-level. Ranges nested in their own domain never
        are, which is why only depth-0 ranges are kept as candidates.
        """
        runs = [_thread_runs(np.asarray(s, np.int64), np.asarray(e, np.int64), np.asarray(c, np.int64),
                             self.top_names)
                for s, e, c in self.thread_tops.values()]
        _return_freed_heap()
        return runs

    def summary(self, span_start: int) -> MarkerSummary:
        """The MarkerSummary, with top-level starts relative to `span_start`."""
        top_ranges = [TopLevelRange(pid=p, tid=t, name=n, start_ns=st - span_start, duration_ns=d)
                      for d, _, p, t, st, n in sorted(self.top, reverse=True)]
        by_name = [MarkerStats(name=n, domain=d, count=c, total_ns=t, mean_ns=t / c, max_depth=md,
                               name_variants=self.variants.get((n, d), 1))
                   for (n, d), (c, t, md) in self.stats.items()]
        by_name.sort(key=lambda m: (-m.total_ns, m.name))
        return MarkerSummary(count=self.count, open_ranges=self.open_ranges, by_name=by_name,
                             top_level_count=self.top_count, top_level=top_ranges,
                             merged_names=sum(v - 1 for v in self.variants.values()),
                             iterations=iteration_stats(self.thread_tops, self.top_names, span_start))


def _thread_runs(s: np.ndarray, e: np.ndarray, c: np.ndarray, names: list[str]) -> list[tuple[str, int, int]]:
    """One thread's runs of same-named top-level ranges (see MarkerScan.top_level_runs).

    A range is kept when it starts at or after the end of the last kept range. Vectorised, that is
    "at or after the latest end so far", which is the same rule as long as no skipped range ends
    after the last kept one; where one does (partly overlapping ranges of two domains), the exact
    sequential walk decides instead.
    """
    order = np.lexsort((-e, s))
    s, e, c = s[order], e[order], c[order]
    if len(s) == 0:
        return []
    latest = np.maximum.accumulate(e)
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = s[1:] >= latest[:-1]
    kept_at = np.maximum.accumulate(np.where(keep, np.arange(len(s)), 0))
    if not np.array_equal(e[kept_at], latest):
        return _thread_runs_walk(s, e, c, names)
    s, e, c = s[keep], e[keep], c[keep]
    first = np.ones(len(c), dtype=bool)
    first[1:] = c[1:] != c[:-1]
    begin = np.flatnonzero(first)
    last = np.append(begin[1:], len(c)) - 1
    return list(zip([names[i] for i in c[begin].tolist()], s[begin].tolist(), e[last].tolist(), strict=True))


def _thread_runs_walk(s: np.ndarray, e: np.ndarray, c: np.ndarray, names: list[str]
                      ) -> list[tuple[str, int, int]]:
    """The sequential rule of _thread_runs, for threads where the vectorised shortcut does not hold."""
    runs: list[tuple[str, int, int]] = []
    last_end: int | None = None
    for start, end, code in zip(s.tolist(), e.tolist(), c.tolist(), strict=True):
        if last_end is not None and start < last_end:
            continue
        last_end = end
        name = names[code]
        if runs and runs[-1][0] == name:
            runs[-1] = (name, runs[-1][1], end)
        else:
            runs.append((name, start, end))
    return runs


# Marker kinds as sortable codes, in the order of their names (the nesting walk groups by kind).
_KIND_CODES = {"instant": 0, "push_pop": 1, "start_end": 2}
_SEP = "\x1e"       # between the names of the group_concat transport (checked: see _fetch_markers)
_MAX_VECTOR_DEPTH = 64  # deeper push/pop nesting is walked range by range


@dataclass
class _MarkerRows:
    """The valid markers as columns, and how many rows were still open."""

    pid: np.ndarray
    tid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    kind: np.ndarray     # _KIND_CODES, 3 for another kind, -1 for NULL
    key: np.ndarray      # index into keys
    keys: list[tuple[str, str | None]]   # (name, domain) per key code, in order of first appearance
    open_ranges: int
    variants: dict[tuple[str, str | None], int] = field(default_factory=dict)  # raw names merged, when > 1


def _fetch_markers(rel: Relations) -> _MarkerRows:
    """Every valid marker in one statement, with the count of open ones.

    Integers travel through group_concat (parsed by numpy), and the (name, domain) of each row as
    one separator-joined string, coded by a dict. No ORDER BY: SQLite would sort every row; numpy
    sorts the integer columns instead. Memory (rocpd files carry millions of rocTX ranges): the end
    travels as the duration (a few digits instead of nineteen), each text is dropped as soon as it
    is parsed, and the key text is split a slice at a time, so only a slice of the keys ever exists
    as Python strings. A name that contains the separator would shift the split: the count is
    checked and the names then come through the cursor instead.

    Every row travels, with its validity flag, and numpy drops the open ones: a FILTER on each
    aggregate evaluated the flag once per aggregate and row (~7 % of the statement at 2 M rocTX
    ranges). Times are cast to integers as every other scan does (a REAL timestamp is a number the
    domain checks admit; untransported, it failed the parse).
    """
    kinds = " ".join(f"WHEN kind = '{k}' THEN {v}" for k, v in _KIND_CODES.items())
    key_expr = ("CASE WHEN domain IS NULL THEN '-' ELSE length(domain) || ':' || domain END "
                "|| coalesce(name, '')")
    inner = (f"SELECT CASE WHEN {VALID} THEN 1 ELSE 0 END AS ok, coalesce(CAST(pid AS INTEGER), -1) AS pid, "
             "coalesce(CAST(tid AS INTEGER), -1) AS tid, CAST(start AS INTEGER) AS start, "
             "CAST(\"end\" AS INTEGER) - CAST(start AS INTEGER) AS dur, "
             f"CASE WHEN kind IS NULL THEN -1 {kinds} ELSE 3 END AS kind, "
             f"{key_expr} AS key FROM pa_markers")
    row = list(rel.conn.execute(rel.cte(
        "SELECT count(*), group_concat(ok), group_concat(pid), group_concat(tid), group_concat(coalesce(start, 0)), "
        "group_concat(coalesce(dur, 0)), group_concat(kind), "
        f"group_concat(key, char({ord(_SEP)})) FROM ({inner})")).fetchone())
    total = int(row[0])
    ok = _parse_column(row[1], total).astype(bool)
    row[1] = None
    n = int(ok.sum())
    cols = []
    for i in range(2, 7):
        col = _parse_column(row[i], total)
        cols.append(col if n == total else col[ok])
        row[i] = None
    code: dict[str, int] = {}
    key = _code_keys(row[7] or "", total, code)
    row[7] = None
    texts = list(code)
    if key is None:  # a name holds the separator: fetch the names row by row, in the same order
        code = {}
        names = [r[0] for r in rel.conn.execute(rel.cte(f"SELECT key FROM ({inner}) WHERE ok"))]
        key = np.fromiter((code.setdefault(k, len(code)) for k in names), dtype=np.int64, count=n)
        texts = list(code)
    elif n != total:
        key, texts = _first_seen_codes(key[ok], texts)
    start = cols[2]
    return _MarkerRows(pid=cols[0], tid=cols[1], start=start, end=start + cols[3], kind=cols[4], key=key,
                       keys=[_decode_key(k) for k in texts], open_ranges=total - n)


def _first_seen_codes(key: np.ndarray, texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """`key` recoded 0, 1, ... in order of first appearance, and the texts of the codes still used.

    After the open ranges are dropped, a name may appear first later than it did, or not at all.
    """
    used, first = np.unique(key, return_index=True)
    in_order = used[np.argsort(first, kind="stable")]
    remap = np.full(len(texts), -1, dtype=np.int64)
    remap[in_order] = np.arange(len(in_order))
    return remap[key], [texts[int(c)] for c in in_order]


def _return_freed_heap() -> None:
    """Give freed heap memory back to the operating system (glibc only).

    The marker transport (SQLite grows each group_concat text by doubling) and the numpy sorts of
    millions of rocTX ranges free hundreds of MB that glibc keeps in the process heap. Python
    allocates its objects elsewhere and cannot reuse it, so without this the later work (the
    top-level marker runs, phases) stacks on top of it in the peak RSS: measured on a 20 M-region
    file, 340 MB returned here.
    """
    import ctypes  # here, not at the top: ~5 ms of start-up for a call only large marker sets make

    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL(None).malloc_trim(0)


def _code_keys(text: str, n: int, code: dict[str, int]) -> np.ndarray | None:
    """Codes (in order of first appearance, into `code`) of the n separator-joined keys of `text`.

    Split a sixteenth at a time, so the Python strings of only one slice exist at once; None when
    the text does not hold exactly n keys.
    """
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    done = pos = 0
    step = max(len(text) // 16, 1)
    while pos <= len(text):
        cut = text.find(_SEP, pos + step)
        parts = text[pos:].split(_SEP) if cut < 0 else text[pos:cut].split(_SEP)
        for k in dict.fromkeys(parts):
            code.setdefault(k, len(code))
        if done + len(parts) > n:
            return None
        out[done:done + len(parts)] = np.fromiter(map(code.__getitem__, parts), dtype=np.int64, count=len(parts))
        done += len(parts)
        if cut < 0:
            break
        pos = cut + 1
    return out if done == n else None


def _parse_column(text: str | None, n: int) -> np.ndarray:
    arr = np.fromstring(text, dtype=np.int64, sep=",") if text is not None and n else np.zeros(0, np.int64)
    if len(arr) != n:
        raise RuntimeError(f"marker transport read {len(arr)} values where SQLite counted {n}")
    return arr


def _decode_key(key: str) -> tuple[str, str | None]:
    """(name, domain) from the key _fetch_markers builds: '-' + name, or len(domain) ':' domain name."""
    if key.startswith("-"):
        return key[1:], None
    length, rest = key.split(":", 1)
    return rest[int(length):], rest[:int(length)]


def _push_pop_depth(start: np.ndarray, end: np.ndarray, group: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Nesting depth of push/pop ranges sorted by (group, start, end descending).

    The reference is a stack per group: pop every range that ended at or before this start, then
    the depth is the stack's height. When the ranges of a group nest properly (every range lies
    inside the innermost range open at its start), that height is the number of earlier ranges of
    the group still open, which _counted_depth counts without a loop. Groups where nesting is not
    proper are walked with the stack.
    """
    depth, gstart = _counted_depth(start, end, group, first)
    for g in _improper_groups(end, group, depth, gstart).tolist():
        rows = np.flatnonzero(group == g)
        depth[rows] = _stack_depth(start[rows], end[rows])
    return depth


def _counted_depth(start: np.ndarray, end: np.ndarray, group: np.ndarray, first: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Earlier ranges of the group minus those ended by this start; and each row's group start index."""
    n = len(start)
    idx = np.arange(n)
    gstart = np.maximum.accumulate(np.where(first, idx, 0))
    start_key, end_key, group_key = _group_time_keys(start, end, group)
    ends_sorted = np.sort(end_key)
    ended = np.searchsorted(ends_sorted, start_key, side="right") - np.searchsorted(
        ends_sorted, group_key, side="left")     # ranges of the group ended by this start (self too)
    # the ranges counted that are not earlier in sort order: zero-length ranges at this very start,
    # which sort after every longer range of that start (this row itself included when zero-length)
    zero = start == end
    block_first = first.copy()
    block_first[1:] |= start[1:] != start[:-1]
    block = np.cumsum(block_first) - 1
    zeros_in_block = np.bincount(block, weights=zero, minlength=int(block[-1]) + 1 if n else 0).astype(np.int64)
    zero_rank = np.cumsum(zero) - np.repeat(np.cumsum(zero)[block_first] - zero[block_first],
                                            np.diff(np.append(np.flatnonzero(block_first), n)))
    not_earlier = np.where(zero, zeros_in_block[block] - zero_rank + 1, zeros_in_block[block])
    return (idx - gstart) - (ended - not_earlier), gstart


def _group_time_keys(start: np.ndarray, end: np.ndarray, group: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, time) of each start and end as one int64 that sorts alike, and each group's least key.

    group * width + (time - earliest) when that fits in 62 bits, as it does for any capture
    shorter than days with fewer than millions of groups; otherwise the times' dense ranks stand
    in for them (unique_inverse over both columns: a sort of twice the rows, ~0.6 s at 2 M ranges, the
    cost the offsets avoid).
    """
    if len(start) == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    lo = min(int(start.min()), int(end.min()))
    width = max(int(start.max()), int(end.max())) - lo + 2
    if (int(group.max()) + 1) * width < 1 << 62:
        base = group * width
        return base + (start - lo), base + (end - lo), base
    ranks = unique_inverse(np.concatenate([start, end]))[1]
    base = group * (int(ranks.max()) + 2)
    return base + ranks[:len(start)], base + ranks[len(start):], base


def _improper_groups(end: np.ndarray, group: np.ndarray, depth: np.ndarray, gstart: np.ndarray) -> np.ndarray:
    """Groups whose ranges do not nest properly: some range ends after the range it opened inside.

    The range a row opened inside (its parent) is the latest earlier row of its group one level up.
    """
    n = len(end)
    bad = np.zeros(n, dtype=bool)
    max_depth = int(depth.max()) if n else 0
    if max_depth > _MAX_VECTOR_DEPTH or (n and int(depth.min()) < 0):
        return np.unique(group)
    idx = np.arange(n)
    for d in range(1, max_depth + 1):
        latest_up = np.maximum.accumulate(np.where(depth == d - 1, idx, -1))
        rows = np.flatnonzero(depth == d)
        parent = latest_up[rows]
        bad[rows] = (parent < gstart[rows]) | (end[rows] > end[np.maximum(parent, 0)])
    return np.unique(group[bad])


def _stack_depth(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The reference nesting walk, for one group sorted by (start, end descending)."""
    out = np.empty(len(start), dtype=np.int64)
    stack: list[int] = []
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist(), strict=True)):
        while stack and stack[-1] <= s:
            stack.pop()
        out[i] = len(stack)
        stack.append(e)
    return out


def scan_markers(rel: Relations, naming: MarkerNaming = DEFAULT_NAMING,
                 keep: Callable[[str], bool] | None = None) -> MarkerScan:
    """NVTX/rocTX ranges by name, nesting depth per thread, the longest top-level ranges, the extent.

    NVTX push/pop ranges form a stack per thread *and domain*; start/end ranges may cross threads and
    never nest, so they are always at depth 0; instant marks are counted (with zero duration) but are
    never top-level. Ranges still open at the end of the capture (no end, or end < start) are counted,
    not summed. The rows come in one statement and are ordered and nested with numpy: rocpd files
    carry millions of rocTX ranges, and a Python loop per range costs seconds. Names are normalised
    first (`naming`, pa.metrics.marker_names): ranges whose names differ only by ids are one name.
    The rows whose raw name satisfies `keep` (asked once per distinct name) are returned as they
    are, in `MarkerScan.kept`.
    """
    scan = _scan_markers(rel, naming, keep)
    _return_freed_heap()  # the transport's and the sorts' buffers, freed on return from _scan_markers
    return scan


def _scan_markers(rel: Relations, naming: MarkerNaming, keep: Callable[[str], bool] | None) -> MarkerScan:
    raw = _fetch_markers(rel)
    kept = _kept(raw, keep)
    m = _normalised(raw, naming)
    del raw
    n = len(m.start)
    domain_of_key = [d for _, d in m.keys]
    domains = sorted({d for d in domain_of_key}, key=lambda d: (d is not None, d or ""))
    dom_rank = np.array([domains.index(d) for d in domain_of_key], dtype=np.int64)
    dom = dom_rank[m.key] if n else np.zeros(0, np.int64)
    order = np.lexsort((-m.end, m.start, m.kind, dom, m.tid, m.pid))
    pid, tid, start, end, kind, key, dom = (a[order] for a in (m.pid, m.tid, m.start, m.end, m.kind, m.key, dom))
    first = np.ones(n, dtype=bool)
    first[1:] = (pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1]) | (dom[1:] != dom[:-1]) | (kind[1:] != kind[:-1])
    group = np.cumsum(first) - 1
    depth = np.zeros(n, dtype=np.int64)
    pp = kind == _KIND_CODES["push_pop"]
    if pp.any():
        sel = np.flatnonzero(pp)
        depth[sel] = _push_pop_depth(start[sel], end[sel], group[sel], first[sel] | _new_run(group[sel]))

    stats = _marker_stats(key, end - start, depth, m.keys)
    top_level = (depth == 0) & (kind != _KIND_CODES["instant"])
    tops = np.flatnonzero(top_level)
    return MarkerScan(stats, _longest(tops, pid, tid, start, end, key, m.keys), n, len(tops), m.open_ranges,
                      (int(start.min()), int(end.max())) if n else (None, None),
                      *_thread_tops(tops, pid, tid, start, end, key, m.keys), variants=m.variants, kept=kept)


def _kept(m: _MarkerRows, keep: Callable[[str], bool] | None) -> NamedRanges:
    """The rows of `m` whose raw name satisfies `keep`, with their names coded afresh."""
    if keep is None:
        return NamedRanges.of([])
    wanted = [k for k, (name, _) in enumerate(m.keys) if keep(name)]
    if not wanted:
        return NamedRanges.of([])
    index: dict[str, int] = {}
    code_of_key = np.full(len(m.keys), -1, dtype=np.int64)
    for k in wanted:
        code_of_key[k] = index.setdefault(m.keys[k][0], len(index))
    code = code_of_key[m.key]
    rows = np.flatnonzero(code >= 0)
    return NamedRanges(m.pid[rows], m.start[rows], m.end[rows], code[rows], list(index))


def _normalised(m: _MarkerRows, naming: MarkerNaming) -> _MarkerRows:
    """`m` with names normalised: keys that normalise alike become one, counted in `variants`."""
    merged: dict[tuple[str, str | None], int] = {}
    remap = np.fromiter((merged.setdefault((naming.normalise(name), domain), len(merged))
                         for name, domain in m.keys), dtype=np.int64, count=len(m.keys))
    if len(merged) == len(m.keys):
        return m
    keys = list(merged)
    variants = np.bincount(remap, minlength=len(keys))
    return dataclasses.replace(m, key=remap[m.key] if len(m.key) else m.key, keys=keys,
                               variants={k: int(v) for k, v in zip(keys, variants.tolist(), strict=True) if v > 1})


def _new_run(group: np.ndarray) -> np.ndarray:
    out = np.ones(len(group), dtype=bool)
    out[1:] = group[1:] != group[:-1]
    return out


def _marker_stats(key: np.ndarray, duration: np.ndarray, depth: np.ndarray,
                  keys: list[tuple[str, str | None]]) -> dict[tuple[str, str | None], list[int]]:
    """[count, total duration, max depth] per (name, domain), in order of first appearance in scan order."""
    if not len(key):
        return {}
    by_key = np.argsort(key, kind="stable")
    k = key[by_key]
    begin = np.flatnonzero(np.append(True, k[1:] != k[:-1]))
    counts = np.diff(np.append(begin, len(k)))
    totals = np.add.reduceat(duration[by_key], begin)
    depths = np.maximum.reduceat(depth[by_key], begin)
    first_seen = by_key[begin]                      # stable sort: the first row of each key
    out: dict[tuple[str, str | None], list[int]] = {}
    for i in np.argsort(first_seen, kind="stable").tolist():
        out[keys[int(k[begin[i]])]] = [int(counts[i]), int(totals[i]), int(depths[i])]
    return out


def _longest(tops: np.ndarray, pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray,
             key: np.ndarray, keys: list[tuple[str, str | None]]) -> list[tuple[int, int, int, int, int, str]]:
    """The TOP_LEVEL_LISTED largest (duration, -start, pid, tid, start, name) among top-level ranges."""
    if not len(tops):
        return []
    s, p, t, k = start[tops], pid[tops], tid[tops], key[tops]
    dur = end[tops] - s
    order = np.lexsort((t, p, -s, dur))   # ascending: the largest last
    pick = order[-TOP_LEVEL_LISTED:]
    # rows tied with the smallest picked one on every integer field compete on the name too
    lo = pick[0]
    same = (dur == dur[lo]) & (s == s[lo]) & (p == p[lo]) & (t == t[lo])
    rows = np.union1d(pick, np.flatnonzero(same))
    items = [(d, -st, pp, tt, st, keys[kk][0]) for d, st, pp, tt, kk in
             zip(dur[rows].tolist(), s[rows].tolist(), p[rows].tolist(), t[rows].tolist(), k[rows].tolist(),
                 strict=True)]
    return sorted(items)[-TOP_LEVEL_LISTED:]


def _thread_tops(tops: np.ndarray, pid: np.ndarray, tid: np.ndarray, start: np.ndarray, end: np.ndarray,
                 key: np.ndarray, keys: list[tuple[str, str | None]]
                 ) -> tuple[dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]], list[str]]:
    """Top-level candidates per thread (in pid, tid order) with name codes by first appearance."""
    name_codes: dict[str, int] = {}
    key_code = {k: name_codes.setdefault(keys[k][0], len(name_codes))
                for k in dict.fromkeys(key[tops].tolist())}
    code_of_key = np.full(len(keys), -1, dtype=np.int64)
    for k, c in key_code.items():
        code_of_key[k] = c
    out: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    if len(tops):
        p, t = pid[tops], tid[tops]
        begin = np.flatnonzero(np.append(True, (p[1:] != p[:-1]) | (t[1:] != t[:-1])))
        for lo, hi in zip(begin.tolist(), np.append(begin[1:], len(tops)).tolist(), strict=True):
            rows = tops[lo:hi]
            out[(int(p[lo]), int(t[lo]))] = (start[rows], end[rows], code_of_key[key[rows]])
    return out, list(name_codes)


MPI_SETUP_CALLS = frozenset({"MPI_INIT", "MPI_INIT_THREAD", "MPI_FINALIZE"})


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
    # MPI_Init / MPI_Finalize are start-up and tear-down (saxpy_mpi_2022: 646 of 896 ms of MPI is
    # MPI_Init): shown apart, never counted as the run's MPI time.
    setup = np.array([str(n).upper().removeprefix("P") in MPI_SETUP_CALLS for n in names.tolist()], dtype=bool)
    run = ~setup
    kinds = np.array([r[5] for r in rows], dtype=object)
    by_kind = {k: _per_process_union(pid[run & (kinds == k)], start[run & (kinds == k)], end[run & (kinds == k)])
               for k in sorted(set(kinds[run].tolist()))}
    total = _per_process_union(pid[run], start[run], end[run])
    processes = max(len(np.unique(pid)), 1)
    return MpiSummary(ranks=ranks, call_count=int(run.sum()), total_ns=total, process_count=processes,
                      pct_of_span=_pct(total, span_ns * processes), by_kind=by_kind, by_op=by_op,
                      setup_call_count=int(setup.sum()),
                      setup_ns=_per_process_union(pid[setup], start[setup], end[setup]))


Intervals = tuple[np.ndarray, np.ndarray, np.ndarray]  # (pid, start, end), int64, valid rows only


def fetch_intervals(rel: Relations, relation: str, where: str | None = None) -> Intervals:
    """(pid, start, end) of the well-formed rows of an interval relation (mpi_calls, overhead).

    `where`: a condition pa writes (never the profile's text) on the relation's columns.
    """
    if not rel.available(relation):
        z = np.zeros(0, dtype=np.int64)
        return z, z, z
    cond = f"{VALID} AND ({where})" if where else VALID
    arr = rel.fetch_ints(f"SELECT pid, start, \"end\" FROM pa_{relation} WHERE {cond}", 3)
    return arr[:, 0], arr[:, 1], arr[:, 2]


# The CUDA driver's records of module loading (Runtime module loading, Lazy function loading), apart
# from its JIT compiler's: loading is start-up, compiling is a cost a cache removes (pa.metrics.gaps).
DRIVER_LOADING = "lower(name) LIKE '%loading%'"


def overhead_summary(overhead: Intervals, span_ns: int) -> OverheadSummary:
    """Profiler overhead as a union per process; its share of the span per process."""
    pid, start, end = overhead
    total = _per_process_union(pid, start, end)
    processes = max(len(np.unique(pid)), 1)
    return OverheadSummary(count=len(pid), total_ns=total, process_count=processes,
                           pct_of_span=_pct(total, span_ns * processes))


def host_sets(api: ApiCalls | None, pids: set[int], mpi: Intervals, overhead: Intervals,
              driver_jit: Intervals | None = None, driver_load: Intervals | None = None,
              lazy_load_min_ns: int | None = None, first_launches: np.ndarray | None = None) -> HostSets | None:
    """Merged host intervals of the processes `pids` by kind, for the gaps of one device.

    None when the profile holds no host API calls at all: nothing can then be said of what the host
    did during a gap. Calls of kind "other" are not fetched (rocpd files hold tens of millions of
    HSA calls): a gap that no launch, copy, sync, alloc or MPI call covers is host work.
    compile: module-loading and JIT calls (cuModuleLoad*, NVRTC, cuLink; a program may call them in
    its loop), `driver_jit` (the driver's JIT records and the ranges the application names as
    compiling); load: `driver_load` (the driver's own loading records) and the first launch call of
    each kernel when it lasts at least `lazy_load_min_ns` (`first_launches`: pid << 32 | correlation
    id of each process's first launch of each kernel): lazy loading, once per function and process,
    which then leaves the launch set.
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

    none = (np.zeros(0, dtype=np.int64),) * 3

    def with_records(calls: np.ndarray, records: Intervals | None) -> iv.Merged:
        rec = records if records is not None else none
        rm = of_pids(rec[0])
        return iv.merge(np.concatenate([api.start[calls], rec[1][rm]]), np.concatenate([api.end[calls], rec[2][rm]]))

    launches = pm & api.of("launch")
    slow = np.zeros(len(launches), dtype=bool)
    if lazy_load_min_ns is not None and first_launches is not None and len(first_launches):
        slow = launches & (api.end - api.start >= lazy_load_min_ns)
        if slow.any():
            slow &= np.isin(_pid_key(api.pid, api.correlation_id), first_launches)
    fast = (launches & ~slow) | (pm & api.of("graph_launch"))
    return HostSets(sync=merged("sync"), copy=merged("memcpy", "memcpy_async", "memset"),
                    launch=iv.merge(api.start[fast], api.end[fast]), alloc=merged("alloc", "free"),
                    mpi=merged_iv(mpi), overhead=merged_iv(overhead),
                    compile=with_records(pm & api.of("module"), driver_jit),
                    load=with_records(slow, driver_load))


def _pid_key(pid: np.ndarray, low: np.ndarray) -> np.ndarray:
    """One integer per (process, id) pair: pid << 32 | the low 32 bits of `low`."""
    return (pid.astype(np.int64) << 32) | (low.astype(np.int64) & 0xFFFFFFFF)


def first_launch_keys(api: ApiCalls, lazy_load_min_ns: int, pid: np.ndarray, start: np.ndarray,
                      name_id: np.ndarray, correlation_id: np.ndarray) -> np.ndarray:
    """Keys (pid << 32 | correlation id) of the slow launch calls that are their process's first launch of a kernel.

    Lazy loading loads a kernel's module when that kernel is first launched in a process: only those
    launches, when they last at least `lazy_load_min_ns`, can be loading (host_sets). The kernels are
    sorted only for the (process, kernel name) pairs a slow launch started: most captures have none.
    """
    slow = api.of("launch") & (api.end - api.start >= lazy_load_min_ns)
    if not slow.any():
        return np.zeros(0, dtype=np.int64)
    launched = np.isin(_pid_key(pid, correlation_id), _pid_key(api.pid[slow], api.correlation_id[slow]))
    pairs = _pid_key(pid, name_id)
    mine = np.isin(pairs, pairs[launched]) & (correlation_id >= 0)
    p, st, pr, corr = pid[mine], start[mine], pairs[mine], correlation_id[mine]
    order = np.lexsort((st, pr))
    first = np.ones(len(order), dtype=bool)
    first[1:] = pr[order][1:] != pr[order][:-1]
    rows = order[first]
    return _pid_key(p[rows], corr[rows])


def blocking_copy_rows(api: ApiCalls, copies: Ops, copy_corr: np.ndarray) -> np.ndarray:
    """Rows of `api` that block the host until the GPU: synchronous copies, and calls past their copy.

    A synchronous copy (cudaMemcpy, hipMemcpy: kind memcpy) waits for the GPU by contract: it
    synchronises with the work queued before it, then copies (from pageable memory through a staging
    buffer), so the host is blocked for the whole call even where the call returns before the DMA
    ends (saxpy_mpi_2022: 15 pageable cudaMemcpy hold the host 374 ms, 5 of them past their copy's
    end). An asynchronous call blocks like a sync call when it returned only after its copy ended (a
    cudaMemcpyAsync from pageable memory does in practice). A call is matched to its copy by
    (process, correlation id).
    """
    sync_api = np.flatnonzero(api.of("memcpy"))
    m = api.of("memcpy", "memcpy_async", "memset")
    if not np.any(m) or len(copy_corr) == 0:
        return sync_api.astype(np.int64)
    rows = np.flatnonzero(m)
    ckey = (api.pid[rows].astype(np.int64) << 32) | (api.correlation_id[rows].astype(np.int64) & 0xFFFFFFFF)
    order = np.argsort(ckey, kind="stable")
    ckey = ckey[order]
    kkey = (copies.pid.astype(np.int64) << 32) | (copy_corr.astype(np.int64) & 0xFFFFFFFF)
    pos = np.minimum(np.searchsorted(ckey, kkey), len(ckey) - 1)
    hit = (copy_corr > 0) & (ckey[pos] == kkey)
    call = rows[order[pos[hit]]]
    blocking = api.end[call] >= copies.end[hit]
    return np.union1d(call[blocking], sync_api).astype(np.int64)


def blocked_sets(api: ApiCalls, copy_rows: np.ndarray) -> dict[int, iv.Merged]:
    """Per process, where the host was blocked on the GPU: sync calls and the blocking copy calls."""
    rows = np.union1d(np.flatnonzero(api.of("sync")), copy_rows)
    return iv.grouped_merge(api.pid[rows].astype(np.int64), api.start[rows], api.end[rows])


def startup_call(api: ApiCalls, span_start: int | None, first_operation_ns: int | None) -> StartupCall | None:
    """The longest GPU API call that ends before the first GPU operation (the capture's start-up).

    Start-up is reported once, by naming what it is made of: in real captures one call (the first
    cudaMalloc or cudaMemsetAsync, which creates the context) takes most of it.
    """
    if span_start is None or first_operation_ns is None or not len(api.start):
        return None
    first = span_start + first_operation_ns
    before = np.flatnonzero(api.end <= first)
    if not len(before):
        return None
    i = int(before[np.argmax(api.end[before] - api.start[before])])
    return StartupCall(name=api.names.get(int(api.name_id[i]), "?"), start_ns=int(api.start[i]) - span_start,
                       duration_ns=int(api.end[i] - api.start[i]), before_first_operation_ns=first_operation_ns)


def alloc_summary(api: ApiCalls, window: tuple[int, int] | None) -> AllocSummary:
    """Allocation and free calls, in all and inside the GPUs' active window [first, last GPU operation)."""
    m = api.of("alloc", "free")
    pid, start, end = api.pid[m], api.start[m], api.end[m]
    inside = np.zeros(len(start), dtype=bool) if window is None else (start < window[1]) & (end > window[0])
    frees = api.of("free")[m]
    return AllocSummary(calls=int(m.sum()), time_ns=_per_process_union(pid, start, end),
                        calls_in_window=int(inside.sum()),
                        time_in_window_ns=_per_process_union(pid[inside], start[inside], end[inside]),
                        allocs_in_window=int((inside & ~frees).sum()), frees_in_window=int((inside & frees).sum()))


def free_waits(api: ApiCalls, busy_by_pid: dict[int, iv.Merged]) -> tuple[int, int]:
    """(calls, host ns) of the free calls that waited for the GPU: the implicit sync of cudaFree.

    cudaFree / cuMemFree / hipFree synchronise with the device before they release the memory, so a
    host thread in one while its process's GPUs still run is blocked exactly as in
    cudaDeviceSynchronize (issue 25, item 7: a malloc + launch + free per step spends its time there
    while "CPU blocked in sync" read 53 µs). The wait is the part of each call during which a GPU of
    the calling process was busy; the stream-ordered frees (cudaFreeAsync, hipFreeAsync) do not wait
    and are left out.
    """
    rows = np.flatnonzero(api.of("free"))
    rows = np.array([r for r in rows.tolist() if "async" not in api.names.get(int(api.name_id[r]), "").lower()],
                    dtype=np.int64)
    calls = ns = 0
    for p in np.unique(api.pid[rows]).tolist() if len(rows) else []:
        busy = busy_by_pid.get(int(p))
        if busy is None or not len(busy[0]):
            continue
        mine = rows[api.pid[rows] == p]
        cs, ce = api.start[mine].astype(np.int64), api.end[mine].astype(np.int64)
        calls += int((iv.covered_many(busy, cs, ce) > 0).sum())
        ns += iv.length(iv.intersect(iv.merge(cs, ce), busy))   # threads of one process: their union
    return calls, ns
