"""rocpd schema 3: the writer's conventions (checked on the file) and the query set (checked against the
planted scenario and direct SQL over the file), for both writers.

The databases are built from the writers' real DDL (tests/rocpd_ddl.py says where it comes from and
skips these tests when it is absent) and filled as rocprofv3 and rocprof-sys fill them: rocTX text in
event extdata, instant marks in rocpd_sample, stack_id correlation, peer copies named
DEVICE_TO_DEVICE, thread keys instead of OS tids (rocprof-sys).
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from rocpd_ddl import needs_rocpd_ddl, rocpd_flavours  # tests/ is on sys.path
from testkit.rocpd_writer import Allocation, ddl_dir, render_ddl, write_rocpd, write_rocpd_bulk
from testkit.scenario import (
    ApiCall,
    Copy,
    Device,
    Kernel,
    Marker,
    MemKind,
    Memset,
    MpiCall,
    Process,
    Scenario,
)

from pa.metrics.summarize import summarize
from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import resolve
from pa.profile.relations import Relations

pytestmark = needs_rocpd_ddl

MI250X = dict(name="AMD Instinct MI250X", sm_count=110, clock_hz=1_700_000_000, threads_per_warp=64,
              max_warps_per_sm=32, max_shared_per_sm=65536, max_shared_per_block=65536,
              gfx_target="gfx90a")
RCCL_KERNEL = "ncclDevKernel_Generic(ncclDevComm*, unsigned long, ncclWork*)"
MIB = 1 << 20


def make_scenario(pids: tuple[int, ...] = (100,)) -> Scenario:
    """Two GCDs of one MI250X, kernels on both, copies of every direction (an 8 MiB peer copy among
    them), an RCCL allreduce and its kernel, syncs, rocTX ranges of both kinds and an instant mark,
    and MPI calls."""
    sc = Scenario(name="rocpd-test", description="", host_name="frontier01234",
                  devices=[Device(id=0, **MI250X), Device(id=1, **MI250X)],  # type: ignore[arg-type]
                  processes=[Process(pid=p, name=f"app{p}", threads={p: "main", p + 1: "worker"})
                             for p in pids])
    corr = 0
    for pid in pids:
        t = pid * 1_000_000
        for i in range(12):
            corr += 1
            device = i % 2
            grid = (1 + i * 3, 1 + i % 3, 1)
            block = (64 * (1 + i % 4), 2 if i % 5 == 0 else 1, 1)
            name = f"stencil_{i % 4}(double*, int)" if i % 4 else "axpy<double>(double, double*)"
            sc.api_calls.append(ApiCall(pid, pid, t, t + 500, "launch", corr))
            sc.kernels.append(Kernel(pid, device, 1 + i % 2, t + 1000, t + 1000 + 700 + 37 * i, name,
                                     grid=grid, block=block, registers_per_thread=24 + 8 * (i % 4),
                                     static_shared_bytes=1024 * (i % 3), dynamic_shared_bytes=512 * (i % 2),
                                     local_bytes_per_thread=16 * (i % 2), correlation_id=corr))
            t += 5000
        directions = [("HtoD", None, MIB), ("DtoH", None, 2 * MIB), ("DtoD", None, 3 * MIB),
                      ("PtoP", 1, 8 * MIB), ("HtoD", None, 5 * MIB)]
        for j, (direction, peer, nbytes) in enumerate(directions):
            corr += 1
            kind = "memcpy" if j % 2 else "memcpy_async"
            sc.api_calls.append(ApiCall(pid, pid, t, t + 3000, kind, corr))  # type: ignore[arg-type]
            host: MemKind = "pinned" if j == 0 else "pageable"
            sc.copies.append(Copy(pid, 0, 3, t + 100, t + 2000, nbytes, direction,  # type: ignore[arg-type]
                                  host if direction != "DtoH" else "device",
                                  "device" if direction != "DtoH" else host, dst_device=peer,
                                  correlation_id=corr))
            t += 5000
        corr += 1
        sc.api_calls.append(ApiCall(pid, pid, t, t + 700, "other", corr, name="ncclAllReduce"))
        sc.kernels.append(Kernel(pid, 0, 2, t + 1000, t + 9000, RCCL_KERNEL, correlation_id=corr))
        t += 10_000
        for kind in ("device_sync", "stream_sync", "event_sync", "malloc", "free", "other"):
            sc.api_calls.append(ApiCall(pid, pid + 1, t, t + 800, kind))  # type: ignore[arg-type]
            t += 1000
        sc.memsets.append(Memset(pid, 0, 1, t, t + 100, 4096))
        sc.markers += [Marker(pid, pid, pid * 1_000_000, t, "timestep"),
                       Marker(pid, pid + 1, pid * 1_000_000 + 10, pid * 1_000_000 + 9000, "halo exchange"),
                       Marker(pid, pid + 1, pid * 1_000_000 + 20_000, pid * 1_000_000 + 30_000, "io phase",
                              kind="start_end"),
                       Marker(pid, pid, pid * 1_000_000 + 40_000, pid * 1_000_000 + 40_000, "checkpoint")]
        mpi = [("MPI_Allreduce", "collective", 8), ("MPI_Isend", "p2p", 4096), ("MPI_Waitall", "wait", 0),
               ("MPI_Comm_rank", "other", 0)]
        for k, (name, kind, nbytes) in enumerate(mpi):
            sc.mpi_calls.append(MpiCall(pid, pid + 1, t + k * 1000, t + k * 1000 + 500, name, kind,  # type: ignore[arg-type]
                                        bytes=nbytes))
    return sc


def allocations_of(sc: Scenario) -> list[Allocation]:
    """A 64 MiB hipMalloc on GCD 1 (linked to the malloc call), its free, and kernel scratch memory."""
    out = []
    for p in sc.processes:
        malloc = next(c for c in sc.api_calls if c.pid == p.pid and c.kind == "malloc")
        free = next(c for c in sc.api_calls if c.pid == p.pid and c.kind == "free")
        out += [Allocation(p.pid, malloc.tid, 1, malloc.start + 100, malloc.start + 300, 64 * MIB),
                Allocation(p.pid, free.tid, 1, free.start + 100, free.start + 200, 64 * MIB, kind="FREE"),
                Allocation(p.pid, p.pid, 0, malloc.start - 50, malloc.start - 10, 2 * MIB, level="SCRATCH")]
    return out


def bind(path: Path, version: str = "3") -> Relations:
    conn = open_readonly(path)
    fmt = detect(conn, path)
    assert (fmt.format, fmt.schema_version) == ("rocpd", version)
    qs = resolve("rocpd", fmt.schema_version)
    assert qs.warnings == []
    return Relations.bind(conn, qs)


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return make_scenario()


@pytest.fixture(scope="module", params=rocpd_flavours())
def written(request: pytest.FixtureRequest, scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[str, Path]:
    path = tmp_path_factory.mktemp(request.param) / "rank_100_results.db"
    write_rocpd(scenario, path, flavour=request.param, extra_gpus=2, allocations=allocations_of(scenario))
    return request.param, path


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


# ------------------------------------------------------------------------------------------------
# writer: the file is what the real writer's DDL makes, filled by the writer's conventions


def test_layout_is_the_writers_ddl(written: tuple[str, Path]) -> None:
    flavour, path = written
    conn = raw(path)
    guid = conn.execute("SELECT value FROM rocpd_metadata WHERE tag = 'guid'").fetchone()[0]
    # The reference: the writer's DDL scripts executed in an empty database with this file's guid.
    data, summary = (("rocprofv3_data_views", "rocprofv3_summary_views") if flavour == "rocprofv3"
                     else ("rocprofsys_data_views", "rocprofsys_summary_views"))
    ref = sqlite3.connect(":memory:")
    for script in ("rocprofv3_rocpd_tables", "rocprofv3_rocpd_views", data, summary):
        ref.executescript(render_ddl((ddl_dir() / "3" / f"{script}.sql").read_text(), guid))
    schema = "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    assert conn.execute(schema).fetchall() == ref.execute(schema).fetchall()
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_guid_and_metadata_per_writer(written: tuple[str, Path]) -> None:
    flavour, path = written
    meta = dict(raw(path).execute("SELECT tag, value FROM rocpd_metadata").fetchall())
    guid = meta["guid"]
    assert meta["uuid"] == "_" + guid.replace("-", "_") and meta["schema_version"] == "3"
    if flavour == "rocprofv3":
        assert len(guid) == 36 and guid.count("-") == 4 and "upid" not in meta
    else:  # 32 hex digits, and the upid tag
        assert len(guid) == 32 and int(guid, 16) >= 0 and meta["upid"] == guid


def test_two_writes_get_different_guids(scenario: Scenario, tmp_path: Path) -> None:
    a = write_rocpd(scenario, tmp_path / "a.db")
    b = write_rocpd(scenario, tmp_path / "b.db")
    sql = "SELECT value FROM rocpd_metadata WHERE tag = 'guid'"
    assert raw(a).execute(sql).fetchone() != raw(b).execute(sql).fetchone()


def test_thread_and_agent_keys_per_writer(written: tuple[str, Path]) -> None:
    flavour, path = written
    conn = raw(path)
    threads = dict(conn.execute("SELECT id, tid FROM rocpd_info_thread").fetchall())
    region_tids = {r[0] for r in conn.execute("SELECT DISTINCT tid FROM rocpd_region")}
    agent_ids = [r[0] for r in conn.execute("SELECT id FROM rocpd_info_agent ORDER BY id")]
    if flavour == "rocprofv3":  # rows keyed by the OS tid; agents by HSA node number, from 0
        assert threads == {100: 100, 101: 101} and region_tids == {100, 101}
        assert agent_ids[0] == 0
    else:  # regions hold the thread row's key 1..N; agents count from 1
        assert sorted(threads) == [1, 2] and sorted(threads.values()) == [100, 101]
        assert region_tids <= {1, 2}
        assert agent_ids == list(range(1, len(agent_ids) + 1))
        assert conn.execute("SELECT DISTINCT init, fini FROM rocpd_info_process").fetchall() == [(0, 0)]


def test_grid_counts_work_items(written: tuple[str, Path], scenario: Scenario) -> None:
    _, path = written
    rows = raw(path).execute("SELECT grid_size_x, grid_size_y, grid_size_z, workgroup_size_x, "
                             "workgroup_size_y, workgroup_size_z, d.group_segment_size, d.start "
                             "FROM rocpd_kernel_dispatch d JOIN rocpd_info_kernel_symbol s ON s.id = d.kernel_id "
                             "WHERE s.display_name NOT GLOB '__amd_rocclr_fill*'").fetchall()
    by_start = {k.start: k for k in scenario.kernels}
    assert len(rows) == len(scenario.kernels)
    for gx, gy, gz, wx, wy, wz, lds, start in rows:
        k = by_start[start]
        assert (gx, gy, gz) == (k.grid[0] * k.block[0], k.grid[1] * k.block[1], k.grid[2] * k.block[2])
        assert (wx, wy, wz) == k.block
        assert lds == k.static_shared_bytes + k.dynamic_shared_bytes


def test_agents_list_every_gpu_of_the_node(written: tuple[str, Path]) -> None:
    flavour, path = written
    rows = raw(path).execute("SELECT type, type_index, extdata FROM rocpd_info_agent").fetchall()
    assert sorted(r[1] for r in rows if r[0] == "GPU") == [0, 1, 2, 3]  # two scenario GCDs + two unused
    assert sum(r[0] == "CPU" for r in rows) == 2
    if flavour == "rocprof-sys":
        assert {r[2] for r in rows} == {"{}"}


def test_correlation_lives_in_stack_id(written: tuple[str, Path], scenario: Scenario) -> None:
    _, path = written
    conn = raw(path)
    # external correlation ids are 0; each dispatch's event shares its stack_id with its launch call
    assert conn.execute("SELECT DISTINCT correlation_id FROM rocpd_event").fetchall() == [(0,)]
    pairs = conn.execute(
        "SELECT r.start, d.start FROM rocpd_kernel_dispatch d "
        "JOIN rocpd_event de ON de.id = d.event_id "
        "JOIN rocpd_event re ON re.stack_id = de.stack_id AND re.id <> de.id "
        "JOIN regions r ON r.event_id = re.id "
        "WHERE r.category IN ('HIP_RUNTIME_API_EXT', 'RCCL_API', 'rocm_hip_api', 'rocm_rccl_api')"
    ).fetchall()
    calls = {c.correlation_id: c for c in scenario.api_calls}
    assert sorted(pairs) == sorted((calls[k.correlation_id].start, k.start) for k in scenario.kernels)


def test_rocprofv3_roctx_text_in_extdata_and_marks_in_samples(scenario: Scenario, tmp_path: Path) -> None:
    conn = raw(write_rocpd(scenario, tmp_path / "v3.db"))
    ranges = conn.execute("SELECT name, json_extract(extdata, '$.message') FROM regions "
                          "WHERE category = 'MARKER_CORE_RANGE_API' ORDER BY start").fetchall()
    assert ranges == [("roctxThreadRangeA", "timestep"), ("roctxThreadRangeA", "halo exchange"),
                      ("roctxProcessRangeA", "io phase")]
    samples = conn.execute("SELECT category, timestamp, json_extract(extdata, '$.message') FROM samples").fetchall()
    mark = next(m for m in scenario.markers if m.start == m.end)
    assert samples == [("MARKER_CORE_RANGE_API", mark.start, "checkpoint")]
    # no marker text is a region name
    assert not conn.execute("SELECT 1 FROM regions WHERE name IN ('timestep', 'checkpoint')").fetchall()


def test_peer_copy_is_named_device_to_device(written: tuple[str, Path]) -> None:
    flavour, path = written
    conn = raw(path)
    assert not conn.execute("SELECT 1 FROM rocpd_string WHERE string GLOB '*PEER*'").fetchall()
    rows = conn.execute("SELECT name, src_agent_abs_index <> dst_agent_abs_index, size FROM memory_copies "
                        "WHERE src_agent_type = 'GPU' AND dst_agent_type = 'GPU'").fetchall()
    assert sorted(rows) == [("MEMORY_COPY_DEVICE_TO_DEVICE", 0, 3 * MIB), ("MEMORY_COPY_DEVICE_TO_DEVICE", 1, 8 * MIB)]
    queues = {r[0] for r in conn.execute("SELECT queue_id FROM rocpd_memory_copy")}
    assert queues == ({None} if flavour == "rocprofv3" else {0})


def test_the_files_own_views_see_every_row(written: tuple[str, Path], scenario: Scenario) -> None:
    _, path = written
    conn = raw(path)
    assert conn.execute("SELECT count(*) FROM kernels").fetchone()[0] == len(scenario.kernels) + len(scenario.memsets)
    assert conn.execute("SELECT count(*) FROM memory_copies").fetchone()[0] == len(scenario.copies)
    assert conn.execute("SELECT count(*) FROM memory_allocations").fetchone()[0] == 3


def test_degraded_has_regions_but_no_gpu_activity(scenario: Scenario, tmp_path: Path) -> None:
    conn = raw(write_rocpd(scenario, tmp_path / "killed.db", degraded=True))
    assert conn.execute("SELECT count(*) FROM rocpd_kernel_dispatch").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM rocpd_memory_copy").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM rocpd_region").fetchone()[0] >= len(scenario.api_calls)
    assert conn.execute("SELECT count(*) FROM region_args WHERE name = 'sizeBytes'").fetchone()[0] == len(
        scenario.copies)


def test_bulk_writer_links_every_dispatch_and_copy_to_its_call(tmp_path: Path) -> None:
    path = write_rocpd_bulk(tmp_path / "bulk.db", n_regions=3000, n_dispatches=40, n_copies=50)
    conn = raw(path)
    assert conn.execute("SELECT count(*) FROM rocpd_region").fetchone()[0] == 3000
    assert conn.execute("SELECT count(*) FROM kernels").fetchone()[0] == 40
    assert conn.execute("SELECT count(*) FROM memory_copies").fetchone()[0] == 50
    n_ranges = conn.execute("SELECT count(*) FROM regions WHERE json_extract(extdata, '$.message') "
                            "GLOB 'solver step *'").fetchone()[0]
    assert n_ranges == 300  # one region in ten is a rocTX range
    linked = conn.execute("SELECT s.string, count(*) FROM kernels k JOIN regions r ON r.stack_id = k.stack_id "
                          "JOIN rocpd_string s ON s.string = r.name GROUP BY 1").fetchall()
    assert linked == [("hipLaunchKernel", 40)]
    rel = bind(path)
    assert rel.count("kernels") == 40 and rel.count("copies") == 50 and rel.count("markers") == 300
    assert rel.query("SELECT count(*) FROM pa_kernels k JOIN pa_api_calls c USING (correlation_id) "
                     "WHERE c.kind = 'launch'") == [(40,)]


# ------------------------------------------------------------------------------------------------
# query set


def test_unavailable_relations_are_skipped_with_reason(written: tuple[str, Path]) -> None:
    rel = bind(written[1])
    for relation in ("syncs", "overhead"):
        assert not rel.available(relation)
        assert "no query file" in (rel.skip_reason(relation) or "")
    for relation in ("kernels", "kernel_names", "kernel_classes", "memsets", "copies", "api_calls", "markers",
                     "mpi_calls", "allocations", "devices", "processes", "threads", "meta"):
        assert rel.available(relation), rel.skip_reason(relation)


def test_kernels_match_scenario(written: tuple[str, Path], scenario: Scenario) -> None:
    rel = bind(written[1])
    count, total = rel.query('SELECT count(*), sum("end" - start) FROM pa_kernels')[0]
    assert count == len(scenario.kernels)
    assert total == sum(k.end - k.start for k in scenario.kernels)
    got = Counter(rel.query("SELECT device, stream, start, grid_x, grid_y, grid_z, block_x, block_y, "
                            "block_z, registers_per_thread, static_shared_bytes, dynamic_shared_bytes, "
                            "local_bytes_per_thread, name FROM pa_kernels"))
    want = Counter((k.device, k.stream, k.start, *k.grid, *k.block, k.registers_per_thread,
                    k.static_shared_bytes, k.dynamic_shared_bytes, k.local_bytes_per_thread, k.name)
                   for k in scenario.kernels)
    assert got == want


def test_every_kernel_links_to_its_launch_call(written: tuple[str, Path], scenario: Scenario) -> None:
    rel = bind(written[1])
    got = sorted(rel.query("SELECT k.start, c.start, c.name FROM pa_kernels k "
                           "JOIN pa_api_calls c ON c.pid = k.pid AND c.correlation_id = k.correlation_id"))
    calls = {c.correlation_id: c for c in scenario.api_calls}
    want = sorted((k.start, calls[k.correlation_id].start,
                   "ncclAllReduce" if k.name == RCCL_KERNEL else "hipLaunchKernel") for k in scenario.kernels)
    assert got == want
    copies = sorted(rel.query("SELECT k.start, c.start FROM pa_copies k "
                              "JOIN pa_api_calls c ON c.pid = k.pid AND c.correlation_id = k.correlation_id"))
    assert copies == sorted((c.start, calls[c.correlation_id].start) for c in scenario.copies)


def test_launch_latency_for_every_launched_kernel(written: tuple[str, Path], scenario: Scenario) -> None:
    s = summarize(written[1])
    assert s.launch is not None
    launched = [k for k in scenario.kernels if k.name != RCCL_KERNEL]
    assert s.launch.correlated_kernels == len(launched) == s.launch.launch_count
    (by_api,) = s.launch.by_api
    assert by_api.name == "hipLaunchKernel"
    # every queue was idle: latency = kernel start - call end, by hand
    calls = {c.correlation_id: c for c in scenario.api_calls}
    latencies = [k.start - calls[k.correlation_id].end for k in launched]
    assert by_api.idle_queue_launches == len(launched)
    assert by_api.latency_mean_ns == pytest.approx(sum(latencies) / len(latencies))


def test_external_correlation_ids_are_not_links(scenario: Scenario, tmp_path: Path) -> None:
    # an application (or a kernel-rename range) sets one external id for every call: pa must not
    # link kernels through it
    path = write_rocpd(scenario, tmp_path / "ext.db", external_correlation=7)
    assert raw(path).execute("SELECT count(*) FROM rocpd_event WHERE correlation_id = 7").fetchone()[0] > 1
    rel = bind(path)
    assert rel.query("SELECT count(*) FROM pa_kernels k JOIN pa_api_calls c "
                     "ON c.pid = k.pid AND c.correlation_id = k.correlation_id") == [(len(scenario.kernels),)]


def test_kernel_name_ids_one_per_name(written: tuple[str, Path], scenario: Scenario) -> None:
    # the same kernel runs on two GPUs: two symbols (one per agent's code object), one name_id
    rel = bind(written[1])
    pairs = set(rel.query("SELECT name_id, name FROM pa_kernels"))
    assert len(pairs) == len({k.name for k in scenario.kernels})
    assert len({p[0] for p in pairs}) == len(pairs)
    shorts = dict(rel.query("SELECT name, short_name FROM pa_kernels"))
    assert shorts["stencil_1(double*, int)"] == "stencil_1"


def test_rccl_is_communication(written: tuple[str, Path]) -> None:
    rel = bind(written[1])
    classes = dict(rel.query("SELECT n.name, c.class FROM pa_kernel_names n JOIN pa_kernel_classes c USING (name_id)"))
    assert classes.pop(RCCL_KERNEL) == "communication"
    assert set(classes.values()) == {"compute"}
    assert rel.query("SELECT name FROM pa_api_calls WHERE kind = 'communication'") == [("ncclAllReduce",)]


def test_copy_directions_and_bytes(written: tuple[str, Path], scenario: Scenario) -> None:
    rel = bind(written[1])
    got = dict(rel.query("SELECT direction, sum(bytes) FROM pa_copies GROUP BY direction"))
    want: Counter[str] = Counter()
    for c in scenario.copies:
        want[c.direction] += c.bytes
    assert got == dict(want)
    # the 8 MiB DEVICE_TO_DEVICE copy between the two GCDs is a peer copy
    peer = rel.query("SELECT src_device, dst_device, bytes FROM pa_copies WHERE direction = 'PtoP'")
    assert peer == [(0, 1, 8 * MIB)]
    kinds = set(rel.query("SELECT direction, src_kind, dst_kind FROM pa_copies"))
    assert ("HtoD", "unknown", "device") in kinds and ("DtoH", "device", "unknown") in kinds
    assert set(rel.query("SELECT device FROM pa_copies WHERE direction = 'HtoD'")) == {(0,)}


def test_peer_copy_in_the_summary(written: tuple[str, Path]) -> None:
    s = summarize(written[1])
    assert s.copies is not None
    peer = [d for d in s.copies.by_direction if d.direction == "PtoP"]
    assert [(d.count, d.bytes) for d in peer] == [(1, 8 * MIB)]


def test_direction_from_agents_when_name_unknown(scenario: Scenario, tmp_path: Path) -> None:
    path = write_rocpd(scenario, tmp_path / "noname.db")
    conn = sqlite3.connect(path)
    uuid = conn.execute("SELECT value FROM rocpd_metadata WHERE tag = 'uuid'").fetchone()[0]
    conn.execute(f"UPDATE rocpd_string{uuid} SET string = 'MEMORY_COPY_UNKNOWN_' || id "
                 "WHERE string GLOB 'MEMORY_COPY_*_TO_*'")
    conn.commit()
    conn.close()
    got = Counter(d for (d,) in bind(path).query("SELECT direction FROM pa_copies"))
    assert got == Counter(c.direction for c in scenario.copies)


def test_api_calls(written: tuple[str, Path], scenario: Scenario) -> None:
    rel = bind(written[1])
    hip_calls = [c for c in scenario.api_calls if c.name != "ncclAllReduce"]
    launches = rel.query("SELECT count(*) FROM pa_api_calls WHERE kind = 'launch'")[0][0]
    assert launches == sum(c.kind == "launch" for c in scenario.api_calls)
    # every HIP call exactly once: rocprof-sys marker copies, MPI and sampling are not API calls
    assert rel.query("SELECT count(*) FROM pa_api_calls WHERE name GLOB 'hip*'")[0][0] == len(hip_calls)
    kinds = Counter(k for (k,) in rel.query("SELECT kind FROM pa_api_calls WHERE name GLOB 'hip*'"))
    assert kinds["sync"] == 3 and kinds["alloc"] == 1 and kinds["free"] == 1
    assert kinds["memcpy"] + kinds["memcpy_async"] == len(scenario.copies)
    assert rel.query("SELECT count(*) FROM pa_api_calls WHERE name GLOB 'hsa_*'")[0][0] > 0
    # the OS thread id, whichever key the writer stores in the region
    assert Counter(t for (t,) in rel.query("SELECT tid FROM pa_api_calls WHERE name GLOB 'hip*'")) == \
        Counter(c.tid for c in hip_calls)


def test_markers_carry_the_users_text(written: tuple[str, Path], scenario: Scenario) -> None:
    flavour, path = written
    rel = bind(path)
    got = sorted(rel.query('SELECT pid, tid, start, "end", name, kind FROM pa_markers'))

    def kind(m: Marker) -> str:
        if m.start == m.end:
            return "instant"
        # rocprof-sys's regions do not tell push/pop from start/stop ranges
        return m.kind if flavour == "rocprofv3" else "push_pop"

    assert got == sorted((m.pid, m.tid, m.start, m.end, m.text, kind(m)) for m in scenario.markers)
    if flavour == "rocprof-sys":  # the file really holds the HIP call mirrors
        n = raw(path).execute("SELECT count(*) FROM regions WHERE category = 'rocm_marker_api'").fetchone()[0]
        assert n == len(scenario.markers) + sum(c.name != "ncclAllReduce" for c in scenario.api_calls)


def test_instant_marks_are_counted(written: tuple[str, Path], scenario: Scenario) -> None:
    s = summarize(written[1])
    assert s.markers is not None
    assert s.markers.count == len(scenario.markers)
    stats = {m.name: (m.count, m.total_ns) for m in s.markers.by_name}
    assert stats["checkpoint"] == (1, 0)
    # a mark is never a top-level range
    assert all(t.name != "checkpoint" for t in s.markers.top_level)


def test_mpi_calls_only_in_rocprof_sys(written: tuple[str, Path], scenario: Scenario) -> None:
    flavour, path = written
    rows = bind(path).query("SELECT tid, name, kind, bytes, rank FROM pa_mpi_calls")
    if flavour == "rocprofv3":
        assert rows == []
        return
    assert sorted(rows) == sorted((m.tid, m.name, m.kind, m.bytes or None, None) for m in scenario.mpi_calls)


def test_allocations(written: tuple[str, Path], scenario: Scenario) -> None:
    rel = bind(written[1])
    got = Counter(rel.query("SELECT tid, device, kind, level, bytes, start FROM pa_allocations"))
    want = Counter((a.tid, a.device if a.kind == "ALLOC" or a.level == "SCRATCH" else None, a.kind.lower(),
                    a.level.lower(), a.size, a.start) for a in allocations_of(scenario))
    assert got == want


def test_allocation_linked_to_its_call(tmp_path: Path) -> None:
    sc = make_scenario()
    malloc = next(c for c in sc.api_calls if c.kind == "malloc")
    corr = malloc.correlation_id = 9999
    path = write_rocpd(sc, tmp_path / "alloc.db", allocations=[
        Allocation(100, malloc.tid, 1, malloc.start + 10, malloc.start + 20, 3 * MIB, correlation_id=corr)])
    rel = bind(path)
    assert rel.query("SELECT c.name, c.start, a.bytes, a.device FROM pa_allocations a JOIN pa_api_calls c "
                     "ON c.pid = a.pid AND c.correlation_id = a.correlation_id") == \
        [("hipMalloc", malloc.start, 3 * MIB, 1)]


def test_devices_only_used_gpus(written: tuple[str, Path]) -> None:
    flavour, path = written
    rel = bind(path)
    rows = rel.query("SELECT device, name, clock_hz, sm_count, threads_per_warp, memory_bandwidth_bps, "
                     "compute_capability FROM pa_devices ORDER BY device")
    assert [r[0] for r in rows] == [0, 1]  # 4 GPU agents listed, 2 used
    for _device, name, clock, cus, wave, bw, gfx in rows:
        assert name == "AMD Instinct MI250X" and gfx == "gfx90a"
        assert bw is None   # rocpd stores none: the summary takes the spec sheet's (hardware.yaml)
        if flavour == "rocprofv3":
            assert clock == 1_700_000_000 and cus == 110 and wave == 64
        else:  # rocprof-sys writes extdata '{}': unknown, not zero
            assert clock is None and cus is None
    hw = {d.id: d.hardware for d in summarize(path).devices}
    # AMD's MI250X sheet: 3.2768 TB/s per package, two GCDs listed as two agents: half each
    assert {i: h.memory_bandwidth_bps for i, h in hw.items()} == {0: 1_638_400_000_000, 1: 1_638_400_000_000}
    assert hw[0].host_link == "PCIe 4.0 x16 (assumed from GPU generation)"   # gfx90a
    assert hw[0].host_link_bandwidth_bps == 31_500_000_000


def test_processes_threads_meta(written: tuple[str, Path], scenario: Scenario) -> None:
    flavour, path = written
    rel = bind(path)
    assert rel.query("SELECT pid, name FROM pa_processes") == [(100, "app100")]
    assert sorted(rel.query("SELECT tid, name FROM pa_threads")) == [(100, "main"), (101, "worker")]
    meta = dict(rel.query("SELECT key, value FROM pa_meta"))
    guid = raw(path).execute("SELECT value FROM rocpd_metadata WHERE tag='guid'").fetchone()[0]
    assert meta["host_name"] == "frontier01234" and meta["guid"] == guid
    assert meta["product"] == flavour
    # dispatch rows include the fill kernels hipMemset runs as
    assert meta["kernel_dispatch_rows"] == str(len(scenario.kernels) + len(scenario.memsets))


def test_event_extdata_messages_are_data(tmp_path: Path) -> None:
    # rocTX text is user data: quotes, JSON-looking text and SQL reach pa as text, never as code
    text = "'); DROP TABLE x; -- {\"message\": 1}"
    sc = make_scenario()
    sc.markers = [Marker(100, 100, 100_000_000, 100_001_000, text)]
    rel = bind(write_rocpd(sc, tmp_path / "odd.db"))
    assert rel.query("SELECT name FROM pa_markers") == [(text,)]
    assert json.loads(raw(tmp_path / "odd.db").execute(
        "SELECT extdata FROM regions WHERE category = 'MARKER_CORE_RANGE_API'").fetchone()[0]) == {"message": text}


def test_degraded_binds_with_zero_kernels(scenario: Scenario, tmp_path: Path) -> None:
    rel = bind(write_rocpd(scenario, tmp_path / "killed.db", degraded=True))
    assert rel.available("kernels") and rel.count("kernels") == 0
    assert rel.count("copies") == 0 and rel.count("devices") == 0
    assert rel.query("SELECT count(*) FROM pa_api_calls WHERE kind = 'launch'")[0][0] == 12
    assert dict(rel.query("SELECT key, value FROM pa_meta"))["kernel_dispatch_rows"] == "0"


def test_two_rank_files(tmp_path: Path) -> None:
    sc = make_scenario(pids=(100, 200))
    paths = [write_rocpd(sc, tmp_path / f"rank_{pid}.db", pid=pid) for pid in (100, 200)]
    guids = set()
    for pid, path in zip((100, 200), paths, strict=True):
        rel = bind(path)
        mine = [k for k in sc.kernels if k.pid == pid]
        assert rel.query('SELECT DISTINCT pid FROM pa_kernels') == [(pid,)]
        assert rel.query('SELECT count(*), sum("end" - start) FROM pa_kernels')[0] == (
            len(mine), sum(k.end - k.start for k in mine))
        guids.add(dict(rel.query("SELECT key, value FROM pa_meta"))["guid"])
    assert len(guids) == 2
