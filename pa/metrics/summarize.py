"""Build the ProfileSummary of one profile: open → detect → query set → relations → metrics.

This is the whole of Stage 1 and runs offline. Each aspect is computed only when the relations it
needs are available; otherwise it is None and `skipped` says why ("not captured" is never shown as
zero).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from pa import formatting
from pa.metrics import host as host_metrics
from pa.metrics import intervals as iv
from pa.metrics.activity import DeviceActivity, Ops, device_activity, stream_stats
from pa.metrics.collectives import collective_stats
from pa.metrics.communication import class_name_ids, device_communication
from pa.metrics.degraded import rocpd_capture_checks
from pa.metrics.gaps import GapTable, classify_gaps, clipped_totals, device_gaps
from pa.metrics.hardware import host_link, spec_memory_bandwidth
from pa.metrics.host_work import compile_ranges, device_reads, host_work, marker_name_read
from pa.metrics.kernels import kernel_names, kernel_stats, launch_configs
from pa.metrics.marker_names import DEFAULT_NAMING, MarkerNaming
from pa.metrics.migrations import host_read_migrations, migration_summary
from pa.metrics.model import (
    CopyStats,
    CopySummary,
    DeviceGaps,
    DeviceSummary,
    GpuTotals,
    HardwareLimits,
    MemsetStats,
    ProfileInfo,
    ProfileSummary,
    QueryFileRef,
    SkippedItem,
    SyncSummary,
)
from pa.metrics.phases.detect import DEFAULT_MAX_PHASES, detect_phases
from pa.metrics.phases.model import PhaseSummary
from pa.metrics.processes import process_table
from pa.metrics.steady import steady_window
from pa.metrics.thresholds import DEFAULT_THRESHOLDS, Thresholds
from pa.metrics.transfers import COPY_CODES, copy_stats, memset_stats, round_trips
from pa.profile.canonical import column_names
from pa.profile.detect import ProfileFormat, detect
from pa.profile.open import open_readonly, sha256_of
from pa.profile.queryset import resolve
from pa.profile.relations import VALID, Relations
from pa.version import __version__

P = ParamSpec("P")
T = TypeVar("T")

GPU_RELATIONS = ("kernels", "copies", "memsets")
# A copy record longer than SLOW_COPY_EXCESS_NS beyond what its bytes take at SLOW_COPY_RATE_BPS is
# implausible (warned about, counted as recorded): no host link is that slow, no latency that long.
SLOW_COPY_EXCESS_NS = 1_000_000
SLOW_COPY_RATE_BPS = 1e9
# Above this many GPU-relevant API calls, phase detection runs after the other metrics instead of
# beside them (see _summarize_in): the overlap saves a fraction of a second, the extra peak memory
# on a capture of ten million calls is a few hundred MB.
OVERLAP_PHASES_MAX_CALLS = 2_000_000
# Formats whose copies, memsets and markers are read on the worker thread, beside the API-call
# scan (see _summarize_in).
WORKER_SCANS_FORMATS = frozenset({"rocpd"})
SPAN_RELATIONS = ("kernels", "copies", "memsets", "api_calls", "syncs", "markers", "mpi_calls", "overhead",
                  "os_calls", "driver_jit")
# Relations whose presence (with at least one row) `ProfileSummary.captured` reports.
CAPTURED_RELATIONS = ("kernels", "copies", "memsets", "api_calls", "syncs", "markers", "mpi_calls",
                      "os_calls", "cpu_samples", "overhead")


def summarize(path: Path, keep_paths: bool = False, max_phases: int = DEFAULT_MAX_PHASES,
              marker_naming: MarkerNaming = DEFAULT_NAMING,
              thresholds: Thresholds = DEFAULT_THRESHOLDS, query_dirs: Sequence[Path] = (),
              within: tuple[tuple[int, int], tuple[int, int]] | None = None,
              digest: str | None = None, process: int | None = None) -> ProfileSummary:
    """Open `path` read-only and compute its ProfileSummary.

    Marker names are normalised by `marker_naming`; phases, gaps and copies are classified with the
    site-tunable `thresholds` (RuleSet.thresholds under `pa analyze`, the defaults under `pa summary`).
    query_dirs: user query directories layered over the bundled sets (pa.profile.queryset).
    within: ((lo, hi), (span start, span end)), absolute ns: summarise only the events overlapping
    [lo, hi] (Relations.overlapping), on the capture's span (pa.metrics.steady, pa.pipeline).
    digest: the file's sha256 when the caller has it (a second summary of the same file), not hashed again.
    process: summarise only this process's rows (Relations.of_process): one rank of an export that
    holds several (pa.ranks.processes); `profile.pid` then names it.
    """
    path = Path(path)
    with bound(path, query_dirs) as (fmt, rel):
        if process is not None:
            rel = rel.of_process(process)
        summary = _summarize(rel.overlapping(*within[0]) if within else rel, path, fmt.format, fmt.vendor,
                             fmt.schema_version, fmt.product_version, keep_paths, max_phases, marker_naming,
                             thresholds, within[1] if within else None, digest)
    if process is not None:
        summary.profile.pid = process
    return summary


def marker_substring_hits(path: Path, needles: Sequence[str],
                          query_dirs: Sequence[Path] = ()) -> dict[str, bool] | None:
    """For each text, whether some marker name of the profile at `path` contains it (None: no marker).

    For `pa rules validate --profile`: a site pack's `marker_names.strip_after` entry that no
    marker name contains changes nothing on that profile. One EXISTS query per text (instr, case
    sensitive, as the normalisation's own search), so no list of names is ever built.
    """
    with bound(Path(path), query_dirs) as (_, rel):
        if not rel.available("markers") or not rel.query("SELECT EXISTS (SELECT 1 FROM pa_markers)")[0][0]:
            return None
        sql = "SELECT EXISTS (SELECT 1 FROM pa_markers WHERE instr(name, ?) > 0)"
        return {n: bool(rel.query(sql, (n,))[0][0]) for n in needles}


@contextmanager
def bound(path: Path, query_dirs: Sequence[Path]) -> Iterator[tuple[ProfileFormat, Relations]]:
    """The profile at `path` opened read-only, its format, and its relations bound to its query set."""
    conn = open_readonly(path)
    try:
        fmt = detect(conn, path)
        yield fmt, Relations.bind(conn, resolve(fmt.format, fmt.schema_version, query_dirs=query_dirs))
    finally:
        conn.close()


def _on_own(path: Path, bound: Relations, read: Callable[Concatenate[Relations, P], T], *args: P.args,
            **kwargs: P.kwargs) -> T:
    """`read(relations, ...)` on a read-only connection of the calling thread's own (`bound`'s relations).

    How the worker thread reads: a connection serves one thread at a time.
    """
    conn = open_readonly(path)
    try:
        return read(bound.on(conn), *args, **kwargs)
    finally:
        conn.close()


def _kernel_reads(rel: Relations, warnings: list[str]
                  ) -> tuple[Ops, dict[str, np.ndarray], dict[int, tuple[str | None, str | None]],
                             dict[str, np.ndarray], np.ndarray, int]:
    """The kernel scan, the kernel names and the kernel classes (run in the worker thread).

    Returns the kernels, their extra columns, the names, the name ids of each class but compute
    (communication, graph), per kernel whether it communicates, and how many kernel records are
    whole graph executions. The kernel classes are read here rather than on the main thread, whose
    share before the two threads meet is the longer one on Nsight Systems files.
    """
    kernels, kx = _ops(rel, "kernels", warnings, ("name_id", "correlation_id"))
    names = kernel_names(rel) if rel.available("kernels") else {}
    class_ids = class_name_ids(rel)
    comm_ids, graph_ids = class_ids["communication"], class_ids["graph"]
    is_comm = np.isin(kx["name_id"], comm_ids) if len(comm_ids) else np.zeros(len(kernels.start), dtype=bool)
    graphs = int(np.isin(kx["name_id"], graph_ids).sum()) if len(graph_ids) else 0
    return kernels, kx, names, class_ids, is_comm, graphs


class SharedReads:
    """Independent reads that whichever thread is free first takes, each on its own connection.

    The small reads beside the scans (hardware per device, launch configurations, memset
    statistics: on rocpd files ~0.2-0.3 s each at 400 k dispatches and 500 k copies) wait for the
    first thread done with its scans; which one that is depends on the file (the share of rocTX
    ranges among the regions), so neither is given them in advance.
    """

    def __init__(self, reads: dict[str, Callable[[Relations], Any]]) -> None:
        self._pending = list(reads.items())
        self._lock = threading.Lock()
        self.results: dict[str, Any] = {}

    def take(self, rel: Relations) -> None:
        """Run pending reads on this thread, one at a time, until none is left."""
        while True:
            with self._lock:
                if not self._pending:
                    return
                name, read = self._pending.pop(0)
            self.results[name] = read(rel)


def _device_reads() -> SharedReads:
    """The small reads the metrics need beside the scans (see SharedReads)."""
    return SharedReads({"hardware": _hardware,
                        "configs": lambda r: launch_configs(r) if r.available("kernels") else {},
                        "memsets": lambda r: memset_stats(r) if r.available("memsets") else None})


# The MPI, overhead and compiling intervals (pid, start, end) idle gaps are classified by.
HostIntervals = tuple[host_metrics.Intervals, host_metrics.Intervals, host_metrics.Intervals,
                      host_metrics.Intervals, np.ndarray]


def _device_gaps(rel: Relations, acts: dict[int, DeviceActivity], api: host_metrics.ApiCalls | None,
                 pids_by_device: dict[int, set[int]], host_ivs: HostIntervals, window: tuple[int, int],
                 thresholds: Thresholds, host_reads: dict[int, iv.Merged]) -> tuple[list[DeviceGaps], list[GapTable]]:
    """Per used device (ascending id): its idle gaps classified by what the host did, and the table.

    `host_ivs`: the MPI, overhead, compiling and module-loading intervals (pid, start, end) the causes
    come from, and the keys of each process's first launch of each kernel (lazy loading);
    `host_reads`: per device, the migrations that prove the host read the GPU's results.
    """
    mpi_iv, overhead_iv, jit_iv, load_iv, first_launches = host_ivs
    gaps: list[DeviceGaps] = []
    tables: list[GapTable] = []
    for dev_id in sorted(acts):
        busy = acts[dev_id].busy
        pids = pids_by_device.get(dev_id, set())
        host = host_metrics.host_sets(api, pids, mpi_iv, overhead_iv, jit_iv, load_iv, thresholds.lazy_load_min_ns,
                                      first_launches)
        table = classify_gaps(dev_id, busy, host, thresholds.host_work_min_ns, thresholds.dispatch_max_ns,
                              host_reads.get(dev_id, iv.EMPTY))
        tables.append(table)
        kernels = acts[dev_id].kernels
        dg = device_gaps(busy, table, *window, int(kernels[1][-1]) if len(kernels[1]) else None)
        if host is not None:
            dg = dg.model_copy(update={"host_work": host_work(rel, table, pids)})
        gaps.append(dg)
    return gaps, tables


def _ops(rel: Relations, relation: str, warnings: list[str], extra: tuple[str, ...] = (),
         expressions: dict[str, str] | None = None) -> tuple[Ops, dict[str, np.ndarray]]:
    names = (*extra, *(expressions or {}))
    if not rel.available(relation):
        return Ops.empty(), {c: np.zeros(0, dtype=np.int64) for c in names}
    cols, bad = rel.intervals(relation, ("device", "stream", "pid", *extra), expressions)
    if bad:
        warnings.append(f"{bad} {relation} record(s) with no end or end < start were ignored "
                        "(still open at the end of the capture?)")
    return Ops(cols["start"], cols["end"], cols["device"], cols["stream"], cols["pid"]), \
        {c: cols[c] for c in names}


def _span(rel: Relations, fetched: list[Ops], api: host_metrics.ApiCalls | None,
          markers: host_metrics.MarkerScan | None) -> tuple[int | None, int | None]:
    """First start and last end over every event of any kind.

    GPU operations, GPU-relevant API calls and markers have been read already; the rest is asked in SQL.
    """
    starts = [int(o.start.min()) for o in fetched if len(o.start)]
    ends = [int(o.end.max()) for o in fetched if len(o.end)]
    if api is not None:
        if len(api.start):
            starts.append(int(api.start.min()))
            ends.append(int(api.end.max()))
        if api.extent[0] is not None:
            starts.append(int(api.extent[0]))
            ends.append(int(api.extent[1]))  # type: ignore[arg-type]
    if markers is not None and markers.extent[0] is not None:
        starts.append(int(markers.extent[0]))
        ends.append(int(markers.extent[1]))  # type: ignore[arg-type]
    read = {*GPU_RELATIONS, "api_calls", "markers"}
    parts = [f"SELECT min(start) AS s, max(\"end\") AS e FROM pa_{r} WHERE {VALID}"
             for r in SPAN_RELATIONS if r not in read and rel.available(r)]
    if parts:
        row = rel.query("SELECT min(s), max(e) FROM (" + " UNION ALL ".join(parts) + ")")[0]
        if row[0] is not None:
            starts.append(int(row[0]))
            ends.append(int(row[1]))
    if not starts:
        return None, None
    return min(starts), max(ends)


def _hardware(rel: Relations) -> dict[int, tuple[dict[str, Any], HardwareLimits]]:
    """Each device's row of the devices relation and its hardware limits, by device id.

    Read whole, so the rows the domain checks drop are counted by the same statement: on rocpd
    files the relation looks at every dispatch and copy for the agents used (~0.2 s at 400 k
    dispatches and 500 k copies), and counting apart at the end was a second such pass.
    """
    out: dict[int, tuple[dict[str, Any], HardwareLimits]] = {}
    if not rel.available("devices"):
        return out
    columns = column_names("devices")
    for row in rel.read_whole("devices"):
        r: dict[str, Any] = dict(zip(columns, row, strict=True))
        if r.get("memory_bandwidth_bps") is None:   # rocpd records none: the product's spec sheet
            r["memory_bandwidth_bps"] = spec_memory_bandwidth(r.get("name"))
        link, link_bw = host_link(r.get("name"), r.get("compute_capability"))
        hw = HardwareLimits(**{k: r.get(k) for k in HardwareLimits.model_fields
                               if k in r}, host_link=link, host_link_bandwidth_bps=link_bw)
        out[int(r["device"])] = (r, hw)
    return out


def _summarize(rel: Relations, path: Path, fmt: str, vendor: str, schema_version: str,
               product_version: str | None, keep_paths: bool,
               max_phases: int = DEFAULT_MAX_PHASES, marker_naming: MarkerNaming = DEFAULT_NAMING,
               thresholds: Thresholds = DEFAULT_THRESHOLDS, span: tuple[int, int] | None = None,
               digest: str | None = None) -> ProfileSummary:
    # One worker thread beside this one, with connections of its own: it scans the kernel table
    # and reads the kernel names and classes while this thread reads every other relation, then
    # detects phases and computes the launch summary while this thread computes the stream,
    # per-device, per-kernel and host metrics. SQLite (inside sqlite3_step), hashlib and numpy's
    # large-array loops release the GIL, so the two halves overlap on two cores. The file's digest
    # is a thread of its own (3 s of hashing on a 3 GB rocpd file): it fills whichever core the
    # other two leave idle.
    with ThreadPoolExecutor(max_workers=1) as pool, ThreadPoolExecutor(max_workers=1) as hasher:
        digest_job: Future[str]
        if digest is None:
            digest_job = hasher.submit(sha256_of, path)
        else:   # the same file summarised again (a steady window): its digest is known
            digest_job = Future()
            digest_job.set_result(digest)
        return _summarize_in(pool, digest_job, rel, path, fmt, vendor, schema_version, product_version,
                             keep_paths, max_phases, marker_naming, thresholds, span)


# Canonical relations the summary does not read: they exist for the LLM's SQL workspace (and for
# site query files). Keep in step with the readers below.
WORKSPACE_ONLY_RELATIONS = frozenset({"allocations"})
# Relations only some formats' query sets provide (rocpd's call arguments): a format with no file
# for one has nothing to lose, so its absence there is not reported as skipped.
FORMAT_ONLY_RELATIONS = frozenset({"memcpy_requests"})


def _summarize_in(pool: ThreadPoolExecutor, digest_job: Future[str], rel: Relations, path: Path, fmt: str,
                  vendor: str, schema_version: str, product_version: str | None, keep_paths: bool,
                  max_phases: int, marker_naming: MarkerNaming, thresholds: Thresholds,
                  forced_span: tuple[int, int] | None = None) -> ProfileSummary:
    warnings: list[str] = list(rel.query_set.warnings)
    # A relation no metric reads (only the SQL workspace does) is not "not analysed" when its
    # format has no query for it; a query that exists but cannot run is still reported.
    skipped = [SkippedItem(what=s.what, reason=s.reason) for s in rel.skipped
               if not (s.what in WORKSPACE_ONLY_RELATIONS | FORMAT_ONLY_RELATIONS
                       and rel.query_set.files.get(s.what) is None)]
    meta = dict(rel.query("SELECT key, value FROM pa_meta")) if rel.available("meta") else {}

    kernel_warnings: list[str] = []
    other_warnings: list[str] = []
    kernel_job = pool.submit(_on_own, path, rel, _kernel_reads, kernel_warnings)
    # The API calls and the markers are the two large scans of a rocpd file (both over every
    # region): the API scan stays on this thread, the worker reads the copies, memsets and
    # markers. In Nsight Systems files the kernel scan is the large one and the worker's path the
    # longer: there everything else is read on this thread.
    beside = fmt in WORKER_SCANS_FORMATS
    copy_extra = ("bytes", "correlation_id")
    copies_job = pool.submit(_on_own, path, rel, _ops, "copies", other_warnings, copy_extra, COPY_CODES) \
        if beside else None
    memsets_job = pool.submit(_on_own, path, rel, _ops, "memsets", other_warnings) if beside else None
    marker_job = pool.submit(_on_own, path, rel, host_metrics.scan_markers, marker_naming,
                             keep=marker_name_read(marker_naming)) if rel.available("markers") and beside else None
    # The small reads go to whichever thread ends its scans first (on rocpd files either may).
    shared = _device_reads()
    shared_job = pool.submit(_on_own, path, rel, shared.take) if beside else None
    if copies_job is None or memsets_job is None:
        copies, cx = _ops(rel, "copies", other_warnings, copy_extra, COPY_CODES)
        memsets, _ = _ops(rel, "memsets", other_warnings)
    api = host_metrics.fetch_api_calls(rel) if rel.available("api_calls") else None
    shared.take(rel)   # whatever the worker has not taken yet
    rank = _single_rank(rel)
    mpi_iv = host_metrics.fetch_intervals(rel, "mpi_calls")
    overhead_iv = host_metrics.fetch_intervals(rel, "overhead")
    # Compiling: the driver's JIT and module loading, and ranges the application names as compiling.
    jit_iv = host_metrics.fetch_intervals(rel, "driver_jit", f"NOT ({host_metrics.DRIVER_LOADING})")
    load_iv = host_metrics.fetch_intervals(rel, "driver_jit", host_metrics.DRIVER_LOADING)
    if marker_job is not None:
        marker_scan: host_metrics.MarkerScan | None = marker_job.result()
    elif rel.available("markers"):
        marker_scan = host_metrics.scan_markers(rel, marker_naming, keep=marker_name_read(marker_naming))
    else:
        marker_scan = None
    if marker_scan is not None:
        named = compile_ranges(marker_scan.kept, marker_naming)
        jit_iv = (np.concatenate([jit_iv[0], named[0]]), np.concatenate([jit_iv[1], named[1]]),
                  np.concatenate([jit_iv[2], named[2]]))
    if copies_job is not None and memsets_job is not None:
        copies, cx = copies_job.result()
        memsets, _ = memsets_job.result()
    kernels, kx, knames, class_ids, is_comm, graph_executions = kernel_job.result()
    if graph_executions:
        skipped.append(SkippedItem(what="kernels.graph_nodes", reason=graph_granularity_note(graph_executions)))
    digest = digest_job.result()
    warnings += kernel_warnings + other_warnings  # in relation order, whichever thread finished first
    if api is not None and api.invalid:
        warnings.append(f"{api.invalid} api_calls record(s) with no end or end < start were ignored")
    if api is not None and api.nested:
        warnings.append(f"{api.nested} api_calls record(s) nested inside another record of the same call "
                        "(same process and correlation id) counted once")
    span_start, span_end = _span(rel, [kernels, copies, memsets], api, marker_scan) if forced_span is None \
        else forced_span
    span = int(span_end - span_start) if span_start is not None and span_end is not None else 0
    window = (int(span_start), int(span_end)) if span_start is not None and span_end is not None else None

    def phases_now() -> list[PhaseSummary] | None:
        # on a connection of its own: run in the worker thread, or in this one on very large captures
        return _on_own(path, rel, detect_phases, int(span_start or 0), int(span_end or 0), max_phases,
                       kernels={"start": kernels.start, "end": kernels.end, "name_id": kx["name_id"],
                                "device": kernels.device},
                       names={i: (n or f"<name id {i}>", sn) for i, (n, sn) in knames.items()},
                       prefetched=_prefetched_for_phases(rel, copies, cx, memsets, api),
                       marker_runs=marker_scan.top_level_runs() if marker_scan is not None else [],
                       thresholds=thresholds)

    # Overlapping phase detection with the metrics below holds both working sets at once: on
    # captures with millions of API calls (rocpd files), memory matters more than the overlap.
    overlap = window is not None and (api is None or len(api.start) <= OVERLAP_PHASES_MAX_CALLS)
    phases_job = pool.submit(phases_now) if overlap else None
    gpu_ops = Ops(*(np.concatenate([getattr(o, f) for o in (kernels, copies, memsets)])
                    for f in ("start", "end", "device", "stream", "pid")))
    # After the two threads meet, this thread's share (devices, gaps, kernels, copies, host) is the
    # longer one on Nsight Systems files: the launch summary (a sort of every GPU operation) goes
    # to the worker after phase detection.
    launch_job = pool.submit(host_metrics.launch_summary, api, kernels, kx["correlation_id"], gpu_ops, span) \
        if api else None
    streams = stream_stats(gpu_ops, (len(kernels.start), len(copies.start), len(memsets.start)), span)
    acts = device_activity(kernels, copies, memsets)

    all_pids_by_device: dict[int, set[int]] = {}
    for ops in (kernels, copies, memsets):
        for d in np.unique(ops.device).tolist():
            all_pids_by_device.setdefault(d, set()).update(np.unique(ops.pid[ops.device == d]).tolist())

    host_ivs = (mpi_iv, overhead_iv, jit_iv, load_iv,
                host_metrics.first_launch_keys(api, thresholds.lazy_load_min_ns, kernels.pid, kernels.start,
                                               kx["name_id"], kx["correlation_id"])
                if api is not None else np.zeros(0, dtype=np.int64))
    # The idle gaps of each device and their causes; on rocpd files on the worker, whose share
    # after the two threads meet (phases, the launch summary) is the shorter one there.
    host_reads = host_read_migrations(copies, cx)
    gaps_job = pool.submit(_on_own, path, rel, _device_gaps, acts, api, all_pids_by_device, host_ivs, window,
                           thresholds, host_reads) if beside and window is not None else None
    if shared_job is not None:
        shared_job.result()   # the reads the worker took
    hardware, configs = shared.results["hardware"], shared.results["configs"]
    memsets_summary: list[MemsetStats] | None = shared.results["memsets"]
    devices: list[DeviceSummary] = []
    copy_rows = host_metrics.blocking_copy_rows(api, copies, cx["correlation_id"]) if api is not None \
        else np.zeros(0, dtype=np.int64)
    for dev_id in sorted(set(hardware) | set(acts)):
        info, hw = hardware.get(dev_id, ({}, HardwareLimits()))
        act = acts.get(dev_id)
        if act is None:
            devices.append(DeviceSummary(id=dev_id, name=info.get("name"), bus_location=info.get("bus_location"),
                                         used=False, hardware=hw))
            continue
        kmask = kernels.device == dev_id
        ktime = int(kernels.duration[kmask].sum())
        kbusy = iv.length(act.kernels)
        busy = iv.length(act.busy)
        copy_kernel = iv.intersect_length(act.copies, act.kernels)
        comm = device_communication(kernels, is_comm, dev_id)
        devices.append(DeviceSummary(
            id=dev_id, name=info.get("name"), bus_location=info.get("bus_location"), used=True,
            kernel_count=int(kmask.sum()), kernel_time_ns=ktime, kernel_busy_ns=kbusy,
            copy_time_ns=int(copies.duration[copies.device == dev_id].sum()),
            memset_time_ns=int(memsets.duration[memsets.device == dev_id].sum()),
            busy_ns=busy, utilization_pct=(100.0 * busy / span) if span else None,
            kernel_concurrency=(ktime / kbusy) if kbusy else None,
            exposed_copy_ns=iv.length(act.copies) - copy_kernel if rel.available("copies") else None,
            kernel_only_ns=kbusy - copy_kernel, compute_busy_ns=comm.compute_busy_ns,
            communication_kernel_count=comm.kernel_count, communication_time_ns=comm.time_ns,
            communication_busy_ns=comm.busy_ns, communication_exposed_ns=comm.exposed_ns,
            communication_recoverable_ns=comm.recoverable_ns,
            first_activity_ns=int(act.busy[0][0]), last_activity_ns=int(act.busy[1][-1]), hardware=hw))

    exposed_copy = sum(iv.subtract_length(a.copies, a.kernels) for a in acts.values())
    hw_by_dev = {d: h for d, (_, h) in hardware.items()}
    kstats = kernel_stats(knames, kx["name_id"], kernels.duration, kernels.device, configs, hw_by_dev,
                          frozenset(class_ids["communication"].tolist()),
                          frozenset(class_ids["graph"].tolist())) if rel.available("kernels") else []

    copies_summary = None
    if rel.available("copies"):
        # Explicit copies only in the copy statistics: unified-memory migrations are summarised apart.
        explicit = cx["migration_code"] < 0
        ex = {k: v[explicit] for k, v in cx.items()}
        ex_dur = copies.duration[explicit]
        by_kind, by_dir = copy_stats(ex, ex_dur, copies.device[explicit], hw_by_dev, thresholds)
        pageable = sum(t.pageable_bytes for t in by_dir)
        # Share over host-side copies whose host memory kind is known: rocpd records no
        # pageable/pinned distinction, and "unknown" must not read as "0 % pageable".
        host_bytes = sum(c.bytes for c in by_kind if c.direction in ("HtoD", "DtoH", "HtoH")
                         and _host_kind(c) in ("pageable", "pinned", "managed"))
        if not host_bytes and any(c.direction in ("HtoD", "DtoH") for c in by_kind):
            skipped.append(SkippedItem(what="copies.pageable_share",
                                       reason="the profile does not record whether host memory was "
                                              "pageable or pinned"))
        for c in by_kind:
            if c.bandwidth_pct_of_peak is not None and c.bandwidth_pct_of_peak > 100.0:
                # Copies cannot beat the link: overlapping copies summed as if serial, a wrong assumed
                # link, or bad timestamps. Said once here; the rules never read it as a share of peak.
                warnings.append(f"{c.direction} copies ({c.src_kind} → {c.dst_kind}) reach "
                                f"{(c.effective_bandwidth_bps or 0) / 1e9:.1f} GB/s, above the assumed peak of "
                                f"{(c.peak_bandwidth_bps or 0) / 1e9:.1f} GB/s ({c.peak_basis or 'assumed'}): "
                                "a measurement problem (overlapping copies or a different link), not a rate")
        # Implausibly slow copies: longer than a millisecond beyond what their bytes take at 1 GB/s (far
        # below any host link, and far above a small copy's ~10 µs latency): a writer's bad timestamps or a
        # copy the driver held, never a transfer rate. Reported as recorded, and said (issue 24, item 7).
        slow = ex_dur > SLOW_COPY_EXCESS_NS + ex["bytes"].astype(np.float64) * 1e9 / SLOW_COPY_RATE_BPS
        if np.any(slow):
            worst = int(np.argmax(np.where(slow, ex_dur, -1)))
            example = (f"{formatting.data_size(int(ex['bytes'][worst]))} in "
                       f"{formatting.duration(int(ex_dur[worst]))}")
            warnings.append(f"{int(slow.sum())} copy record(s) are implausibly slow (e.g. {example}, over "
                            f"{formatting.duration(SLOW_COPY_EXCESS_NS)} beyond 1 GB/s): bad timestamps from the "
                            "writer or a copy the driver held; their time is counted as recorded")
        kernel_span = {d: (int(a.kernels[0][0]), int(a.kernels[1][-1]))
                       for d, a in acts.items() if len(a.kernels[0])}
        trips, trip_count, trip_ns, trip_saving = round_trips(
            ex, ex_dur, copies.start[explicit], copies.end[explicit], copies.device[explicit], kernel_span)
        copies_summary = CopySummary(
            count=int(explicit.sum()), bytes=sum(t.bytes for t in by_dir), total_ns=int(ex_dur.sum()),
            busy_ns=sum(iv.length(a.copies) for a in acts.values()), exposed_ns=exposed_copy,
            pageable_bytes=pageable, pageable_share_pct=(100.0 * pageable / host_bytes) if host_bytes else None,
            by_direction=by_dir, by_kind=by_kind, round_trips=trips, round_trip_count=trip_count,
            round_trip_ns=trip_ns, round_trip_resident_saving_ns=trip_saving,
            migrations=migration_summary(copies, cx, {d: a.kernels for d, a in acts.items()}, hw_by_dev))

    # Summaries that do not need the gaps, before waiting for them (on rocpd files the worker
    # computes the gaps meanwhile; the marker summary alone is ~0.2 s at 2 M rocTX ranges).
    sync = _sync_with_implicit_waits(host_metrics.sync_summary(rel, api, span), api, copy_rows,
                                     _busy_by_pid(acts, all_pids_by_device), span) if api else None
    markers = marker_scan.summary(int(span_start or 0)) if marker_scan is not None else None
    overhead = host_metrics.overhead_summary(overhead_iv, span) if rel.available("overhead") else None
    # The gaps last: on rocpd files the worker computes them while this thread did the above.
    if gaps_job is not None:
        gaps, gap_tables = gaps_job.result()
    elif window is not None:
        gaps, gap_tables = _device_gaps(rel, acts, api, all_pids_by_device, host_ivs, window, thresholds,
                                        host_reads)
    else:
        gaps, gap_tables = [], []
    gpu = _gpu_totals([d for d in devices if d.used], gaps, len(kernels.start), int(kernels.duration.sum()),
                      graph_executions, span,
                      int(copies.duration.sum()) if rel.available("copies") else None,
                      int(memsets.duration.sum()) if rel.available("memsets") else None,
                      exposed_copy if rel.available("copies") else None)

    mpi_summary = host_metrics.mpi_summary(rel, span) if rel.available("mpi_calls") else None
    if mpi_summary is not None and max(mpi_summary.process_count, len(mpi_summary.ranks)) >= 2:
        warnings.append(several_ranks_note(mpi_summary.process_count, mpi_summary.ranks))
    summary = ProfileSummary(
        pa_version=__version__,
        profile=ProfileInfo(
            file_name=path.name, path=str(path.resolve()) if keep_paths else None, sha256=digest,
            size_bytes=path.stat().st_size, format=fmt, vendor=vendor, schema_version=schema_version,
            product_version=product_version or meta.get("product_version"), query_set=rel.query_set.name,
            query_files=[QueryFileRef(relation=r, path=qf.display_path, sha256=qf.sha256)
                         for r, qf in sorted(rel.query_set.files.items())],
            host_name=meta.get("host_name"),
            rank=rank),
        span_start_ns=span_start, span_end_ns=span_end, span_ns=span,
        gpu=gpu, devices=devices, idle_gaps=gaps, kernels=kstats,
        copies=copies_summary,
        memsets=memsets_summary,
        sync=sync,
        device_reads=device_reads(marker_scan.kept, gap_tables, all_pids_by_device,
                                  host_metrics.blocked_sets(api, copy_rows) if api else {}, marker_naming)
        if marker_scan is not None else None,
        allocations=host_metrics.alloc_summary(api, _window(gpu, span_start)) if api else None,
        startup_call=host_metrics.startup_call(api, span_start, gpu.first_operation_ns) if api else None,
        launch=launch_job.result() if launch_job is not None else None,
        streams=streams,
        markers=markers,
        steady_window=steady_window(markers.iterations if markers is not None else None, acts, int(span_start))
        if forced_span is None and span_start is not None else None,
        mpi=mpi_summary,
        processes=process_table(rel, [kernels.pid, copies.pid, memsets.pid],
                                [kernels.device, copies.device, memsets.device]),
        collectives=collective_stats(kernels, kx["name_id"], is_comm, knames, thresholds.collective_latency_ns)
        if rel.available("kernels") and rel.available("kernel_classes") else None,
        overhead=overhead,
        phases=_with_gap_causes(phases_job.result() if phases_job is not None else phases_now() if window is not None
                                else None, gap_tables, int(span_start or 0)),
        captured=_captured(rel, {"kernels": len(kernels.start), "copies": len(copies.start),
                                 "memsets": len(memsets.start), "overhead": len(overhead_iv[0]),
                                 "mpi_calls": len(mpi_iv[0]),
                                 # the marker scan read every row, valid or still open
                                 **({"markers": marker_scan.count + marker_scan.open_ranges}
                                    if marker_scan is not None else {})}),
        skipped=skipped, warnings=warnings)
    _degraded_capture_checks(rel, summary, api)
    summary.warnings += rel.domain_notes()  # rows the relations' domain checks dropped
    return summary


def _gpu_totals(used: list[DeviceSummary], gaps: list[DeviceGaps], kernel_count: int, kernel_time: int,
                graph_executions: int, span: int, copy_time: int | None, memset_time: int | None,
                exposed_copy: int | None) -> GpuTotals:
    """Totals over the used devices: busy, utilisation, the active windows and their idle by cause."""
    busy_total = sum(d.busy_ns for d in used)
    kbusy_total = sum(d.kernel_busy_ns for d in used)
    device_time = span * len(used)
    idle_by_cause: dict[str, int] = {}
    recoverable: dict[str, int] = {}
    for g in gaps:
        for cause, ns in g.idle_by_cause.items():
            idle_by_cause[cause] = idle_by_cause.get(cause, 0) + ns
        for cause, ns in g.recoverable_by_cause.items():
            recoverable[cause] = recoverable.get(cause, 0) + ns
    communicating = [d.compute_busy_ns for d in used if d.communication_kernel_count]
    return GpuTotals(
        device_count=len(used), kernel_count=kernel_count, kernel_time_ns=kernel_time,
        graph_execution_count=graph_executions,
        compute_busy_ns=sum(d.compute_busy_ns for d in used),
        communication_kernel_count=sum(d.communication_kernel_count for d in used),
        communication_time_ns=sum(d.communication_time_ns for d in used),
        communication_busy_ns=sum(d.communication_busy_ns for d in used),
        communication_exposed_ns=sum(d.communication_exposed_ns for d in used),
        # The collectives tie the communicating GPUs together: the run shortens by at most the smallest
        # per-device gain (the slowest GPU's), counted on each of them (device time).
        communication_recoverable_ns=min((d.communication_recoverable_ns for d in used
                                          if d.communication_kernel_count), default=0) * len(communicating),
        communication_devices=len(communicating),
        # the mean rounded up: the claim never exceeds the exact max − mean
        compute_imbalance_ns=(max(communicating) - -(-sum(communicating) // len(communicating)))
        if len(communicating) >= 2 else None,
        kernel_busy_ns=kbusy_total, busy_ns=busy_total,
        utilization_pct=(100.0 * busy_total / device_time) if device_time else None,
        kernel_utilization_pct=(100.0 * kbusy_total / device_time) if device_time else None,
        copy_time_ns=copy_time, memset_time_ns=memset_time, exposed_copy_ns=exposed_copy,
        window_ns=sum(g.window_ns for g in gaps), leading_idle_ns=sum(g.leading_idle_ns for g in gaps),
        trailing_idle_ns=sum(g.trailing_idle_ns for g in gaps), idle_in_window_ns=sum(g.idle_ns for g in gaps),
        idle_by_cause=idle_by_cause, recoverable_by_cause=recoverable,
        critical_busy_ns=sum(g.critical_busy_ns for g in gaps),
        wind_down_host_work_ns=sum(g.wind_down_host_work_ns for g in gaps),
        first_operation_ns=min((g.leading_idle_ns for g in gaps), default=None),
        last_operation_ns=(span - min(g.trailing_idle_ns for g in gaps)) if gaps else None)


def _sync_with_implicit_waits(sync: SyncSummary, api: host_metrics.ApiCalls, rows: np.ndarray,
                              busy_by_pid: dict[int, iv.Merged], span: int) -> SyncSummary:
    """The sync summary plus the calls that block the host without being sync calls.

    The copy calls that blocked like a sync call (`rows` of api), and the frees that waited for the
    GPUs of their process (busy_by_pid: host_metrics.free_waits).
    """
    calls = len(rows)
    ns = sum(iv.grouped_union_length(api.pid[rows].astype(np.int64), api.start[rows], api.end[rows]).values())
    free_calls, free_ns = host_metrics.free_waits(api, busy_by_pid)
    return sync.model_copy(update={
        "blocking_copy_calls": calls, "blocking_copy_ns": ns,
        "blocking_copy_pct_of_span": (100.0 * ns / (span * sync.process_count)) if span else None,
        "free_wait_calls": free_calls, "free_wait_ns": free_ns})


def _busy_by_pid(acts: dict[int, DeviceActivity], pids_by_device: dict[int, set[int]]) -> dict[int, iv.Merged]:
    """Per process, when any GPU it uses is busy (the union of those devices' busy intervals)."""
    sets: dict[int, list[iv.Merged]] = {}
    for d, pids in pids_by_device.items():
        if d in acts:
            for p in pids:
                sets.setdefault(int(p), []).append(acts[d].busy)
    return {p: iv.union_of(m) for p, m in sets.items()}


def graph_granularity_note(executions: int) -> str:
    """Why per-kernel facts stop at the graphs of a capture that traced CUDA graphs whole."""
    return (f"{executions} CUDA graph execution(s) were traced whole (nsys --cuda-graph-trace=graph, the "
            "default): the kernels inside them are not recorded, so kernel statistics, launch "
            "configurations and per-kernel advice cover only the kernels launched outside graphs (each "
            "graph is listed as one 'CUDA graph <id>' entry); profile with --cuda-graph-trace=node to "
            "see the kernels inside")


def several_ranks_note(processes: int, ranks: list[int]) -> str:
    """Why one export holding several MPI processes gets no cross-rank facts, and what to do instead."""
    which = f" (ranks {', '.join(map(str, ranks[:8]))}{', ...' if len(ranks) > 8 else ''})" if ranks else ""
    return (f"this export holds {max(processes, len(ranks))} MPI processes{which} of one job in one file: "
            "the cross-rank facts (straggler, imbalance, collective wait) are computed from one export per "
            "rank, so they are not computed here and the MPI totals are summed over the processes; export "
            "one file per rank (nsys profile -o report.%q{OMPI_COMM_WORLD_RANK}) and run `pa analyze DIR`")


def _window(gpu: GpuTotals, span_start: int | None) -> tuple[int, int] | None:
    """The GPUs' active window in absolute ns: first to last GPU operation on any device."""
    if span_start is None or gpu.first_operation_ns is None or gpu.last_operation_ns is None:
        return None
    return span_start + gpu.first_operation_ns, span_start + gpu.last_operation_ns


def _with_gap_causes(phases: list[PhaseSummary] | None, tables: list[GapTable],
                     span_start: int) -> list[PhaseSummary] | None:
    """Each phase with the idle gaps inside it by cause (gaps straddling a boundary in proportion)."""
    if not phases:
        return phases
    out = []
    for ph in phases:
        idle, rec = clipped_totals(tables, span_start + ph.start_ns, span_start + ph.end_ns)
        out.append(ph.model_copy(update={"idle_by_cause": idle, "recoverable_by_cause": rec}))
    return out


def _captured(rel: Relations, counted: dict[str, int]) -> dict[str, bool]:
    """Which relations hold at least one row (those already read are not asked again)."""
    out = {}
    for relation in CAPTURED_RELATIONS:
        if not rel.available(relation):
            out[relation] = False
        elif relation in counted:
            out[relation] = counted[relation] > 0
        else:
            out[relation] = bool(rel.query(f"SELECT EXISTS (SELECT 1 FROM pa_{relation})")[0][0])
    return out


def _prefetched_for_phases(rel: Relations, copies: Ops, cx: dict[str, np.ndarray], memsets: Ops,
                           api: host_metrics.ApiCalls | None) -> dict[str, dict[str, np.ndarray]]:
    """The arrays phase detection would otherwise fetch again (one pass per relation is the budget)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    if rel.available("copies"):
        out["copies"] = {"start": copies.start, "end": copies.end, "device": copies.device, "bytes": cx["bytes"]}
    if rel.available("memsets"):
        out["memsets"] = {"start": memsets.start, "end": memsets.end, "device": memsets.device,
                          "bytes": np.zeros(len(memsets.start), dtype=np.int64)}
    if api is not None:
        m = api.of("sync")
        out["sync"] = {"pid": api.pid[m].astype(np.int64), "start": api.start[m], "end": api.end[m]}
    return out


def _host_kind(c: CopyStats) -> str:
    """Memory kind of the host side of a host-device copy."""
    return c.src_kind if c.direction in ("HtoD", "HtoH") else c.dst_kind


def _single_rank(rel: Relations) -> int | None:
    if not rel.available("mpi_calls"):
        return None
    rows = rel.query("SELECT DISTINCT rank FROM pa_mpi_calls WHERE rank IS NOT NULL LIMIT 2")
    return int(rows[0][0]) if len(rows) == 1 else None


def _degraded_capture_checks(rel: Relations, summary: ProfileSummary, api: host_metrics.ApiCalls | None) -> None:
    """Say so when the host issued GPU work that the capture holds no trace of."""
    launches = summary.launch.launch_count if summary.launch is not None else 0
    memcpy_calls = int(api.of("memcpy", "memcpy_async").sum()) if api is not None else 0
    if summary.gpu.kernel_count == 0 and (launches or memcpy_calls):
        kernels_note = "absent" if not rel.available("kernels") else "empty"
        summary.warnings.append(
            f"degraded capture: the host made {launches} kernel launch call(s) and {memcpy_calls} memcpy "
            f"call(s) but the kernel table is {kernels_note}; GPU tracing was off, filtered, or the "
            "capture was cut before the GPU records were written. GPU metrics below are not measured.")
        summary.host_side = {"host_launch_calls": launches, "host_memcpy_calls": memcpy_calls}
        summary.skipped.append(SkippedItem(what="gpu_activity", reason="no GPU activity records although "
                                           "the host issued GPU work (degraded capture)"))
    rocpd_capture_checks(rel, summary)  # rocpd only: MPI coverage, host-side facts from call args
