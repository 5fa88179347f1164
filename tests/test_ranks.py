"""Multi-rank: a generated 4-rank run where rank 2 is planted slow (its compute takes twice as long)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from testkit.nsys_writer import write_nsys
from testkit.phased import MS, T0, US
from testkit.scenario import Device, Kernel, Marker, MpiCall, Process, Scenario

from pa.errors import UserError
from pa.ranks import cross_rank, discover, rank_from_name, summarize_ranks
from pa.ranks.discover import assign_ranks
from pa.ranks.model import MultiRankSummary

SLOW = 2
N_RANKS = 4
ITERS = 20


def _run(tmp: Path, with_mpi: bool = True, names: str = "rank_{r}.db") -> tuple[list[Path], dict[int, list[int]]]:
    """Write N_RANKS files; return them and each rank's Allreduce start times (the planted truth)."""
    starts: dict[int, list[int]] = {r: [] for r in range(N_RANKS)}
    t = T0 + 20 * MS                        # 20 ms "init" phase first
    scens = {r: Scenario(name=f"r{r}", description="rank", devices=[Device(id=0)],
                         processes=[Process(100 + r, "app", {100 + r: "main"}, rank=r)])
             for r in range(N_RANKS)}
    for r, sc in scens.items():
        sc.kernels.append(Kernel(100 + r, 0, 7, T0 + 1 * MS, T0 + 5 * MS, "init_kernel"))
    for _ in range(ITERS):
        arrive = {}
        for r, sc in scens.items():
            dur = (2 if r == SLOW else 1) * MS + r * 10 * US       # small per-rank jitter
            sc.kernels.append(Kernel(100 + r, 0, 7, t, t + dur, "solve_kernel"))
            arrive[r] = t + dur + 5 * US
        done = max(arrive.values()) + 50 * US
        for r, sc in scens.items():
            starts[r].append(arrive[r])
            if with_mpi:
                sc.mpi_calls.append(MpiCall(100 + r, 100 + r, arrive[r], done, "MPI_Allreduce", "collective", 8, r))
        t = done + 20 * US
    paths = []
    for r, sc in scens.items():
        sc.markers += [Marker(100 + r, 100 + r, T0, T0 + 20 * MS, "init"),
                       Marker(100 + r, 100 + r, T0 + 20 * MS, t, "solve")]
        paths.append(write_nsys(sc, tmp / names.format(r=r)))
    return paths, starts


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, list[int]]]:
    d = tmp_path_factory.mktemp("ranks")
    _, starts = _run(d)
    return d, starts


@pytest.fixture(scope="module")
def by_workers(run_dir: tuple[Path, dict]) -> dict[int, MultiRankSummary]:
    """summarize_ranks of the planted run with 1 and with 2 worker processes, each computed once."""
    d, _ = run_dir
    return {w: summarize_ranks([d], workers=w) for w in (1, 2)}


def test_rank_from_name() -> None:
    assert rank_from_name(Path("report.3.sqlite")) == 3
    assert rank_from_name(Path("rank_0012.db")) == 12
    assert rank_from_name(Path("out-rank7.nsys.sqlite")) == 7
    assert rank_from_name(Path("profile.sqlite")) is None


def test_assign_ranks_falls_back_to_order_on_duplicates() -> None:
    ranks, src, warn = assign_ranks([Path("a1.db"), Path("b1.db")], [None, None])
    assert ranks == [0, 1] and src == ["order", "order"] and warn


def test_discover_directory_and_errors(run_dir: tuple[Path, dict]) -> None:
    d, _ = run_dir
    assert [p.name for p in discover([d])] == [f"rank_{r}.db" for r in range(N_RANKS)]
    with pytest.raises(UserError):
        discover([d / "missing.db"])


def test_cross_rank_finds_planted_straggler(run_dir: tuple[Path, dict],
                                            by_workers: dict[int, MultiRankSummary]) -> None:
    _, starts = run_dir
    rs = by_workers[2]
    assert [r.rank for r in rs.ranks] == list(range(N_RANKS))
    assert {r.rank_source for r in rs.ranks} == {"mpi"}
    cr = cross_rank(rs)
    assert cr.straggler_rank == SLOW and cr.most_waited_on_rank == SLOW
    assert cr.imbalance_side == "compute"
    assert cr.primary_rank == SLOW                     # the idle-time outlier
    # wait per rank, computed independently from the planted arrival times
    for row in cr.ranks:
        want = sum(max(starts[q][k] for q in starts) - starts[row.rank][k] for k in range(ITERS))
        assert row.collective_wait_ns == want
    assert cr.most_waiting_rank != SLOW
    (sk,) = cr.collectives
    assert sk.name == "MPI_Allreduce" and sk.instances == ITERS and sk.last_arrivals == {SLOW: ITERS}
    # imbalance from full kernel totals: (max − min) / mean
    kt = {r.rank: r.summary.gpu.kernel_time_ns for r in rs.ranks}
    mean = sum(kt.values()) / len(kt)
    assert cr.compute_imbalance == pytest.approx((max(kt.values()) - min(kt.values())) / mean)
    assert cr.facts()["cross_rank.straggler_rank"] == SLOW


def test_phases_align_by_name(by_workers: dict[int, MultiRankSummary]) -> None:
    cr = cross_rank(by_workers[1])
    assert cr.phase_alignment == "name"
    assert [p.phase for p in cr.phases] == ["init", "solve"]
    solve = cr.phases[1]
    assert solve.kernel_time.max_rank == SLOW
    assert solve.mpi is not None and solve.mpi.min_rank == SLOW     # the straggler waits least
    init = cr.phases[0]
    assert init.kernel_time.imbalance == pytest.approx(0.0)


def test_workers_one_and_two_agree(by_workers: dict[int, MultiRankSummary]) -> None:
    a = cross_rank(by_workers[1])
    b = cross_rank(by_workers[2])
    assert a.model_dump() == b.model_dump()


def test_primary_rank_override_and_unknown(by_workers: dict[int, MultiRankSummary]) -> None:
    rs = by_workers[1]
    assert cross_rank(rs, primary_rank=1).primary_rank == 1
    with pytest.raises(UserError):
        cross_rank(rs, primary_rank=99)


def test_ranks_from_file_names_without_mpi(tmp_path: Path) -> None:
    _run(tmp_path, with_mpi=False, names="report.{r}.sqlite")
    rs = summarize_ranks([tmp_path], workers=1)
    assert [(r.rank, r.rank_source) for r in rs.ranks] == [(r, "file_name") for r in range(N_RANKS)]
    cr = cross_rank(rs)
    assert cr.straggler_rank is None and cr.collectives == []
    assert cr.overall.mpi is None


@pytest.mark.slow  # starts a local dask cluster of two worker processes (~10 s)
@pytest.mark.skipif(importlib.util.find_spec("dask") is None, reason="dask not installed (pa[dask])")
def test_dask_local_cluster_matches_process_pool(run_dir: tuple[Path, dict],
                                                 by_workers: dict[int, MultiRankSummary]) -> None:
    from dask.distributed import LocalCluster

    d, _ = run_dir
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        rs = summarize_ranks([d], executor="dask", scheduler=cluster.scheduler_address)
    assert cross_rank(rs).model_dump() == cross_rank(by_workers[1]).model_dump()
