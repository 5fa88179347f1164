"""MPI recorded as NVTX ranges (older Nsight Systems): read as MPI calls, never as markers, and a file
with neither MPI tables nor an "MPI" NVTX domain has MPI "not captured", not zero."""

from __future__ import annotations

from pathlib import Path

from testkit import scenarios
from testkit.nsys_writer import write_nsys
from testkit.scenario import Device, Marker, Process, Scenario

from pa.metrics.summarize import summarize


def test_mpi_from_nvtx_ranges_equals_mpi_from_the_mpi_tables(tmp_path: Path) -> None:
    write_nsys(scenarios.mpi_collectives(), tmp_path / "tables.sqlite")
    write_nsys(scenarios.mpi_as_nvtx(), tmp_path / "nvtx.sqlite")
    a, b = summarize(tmp_path / "tables.sqlite"), summarize(tmp_path / "nvtx.sqlite")
    assert a.mpi is not None and b.mpi is not None
    assert (b.mpi.call_count, b.mpi.total_ns, b.mpi.by_kind) == (a.mpi.call_count, a.mpi.total_ns, a.mpi.by_kind)
    assert [(o.name, o.kind, o.count, o.total_ns) for o in b.mpi.by_op] == \
           [(o.name, o.kind, o.count, o.total_ns) for o in a.mpi.by_op]
    assert b.markers is not None and b.markers.count == 0          # the MPI ranges are not markers
    assert b.idle_gaps[0].idle_by_cause == a.idle_gaps[0].idle_by_cause


def _nvtx_only(tmp_path: Path, markers: list[Marker]) -> Path:
    scen = Scenario(name="n", description="hand-built", devices=[Device(id=0)],
                    processes=[Process(pid=100, name="app", threads={100: "main"})], markers=markers)
    write_nsys(scen, tmp_path / "n.sqlite")
    return tmp_path / "n.sqlite"


def test_kind_of_an_mpi_range_is_read_from_its_name(tmp_path: Path) -> None:
    names = {"MPI_Iallreduce": "collective", "MPI_Allgatherv": "collective", "MPI_Sendrecv": "p2p",
             "MPI_Irecv": "p2p", "MPI_Waitall": "wait", "MPI_Testany": "wait", "MPI_Init": "other",
             "MPI_Comm_rank": "other"}
    marks = [Marker(100, 100, 1000 * i, 1000 * i + 500, n, domain="MPI") for i, n in enumerate(names)]
    marks.append(Marker(100, 100, 20_000, 21_000, "MPI_Barrier"))               # default domain: a marker
    marks.append(Marker(100, 100, 22_000, 23_000, "exchange", domain="MPI"))    # not MPI_*: a marker
    s = summarize(_nvtx_only(tmp_path, marks))
    assert s.mpi is not None
    assert {o.name: o.kind for o in s.mpi.by_op} == names
    assert s.markers is not None and sorted(m.name for m in s.markers.by_name) == ["MPI_Barrier", "exchange"]


def test_nvtx_without_an_mpi_domain_is_mpi_not_captured(tmp_path: Path) -> None:
    s = summarize(_nvtx_only(tmp_path, [Marker(100, 100, 0, 1000, "MPI_Allreduce", domain="app")]))
    assert s.mpi is None
    assert any(k.what == "mpi_calls" and "MPI not traced" in k.reason for k in s.skipped)
