"""rocpd schema 4.0.0 (queries/rocpd/4) and schema-version recognition.

A 4.0.0 file keeps its times in rocpd_timestamp, its identities on rocpd_track and its categories in
rocpd_info_category. pa's 4 set must give the numbers the file's own views give (the `kernels`,
`memory_copies`, `regions` and `samples` views of the writer's DDL), and the same summary as the
schema 3 file of the same scenario.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from rocpd_ddl import needs_rocpd_ddl  # tests/ is on sys.path
from test_rocpd import MIB, RCCL_KERNEL, allocations_of, make_scenario
from testkit.rocpd_writer import ddl_dir, render_ddl, write_rocpd
from testkit.scenario import Scenario
from testkit.scenarios import ALL_SCENARIOS

from pa.cli import main as cli
from pa.metrics.model import ProfileSummary
from pa.metrics.summarize import summarize
from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import resolve
from pa.profile.relations import Relations

pytestmark = needs_rocpd_ddl


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    return make_scenario()


@pytest.fixture(scope="module")
def v4(scenario: Scenario, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rocpd(scenario, tmp_path_factory.mktemp("v4") / "rank_100_results.db", schema_version="4.0.0",
                       extra_gpus=2, allocations=allocations_of(scenario))


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def bind(path: Path) -> Relations:
    conn = open_readonly(path)
    fmt = detect(conn, path)
    return Relations.bind(conn, resolve(fmt.format, fmt.schema_version))


def test_layout_is_the_writers_4_0_0_ddl(v4: Path) -> None:
    conn = raw(v4)
    guid = conn.execute("SELECT value FROM rocpd_metadata WHERE tag = 'guid'").fetchone()[0]
    ref = sqlite3.connect(":memory:")
    ref.executescript(render_ddl((ddl_dir() / "4" / "rocprofv3_4.0.0_schema.sql").read_text(), guid))
    schema = "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    assert conn.execute(schema).fetchall() == ref.execute(schema).fetchall()
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    meta = dict(conn.execute("SELECT tag, value FROM rocpd_metadata"))
    assert meta["schema_version"] == "4.0.0" and meta["schema_version_major"] == "{{schema_version_major}}"
    # categories: lower-case, repeated (two hsa_api rows), correlation ids all 0
    names = Counter(n for (n,) in conn.execute("SELECT name FROM rocpd_info_category"))
    assert names["hsa_api"] == 2 and names["hip_api"] == 2
    assert conn.execute("SELECT DISTINCT correlation_id FROM rocpd_event").fetchall() == [(0,)]


def test_detected_and_read_with_the_4_set(v4: Path) -> None:
    conn = open_readonly(v4)
    fmt = detect(conn, v4)
    qs = resolve("rocpd", fmt.schema_version)
    assert (fmt.schema_version, qs.version, qs.warnings) == ("4.0.0", "4", [])
    # written for 4: the files whose SQL must change; the rest is inherited from 3
    assert {r for r, f in qs.files.items() if f.version_dir == "4"} == {
        "kernels", "memsets", "copies", "api_calls", "markers", "mpi_calls", "allocations", "devices"}


def test_kernels_equal_the_files_kernels_view(v4: Path, scenario: Scenario) -> None:
    rel = bind(v4)
    view = raw(v4).execute("SELECT name, count(*), sum(duration), min(start), max(\"end\") FROM kernels "
                           "WHERE name NOT GLOB '__amd_rocclr_fill*' GROUP BY name ORDER BY name").fetchall()
    got = rel.query('SELECT name, count(*), sum("end" - start), min(start), max("end") FROM pa_kernels '
                    "GROUP BY name ORDER BY name")
    assert got == view
    assert sum(r[1] for r in got) == len(scenario.kernels)
    assert sum(r[2] for r in got) == sum(k.end - k.start for k in scenario.kernels)
    # and block counts: the view's grid_size_x is blocks, grid_x work-items
    assert sorted(rel.query("SELECT start, grid_x, block_x FROM pa_kernels")) == sorted(
        raw(v4).execute("SELECT start, grid_size_x, workgroup_x FROM kernels "
                        "WHERE name NOT GLOB '__amd_rocclr_fill*'").fetchall())


def test_copies_by_direction_with_bytes(v4: Path, scenario: Scenario) -> None:
    rel = bind(v4)
    got = dict((d, (n, b)) for d, n, b in rel.query("SELECT direction, count(*), sum(bytes) FROM pa_copies GROUP BY 1"))
    # independently, from the file's memory_copies view: two GPU agents = peer, else by name
    names = {"MEMORY_COPY_HOST_TO_DEVICE": "HtoD", "MEMORY_COPY_DEVICE_TO_HOST": "DtoH",
             "MEMORY_COPY_DEVICE_TO_DEVICE": "DtoD", "MEMORY_COPY_HOST_TO_HOST": "HtoH"}
    by_dir: dict[str, list[int]] = {}
    for name, st, dt, sa, da, size in raw(v4).execute(
            "SELECT name, src_agent_type, dst_agent_type, src_agent_id, dst_agent_id, size FROM memory_copies"):
        d = "PtoP" if st == dt == "GPU" and sa != da else names[name]
        by_dir.setdefault(d, [0, 0])
        by_dir[d][0] += 1
        by_dir[d][1] += size
    assert got == {d: tuple(v) for d, v in by_dir.items()}
    assert got["PtoP"] == (1, 8 * MIB)
    planted: Counter[str] = Counter()
    for c in scenario.copies:
        planted[c.direction] += c.bytes
    assert {d: b for d, (_, b) in got.items()} == dict(planted)


def test_api_calls_markers_and_launch_links(v4: Path, scenario: Scenario) -> None:
    rel = bind(v4)
    view_api = raw(v4).execute("SELECT count(*) FROM regions WHERE category IN ('hip_api', 'hsa_api', 'rccl_api')"
                               ).fetchone()[0]
    assert rel.count("api_calls") == view_api
    assert Counter(k for (k,) in rel.query("SELECT kind FROM pa_api_calls WHERE name GLOB 'hip*'")) == Counter(
        {"launch": 12, "memcpy": 2, "memcpy_async": 3, "sync": 3, "alloc": 1, "free": 1, "other": 1})
    linked = rel.query("SELECT count(*) FROM pa_kernels k JOIN pa_api_calls c "
                       "ON c.pid = k.pid AND c.correlation_id = k.correlation_id")
    assert linked == [(len(scenario.kernels),)]
    got = sorted(rel.query('SELECT tid, start, "end", name, kind FROM pa_markers'))
    view = raw(v4).execute("SELECT tid, start, \"end\", json_extract(extdata, '$.message') FROM regions "
                           "WHERE category = 'marker_api' UNION ALL SELECT tid, timestamp, timestamp, "
                           "json_extract(extdata, '$.message') FROM samples WHERE category = 'marker_api'").fetchall()
    assert [g[:4] for g in got] == sorted(view)
    assert sorted((m.tid, m.start, m.end, m.text) for m in scenario.markers) == sorted(view)
    assert {g[4] for g in got} == {"instant", "start_end", "push_pop"}


def test_rccl_allocations_and_devices(v4: Path, scenario: Scenario) -> None:
    rel = bind(v4)
    classes = dict(rel.query("SELECT n.name, c.class FROM pa_kernel_names n JOIN pa_kernel_classes c USING (name_id)"))
    assert classes[RCCL_KERNEL] == "communication"
    assert Counter(rel.query("SELECT kind, level, bytes, device FROM pa_allocations")) == Counter(
        (a.kind.lower(), a.level.lower(), a.size, a.device if a.kind == "ALLOC" or a.level == "SCRATCH" else None)
        for a in allocations_of(scenario))
    assert rel.query("SELECT device, name, compute_capability, clock_hz, simd_per_cu FROM pa_devices "
                     "ORDER BY device") == [(0, "AMD Instinct MI250X", "gfx90a", 1_700_000_000, 4),
                                            (1, "AMD Instinct MI250X", "gfx90a", 1_700_000_000, 4)]
    assert dict(rel.query("SELECT key, value FROM pa_meta"))["product"] == "rocprofv3"


def _facts(s: ProfileSummary) -> dict:
    """What a summary says about the GPU, copies, host calls and markers (the file identity aside).

    Not the streams: a 4.0.0 dispatch's track names the HSA queue it ran on, not the HIP stream (a
    schema 3 dispatch row has both), so the two files number kernel streams differently.
    """
    d = s.model_dump()
    keep = ("span_ns", "gpu", "devices", "kernels", "copies", "memsets", "idle_gaps", "sync", "launch", "markers",
            "mpi", "host_side", "phases")
    return {k: d.get(k) for k in keep}


@pytest.mark.parametrize("name", ["mixed_launch_and_copies", "nvtx_nested", "sync_after_launch"])
def test_same_summary_as_the_schema_3_file(tmp_path: Path, name: str) -> None:
    sc = ALL_SCENARIOS[name]()
    s3 = summarize(write_rocpd(sc, tmp_path / "v3.db"))
    s4 = summarize(write_rocpd(sc, tmp_path / "v4.db", schema_version="4.0.0"))
    assert s4.profile.query_set == "rocpd/4" and s3.profile.query_set == "rocpd/3"
    assert _facts(s4) == _facts(s3)
    assert s4.gpu.kernel_count == len(sc.kernels)


def test_degraded_4_0_0_capture_reports_host_side(tmp_path: Path) -> None:
    sc = ALL_SCENARIOS["mixed_launch_and_copies"]()
    s = summarize(write_rocpd(sc, tmp_path / "killed.db", schema_version="4.0.0", degraded=True))
    assert s.host_side is not None and s.gpu.kernel_count == 0
    assert s.host_side["host_launch_calls"] == sum(c.kind == "launch" for c in sc.api_calls)
    htod = sum(c.bytes for c in sc.copies if c.direction == "HtoD")
    assert s.host_side["host_memcpy_bytes_HtoD"] == htod
    assert s.mpi is None and "rocprofv3 does not trace MPI" in {k.what: k.reason for k in s.skipped}["mpi"]


def test_tables_another_tool_added_are_ignored(v4: Path, tmp_path: Path, scenario: Scenario) -> None:
    copy = tmp_path / "viewed.db"
    copy.write_bytes(v4.read_bytes())
    conn = sqlite3.connect(copy)
    uuid = conn.execute("SELECT value FROM rocpd_metadata WHERE tag = 'uuid'").fetchone()[0]
    conn.execute(f"CREATE TABLE rocpd_region_event_levels{uuid} (id INTEGER, level INTEGER)")
    conn.commit()
    conn.close()
    assert summarize(copy).gpu.kernel_count == len(scenario.kernels)


# ------------------------------------------------------------------------------------------------
# schema versions


def _relabel(src: Path, dst: Path, version: str | None) -> Path:
    dst.write_bytes(src.read_bytes())
    conn = sqlite3.connect(dst)
    uuid = conn.execute("SELECT value FROM rocpd_metadata WHERE tag = 'uuid'").fetchone()[0]
    if version is None:
        conn.execute(f"DELETE FROM rocpd_metadata{uuid} WHERE tag = 'schema_version'")
    else:
        conn.execute(f"UPDATE rocpd_metadata{uuid} SET value = ? WHERE tag = 'schema_version'", (version,))
    conn.commit()
    conn.close()
    return dst


def test_3_0_5_is_read_by_the_3_set_without_warning(tmp_path: Path, scenario: Scenario) -> None:
    path = write_rocpd(scenario, tmp_path / "v305.db", schema_version="3.0.5")
    conn = open_readonly(path)
    fmt = detect(conn, path)
    qs = resolve("rocpd", fmt.schema_version)
    assert (fmt.schema_version, qs.name, qs.warnings) == ("3.0.5", "rocpd/3", [])
    s = summarize(path)
    # no version warning; the fixture's copies (MiBs in 1.9 µs) are faster than any link, which pa
    # rightly says is a measurement problem
    assert [w for w in s.warnings if "above the assumed peak" not in w] == []
    assert s.profile.schema_version == "3.0.5"
    assert s.gpu.kernel_count == len(scenario.kernels)


@pytest.mark.parametrize(("version", "chosen"), [("4.1.0", "4"), ("5.0", "4")])
def test_newer_than_known_is_read_with_the_newest_set_and_one_warning(v4: Path, tmp_path: Path,
                                                                      scenario: Scenario, version: str,
                                                                      chosen: str) -> None:
    path = _relabel(v4, tmp_path / "newer.db", version)
    res = CliRunner().invoke(cli, ["summary", "--json", str(path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["profile"]["query_set"] == f"rocpd/{chosen}"
    assert doc["gpu"]["kernel_count"] == len(scenario.kernels)
    assert len([w for w in doc["warnings"] if version in w]) == 1


def test_no_version_tag_but_a_timestamp_table_is_4_0_0(v4: Path, tmp_path: Path) -> None:
    path = _relabel(v4, tmp_path / "untagged.db", None)
    assert detect(open_readonly(path), path).schema_version == "4.0.0"
