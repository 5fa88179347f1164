"""Every real Nsight Systems export summarises, and its numbers match an independent computation.

The reference here reads the raw export tables with plain SQL and merges intervals with a simple
pure-Python sweep; it shares no code with pa.metrics or the query files.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from conftest import missing_reason, needs_real_profile, real_nsys_profile
from reference import reference_union  # tests/ is on sys.path

from pa.metrics.summarize import summarize

OPENMP_T4 = real_nsys_profile("nsys2023.3_openmp_t4.sqlite")
CLOVERLEAF = real_nsys_profile("nsys2024.5_cloverleaf_a100.sqlite")
DIRECTION_BY_LABEL = {
    "Host-to-Device": "HtoD", "Device-to-Host": "DtoH", "Device-to-Device": "DtoD",
    "Peer-to-Peer": "PtoP", "Host-to-Host": "HtoH",
}
# CUPTI CUpti_ActivityMemcpyKind, for exports without ENUM tables.
CUPTI_COPY_KIND = {1: "HtoD", 2: "DtoH", 8: "DtoD", 9: "HtoH", 10: "PtoP"}


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@pytest.fixture
def ref(real_profile: Path):
    conn = sqlite3.connect(f"file:{real_profile}?mode=ro&immutable=1", uri=True)
    yield conn, _tables(conn)
    conn.close()


def test_kernel_count_time_and_top_kernels(summary_of, real_profile, ref):
    conn, tables = ref
    s = summary_of(real_profile)
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
        assert s.gpu.kernel_count == 0
        assert any(k.what == "kernels" for k in s.skipped), "absent kernel table must be reported as skipped"
        return
    count, total = conn.execute(
        'SELECT count(*), coalesce(sum("end" - start), 0) FROM CUPTI_ACTIVITY_KIND_KERNEL '
        'WHERE "end" >= start').fetchone()
    assert s.gpu.kernel_count == count
    assert s.gpu.kernel_time_ns == total
    top = conn.execute(
        'SELECT v.value, sum(k."end" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k '
        'JOIN StringIds v ON v.id = k.demangledName GROUP BY k.demangledName ORDER BY 2 DESC LIMIT 5').fetchall()
    got = {k.name: k.total_ns for k in s.kernels}
    for name, ns in top:
        assert got[name] == ns
    assert sum(k.count for k in s.kernels) == count


def test_busy_per_device_is_the_union_of_kernels_copies_and_memsets(summary_of, real_profile, ref):
    conn, tables = ref
    s = summary_of(real_profile)
    per_device: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if t in tables:
            for d, a, b in conn.execute(f'SELECT deviceId, start, "end" FROM {t} WHERE "end" >= start'):
                per_device[d].append((a, b))
    got = {d.id: d.busy_ns for d in s.devices if d.used}
    assert set(got) == set(per_device)
    for d, ivs in per_device.items():
        assert got[d] == reference_union(ivs)
        assert got[d] <= s.span_ns
    for d in s.devices:
        if d.utilization_pct is not None:
            assert 0 <= d.utilization_pct <= 100


def test_copy_bytes_per_direction(summary_of, real_profile, ref):
    conn, tables = ref
    s = summary_of(real_profile)
    if "CUPTI_ACTIVITY_KIND_MEMCPY" not in tables:
        assert s.copies is None
        return
    expected: dict[str, int] = defaultdict(int)
    migrated = [0, 0]   # unified-memory migrations: the driver's page moves, not explicit copies
    if "ENUM_CUDA_MEMCPY_OPER" in tables:
        rows = conn.execute('SELECT e.label, m.bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY m '
                            'JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind WHERE m."end" >= m.start')
        for label, b in rows:
            if label.startswith("Unified"):
                migrated[0] += 1
                migrated[1] += b
            else:
                expected[DIRECTION_BY_LABEL.get(label, label)] += b
    else:
        for kind, b in conn.execute('SELECT copyKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE "end" >= start'):
            expected[CUPTI_COPY_KIND[kind]] += b
    got = {t.direction: t.bytes for t in s.copies.by_direction}
    assert got == dict(expected)
    if migrated[0]:
        assert s.copies.migrations is not None
        assert (s.copies.migrations.count, s.copies.migrations.bytes) == tuple(migrated)
    else:
        assert s.copies.migrations is None


def test_every_device_row_is_listed(summary_of, real_profile, ref):
    conn, tables = ref
    s = summary_of(real_profile)
    if "TARGET_INFO_GPU" in tables and "cuDevice" in {r[1] for r in conn.execute("PRAGMA table_info(TARGET_INFO_GPU)")}:
        rows = conn.execute("SELECT cuDevice, busLocation FROM TARGET_INFO_GPU").fetchall()
        got = {d.id: d.bus_location for d in s.devices}
        assert {c for c, _ in rows} <= set(got), "every GPU row counts, not only the first"
        for cu, bus in rows:  # the device number the activity rows carry is the CUDA ordinal
            assert got[cu] == bus


def test_profile_is_not_modified_and_no_sidecar_files(real_profile, tmp_path):
    import hashlib
    import shutil

    work = tmp_path / real_profile.name  # a writable copy, so a sidecar file *could* appear
    shutil.copy2(real_profile, work)
    before = (hashlib.sha256(work.read_bytes()).hexdigest(), work.stat().st_mtime_ns)
    summarize(work)
    after = (hashlib.sha256(work.read_bytes()).hexdigest(), work.stat().st_mtime_ns)
    assert before == after
    assert sorted(p.name for p in tmp_path.iterdir()) == [real_profile.name]


MEM_KIND_BY_LABEL = {"Pageable": "pageable", "Pinned": "pinned", "Device": "device", "Device Static": "device",
                     "Managed": "managed", "Managed Static": "managed", "Array": "array"}


def test_copy_groups_by_direction_and_memory_kind(summary_of, real_profile, ref):
    """Copy groups (computed in numpy from one scan) equal a SQL GROUP BY over the raw table."""
    conn, tables = ref
    if "CUPTI_ACTIVITY_KIND_MEMCPY" not in tables or not {"ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND"} <= tables:
        pytest.skip("needs the copy table and its ENUM tables")
    s = summary_of(real_profile)
    expected: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for op, src, dst, n, b, t in conn.execute(
            'SELECT o.label, sk.label, dk.label, count(*), sum(m.bytes), sum(m."end" - m.start) '
            "FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind "
            "LEFT JOIN ENUM_CUDA_MEM_KIND sk ON sk.id = m.srcKind LEFT JOIN ENUM_CUDA_MEM_KIND dk ON dk.id = m.dstKind "
            'WHERE m."end" >= m.start AND o.label NOT LIKE \'Unified%\' GROUP BY 1, 2, 3'):   # migrations: above
        key = (DIRECTION_BY_LABEL.get(op, op), MEM_KIND_BY_LABEL.get(src, "unknown"),
               MEM_KIND_BY_LABEL.get(dst, "unknown"))
        for i, v in enumerate((n, b, t)):
            expected[key][i] += v
    got = {(c.direction, c.src_kind, c.dst_kind): [c.count, c.bytes, c.total_ns] for c in s.copies.by_kind}
    assert got == dict(expected)
    totals = [t.total_ns for t in s.copies.by_direction]
    assert totals == sorted(totals, reverse=True)


# ---- facts the findings' counterfactuals rest on, against raw SQL -------------------------------------

_SPAN_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS",
                "PROFILER_OVERHEAD", "OSRT_API", "MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS",
                "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS")
_GPU_API = ("cudaLaunch", "cuLaunch", "cudaGraphLaunch", "cuGraphLaunch", "cudaMemcpy", "cuMemcpy", "cudaMemset",
            "cuMemset", "cudaMalloc", "cudaHostAlloc", "cuMemAlloc", "cuMemHostAlloc", "cudaFree", "cuMemFree",
            "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
            "cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize")


def test_span_is_first_to_last_event_of_every_kind_os_runtime_included(summary_of, real_profile, ref):
    conn, tables = ref
    s = summary_of(real_profile)
    lo = hi = None
    for t in _SPAN_TABLES:
        if t in tables:
            a, b = conn.execute(f'SELECT min(start), max("end") FROM {t} WHERE "end" >= start').fetchone()
            if a is not None:
                lo, hi = (a, b) if lo is None else (min(lo, a), max(hi, b))
    assert (s.span_start_ns, s.span_end_ns) == (lo, hi)
    assert s.captured["os_calls"] == ("OSRT_API" in tables and
                                      conn.execute("SELECT count(*) FROM OSRT_API").fetchone()[0] > 0)
    assert s.captured["cpu_samples"] == ("COMPOSITE_EVENTS" in tables and
                                         conn.execute("SELECT count(*) FROM COMPOSITE_EVENTS").fetchone()[0] > 0)


def test_host_blocked_share_is_per_process_and_never_above_100(summary_of, real_profile, ref):
    conn, tables = ref
    s = summary_of(real_profile)
    if "CUPTI_ACTIVITY_KIND_RUNTIME" not in tables:    # a CPU-only export: no GPU API, nothing blocked on it
        assert s.sync is None or s.sync.cpu_blocked_ns == 0
        return
    names = dict(conn.execute("SELECT id, value FROM StringIds"))
    blocked: dict[int, list[tuple[int, int]]] = defaultdict(list)
    gpu_pids = set()
    for start, end, name_id, pid in conn.execute(
            'SELECT start, "end", nameId, (globalTid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_RUNTIME'):
        name = names.get(name_id, "")
        if name.startswith(_GPU_API):
            gpu_pids.add(pid)
        if "Synchronize" in name and name.startswith(("cuda", "cu")) and "StreamWait" not in name:
            blocked[pid].append((start, end))
    total = sum(reference_union(v) for v in blocked.values())
    assert s.sync is not None and s.sync.cpu_blocked_ns == total
    assert s.sync.process_count == len(gpu_pids)
    assert s.sync.cpu_blocked_pct_of_span == pytest.approx(100.0 * total / (s.span_ns * len(gpu_pids)))
    assert s.sync.cpu_blocked_pct_of_span <= 100.0


def test_launch_latency_is_never_negative_and_early_starts_are_counted(summary_of, real_profile, ref):
    conn, tables = ref
    s = summary_of(real_profile)
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables or s.launch is None:
        pytest.skip("no kernels to match to launches")
    # Per kernel, its launch call; an export that records one call twice, nested (cudaLaunchKernel around
    # cudaLaunchKernel_v7000, same correlation id: saxpy_mpi_2022), holds one launch: the outer call.
    early = conn.execute(
        "SELECT count(*) FROM (SELECT k.start AS ks, max(r.\"end\") AS re FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        "ON r.correlationId = k.correlationId AND ((r.globalTid >> 24) & 16777215) = ((k.globalPid >> 24) & 16777215) "
        "JOIN StringIds n ON n.id = r.nameId "
        "WHERE (n.value LIKE 'cudaLaunch%' OR n.value LIKE 'cuLaunch%' OR n.value LIKE '%GraphLaunch%') "
        "GROUP BY k.rowid) WHERE ks < re").fetchone()[0]
    assert s.launch.started_before_return == early
    for a in s.launch.by_api:
        for v in (a.latency_mean_ns, a.latency_median_ns, a.latency_p95_ns):
            assert v is None or v >= 0


def test_pinned_estimate_of_pageable_copies_from_raw_rows(summary_of, real_profile, ref):
    conn, tables = ref
    s = summary_of(real_profile)
    if s.copies is None or "ENUM_CUDA_MEM_KIND" not in tables or "ENUM_CUDA_MEMCPY_OPER" not in tables:
        pytest.skip("needs the copy table and its ENUM tables")
    rows = conn.execute(
        'SELECT o.label, sk.label, dk.label, m.bytes, m."end" - m.start FROM CUPTI_ACTIVITY_KIND_MEMCPY m '
        "JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind JOIN ENUM_CUDA_MEM_KIND sk ON sk.id = m.srcKind "
        'JOIN ENUM_CUDA_MEM_KIND dk ON dk.id = m.dstKind WHERE m."end" >= m.start').fetchall()
    for c in s.copies.by_kind:
        pageable_side = (c.direction == "HtoD" and c.src_kind == "pageable") or \
                        (c.direction == "DtoH" and c.dst_kind == "pageable")
        if not pageable_side:
            assert c.pinned_estimate_ns is None
            continue
        direction = [k for k, v in DIRECTION_BY_LABEL.items() if v == c.direction]
        same_dir = [r for r in rows if r[0] in direction]
        pinned_big = [r for r in same_dir if (r[1] if c.direction == "HtoD" else r[2]).lower().startswith("pinned")
                      and r[3] >= 1 << 20 and r[4] > 0]
        if pinned_big:
            measured = sum(r[3] for r in pinned_big) / sum(r[4] for r in pinned_big) * 1e9
            assert c.pinned_rate_bps == pytest.approx(measured)
        elif c.pinned_rate_bps is None:
            continue                        # the link is unknown: no estimate, the finding cannot be bounded
        else:
            assert c.pinned_rate_bps == c.peak_bandwidth_bps
        small = [r[4] for r in same_dir if r[3] <= 64 << 10 and r[4] > 0]
        floor = min(small) if small else 0
        mine = [r for r in same_dir if r[1].lower().startswith(c.src_kind) and r[2].lower().startswith(c.dst_kind)]
        rate = c.pinned_rate_bps
        want = sum(min(r[4], max(int(np.ceil(r[3] / rate * 1e9)), floor)) for r in mine)
        assert c.pinned_estimate_ns == pytest.approx(want, abs=len(mine))
        assert c.pinned_estimate_ns <= c.total_ns


@needs_real_profile(OPENMP_T4)
def test_openmp_t4_pinning_bound_by_hand(summary_of):
    p = OPENMP_T4
    s = summary_of(p)
    assert s.copies is not None
    by = {(c.direction, c.src_kind, c.dst_kind): c for c in s.copies.by_kind}
    # 100 copies of 512 MB each way; a Tesla T4 is PCIe 3.0 x16: 15.75 GB/s per direction
    for key in (("HtoD", "pageable", "device"), ("DtoH", "device", "pageable")):
        c = by[key]
        assert c.bytes == 100 * 512_000_000 and c.pinned_rate_bps == 15_750_000_000
        assert c.pinned_estimate_ns == pytest.approx(100 * 512_000_000 / 15.75, rel=1e-6)   # 3.25 s


def test_kernels_sharing_a_short_name_are_told_apart(summary_of, real_profile):
    s = summary_of(real_profile)
    labels = [k.display_name for k in s.kernels]
    assert len(set(labels)) == len(labels), "every kernel has its own display name"
    by_short: dict[str, list[str]] = defaultdict(list)
    for k in s.kernels:
        by_short[k.short_name or k.name].append(k.display_name or "")
    for short, names in by_short.items():
        assert all(n.startswith(short) for n in names)
        if len(names) == 1:
            assert names == [short]          # a unique short name is shown as it is


@needs_real_profile(CLOVERLEAF)
def test_cloverleaf_functors_name_their_kernels(summary_of):
    p = CLOVERLEAF
    labels = {k.display_name for k in summary_of(p).kernels}
    # nine templates shorten to par_ranged2d_kernel; the functor each one runs tells them apart
    for functor in ("PdV_kernel", "accelerate_kernel", "viscosity_kernel", "ideal_gas_kernel"):
        assert any(lb and lb.startswith(f"par_ranged2d_kernel<{functor}>") for lb in labels), functor


def test_key_metrics_split_copies_by_kind(real_profile, ref, real_report):
    """The report's copy line: host<->device, device<->device, peer and migrations, each against raw SQL."""
    import json

    conn, tables = ref
    report = json.loads(real_report(real_profile, "json"))
    doc = report["summary"]
    if "CUPTI_ACTIVITY_KIND_MEMCPY" not in tables or "ENUM_CUDA_MEMCPY_OPER" not in tables:
        pytest.skip("needs the copy table and its ENUM table")
    # An export of several GPU processes is a rank set: the key metrics are the primary rank's process.
    cr = report.get("cross_rank")
    pid = next((r["pid"] for r in cr["ranks"] if r["rank"] == cr["primary_rank"]), None) if cr else None
    by_label = dict(conn.execute(
        'SELECT o.label, sum(m.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER o '
        'ON o.id = m.copyKind WHERE m."end" >= m.start AND (? IS NULL OR (m.globalPid >> 24) & 16777215 = ?) '
        'GROUP BY 1', (pid, pid)))
    host = sum(by_label.get(k, 0) for k in ("Host-to-Device", "Device-to-Host", "Host-to-Host"))
    assert doc["host_copy_bytes"] == host
    assert doc["device_copy_bytes"] == by_label.get("Device-to-Device", 0)
    assert doc["peer_copy_bytes"] == by_label.get("Peer-to-Peer", 0)
    migrated = sum(v for k, v in by_label.items() if k.startswith("Unified"))
    assert doc["migrated_bytes"] == (migrated or None)


def test_mpi_time_leaves_init_and_finalize_apart(summary_of):
    """saxpy_mpi_2022 records MPI as NVTX ranges; 646 ms of its MPI time is MPI_Init (start-up)."""
    path, rows = _rows_of("saxpy_mpi_2022.sqlite",
                          "SELECT coalesce(n.text, s.value), n.start, n.\"end\" FROM NVTX_EVENTS n "
                          "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.\"end\" > n.start")
    mpi = [(t, a, b) for t, a, b in rows if t and t.startswith("MPI_")]
    setup = [(a, b) for t, a, b in mpi if t in ("MPI_Init", "MPI_Init_thread", "MPI_Finalize")]
    run = [(a, b) for t, a, b in mpi if t not in ("MPI_Init", "MPI_Init_thread", "MPI_Finalize")]
    s = summary_of(path)
    assert s.mpi is not None and setup and run
    assert s.mpi.setup_ns == reference_union(setup) and s.mpi.setup_call_count == len(setup)
    assert s.mpi.total_ns == reference_union(run) and s.mpi.call_count == len(run)
    assert s.mpi.setup_ns > s.mpi.total_ns          # the start-up dwarfs the run's communication here


def test_synchronous_copies_block_the_host_for_the_whole_call(summary_of, real_report):
    """saxpy_mpi_2022: 15 pageable cudaMemcpy (each recorded twice, nested) hold the host 374 ms; only 5
    return after their copy ends, but every synchronous copy waits for the GPU by contract."""
    import json

    path, rows = _rows_of("saxpy_mpi_2022.sqlite",
                          "SELECT r.start, r.\"end\" FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                          "ON s.id = r.nameId WHERE s.value IN ('cudaMemcpy', 'cudaMemcpy_v3020')")
    s = summary_of(path)
    assert s.sync is not None and s.sync.blocking_copy_ns == reference_union(rows)
    assert s.sync.blocking_copy_calls == 15          # the nested duplicate records count once
    doc = json.loads(real_report(path, "json"))["summary"]
    assert doc["cpu_blocked_in_copies_ns"] == reference_union(rows)
    assert doc["mpi_setup_ns"] == s.mpi.setup_ns > 0


def test_an_implausibly_slow_copy_is_said_not_silently_used(tmp_path):
    """Issue 24.7: a 96-byte copy recorded as taking milliseconds (a writer bug) is warned about."""
    from testkit.facts import scenario_from_facts
    from testkit.nsys_writer import write_nsys

    fast = scenario_from_facts([{"repeat": 5, "steps": [{"copy": "HtoD", "bytes": 96, "gbps": 0.01},
                                                        {"launch": "k", "us": 50}]}])
    s = summarize(write_nsys(fast, tmp_path / "fast.sqlite"))
    assert not any("implausibly slow" in w for w in s.warnings)        # 96 B at 10 MB/s: ~10 µs, plausible
    slow = scenario_from_facts([{"repeat": 5, "steps": [{"copy": "HtoD", "bytes": 96, "gbps": 0.00003},
                                                        {"launch": "k", "us": 50}]}])
    s = summarize(write_nsys(slow, tmp_path / "slow.sqlite"))
    assert any(w.startswith("5 copy record(s) are implausibly slow (e.g. 96 B in 3.2") for w in s.warnings), s.warnings


def test_start_up_is_named_by_its_longest_call(summary_of):
    """nsys2022.1_dlprof_2streams: the first cudaMalloc takes ~2 s of the 2.2 s before the first GPU
    operation (context creation); CAP-WARMUP-001 names it, and without one the sentence is left out."""
    from pa.rules.engine import load_ruleset
    from pa.rules.evaluate import evaluate

    path = real_nsys_profile("nsys2022.1_dlprof_2streams.sqlite")
    if not path.is_file():
        pytest.skip(missing_reason(path))
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    first = conn.execute("SELECT min(s) FROM (SELECT min(start) s FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL "
                         "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY)").fetchone()[0]
    name, dur = conn.execute('SELECT s.value, r."end" - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s '
                             'ON s.id = r.nameId WHERE r."end" <= ? ORDER BY r."end" - r.start DESC LIMIT 1',
                             (first,)).fetchone()
    conn.close()
    s = summary_of(path)
    assert s.startup_call is not None and (s.startup_call.name, s.startup_call.duration_ns) == (name, dur)
    assert name.startswith("cudaMalloc") and dur > 1_900_000_000
    warm = next(h for h in evaluate(s, load_ruleset()).hypotheses if h.rule_id == "CAP-WARMUP-001")
    assert any(name in e.text for e in warm.evidence)
    bare = s.model_copy(update={"startup_call": None})
    warm = next(h for h in evaluate(bare, load_ruleset()).hypotheses if h.rule_id == "CAP-WARMUP-001")
    assert all(e.text.strip() for e in warm.evidence) and not any("longest GPU API call" in e.text
                                                                  for e in warm.evidence)


def _rows_of(name: str, sql: str, params: tuple = ()) -> tuple[Path, list[tuple]]:
    """(path, rows of `sql`) on the real export `name`, read-only; the test is skipped when it is absent."""
    path = real_nsys_profile(name)
    if not path.is_file():
        pytest.skip(missing_reason(path))
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return path, conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_a_capture_without_a_steady_state_says_it_was_judged_whole(real_report):
    """nsys2022.1_dlprof_2streams: one 5 ms pass of autotuning kernels after 2.2 s of start-up; the
    headline speaks of the capture, not of a steady-state window it does not have."""
    import json

    path = real_nsys_profile("nsys2022.1_dlprof_2streams.sqlite")
    if not path.is_file():
        pytest.skip(missing_reason(path))
    doc = json.loads(real_report(path, "json"))
    assert doc["summary"]["steady_state"] is False
    assert doc["summary"]["analysis_window_ns"] == doc["summary"]["span_ns"]
    assert doc["headline"]["text"].endswith("No finding demonstrates a gain of medium or high impact in this capture.")
    assert "no steady state in it" in real_report(path, "text")


def test_round_trip_saving_keeps_every_buffer_uploaded_before_the_first_kernel(summary_of, real_profile, ref):
    """Issue 25, item 10: two buffers of one size uploaded before the first kernel are two initial uploads.

    Reference, in SQL over the raw copy table: for each size copied up and down at least twice each way,
    per device, the uploads starting at/after the device's first kernel and the downloads ending at/before
    its last kernel go; if no upload precedes the first kernel the earliest one stays (likewise the latest
    download). openmp_t4: 25.72 s, not 25.95; saxpy: 228 ms, not 246.
    """
    conn, tables = ref
    s = summary_of(real_profile)
    if s.copies is None or "CUPTI_ACTIVITY_KIND_MEMCPY" not in tables or "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
        pytest.skip("no copies or no kernels in this export")
    cols = {r[1] for r in conn.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_MEMCPY)")}
    migration = "AND migrationKind IS NULL" if "migrationKind" in cols else ""
    rows = conn.execute(f"""
        SELECT m.deviceId, m.copyKind, m.bytes, m.start, m."end", k.s, k.e
        FROM CUPTI_ACTIVITY_KIND_MEMCPY m
        LEFT JOIN (SELECT deviceId, min(start) AS s, max("end") AS e FROM CUPTI_ACTIVITY_KIND_KERNEL
                   GROUP BY deviceId) k USING (deviceId)
        WHERE m.copyKind IN (1, 2) AND m.bytes > 0 AND m."end" >= m.start {migration}""").fetchall()
    by_size: dict[int, dict[int, list[tuple]]] = defaultdict(lambda: {1: [], 2: []})
    for dev, kind, nbytes, start, end, ks, ke in rows:
        by_size[nbytes][kind].append((dev, start, end, ks, ke))
    want = 0
    for trips in by_size.values():
        if len(trips[1]) < 2 or len(trips[2]) < 2:
            continue
        for dev in {t[0] for t in trips[1] + trips[2]}:
            up = [t for t in trips[1] if t[0] == dev]
            down = [t for t in trips[2] if t[0] == dev]
            if not (up or down) or (up or down)[0][3] is None:
                continue
            ks, ke = (up or down)[0][3:5]
            gone_up = [t for t in up if t[1] >= ks]
            if up and len(gone_up) == len(up):
                gone_up.remove(min(up, key=lambda t: t[1]))
            gone_down = [t for t in down if t[2] <= ke]
            if down and len(gone_down) == len(down):
                gone_down.remove(max(down, key=lambda t: t[2]))
            want += sum(t[2] - t[1] for t in gone_up + gone_down)
    assert s.copies.round_trip_resident_saving_ns == want
    if real_profile == OPENMP_T4:
        assert want == 25_722_535_531
    if real_profile.name == "saxpy_mpi_2022.sqlite":
        assert want == 228_075_234


def test_compute_busy_says_the_nccl_kernels_it_leaves_out(summary_of):
    """Issue 25, item 2: mfu_before's GPU-BUSY text said 85.2 % beside 89.2 % in the key metrics, one
    leaving NCCL out, neither saying so. The share of the window NCCL kernels keep busy is stated beside
    it, checked here against the union of the ncclDevKernel intervals per device by SQL."""
    from pa.rules.evaluate import evaluate
    from pa.rules.loader import load_ruleset
    path, rows = _rows_of("mfu_before.sqlite",
                          "SELECT k.deviceId, k.start, k.\"end\" FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                          "JOIN StringIds s ON s.id = k.demangledName WHERE s.value LIKE '%ncclDevKernel%'")
    s = summary_of(path)
    want = sum(reference_union([(a, b) for d, a, b in rows if d == dev]) for dev in {r[0] for r in rows})
    assert want > 0 and s.gpu.communication_busy_ns == want
    busy = next(h for h in evaluate(s, load_ruleset()).hypotheses if h.rule_id == "GPU-BUSY-001")
    text = busy.evidence[0].text
    assert "Compute kernels" in text and "communication kernels" in text
    assert f"{100 * want / s.gpu.window_ns:.1f} %" in text
