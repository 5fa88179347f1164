"""rocpd files that are not a complete capture, read end to end through summarize() / `pa summary`.

Degraded captures (GPU tables empty, API regions present), files holding only API regions, GPU
tables absent, unused GPU agents, per-rank files with their own GUIDs, and files pa must refuse.
Numbers are checked against the planted scenario, not against pa's own output.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from rocpd_ddl import needs_rocpd_ddl  # tests/ is on sys.path
from testkit.rocpd_writer import FLAVOURS, write_rocpd
from testkit.scenario import ApiCall, Device, Process, Scenario
from testkit.scenarios import ALL_SCENARIOS

from pa.cli import main as cli
from pa.metrics.model import ProfileSummary
from pa.metrics.summarize import summarize

MEMCPY_KINDS = ("memcpy", "memcpy_async")
pytestmark = needs_rocpd_ddl


def host_expectation(sc: Scenario) -> dict[str, int]:
    """What the host asked for, straight from the scenario: the keys rocpd host_side must hold."""
    copies = {c.correlation_id: c for c in sc.copies}
    calls = [c for c in sc.api_calls if c.kind in MEMCPY_KINDS]
    out = {"host_launch_calls": sum(c.kind in ("launch", "graph_launch") for c in sc.api_calls),
           "host_memcpy_calls": len(calls),
           "host_memset_calls": sum(c.kind == "memset" for c in sc.api_calls)}
    # the HIP memcpy kind argument has no peer kind: a peer copy's call says DeviceToDevice
    direction = {"HtoD": "HtoD", "DtoH": "DtoH", "DtoD": "DtoD", "PtoP": "DtoD", "HtoH": "HtoH"}
    for call in calls:
        copy = copies[call.correlation_id]
        d = direction[copy.direction]
        out[f"host_memcpy_calls_{d}"] = out.get(f"host_memcpy_calls_{d}", 0) + 1
        out[f"host_memcpy_bytes_{d}"] = out.get(f"host_memcpy_bytes_{d}", 0) + copy.bytes
    return out


def skipped(s: ProfileSummary) -> dict[str, str]:
    return {k.what: k.reason for k in s.skipped}


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_degraded_capture_reports_host_side_only(tmp_path: Path, flavour: str) -> None:
    sc = ALL_SCENARIOS["mixed_launch_and_copies"]()
    s = summarize(write_rocpd(sc, tmp_path / "killed.db", flavour=flavour, degraded=True))
    want = host_expectation(sc)
    assert want["host_launch_calls"] > 0 and want["host_memcpy_bytes_HtoD"] > 0
    assert s.host_side is not None
    assert {k: v for k, v in s.host_side.items() if k.startswith("host_")} == want
    assert any(w.startswith("degraded capture") for w in s.warnings)
    # never presented as GPU activity
    assert s.gpu.kernel_count == 0 and s.gpu.busy_ns == 0 and s.gpu.device_count == 0
    assert s.kernels == [] and s.idle_gaps == [] and s.streams == []
    assert all(not d.used for d in s.devices)
    assert s.copies is None and "degraded capture" in skipped(s)["copies"]
    assert "gpu_activity" in skipped(s)


def test_copy_table_empty_but_kernels_present(tmp_path: Path) -> None:
    sc = ALL_SCENARIOS["pageable_htod"]()
    path = write_rocpd(sc, tmp_path / "no_copies.db")
    conn = sqlite3.connect(path)
    (table,) = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                            "AND name GLOB 'rocpd_memory_copy_*'").fetchone()
    conn.execute(f"DELETE FROM {table}")
    conn.commit()
    conn.close()
    s = summarize(path)
    assert s.gpu.kernel_count == len(sc.kernels) > 0
    assert s.copies is None
    assert any("rocpd_memory_copy is empty" in w for w in s.warnings)
    want = host_expectation(sc)
    assert s.host_side is not None and s.host_side["host_memcpy_bytes_HtoD"] == want["host_memcpy_bytes_HtoD"]


def test_complete_capture_has_no_host_side(tmp_path: Path) -> None:
    s = summarize(write_rocpd(ALL_SCENARIOS["mixed_launch_and_copies"](), tmp_path / "ok.db"))
    assert s.host_side is None and not any("degraded" in w for w in s.warnings)


def api_only_scenario() -> Scenario:
    """A process that only allocates and queries: no launch, no copy, hence no GPU work asked for."""
    pid = 300
    calls = [ApiCall(pid, pid, 1_000 + i * 10_000, 6_000 + i * 10_000, kind)  # type: ignore[arg-type]
             for i, kind in enumerate(["malloc", "other", "device_sync", "free"])]
    return Scenario(name="api_only", description="", devices=[Device(id=0, name="AMD Instinct MI250X")],
                    processes=[Process(pid, "setup")], api_calls=calls)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_file_with_only_api_regions(tmp_path: Path, flavour: str) -> None:
    sc = api_only_scenario()
    s = summarize(write_rocpd(sc, tmp_path / "api.db", flavour=flavour))
    # nothing asked the GPU for work: empty GPU tables are "none happened", not a degraded capture
    assert s.host_side is None and not any("degraded" in w for w in s.warnings)
    assert s.gpu.kernel_count == 0 and s.devices == []
    assert s.sync is not None and s.sync.call_count == 1 and s.sync.cpu_blocked_ns == 5_000
    assert s.span_ns == sc.span()[1] - sc.span()[0]


def test_gpu_tables_absent(tmp_path: Path) -> None:
    """A writer that never created the dispatch table: the relation is skipped, not zero."""
    sc = ALL_SCENARIOS["launch_bound"]()
    path = write_rocpd(sc, tmp_path / "no_dispatch_table.db", degraded=True)
    conn = sqlite3.connect(path)
    (table,) = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                            "AND name GLOB 'rocpd_kernel_dispatch_*'").fetchone()
    conn.execute("DROP VIEW kernels")  # the convenience views over it go with it
    conn.execute("DROP VIEW top_kernels")
    conn.execute("DROP VIEW rocpd_kernel_dispatch")
    conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()
    s = summarize(path)
    assert "rocpd_kernel_dispatch absent" in skipped(s)["kernels"]
    assert any("kernel table is absent" in w for w in s.warnings)
    assert s.gpu.kernel_count == 0 and s.kernels == []


def test_unused_gpu_agents_are_not_devices(tmp_path: Path) -> None:
    """rocpd lists every agent of the node: only the GPU this process used is a device."""
    sc = ALL_SCENARIOS["dominant_kernel"]()
    s = summarize(write_rocpd(sc, tmp_path / "node.db", extra_gpus=7))
    conn = sqlite3.connect(f"file:{tmp_path / 'node.db'}?mode=ro", uri=True)
    assert conn.execute("SELECT count(*) FROM rocpd_info_agent WHERE type = 'GPU'").fetchone()[0] == 8
    assert [(d.id, d.used) for d in s.devices] == [(0, True)]
    assert s.gpu.device_count == 1


def test_rank_files_with_their_own_guids(tmp_path: Path) -> None:
    sc = ALL_SCENARIOS["mpi_collectives"]()
    pids = sorted({p.pid for p in sc.processes})
    guids: set[str] = set()
    kernels: Counter[int] = Counter()
    for pid in pids:
        path = write_rocpd(sc, tmp_path / f"rank_{pid}_results.db", flavour="rocprof-sys", pid=pid)
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        guids.add(conn.execute("SELECT value FROM rocpd_metadata WHERE tag = 'guid'").fetchone()[0])
        conn.close()
        s = summarize(path)
        kernels[pid] = s.gpu.kernel_count
        assert s.gpu.kernel_count == sum(k.pid == pid for k in sc.kernels)
        assert s.mpi is not None and s.mpi.call_count == sum(m.pid == pid for m in sc.mpi_calls)
        assert [d.id for d in s.devices if d.used] == sorted({k.device for k in sc.kernels if k.pid == pid})
    assert len(guids) == len(pids) == 2
    assert sum(kernels.values()) == len(sc.kernels)


def test_pa_summary_json_on_degraded_file(tmp_path: Path) -> None:
    sc = ALL_SCENARIOS["launch_bound"]()
    path = write_rocpd(sc, tmp_path / "killed.db", degraded=True)
    res = CliRunner().invoke(cli, ["summary", "--json", str(path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["host_side"]["host_launch_calls"] == sum(c.kind == "launch" for c in sc.api_calls)
    assert doc["gpu"]["kernel_count"] == 0 and doc["kernels"] == []


def _set_schema_version(path: Path, version: str) -> None:
    conn = sqlite3.connect(path)
    (table,) = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                            "AND name GLOB 'rocpd_metadata_*'").fetchone()
    conn.execute(f"UPDATE {table} SET value = ? WHERE tag = 'schema_version'", (version,))
    conn.commit()
    conn.close()


@pytest.mark.parametrize("version", ["2", "3.x", "four"])
def test_pa_summary_refuses_old_or_malformed_schema_version(tmp_path: Path, version: str) -> None:
    path = write_rocpd(ALL_SCENARIOS["healthy"](), tmp_path / "old.db")
    _set_schema_version(path, version)
    res = CliRunner().invoke(cli, ["summary", str(path)])
    assert res.exit_code == 2
    assert f"schema_version {version!r}" in res.output or f"schema_version {version} " in res.output
    assert "Traceback" not in res.output


def test_newer_3x_is_read_with_one_warning(tmp_path: Path) -> None:
    sc = ALL_SCENARIOS["healthy"]()
    path = write_rocpd(sc, tmp_path / "newer.db", schema_version="3.0.5")
    _set_schema_version(path, "3.0.9")
    res = CliRunner().invoke(cli, ["summary", "--json", str(path)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["profile"]["query_set"] == "rocpd/3"
    assert doc["gpu"]["kernel_count"] == len(sc.kernels)
    warnings = [w for w in doc["warnings"] if "3.0.9" in w]
    assert len(warnings) == 1 and "rocpd/3" in warnings[0]


def test_pa_summary_refuses_other_program_with_rocpd_table(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE rocpd_cache (key TEXT, value BLOB)")
    conn.execute("INSERT INTO rocpd_cache VALUES ('a', x'00')")
    conn.commit()
    conn.close()
    res = CliRunner().invoke(cli, ["summary", str(path)])
    assert res.exit_code == 2
    assert "another program" in res.output and "Traceback" not in res.output
