"""rocpd (schema_version 3) writer and query set, checked against the scenario and direct SQL."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from engine.errors import UserError
from engine.profile.detect import detect
from engine.profile.open import open_readonly
from engine.profile.queryset import resolve
from engine.profile.relations import Relations
from engine.synth.rocpd_writer import write_rocpd, write_rocpd_bulk
from engine.synth.scenario import (
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

MI250X = dict(name="AMD Instinct MI250X", sm_count=110, clock_hz=1_700_000_000, threads_per_warp=64,
              max_warps_per_sm=32, max_shared_per_sm=65536, max_shared_per_block=65536,
              gfx_target="gfx90a")


def make_scenario(pids: tuple[int, ...] = (100,)) -> Scenario:
    """Two GPUs, kernels on both, copies of every direction, syncs, markers and MPI calls."""
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
        directions = [("HtoD", None), ("DtoH", None), ("DtoD", None), ("PtoP", 1), ("HtoD", None)]
        for j, (direction, peer) in enumerate(directions):
            corr += 1
            kind = "memcpy" if j % 2 else "memcpy_async"
            sc.api_calls.append(ApiCall(pid, pid, t, t + 3000, kind, corr))  # type: ignore[arg-type]
            host: MemKind = "pinned" if j == 0 else "pageable"
            sc.copies.append(Copy(pid, 0, 3, t + 100, t + 2000, (j + 1) * 1_048_576, direction,  # type: ignore[arg-type]
                                  host if direction != "DtoH" else "device",
                                  "device" if direction != "DtoH" else host, dst_device=peer,
                                  correlation_id=corr))
            t += 5000
        for kind in ("device_sync", "stream_sync", "event_sync", "malloc", "free", "other"):
            sc.api_calls.append(ApiCall(pid, pid + 1, t, t + 800, kind))  # type: ignore[arg-type]
            t += 1000
        sc.memsets.append(Memset(pid, 0, 1, t, t + 100, 4096))
        sc.markers += [Marker(pid, pid, pid * 1_000_000, t, "timestep"),
                       Marker(pid, pid + 1, pid * 1_000_000 + 10, pid * 1_000_000 + 9000, "halo exchange")]
        mpi = [("MPI_Allreduce", "collective", 8), ("MPI_Isend", "p2p", 4096), ("MPI_Waitall", "wait", 0),
               ("MPI_Comm_rank", "other", 0)]
        for k, (name, kind, nbytes) in enumerate(mpi):
            sc.mpi_calls.append(MpiCall(pid, pid, t + k * 1000, t + k * 1000 + 500, name, kind,  # type: ignore[arg-type]
                                        bytes=nbytes))
    return sc


def bind(path: Path) -> Relations:
    conn = open_readonly(path)
    fmt = detect(conn, path)
    assert (fmt.format, fmt.schema_version) == ("rocpd", "3")
    return Relations.bind(conn, resolve("rocpd", fmt.schema_version))


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return make_scenario()


@pytest.fixture(scope="module", params=["rocprofv3", "rocprof-sys"])
def written(request: pytest.FixtureRequest, scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[str, Path]:
    path = tmp_path_factory.mktemp(request.param) / "rank_100_results.db"
    write_rocpd(scenario, path, flavour=request.param, extra_gpus=2)
    return request.param, path


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


# ------------------------------------------------------------------------------------------------
# writer


def test_guid_suffixed_tables_with_views(written: tuple[str, Path]) -> None:
    _, path = written
    conn = raw(path)
    guid = conn.execute("SELECT value FROM rocpd_metadata WHERE tag = 'guid'").fetchone()[0]
    uuid_tag = conn.execute("SELECT value FROM rocpd_metadata WHERE tag = 'uuid'").fetchone()[0]
    assert uuid_tag == "_" + guid.replace("-", "_") and len(guid) == 36
    objects = dict(conn.execute("SELECT name, type FROM sqlite_master").fetchall())
    for base in ("string", "event", "region", "arg", "kernel_dispatch", "memory_copy", "info_agent",
                 "info_kernel_symbol", "info_process", "info_thread", "info_node", "metadata"):
        assert objects[f"rocpd_{base}{uuid_tag}"] == "table"
        assert objects[f"rocpd_{base}"] == "view"
    for view in ("kernels", "memory_copies", "regions", "region_args", "processes", "threads"):
        assert objects[view] == "view"
    # every row of every concrete table carries this file's guid; the views show the same rows
    for base in ("string", "region", "kernel_dispatch", "memory_copy", "info_agent"):
        table = f"rocpd_{base}{uuid_tag}"
        assert conn.execute(f"SELECT count(*) FROM {table} WHERE guid <> ?", (guid,)).fetchone()[0] == 0
        assert (conn.execute(f"SELECT count(*) FROM {table}").fetchone()
                == conn.execute(f"SELECT count(*) FROM rocpd_{base}").fetchone())


def test_two_writes_get_different_guids(scenario: Scenario, tmp_path: Path) -> None:
    a = write_rocpd(scenario, tmp_path / "a.db")
    b = write_rocpd(scenario, tmp_path / "b.db")
    sql = "SELECT value FROM rocpd_metadata WHERE tag = 'guid'"
    guids = {raw(p).execute(sql).fetchone()[0] for p in (a, b)}
    assert len(guids) == 2


def test_grid_counts_work_items(written: tuple[str, Path], scenario: Scenario) -> None:
    _, path = written
    rows = raw(path).execute("SELECT grid_size_x, grid_size_y, grid_size_z, workgroup_size_x, "
                             "workgroup_size_y, workgroup_size_z, d.group_segment_size, d.start "
                             "FROM rocpd_kernel_dispatch d JOIN rocpd_info_kernel_symbol s ON s.id = d.kernel_id "
                             "WHERE s.display_name NOT GLOB '__amd_rocclr_fill*'").fetchall()
    by_start = {k.start: k for k in scenario.kernels}
    assert len(rows) == len(scenario.kernels)
    fills = raw(path).execute("SELECT count(*) FROM rocpd_kernel_dispatch d JOIN rocpd_info_kernel_symbol s "
                              "ON s.id = d.kernel_id WHERE s.display_name GLOB '__amd_rocclr_fill*'").fetchone()[0]
    assert fills == len(scenario.memsets)  # hipMemset runs as ROCm fill kernels
    for gx, gy, gz, wx, wy, wz, lds, start in rows:
        k = by_start[start]
        assert (gx, gy, gz) == (k.grid[0] * k.block[0], k.grid[1] * k.block[1], k.grid[2] * k.block[2])
        assert (wx, wy, wz) == k.block
        assert lds == k.static_shared_bytes + k.dynamic_shared_bytes


def test_agents_list_every_gpu_of_the_node(written: tuple[str, Path], scenario: Scenario) -> None:
    flavour, path = written
    rows = raw(path).execute("SELECT type, type_index, extdata FROM rocpd_info_agent").fetchall()
    gpus = sorted(r[1] for r in rows if r[0] == "GPU")
    assert gpus == [0, 1, 2, 3]  # two scenario devices + two unused
    assert sum(r[0] == "CPU" for r in rows) == 1
    if flavour == "rocprof-sys":
        assert {r[2] for r in rows} == {"{}"}


def test_degraded_has_regions_but_no_gpu_activity(scenario: Scenario, tmp_path: Path) -> None:
    path = write_rocpd(scenario, tmp_path / "killed.db", degraded=True)
    conn = raw(path)
    assert conn.execute("SELECT count(*) FROM rocpd_kernel_dispatch").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM rocpd_memory_copy").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM rocpd_region").fetchone()[0] >= len(scenario.api_calls)
    assert conn.execute("SELECT count(*) FROM region_args WHERE name = 'sizeBytes'").fetchone()[0] == len(
        scenario.copies)


def test_bulk_writer_counts(tmp_path: Path) -> None:
    path = write_rocpd_bulk(tmp_path / "bulk.db", n_regions=3000, n_dispatches=400, n_copies=500,
                            flavour="rocprof-sys")
    conn = raw(path)
    assert conn.execute("SELECT count(*) FROM rocpd_region").fetchone()[0] == 3000
    assert conn.execute("SELECT count(*) FROM rocpd_kernel_dispatch").fetchone()[0] == 400
    assert conn.execute("SELECT count(*) FROM rocpd_memory_copy").fetchone()[0] == 500
    rel = bind(path)
    assert rel.count("kernels") == 400
    assert rel.count("copies") == 500


# ------------------------------------------------------------------------------------------------
# query set


def test_unavailable_relations_are_skipped_with_reason(written: tuple[str, Path]) -> None:
    rel = bind(written[1])
    for relation in ("syncs", "overhead"):
        assert not rel.available(relation)
        assert "no query file" in (rel.skip_reason(relation) or "")
    for relation in ("kernels", "memsets", "copies", "api_calls", "markers", "mpi_calls", "devices", "processes",
                     "threads", "meta"):
        assert rel.available(relation), rel.skip_reason(relation)


def test_kernels_match_scenario(written: tuple[str, Path], scenario: Scenario) -> None:
    rel = bind(written[1])
    count, total = rel.query('SELECT count(*), sum("end" - start) FROM pa_kernels')[0]
    assert count == len(scenario.kernels)
    assert total == sum(k.end - k.start for k in scenario.kernels)
    got = Counter(rel.query("SELECT device, stream, start, grid_x, grid_y, grid_z, block_x, block_y, "
                            "block_z, registers_per_thread, static_shared_bytes, dynamic_shared_bytes, "
                            "local_bytes_per_thread, correlation_id, name FROM pa_kernels"))
    want = Counter((k.device, k.stream, k.start, *k.grid, *k.block, k.registers_per_thread,
                    k.static_shared_bytes, k.dynamic_shared_bytes, k.local_bytes_per_thread,
                    k.correlation_id, k.name) for k in scenario.kernels)
    assert got == want


def test_kernel_name_ids_one_per_name(written: tuple[str, Path], scenario: Scenario) -> None:
    # the same kernel runs on two GPUs: two symbols (one per agent's code object), one name_id
    rel = bind(written[1])
    pairs = set(rel.query("SELECT name_id, name FROM pa_kernels"))
    assert len(pairs) == len({k.name for k in scenario.kernels})
    assert len({p[0] for p in pairs}) == len(pairs)
    shorts = dict(rel.query("SELECT name, short_name FROM pa_kernels"))
    assert shorts["stencil_1(double*, int)"] == "stencil_1"
    sgpr = raw(written[1]).execute("SELECT DISTINCT sgpr_count FROM rocpd_info_kernel_symbol "
                                   "ORDER BY 1").fetchall()
    assert sorted({r[0] for r in rel.query("SELECT sgpr_per_wave FROM pa_kernels")}) == [r[0] for r in sgpr]


def test_copy_bytes_per_direction(written: tuple[str, Path], scenario: Scenario) -> None:
    rel = bind(written[1])
    got = dict(rel.query("SELECT direction, sum(bytes) FROM pa_copies GROUP BY direction"))
    want: Counter[str] = Counter()
    for c in scenario.copies:
        want[c.direction] += c.bytes
    assert got == dict(want)
    # pageable vs pinned is not in rocpd: host side unknown, device side device
    kinds = set(rel.query("SELECT direction, src_kind, dst_kind FROM pa_copies"))
    assert ("HtoD", "unknown", "device") in kinds and ("DtoH", "device", "unknown") in kinds
    assert ("PtoP", 0, 1) in set(rel.query("SELECT direction, src_device, dst_device FROM pa_copies"))
    assert set(rel.query("SELECT device FROM pa_copies WHERE direction = 'HtoD'")) == {(0,)}


def test_peer_copy_direction_from_agents_when_name_unknown(scenario: Scenario, tmp_path: Path) -> None:
    path = write_rocpd(scenario, tmp_path / "noname.db")
    conn = sqlite3.connect(path)
    # drop the direction names: the query must fall back to src/dst agent types
    conn.execute("UPDATE rocpd_string_" + conn.execute(
        "SELECT substr(value, 2) FROM rocpd_metadata WHERE tag='uuid'").fetchone()[0]
                 + " SET string = 'MEMORY_COPY_UNKNOWN' WHERE string GLOB 'MEMORY_COPY_*_TO_*'")
    conn.commit()
    conn.close()
    rel = bind(path)
    got = Counter(d for (d,) in rel.query("SELECT direction FROM pa_copies"))
    assert got == Counter(c.direction for c in scenario.copies)


def test_api_calls(written: tuple[str, Path], scenario: Scenario) -> None:
    rel = bind(written[1])
    launches = rel.query("SELECT count(*) FROM pa_api_calls WHERE kind = 'launch'")[0][0]
    assert launches == sum(c.kind == "launch" for c in scenario.api_calls)
    # every HIP call exactly once: rocprof-sys marker copies, MPI and sampling are not API calls
    hip = rel.query("SELECT count(*) FROM pa_api_calls WHERE name GLOB 'hip*'")[0][0]
    assert hip == len(scenario.api_calls)
    kinds = Counter(k for (k,) in rel.query("SELECT kind FROM pa_api_calls WHERE name GLOB 'hip*'"))
    assert kinds["sync"] == 3 and kinds["alloc"] == 1 and kinds["free"] == 1
    assert kinds["memcpy"] + kinds["memcpy_async"] == len(scenario.copies)
    hsa = rel.query("SELECT count(*) FROM pa_api_calls WHERE name GLOB 'hsa_*'")[0][0]
    assert hsa > 0


def test_markers_exclude_hip_duplicates(written: tuple[str, Path], scenario: Scenario) -> None:
    flavour, path = written
    rel = bind(path)
    got = sorted(rel.query("SELECT pid, tid, start, \"end\", name, kind FROM pa_markers"))
    assert got == sorted((m.pid, m.tid, m.start, m.end, m.text, "push_pop") for m in scenario.markers)
    if flavour == "rocprof-sys":  # the file really holds the duplicates
        n = raw(path).execute("SELECT count(*) FROM regions WHERE category = 'rocm_marker_api'").fetchone()[0]
        assert n == len(scenario.markers) + len(scenario.api_calls)


def test_mpi_calls_only_in_rocprof_sys(written: tuple[str, Path], scenario: Scenario) -> None:
    flavour, path = written
    rel = bind(path)
    rows = rel.query("SELECT name, kind, bytes, rank FROM pa_mpi_calls")
    if flavour == "rocprofv3":
        assert rows == []
        return
    assert sorted(rows) == sorted((m.name, m.kind, m.bytes or None, None) for m in scenario.mpi_calls)


def test_devices_only_used_gpus(written: tuple[str, Path], scenario: Scenario) -> None:
    flavour, path = written
    rel = bind(path)
    rows = rel.query("SELECT device, name, clock_hz, sm_count, threads_per_warp, memory_bandwidth_bps, "
                     "compute_capability FROM pa_devices ORDER BY device")
    assert [r[0] for r in rows] == [0, 1]  # 4 GPU agents listed, 2 used
    used = {r[0] for r in rel.query("SELECT DISTINCT device FROM pa_kernels")}
    assert used == {0, 1}
    for _device, name, clock, cus, wave, bw, gfx in rows:
        assert name == "AMD Instinct MI250X" and gfx == "gfx90a"
        assert bw == 1_638_400_000_000  # one MI250X GCD
        if flavour == "rocprofv3":
            assert clock == 1_700_000_000 and cus == 110 and wave == 64
        else:  # rocprof-sys writes extdata '{}': unknown, not zero
            assert clock is None and cus is None


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


# ------------------------------------------------------------------------------------------------
# refusals


def test_unknown_schema_version_refused(scenario: Scenario, tmp_path: Path) -> None:
    path = write_rocpd(scenario, tmp_path / "v4.db")
    conn = sqlite3.connect(path)
    table = conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name GLOB 'rocpd_metadata_*'"
                         ).fetchone()[0]
    conn.execute(f"UPDATE {table} SET value = '4' WHERE tag = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="schema_version 4"):
        detect(open_readonly(path), path)


def test_other_program_with_rocpd_like_table_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE rocpd_foo (x INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="another program"):
        detect(open_readonly(path), path)
