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

Both read relations of the rocpd query set, never the file's tables: the host's copy requests are
the `memcpy_requests` relation (queries/rocpd/3/memcpy_requests.sql: call arguments are a rocpd
notion with no Nsight Systems counterpart, so only rocpd sets have it), and whether the writer
registered an MPI category is the `mpi_category` key of `meta`.
"""

from __future__ import annotations

from pa.metrics.model import ProfileSummary, SkippedItem
from pa.profile.relations import Relations


def rocpd_capture_checks(rel: Relations, summary: ProfileSummary) -> None:
    """Apply the rocpd coverage facts to `summary` in place; a no-op for other formats."""
    if not rel.query_set.name.startswith("rocpd"):
        return
    meta = dict(rel.query("SELECT key, value FROM pa_meta")) if rel.available("meta") else {}
    _mpi_coverage(summary, meta)
    _host_side_recovery(rel, summary, meta)


def _mpi_coverage(summary: ProfileSummary, meta: dict[str, str]) -> None:
    """Turn "no MPI regions" into "MPI not traced" when the file cannot hold MPI calls."""
    if summary.mpi is None or summary.mpi.call_count:
        return
    if meta.get("mpi_category") == "1":
        return  # the writer traced MPI (the category is registered) and saw no call
    if meta.get("product") == "rocprofv3":
        reason = "rocprofv3 does not trace MPI calls; capture with rocprof-sys (ROCPROFSYS_USE_MPIP=true)"
    else:
        reason = ("no MPI regions in this rocpd file: MPI tracing was off (rocprof-sys: "
                  "ROCPROFSYS_USE_MPIP=true) or the program made no MPI call")
    summary.mpi = None
    summary.skipped.append(SkippedItem(what="mpi", reason=reason))


def _host_side_recovery(rel: Relations, summary: ProfileSummary, meta: dict[str, str]) -> None:
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
    if memcpys and rel.available("memcpy_requests"):
        for direction, n, nbytes in rel.query("SELECT direction, count(*), sum(bytes) FROM pa_memcpy_requests "
                                              "GROUP BY 1 ORDER BY 1"):
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
