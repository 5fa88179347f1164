"""Tests of the Nsight Systems fixture writer and the planted scenarios.

Every check on a written file is direct SQL on that file (never the code under test), and the DDL is
compared with the real exports in ../shared/profiles/nsys when that folder exists.
"""

from __future__ import annotations

import itertools
import random
import sqlite3
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conftest import missing_reason, needs_real_profile, real_nsys_profile
from reference import reference_union  # tests/ is on sys.path
from testkit.nsys_writer import write_nsys
from testkit.scenario import (
    ApiCall,
    Copy,
    Device,
    Kernel,
    Marker,
    Memset,
    MpiCall,
    Overhead,
    Process,
    Scenario,
    Sync,
)
from testkit.scenarios import ALL_SCENARIOS, example, scaled

LAYOUTS = ("3.13", "3.24", "2.9", "legacy")
MODERN = ("3.13", "3.24")
BOTTLENECK_TYPES = {"compute_bound", "memory_bound", "mpi_latency", "mpi_imbalance",
                    "cpu_launch_overhead", "synchronization", "io", "allocation", "compilation",
                    "communication", "other"}

# Integers of the 2022.1 export (no ENUM tables there), written independently of the writer.
RAW_COPY_KIND = {"HtoD": 1, "DtoH": 2, "DtoD": 8, "HtoH": 9, "PtoP": 10}
RAW_MEM_KIND = {"pageable": 0, "pinned": 1, "device": 2, "managed": 4}
RAW_SYNC = {"event": 1, "stream_wait": 2, "stream": 3, "context": 4}
COPY_LABEL = {"HtoD": "Host-to-Device", "DtoH": "Device-to-Host", "DtoD": "Device-to-Device",
              "PtoP": "Peer-to-Peer", "HtoH": "Host-to-Host"}
MEM_LABEL = {"pageable": "Pageable", "pinned": "Pinned", "device": "Device", "managed": "Managed"}
SYNC_LABEL = {"event": "Event sync", "stream_wait": "Stream wait sync", "stream": "Stream sync",
              "context": "Context sync"}
VM = 1 << 48


def _mixed() -> Scenario:
    """Every event kind, two devices, two processes, both NVTX kinds and an open range."""
    rng = random.Random(99)
    devs = [Device(id=0, bus_location="0000:07:00.0"),
            Device(id=1, name="NVIDIA H100 80GB HBM3", sm_count=132, clock_hz=1_980_000_000,
                   compute_capability=(9, 0), bus_location="0000:0b:00.0")]
    procs = [Process(100, "a.out", {100: "a.out", 101: "worker"}, rank=0),
             Process(200, "a.out", {200: "a.out"}, rank=1)]
    sc = Scenario("mixed", "writer test", devs, procs, host_name="node-x42")
    t = 10_000
    dirs = [("HtoD", "pageable", "device"), ("HtoD", "pinned", "device"), ("DtoH", "device", "pinned"),
            ("DtoD", "device", "device"), ("PtoP", "device", "device"), ("HtoH", "pinned", "pageable"),
            ("HtoD", "managed", "device")]
    for i in range(60):
        pid, dev = (100, 0) if i % 2 == 0 else (200, 1)
        c = i + 1
        sc.api_calls.append(ApiCall(pid, pid, t, t + 3000, "launch", c,
                                    "cudaLaunchKernelExC_v11060" if i == 7 else None))
        sc.kernels.append(Kernel(pid, dev, 7 + i % 3, t + 4000, t + 4000 + rng.randint(1000, 9000),
                                 f"void k{i % 4}<float>(float*)", grid=(rng.randint(1, 500), 2, 1),
                                 static_shared_bytes=1024 * (i % 3), dynamic_shared_bytes=512 * (i % 2),
                                 correlation_id=c))
        d, s, dd = dirs[i % len(dirs)]
        sc.copies.append(Copy(pid, dev, 20, t, t + 2000, rng.randint(1, 1 << 24), d, s, dd,  # type: ignore[arg-type]
                              dst_device=1 - dev if d == "PtoP" else None, correlation_id=1000 + c))
        sc.syncs.append(Sync(pid, dev, 7, t + 5000, t + 6000,
                             ("event", "stream_wait", "stream", "context")[i % 4], 2000 + c))  # type: ignore[arg-type]
        t += 20_000
    sc.memsets += [Memset(100, 0, 7, 50_000 + i * 10_000, 52_000 + i * 10_000, 4096 * (i + 1))
                   for i in range(5)]
    sc.api_calls += [ApiCall(100, 101, 5_000_000 + i * 10_000, 5_000_000 + i * 10_000 + 800, k)
                     for i, k in enumerate(("memcpy", "memcpy_async", "memset", "device_sync", "stream_sync",
                                            "event_sync", "malloc", "free", "other", "graph_launch"))]
    for i in range(12):
        sc.markers.append(Marker(100, 100 + i % 2, 20_000 * i, 20_000 * i + 15_000, f"range {i % 5}",
                                 "push_pop" if i % 3 else "start_end", ("app", None, "io")[i % 3]))
    sc.markers.append(Marker(100, 100, 900_000, 899_999, "still open", "push_pop", "app"))
    sc.mpi_calls += [MpiCall(100, 100, 2_000_000, 2_100_000, "MPI_Allreduce", "collective", 64, 0),
                     MpiCall(200, 200, 2_050_000, 2_100_000, "MPI_Allreduce", "collective", 64, 1),
                     MpiCall(100, 100, 2_200_000, 2_210_000, "MPI_Isend", "p2p", 128, 0),
                     MpiCall(100, 100, 2_210_000, 2_300_000, "MPI_Wait", "wait", 0, 0),
                     MpiCall(200, 200, 2_200_000, 2_210_000, "MPI_Irecv", "p2p", 128, 1),
                     MpiCall(200, 200, 2_400_000, 2_400_500, "MPI_Comm_rank", "other", 0, 1)]
    sc.overhead.append(Overhead(100, 100, 3_000_000, 3_500_000))
    return sc


@pytest.fixture(scope="module")
def mixed() -> Scenario:
    return _mixed()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, mixed: Scenario) -> dict[tuple[str, bool], Path]:
    d = tmp_path_factory.mktemp("nsys")
    out = {}
    for lay in LAYOUTS:
        out[(lay, False)] = write_nsys(mixed, d / f"{lay}.sqlite", layout=lay)
    for lay in MODERN:
        out[(lay, True)] = write_nsys(mixed, d / f"{lay}_perm.sqlite", layout=lay, permute_enums=True)
    return out


def q(path: Path, sql: str, args: tuple = ()) -> list[tuple]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute(sql, args).fetchall()


def tables(path: Path) -> set[str]:
    return {r[0] for r in q(path, "SELECT name FROM sqlite_master WHERE type='table'")}


def columns(path: Path, table: str) -> list[tuple[str, str, int]]:
    return [(r[1], r[2], r[3]) for r in q(path, f"PRAGMA table_info('{table}')")]


# ------------------------------------------------------------------------------------------------
# Counts, sums and enum decoding straight from SQL.
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_kernel_count_and_total_duration(files: dict, mixed: Scenario, layout: str) -> None:
    sql = "SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"
    n, total = q(files[(layout, False)], sql)[0]
    assert n == len(mixed.kernels)
    assert total == sum(k.end - k.start for k in mixed.kernels)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_kernel_names_and_shapes(files: dict, mixed: Scenario, layout: str) -> None:
    rows = q(files[(layout, False)],
             "SELECT s.value, k.gridX, k.gridY, k.blockX, k.deviceId, k.streamId, k.correlationId "
             "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName ORDER BY k.start")
    want = sorted(((k.name, k.grid[0], k.grid[1], k.block[0], k.device, k.stream, k.correlation_id)
                   for k in mixed.kernels), key=lambda r: r[-1])
    assert sorted(rows, key=lambda r: r[-1]) == want
    shorts = {r[0] for r in q(files[(layout, False)], "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                                                      "JOIN StringIds s ON s.id = k.shortName")}
    assert shorts == {"k0", "k1", "k2", "k3"}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_shared_memory_executed_is_carveout_not_request(files: dict, layout: str) -> None:
    same = q(files[(layout, False)], "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                                     "WHERE sharedMemoryExecuted = staticSharedMemory + dynamicSharedMemory "
                                     "OR sharedMemoryExecuted IS NULL")[0][0]
    assert same == 0
    assert q(files[(layout, False)], "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
             "WHERE staticSharedMemory + dynamicSharedMemory > 0")[0][0] > 0


def _copy_bytes_sql(layout: str) -> str:
    if layout in MODERN:
        return ("SELECT e.label, sum(m.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
                "JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind GROUP BY e.label")
    if layout == "legacy":
        return ("SELECT o.name, sum(m.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
                "JOIN MemcpyOperationStrings o ON o.id = m.copyKind GROUP BY o.name")
    return "SELECT copyKind, sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_copy_bytes_per_direction(files: dict, mixed: Scenario, layout: str) -> None:
    want: dict[object, int] = defaultdict(int)
    for c in mixed.copies:
        key: object = {"3.13": COPY_LABEL[c.direction], "3.24": COPY_LABEL[c.direction],
                       "legacy": f"[CUDA memcpy {c.direction}]", "2.9": RAW_COPY_KIND[c.direction]}[layout]
        want[key] += c.bytes
    assert dict(q(files[(layout, False)], _copy_bytes_sql(layout))) == dict(want)


@pytest.mark.parametrize("layout", MODERN)
@pytest.mark.parametrize("permuted", [False, True])
def test_copy_memory_kinds_by_label(files: dict, mixed: Scenario, layout: str, permuted: bool) -> None:
    rows = q(files[(layout, permuted)],
             "SELECT s.label, d.label, sum(m.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
             "JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind JOIN ENUM_CUDA_MEM_KIND d ON d.id = m.dstKind "
             "GROUP BY 1, 2")
    want: Counter = Counter()
    for c in mixed.copies:
        want[(MEM_LABEL[c.src_kind], MEM_LABEL[c.dst_kind])] += c.bytes
    assert {(a, b): n for a, b, n in rows} == dict(want)


def test_raw_integers_of_old_layout(files: dict, mixed: Scenario) -> None:
    path = files[("2.9", False)]
    assert not any(t.startswith("ENUM_") for t in tables(path))
    got = Counter(q(path, "SELECT srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY"))
    assert got == Counter((RAW_MEM_KIND[c.src_kind], RAW_MEM_KIND[c.dst_kind]) for c in mixed.copies)
    got_sync = Counter(r[0] for r in q(path, "SELECT syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"))
    assert got_sync == Counter(RAW_SYNC[s.kind] for s in mixed.syncs)


@pytest.mark.parametrize("layout", MODERN)
def test_permuted_enums_change_integers_not_meaning(files: dict, layout: str) -> None:
    plain, perm = files[(layout, False)], files[(layout, True)]
    for sql in ("SELECT copyKind, srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start, bytes",
                "SELECT syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ORDER BY start, deviceId",
                "SELECT eventType FROM NVTX_EVENTS ORDER BY start, globalTid, eventType",
                "SELECT eventClass FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start, globalTid"):
        a, b = q(plain, sql), q(perm, sql)
        assert len(a) == len(b) > 0
        assert all(x != y for x, y in zip(a, b, strict=True)), sql
    for enum in ("ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "ENUM_CUPTI_SYNC_TYPE",
                 "ENUM_NSYS_EVENT_TYPE", "ENUM_NSYS_EVENT_CLASS"):
        pa = {lab: i for i, lab in q(plain, f"SELECT id, label FROM {enum}")}
        pb = {lab: i for i, lab in q(perm, f"SELECT id, label FROM {enum}")}
        assert pa.keys() == pb.keys()
        assert all(pa[k] != pb[k] for k in pa), enum
    joined = (
        "SELECT o.label, s.label, d.label, count(*), sum(m.bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
        "JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind "
        "JOIN ENUM_CUDA_MEM_KIND d ON d.id = m.dstKind GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        "SELECT e.label, count(*), sum(y.end - y.start) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y "
        "JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = y.syncType GROUP BY 1 ORDER BY 1",
        "SELECT e.name, count(*), count(n.end) FROM NVTX_EVENTS n "
        "JOIN ENUM_NSYS_EVENT_TYPE e ON e.id = n.eventType GROUP BY 1 ORDER BY 1",
        "SELECT e.label, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
        "JOIN ENUM_NSYS_EVENT_CLASS e ON e.id = r.eventClass GROUP BY 1",
    )
    for sql in joined:
        assert q(plain, sql) == q(perm, sql), sql


def test_permute_refused_without_enum_tables(tmp_path: Path, mixed: Scenario) -> None:
    for lay in ("2.9", "legacy"):
        with pytest.raises(ValueError):
            write_nsys(mixed, tmp_path / "x.sqlite", layout=lay, permute_enums=True)
    with pytest.raises(ValueError):
        write_nsys(mixed, tmp_path / "x.sqlite", layout="9.9")
    with pytest.raises(ValueError):
        write_nsys(mixed, tmp_path / "x.sqlite", omit_tables=["CUPTI_ACTIVITY_KIND_KERNELS"])


@pytest.mark.parametrize("layout", MODERN)
def test_sync_counts_by_label(files: dict, mixed: Scenario, layout: str) -> None:
    got = dict(q(files[(layout, True)], "SELECT e.label, count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y "
                                        "JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = y.syncType GROUP BY 1"))
    assert got == dict(Counter(SYNC_LABEL[s.kind] for s in mixed.syncs))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_memsets(files: dict, mixed: Scenario, layout: str) -> None:
    n, total = q(files[(layout, False)], "SELECT count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET")[0]
    assert (n, total) == (len(mixed.memsets), sum(m.bytes for m in mixed.memsets))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_runtime_names_spelled_as_cuda(files: dict, mixed: Scenario, layout: str) -> None:
    sql = "SELECT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId"
    names = Counter(r[0] for r in q(files[(layout, False)], sql))
    assert names["cudaLaunchKernel_v7000"] == 59
    assert names["cudaLaunchKernelExC_v11060"] == 1
    for spelled in ("cudaMemcpy_v3020", "cudaMemcpyAsync_v3020", "cudaMemset_v3020",
                    "cudaDeviceSynchronize_v3020", "cudaStreamSynchronize_v3020",
                    "cudaEventSynchronize_v3020", "cudaMalloc_v3020", "cudaFree_v3020",
                    "cudaGetLastError_v3020", "cudaGraphLaunch_v10000"):
        assert names[spelled] == 1, spelled
    assert sum(names.values()) == len(mixed.api_calls)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_global_ids_encode_pid_and_tid(files: dict, mixed: Scenario, layout: str) -> None:
    path = files[(layout, False)]
    pids = {r[0] for r in q(path, "SELECT DISTINCT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    assert pids == {VM | (k.pid << 24) for k in mixed.kernels}
    tids = {r[0] for r in q(path, "SELECT DISTINCT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    assert tids == {VM | (a.pid << 24) | a.tid for a in mixed.api_calls}
    if layout != "legacy":
        assert set(q(path, "SELECT globalPid, pid, name FROM PROCESSES")) == {
            (VM | (p.pid << 24), p.pid, p.name) for p in mixed.processes}


@needs_real_profile(real_nsys_profile("nsys2024.5_cloverleaf_a100.sqlite"))
def test_real_files_use_the_same_id_encoding() -> None:
    path = real_nsys_profile("nsys2024.5_cloverleaf_a100.sqlite")
    rows = q(path, "SELECT globalPid, pid FROM PROCESSES")
    assert rows and all(g == VM | (pid << 24) for g, pid in rows)


# ------------------------------------------------------------------------------------------------
# NVTX
# ------------------------------------------------------------------------------------------------


def _nvtx_type_sql(layout: str, name: str) -> str:
    if layout in MODERN:
        return f"(SELECT id FROM ENUM_NSYS_EVENT_TYPE WHERE name = '{name}')"
    return str({"NvtxPushPopRange": 59, "NvtxStartEndRange": 60, "NvtxDomainCreate": 75}[name])


@pytest.mark.parametrize("layout,permuted",
                         [(lay, False) for lay in LAYOUTS] + [(lay, True) for lay in MODERN])
def test_nvtx_text_kinds_domains_and_open_ranges(files: dict, mixed: Scenario, layout: str,
                                                 permuted: bool) -> None:
    path = files[(layout, permuted)]
    pp, se, dc = (_nvtx_type_sql(layout, n) for n in ("NvtxPushPopRange", "NvtxStartEndRange",
                                                       "NvtxDomainCreate"))
    rows = q(path, "SELECT n.eventType, coalesce(n.text, s.value), n.text IS NOT NULL, "
                   "n.textId IS NOT NULL, n.end, n.domainId, n.globalTid FROM NVTX_EVENTS n "
                   f"LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN ({pp}, {se})")
    assert len(rows) == len(mixed.markers)
    assert any(r[2] for r in rows) and any(r[3] for r in rows)
    assert Counter(r[1] for r in rows) == Counter(m.text for m in mixed.markers)
    pp_id = q(path, f"SELECT {pp}")[0][0]
    assert sum(r[0] == pp_id for r in rows) == sum(m.kind == "push_pop" for m in mixed.markers)
    assert sum(r[4] is None for r in rows) == sum(m.end < m.start for m in mixed.markers) == 1
    domains = dict(q(path, f"SELECT text, domainId FROM NVTX_EVENTS WHERE eventType = {dc}"))
    assert set(domains) == {"app", "io"} and 0 not in domains.values()
    got = Counter((r[1], r[5]) for r in rows)
    assert got == Counter((m.text, domains[m.domain] if m.domain else 0) for m in mixed.markers)
    if layout == "legacy":
        assert dict(q(path, "SELECT domainName, id FROM DomainStrings")) == domains
    threads = {r[6] for r in rows}
    assert threads == {VM | (100 << 24) | 100, VM | (100 << 24) | 101}


# ------------------------------------------------------------------------------------------------
# Devices, host, MPI, overhead, metadata.
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ("3.13", "3.24", "2.9"))
def test_target_info_gpu_lists_every_device(files: dict, mixed: Scenario, layout: str) -> None:
    rows = q(files[(layout, False)], "SELECT id, cuDevice, name, clockRate, memoryBandwidth, smCount, "
                                     "computeMajor, vmId FROM TARGET_INFO_GPU")
    assert len(rows) == len(mixed.devices)
    by_cu = {r[1]: r for r in rows}
    for d in mixed.devices:
        r = by_cu[d.id]
        assert (r[2], r[3], r[4], r[5], r[6], r[7]) == (d.name, d.clock_hz, d.memory_bandwidth_bps,
                                                        d.sm_count, d.compute_capability[0], VM)
    assert any(r[0] != r[1] for r in rows)   # nsys's own id is not the CUDA device number
    sql = "SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL"
    used = {r[0] for r in q(files[(layout, False)], sql)}
    assert used <= set(by_cu)


def test_legacy_device_tables_use_legacy_units(files: dict, mixed: Scenario) -> None:
    path = files[("legacy", False)]
    rows = q(path, "SELECT deviceId, coreClockRate, globalMemorySize, numMultiprocessors "
                   "FROM TARGET_INFO_CUDA_GPU")
    assert {r[0]: r[1:] for r in rows} == {
        d.id: (d.clock_hz // 1000, d.memory_bytes // (1 << 20), d.sm_count) for d in mixed.devices}
    assert {r[0] for r in q(path, "SELECT deviceId FROM TARGET_INFO_GPU")} == {d.id for d in mixed.devices}


@pytest.mark.parametrize("layout", ("3.13", "3.24", "2.9"))
def test_hostname_stored_like_nsys(files: dict, mixed: Scenario, layout: str) -> None:
    rows = q(files[(layout, False)], "SELECT value, nameEnum, globalVid FROM TARGET_INFO_SYSTEM_ENV "
                                     "WHERE name = 'Hostname'")
    assert rows == [(mixed.host_name, 619, VM)]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_mpi_tables(files: dict, mixed: Scenario, layout: str) -> None:
    path = files[(layout, False)]
    for table, kind in (("MPI_P2P_EVENTS", "p2p"), ("MPI_COLLECTIVES_EVENTS", "collective"),
                        ("MPI_START_WAIT_EVENTS", "wait"), ("MPI_OTHER_EVENTS", "other")):
        sql = f"SELECT s.value, m.end - m.start FROM {table} m JOIN StringIds s ON s.id = m.textId"
        got = Counter(q(path, sql))
        assert got == Counter((c.name, c.end - c.start) for c in mixed.mpi_calls if c.kind == kind), table
    assert set(q(path, "SELECT globalTid >> 24 & 16777215, rank FROM MPI_RANKS")) == {(100, 0), (200, 1)}
    sizes = q(path, "SELECT sum(size) FROM MPI_COLLECTIVES_EVENTS")[0][0]
    assert sizes == 128


@pytest.mark.parametrize("layout", LAYOUTS)
def test_profiler_overhead(files: dict, mixed: Scenario, layout: str) -> None:
    rows = q(files[(layout, False)], "SELECT p.end - p.start, s.value FROM PROFILER_OVERHEAD p "
                                     "JOIN StringIds s ON s.id = p.nameId")
    assert rows == [(o.end - o.start, o.name) for o in mixed.overhead]


def test_metadata_per_layout(files: dict) -> None:
    meta = {lay: tables(files[(lay, False)]) for lay in LAYOUTS}
    assert "META_DATA_EXPORT" in meta["3.13"] and "META_DATA_EXPORT" in meta["3.24"]
    assert "EXPORT_META_DATA" in meta["2.9"] and "META_DATA_EXPORT" not in meta["2.9"]
    assert not meta["legacy"] & {"META_DATA_EXPORT", "EXPORT_META_DATA"}
    assert not any(t.startswith("ENUM_") for t in meta["legacy"] | meta["2.9"])
    for lay, table, schema, product in (("3.13", "META_DATA_EXPORT", "3.13.2", "2024.5.1.113"),
                                        ("3.24", "META_DATA_EXPORT", "3.24.14", "2026.1.1.204"),
                                        ("2.9", "EXPORT_META_DATA", "2.9.1", "2022.1.3.3")):
        kv = dict(q(files[(lay, False)], f"SELECT name, value FROM {table}"))
        assert kv["EXPORT_SCHEMA_VERSION"] == schema and kv["EXPORT_PRODUCT_VERSION"] == product
    assert {"CUPTI_ACTIVITY_KIND_OVERHEAD", "TARGET_INFO_CUDA_DEVICE"} <= meta["3.24"]
    assert {"MemcpyOperationStrings", "DomainStrings", "TARGET_INFO_CUDA_GPU"} <= meta["legacy"]


def test_omitted_tables_are_absent(tmp_path: Path, mixed: Scenario) -> None:
    omit = ["CUPTI_ACTIVITY_KIND_MEMCPY", "NVTX_EVENTS", "ENUM_CUDA_MEM_KIND", "MPI_RANKS"]
    path = write_nsys(mixed, tmp_path / "o.sqlite", layout="3.13", omit_tables=omit)
    names = tables(path)
    assert not names & set(omit)
    assert {"CUPTI_ACTIVITY_KIND_KERNEL", "ENUM_CUDA_MEMCPY_OPER", "MPI_P2P_EVENTS"} <= names


@pytest.mark.parametrize("layout", LAYOUTS)
def test_empty_scenario_gives_present_empty_tables(tmp_path: Path, layout: str) -> None:
    sc = Scenario("empty", "nothing ran", [Device(id=0)], [Process(1, "idle", {1: "idle"})])
    path = write_nsys(sc, tmp_path / f"e{layout}.sqlite", layout=layout)
    names = tables(path)
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
              "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS",
              "PROFILER_OVERHEAD"):
        assert t in names
        assert q(path, f"SELECT count(*) FROM {t}")[0][0] == 0
    assert not any(t.startswith("MPI_") for t in names)
    assert q(path, "SELECT count(*) FROM TARGET_INFO_GPU")[0][0] == 1


def test_rewrite_replaces_file(tmp_path: Path, mixed: Scenario) -> None:
    path = tmp_path / "r.sqlite"
    write_nsys(mixed, path)
    write_nsys(mixed, path)
    assert q(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0] == len(mixed.kernels)


# ------------------------------------------------------------------------------------------------
# DDL against the real exports.
# ------------------------------------------------------------------------------------------------

_REAL_FOR = {
    "3.13": ("nsys2024.5_cloverleaf_a100.sqlite",
             ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_RUNTIME",
              "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "TARGET_INFO_GPU", "PROFILER_OVERHEAD", "PROCESSES",
              "ThreadNames", "StringIds", "TARGET_INFO_SESSION_START_TIME", "TARGET_INFO_SYSTEM_ENV",
              "META_DATA_EXPORT", "ENUM_CUDA_MEMCPY_OPER")),
    "3.24": ("nsys2026.1_torch_zeros.sqlite",
             ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_RUNTIME",
              "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "TARGET_INFO_GPU", "PROFILER_OVERHEAD",
              "CUPTI_ACTIVITY_KIND_OVERHEAD", "TARGET_INFO_CUDA_DEVICE", "TARGET_INFO_SESSION_START_TIME",
              "META_DATA_EXPORT")),
    "2.9": ("nsys2022.1_dlprof_2streams.sqlite",
            ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
             "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS",
             "TARGET_INFO_GPU", "PROFILER_OVERHEAD", "TARGET_INFO_SYSTEM_ENV", "EXPORT_META_DATA")),
    "legacy": ("nsys_legacy_cudf_2proc.sqlite",
               ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS",
                "TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU", "PROFILER_OVERHEAD", "MemcpyOperationStrings",
                "DomainStrings", "ThreadNames")),
}
# The 2024.5 and 2026.1 exports have no NVTX or memset rows, so those tables come from 2026.2.
_NEWEST = "nsys2026.2_h100_2proc_nvtx_slice.sqlite"


def _real(name: str) -> Path:
    path = real_nsys_profile(name)
    if not path.is_file():
        pytest.skip(missing_reason(path))
    return path


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ddl_matches_real_export(files: dict, layout: str) -> None:
    real_name, names = _REAL_FOR[layout]
    real = _real(real_name)
    ours = files[(layout, False)]
    for table in names:
        assert columns(ours, table) == columns(real, table), table


@pytest.mark.parametrize("layout", MODERN)
def test_nvtx_and_memset_ddl_match_newest_export(files: dict, layout: str) -> None:
    real = _real(_NEWEST)
    for table in ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_MEMSET"):
        assert columns(files[(layout, False)], table) == columns(real, table), table


@pytest.mark.parametrize("layout", MODERN)
def test_enum_rows_match_real_export(files: dict, layout: str) -> None:
    real = _real(_REAL_FOR[layout][0])
    ours = files[(layout, False)]
    for enum in ("ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "ENUM_CUPTI_SYNC_TYPE",
                 "ENUM_CUDA_KERNEL_LAUNCH_TYPE"):
        assert q(ours, f"SELECT * FROM {enum} ORDER BY id") == q(real, f"SELECT * FROM {enum} ORDER BY id")
    for enum in ("ENUM_NSYS_EVENT_TYPE", "ENUM_NSYS_EVENT_CLASS") + (
            ("ENUM_CUPTI_OVERHEAD_TYPE",) if layout == "3.24" else ()):
        assert set(q(ours, f"SELECT * FROM {enum}")) <= set(q(real, f"SELECT * FROM {enum}")), enum
        assert columns(ours, enum) == columns(real, enum)


# ------------------------------------------------------------------------------------------------
# Scenarios: consistency and the planted behaviour.
# ------------------------------------------------------------------------------------------------

_ALL = {**ALL_SCENARIOS, "example": example}


@pytest.fixture(scope="module")
def built() -> dict[str, Scenario]:
    return {name: f() for name, f in _ALL.items()}


@pytest.mark.parametrize("name", sorted(_ALL))
def test_scenario_is_deterministic_and_consistent(built: dict[str, Scenario], name: str) -> None:
    sc = built[name]
    assert _ALL[name]() == sc
    assert set(sc.expected.bottlenecks) <= BOTTLENECK_TYPES
    assert 100 <= sum(len(g) for g in (sc.kernels, sc.copies, sc.api_calls, sc.markers)) <= 20_000
    lanes: dict[tuple[int, int, int], list[tuple[int, int]]] = defaultdict(list)
    for ev in [*sc.kernels, *sc.copies, *sc.memsets]:
        assert ev.end > ev.start
        lanes[(ev.pid, ev.device, ev.stream)].append((ev.start, ev.end))
    for lane in lanes.values():
        lane.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(lane))
    threads: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for a in sc.api_calls:
        threads[(a.pid, a.tid)].append((a.start, a.end))
    for calls in threads.values():
        calls.sort()
        assert all(x[1] <= y[0] for x, y in itertools.pairwise(calls))
    api_by_corr = {a.correlation_id: a for a in sc.api_calls if a.correlation_id}
    for k in sc.kernels:
        if k.correlation_id:
            assert api_by_corr[k.correlation_id].start <= k.start
    assert {ev.device for ev in sc.kernels} <= {d.id for d in sc.devices}


def test_launch_bound_planted(built: dict[str, Scenario]) -> None:
    sc = built["launch_bound"]
    api = {a.correlation_id: a for a in sc.api_calls}
    assert len(sc.kernels) >= 2000
    for k in sc.kernels:
        assert 2_000 <= k.end - k.start <= 5_000
        assert api[k.correlation_id].end - api[k.correlation_id].start > k.end - k.start
        assert k.start > api[k.correlation_id].end       # queue empty: starts after the call returns
    s0, s1 = sc.span()
    assert reference_union([(k.start, k.end) for k in sc.kernels]) < 0.5 * (s1 - s0)


def test_single_cause_shares(built: dict[str, Scenario]) -> None:
    def share(sc: Scenario, iv: list[tuple[int, int]]) -> float:
        s0, s1 = sc.span()
        return reference_union(iv) / (s1 - s0)

    sc = built["sync_after_launch"]
    assert share(sc, [(a.start, a.end) for a in sc.api_calls if a.kind.endswith("sync")]) > 0.6
    assert len(sc.syncs) == len(sc.kernels)
    sc = built["pageable_htod"]
    assert share(sc, [(c.start, c.end) for c in sc.copies if c.src_kind == "pageable"]) > 0.8
    sc = built["copies_not_overlapped"]
    assert 0.35 <= share(sc, [(c.start, c.end) for c in sc.copies]) <= 0.45
    assert {c.stream for c in sc.copies} == {k.stream for k in sc.kernels}
    sc = built["dominant_kernel"]
    by_name = Counter[str]()
    for k in sc.kernels:
        by_name[k.name] += k.end - k.start
    assert by_name.most_common(1)[0][1] >= 0.7 * sum(by_name.values())
    assert share(sc, [(k.start, k.end) for k in sc.kernels]) > 0.95
    sc = built["host_idle_gaps"]
    ks = sorted(sc.kernels, key=lambda k: k.start)
    gaps = [(a.end, b.start) for a, b in itertools.pairwise(ks) if b.start - a.end >= 1_000_000]
    assert len(gaps) >= 30 and all(g[1] - g[0] <= 51_000_000 for g in gaps)
    for g0, g1 in gaps:   # nothing GPU-related in a gap but the launch that ends it
        assert not any(g0 + 10_000 < a.start < g1 - 100_000 for a in sc.api_calls)
    sc = built["healthy"]
    assert share(sc, [(e.start, e.end) for e in [*sc.kernels, *sc.copies]]) > 0.9
    assert sc.expected.bottlenecks == []


def test_multi_stream_overlap_exceeds_100_percent_only_when_summed(built: dict[str, Scenario]) -> None:
    sc = built["multi_stream_overlap"]
    s0, s1 = sc.span()
    total = sum(k.end - k.start for k in sc.kernels)
    busy = reference_union([(k.start, k.end) for k in sc.kernels])
    assert total > 2 * (s1 - s0) and busy <= s1 - s0
    assert len({k.stream for k in sc.kernels}) == 4


def test_other_planted_behaviours(built: dict[str, Scenario]) -> None:
    sc = built["high_variance"]
    d = [k.end - k.start for k in sc.kernels if "spmv" in k.name]
    assert statistics.pstdev(d) / statistics.fmean(d) > 1
    sc = built["low_wave_fill"]
    assert all(k.grid == (4, 1, 1) for k in sc.kernels) and sc.devices[0].sm_count == 108
    sc = built["heavy_overhead"]
    s0, s1 = sc.span()
    assert reference_union([(o.start, o.end) for o in sc.overhead]) > 0.1 * (s1 - s0)
    sc = built["warmup_dominated"]
    s0, s1 = sc.span()
    steady = [k for k in sc.kernels if k.end - k.start >= 1_000_000]
    assert min(k.start for k in steady) - s0 >= 0.55 * (s1 - s0)
    sc = built["memset_critical"]
    gpu = sum(e.end - e.start for e in [*sc.kernels, *sc.memsets])
    assert sum(m.end - m.start for m in sc.memsets) > 0.6 * gpu
    sc = built["stream_serialization"]
    assert len({k.stream for k in sc.kernels}) == 1 and len({k.name for k in sc.kernels}) == 2
    sc = built["mpi_collectives"]
    waits: dict[int, int] = defaultdict(int)
    for c in sc.mpi_calls:
        if c.name == "MPI_Allreduce":
            waits[c.rank] += c.end - c.start
    assert waits[0] > 10 * waits[1]
    assert {"MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Barrier"} <= {c.name for c in sc.mpi_calls}
    assert len({p.pid for p in sc.processes}) == 2 and len(sc.devices) == 2


def test_mixed_scenarios_list_two_causes_largest_first(built: dict[str, Scenario]) -> None:
    sc = built["mixed_launch_and_copies"]
    assert sc.expected.bottlenecks == ["memory_bound", "cpu_launch_overhead"]
    s0, s1 = sc.span()
    assert 0.3 <= reference_union([(c.start, c.end) for c in sc.copies]) / (s1 - s0) <= 0.4
    assert built["mixed_sync_and_idle"].expected.bottlenecks == ["synchronization", "other"]


def test_nvtx_nested_has_depth_three_on_two_threads(built: dict[str, Scenario]) -> None:
    sc = built["nvtx_nested"]
    per_thread: dict[int, list[Marker]] = defaultdict(list)
    for m in sc.markers:
        if m.end >= m.start:
            per_thread[m.tid].append(m)
    assert len(per_thread) == 2
    for ms in per_thread.values():
        depth = max(sum(o.start <= m.start and m.end <= o.end for o in ms) for m in ms)
        assert depth >= 3
    assert {m.kind for m in sc.markers} == {"push_pop", "start_end"}
    assert {m.domain for m in sc.markers} >= {"app", "io"}
    assert sum(m.end < m.start for m in sc.markers) >= 2


def test_example_uses_one_of_two_devices(built: dict[str, Scenario]) -> None:
    sc = built["example"]
    assert len(sc.devices) == 2 and {k.device for k in sc.kernels} == {0}
    assert {"init", "solve", "io"} <= {m.text for m in sc.markers}
    assert 1000 <= len(sc.kernels) + len(sc.api_calls) + len(sc.copies) <= 10_000


def test_all_scenarios_write_in_every_layout(tmp_path: Path, built: dict[str, Scenario]) -> None:
    for name, sc in built.items():
        for lay in LAYOUTS:
            path = write_nsys(sc, tmp_path / f"{name}_{lay}.sqlite", layout=lay)
            n = q(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
            assert n == len(sc.kernels), (name, lay)


def test_scaled_writes_fast(tmp_path: Path) -> None:
    start = time.perf_counter()
    sc = scaled(100_000, 10_000, 100_000, 5_000, seed=3)
    path = write_nsys(sc, tmp_path / "big.sqlite", layout="3.24")
    elapsed = time.perf_counter() - start
    assert q(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0] == 100_000
    assert q(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0][0] == 100_000
    assert q(path, "SELECT count(*) FROM NVTX_EVENTS")[0][0] == 5_000
    assert elapsed < 10, elapsed   # 1e6 + 1e6 takes ~7 s; 1e5 must stay far below a second or two
