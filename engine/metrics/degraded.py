"""What a rocpd capture did not record, and what the host side still tells when GPU tables are empty.

Two format facts that the vendor-neutral metrics cannot see on their own:

- **Degraded captures.** A job killed while rocprofv3 flushed, or run with narrower trace flags,
  leaves `rocpd_kernel_dispatch` / `rocpd_memory_copy` empty while the API regions are all there.
  The GPU did not idle: its records are missing. The HIP calls' arguments (`rocpd_arg`, what the
  `region_args` view shows: `hipMemcpy*` carry `sizeBytes` and `kind`) still say how many copies
  the host asked for, in which direction and how many bytes. Those facts go to
  `ProfileSummary.host_side` under `host_*` keys, as *requested by the host*, never as GPU
  activity: kernels, copies and GPU totals stay empty, and no device is marked used.
- **MPI coverage.** rocprofv3 does not intercept MPI at all, and rocprof-sys only with its MPI
  tracing on, so an empty `mpi_calls` relation in a file without the `mpi` region category means
  "not traced", which must read as None with a reason, never as "0 s in MPI".

The SQL is here rather than under `queries/rocpd/` because it fits no canonical relation: call
arguments are a rocpd notion with no Nsight Systems counterpart in pa's relation contract. It reads
only the file's own un-suffixed views (`rocpd_region`, `rocpd_event`, `rocpd_arg`,
`rocpd_string`, and in schema 4 `rocpd_info_category`), matches every join on guid as the query set
does, and resolves names and categories in small CTEs first so a 20 M-region file costs one region
scan. Schema 3 names an event's category through `rocpd_string`; schema 4.0.0 through
`rocpd_info_category`, in lower case (`hip_api`, `mpi`): the only difference between the two here.
"""

from __future__ import annotations

from engine.metrics.model import ProfileSummary, SkippedItem
from engine.profile.relations import Relations

# HIP region categories of both writers (schema 3: rocpd_string; schema 4: rocpd_info_category):
# rocprof-sys's rocm_marker_api copies of each HIP call must not be counted twice.
HIP_CATEGORIES = ("HIP_RUNTIME_API", "HIP_RUNTIME_API_EXT", "rocm_hip_api")
HIP_CATEGORIES_V4 = ("hip_api",)

# hipMemcpyKind as rocpd may print it: the enumerator name or its value (hip_runtime_api.h:
# HostToHost 0, HostToDevice 1, DeviceToHost 2, DeviceToDevice 3, Default 4). Default lets the
# runtime infer the direction from the pointers: unknown here.
_KIND_DIRECTION_SQL = """
CASE
    WHEN args.kind IN ('hipMemcpyHostToDevice', '1') THEN 'HtoD'
    WHEN args.kind IN ('hipMemcpyDeviceToHost', '2') THEN 'DtoH'
    WHEN args.kind IN ('hipMemcpyDeviceToDevice', '3') THEN 'DtoD'
    WHEN args.kind IN ('hipMemcpyHostToHost', '0') THEN 'HtoH'
    WHEN calls.name GLOB 'hipMemcpyHtoD*' THEN 'HtoD'
    WHEN calls.name GLOB 'hipMemcpyDtoH*' THEN 'DtoH'
    WHEN calls.name GLOB 'hipMemcpyDtoD*' THEN 'DtoD'
    WHEN calls.name GLOB 'hipMemcpyPeer*' THEN 'PtoP'
    ELSE 'unknown'
END"""

# Host-requested memcpy calls with direction and size from their arguments. hipMemcpy* names
# include hipMemcpyToSymbol, 2D/3D forms and the Async variants; size argument names differ
# between them (sizeBytes, ByteCount, count, size).
def _category_cte(names: tuple[str, ...], v4: bool) -> str:
    """Category ids of `names`: rows of rocpd_string (schema 3) or rocpd_info_category (schema 4)."""
    listed = ", ".join(f"'{c}'" for c in names)
    if v4:
        return f"SELECT DISTINCT guid, id FROM rocpd_info_category WHERE name IN ({listed})"
    return f"SELECT DISTINCT guid, id FROM rocpd_string WHERE string IN ({listed})"


def memcpy_args_sql(v4: bool) -> str:
    """Host-requested memcpy calls by direction: count and bytes from their arguments."""
    return MEMCPY_ARGS_SQL.replace("{categories}", _category_cte(HIP_CATEGORIES_V4 if v4 else HIP_CATEGORIES, v4))


MEMCPY_ARGS_SQL = f"""
WITH cat AS (
    {{categories}}
), names AS (
    SELECT DISTINCT guid, id, string AS name FROM rocpd_string WHERE string GLOB 'hipMemcpy*'
), calls AS (
    SELECT r.guid, r.event_id, n.name
    FROM rocpd_region r
    CROSS JOIN names n ON n.id = r.name_id AND n.guid = r.guid
    CROSS JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
    WHERE (e.guid, e.category_id) IN (SELECT guid, id FROM cat)
), args AS (
    SELECT a.guid, a.event_id,
           max(CASE WHEN a.name IN ('sizeBytes', 'ByteCount', 'count', 'size')
                    THEN CAST(a.value AS INTEGER) END) AS bytes,
           max(CASE WHEN a.name = 'kind' THEN a.value END) AS kind
    FROM rocpd_arg a
    WHERE a.name IN ('sizeBytes', 'ByteCount', 'count', 'size', 'kind')
      AND (a.guid, a.event_id) IN (SELECT guid, event_id FROM calls)
    GROUP BY a.guid, a.event_id
)
SELECT {_KIND_DIRECTION_SQL} AS direction, count(*), sum(args.bytes)
FROM calls LEFT JOIN args ON args.guid = calls.guid AND args.event_id = calls.event_id
GROUP BY 1 ORDER BY 1
"""


def rocpd_capture_checks(rel: Relations, summary: ProfileSummary) -> None:
    """Apply the rocpd coverage facts to `summary` in place; a no-op for other formats."""
    if not rel.query_set.name.startswith("rocpd"):
        return
    meta = dict(rel.query("SELECT key, value FROM pa_meta")) if rel.available("meta") else {}
    v4 = bool(rel.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'rocpd_info_category'").fetchall())
    _mpi_coverage(rel, summary, meta, v4)
    _host_side_recovery(rel, summary, meta, v4)


def _mpi_coverage(rel: Relations, summary: ProfileSummary, meta: dict[str, str], v4: bool) -> None:
    """Turn "no MPI regions" into "MPI not traced" when the file cannot hold MPI calls."""
    if summary.mpi is None or summary.mpi.call_count:
        return
    if rel.query(_category_cte(("mpi",), v4) + " LIMIT 1"):
        return  # the writer traced MPI (the category is registered) and saw no call
    if meta.get("product") == "rocprofv3":
        reason = "rocprofv3 does not trace MPI calls; capture with rocprof-sys (ROCPROFSYS_USE_MPIP=true)"
    else:
        reason = ("no MPI regions in this rocpd file: MPI tracing was off (rocprof-sys: "
                  "ROCPROFSYS_USE_MPIP=true) or the program made no MPI call")
    summary.mpi = None
    summary.skipped.append(SkippedItem(what="mpi", reason=reason))


def _host_side_recovery(rel: Relations, summary: ProfileSummary, meta: dict[str, str], v4: bool) -> None:
    """Host-requested launches and copies when the dispatch or copy table is empty."""
    no_dispatches = meta.get("kernel_dispatch_rows") == "0"
    no_copies = meta.get("memory_copy_rows") == "0"
    if not (no_dispatches or no_copies) or not rel.available("api_calls"):
        return
    counts = dict(rel.query("SELECT kind, count(*) FROM pa_api_calls "
                            "WHERE kind IN ('launch', 'graph_launch', 'memcpy', 'memcpy_async', 'memset') "
                            "GROUP BY kind"))
    launches = int(counts.get("launch", 0)) + int(counts.get("graph_launch", 0))
    memcpys = int(counts.get("memcpy", 0)) + int(counts.get("memcpy_async", 0))
    missing_kernels = no_dispatches and launches > 0
    missing_copies = no_copies and memcpys > 0
    if not (missing_kernels or missing_copies):
        return  # an empty table with no host call asking for it is simply "none happened"
    host: dict[str, int] = {"host_launch_calls": launches, "host_memcpy_calls": memcpys,
                            "host_memset_calls": int(counts.get("memset", 0))}
    if memcpys:
        for direction, n, nbytes in rel.query(memcpy_args_sql(v4)):
            host[f"host_memcpy_calls_{direction}"] = int(n)
            if nbytes is not None:
                host[f"host_memcpy_bytes_{direction}"] = int(nbytes)
    summary.host_side = {**(summary.host_side or {}), **host}
    if missing_copies:
        summary.copies = None
        summary.skipped.append(SkippedItem(
            what="copies", reason=f"rocpd_memory_copy is empty although the host made {memcpys} hipMemcpy "
                                  "call(s) (degraded capture); host-requested bytes are in host_side"))
    if missing_copies and not missing_kernels:
        # The kernel-side warning comes from the vendor-neutral check; a copy-only loss needs its own.
        summary.warnings.append(
            f"degraded capture: the host made {memcpys} hipMemcpy call(s) but rocpd_memory_copy is empty; "
            "copy metrics are not measured (host-requested bytes by direction are in host_side).")
