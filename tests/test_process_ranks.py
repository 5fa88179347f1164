"""One export of several processes as a rank set (issue 28): which processes are ranks, their numbers,
each rank's summary reading only its process, nesting in a directory, --primary-rank.

Every expectation comes from the written file itself (direct SQL) or from the generator's ground
truth (testkit.nccl_runs), never from pa's own output.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from testkit.nccl_runs import write_nccl_run
from testkit.nsys_writer import write_nsys
from testkit.scenario import ApiCall, Device, Kernel, Marker, Process, Scenario

from pa.cli import main
from pa.pipeline import RunOptions, summarize_run

MS = 1_000_000


def _json(args: list[str]) -> dict[str, Any]:
    r = CliRunner().invoke(main, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads(r.output)
    return doc


def _kernels_by_pid(path: Path) -> dict[int, int]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return dict(con.execute("SELECT (globalPid >> 24) & 16777215, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                                "GROUP BY 1"))


def test_each_rank_summary_reads_only_its_process(tmp_path: Path) -> None:
    run = write_nccl_run(tmp_path / "dp.sqlite", "dp_straggler")
    stage1 = summarize_run([run.path], options=RunOptions(workers=1))
    assert stage1.rank_set is not None and stage1.cross is not None
    by_pid = _kernels_by_pid(run.path)
    got = {r.pid: r.summary.gpu.kernel_count for r in stage1.rank_set.ranks}
    assert got == by_pid and len(got) == 4
    for r in stage1.rank_set.ranks:   # the rank's own device only is used
        assert [d.id for d in r.summary.devices if d.used] == [run.truth.device_of[r.pid]]
        assert r.summary.profile.pid == r.pid


def test_a_helper_process_without_gpu_work_is_no_rank(tmp_path: Path) -> None:
    """Two processes, one of which never touches the GPU (a launcher, a data-loader): one run, no rank set."""
    t0 = 1_000_000_000
    kernels = [Kernel(10, 0, 7, t0 + i * 2 * MS, t0 + i * 2 * MS + MS, "k", correlation_id=i + 1) for i in range(20)]
    api = [ApiCall(10, 10, k.start - 50_000, k.start - 40_000, "launch", correlation_id=k.correlation_id)
           for k in kernels]
    api.append(ApiCall(11, 11, t0, t0 + MS, "other", name="cudaGetDeviceCount"))
    sc = Scenario(name="helper", description="a GPU process and a helper", devices=[Device(id=0), Device(id=1)],
                  processes=[Process(10, "python", {10: "main"}), Process(11, "helper", {11: "main"})],
                  kernels=kernels, api_calls=api)
    path = write_nsys(sc, tmp_path / "helper.sqlite")
    doc = _json(["analyze", str(path), "--no-llm", "-f", "json"])
    assert doc["cross_rank"] is None
    assert doc["summary"]["kernel_count"] == 20


def test_primary_rank_chooses_the_process_the_rules_read(tmp_path: Path) -> None:
    run = write_nccl_run(tmp_path / "dp.sqlite", "dp_straggler")
    doc = _json(["analyze", str(run.path), "--no-llm", "-f", "json", "--primary-rank", "3"])
    cr = doc["cross_rank"]
    assert cr["primary_rank"] == 3 and cr["primary_reason"] == "chosen with --primary-rank"
    pid = run.truth.pids[3]
    assert doc["summary"]["kernel_count"] == _kernels_by_pid(run.path)[pid]


def test_a_directory_of_multi_process_exports_nests(tmp_path: Path) -> None:
    """Two nodes, each one export of two processes: four ranks, numbered by file then pid."""
    folder = tmp_path / "job"
    folder.mkdir()
    node0 = write_nccl_run(tmp_path / "a.sqlite", "exposed")
    node1 = write_nccl_run(tmp_path / "b.sqlite", "exposed")
    shutil.copy(node0.path, folder / "node0.sqlite")
    shutil.copy(node1.path, folder / "node1.sqlite")
    doc = _json(["analyze", str(folder), "--no-llm", "-f", "json"])
    cr = doc["cross_rank"]
    assert cr["rank_count"] == 4 and cr["rank_source"] == "file_process_order"
    assert [(r["file_name"], r["pid"]) for r in cr["ranks"]] == \
        [("node0.sqlite", p) for p in node0.truth.pids] + [("node1.sqlite", p) for p in node1.truth.pids]
    assert [r["rank"] for r in cr["ranks"]] == [0, 1, 2, 3]


def test_mpi_metadata_numbers_the_processes(tmp_path: Path) -> None:
    """With MPI ranks in the export, the rank numbers are the MPI ranks, whatever the pid order."""
    run = write_nccl_run(tmp_path / "mpi.sqlite", "dp_straggler", mpi_ranks=True)
    with sqlite3.connect(f"file:{run.path}?mode=ro", uri=True) as con:
        by_pid = dict(con.execute("SELECT (globalTid >> 24) & 16777215, rank FROM MPI_RANKS"))
    doc = _json(["summary", str(run.path), "--json"])
    assert doc["kind"] == "multi_rank_summary"
    assert {r["summary"]["profile"]["pid"]: r["rank"] for r in doc["ranks"]} == by_pid
    assert doc["cross_rank"]["rank_source"] == "mpi"
    assert sorted(by_pid, key=by_pid.__getitem__) != sorted(by_pid)   # the pid order would have numbered them otherwise


def test_the_primary_rank_is_judged_on_its_marked_loop(tmp_path: Path) -> None:
    """Each process: a 200 ms set-up (one kernel, then host work), then 20 marked iterations of 5 kernels.
    The rules read the primary rank from its loop's start on, as they read a single file (issue 24)."""
    t0, sc = 1_000_000_000, Scenario(name="two", description="set-up then a loop, two processes",
                                     devices=[Device(id=0), Device(id=1)], processes=[])
    loop_start = t0 + 200 * MS
    for dev, pid in enumerate((20, 21)):
        sc.processes.append(Process(pid, "python", {pid: "main"}))
        sc.kernels.append(Kernel(pid, dev, 7, t0, t0 + MS, "setup_kernel"))
        t = loop_start
        for _ in range(20):
            sc.markers.append(Marker(pid, pid, t, t + 5 * MS, "iteration"))
            for k in range(5):
                sc.kernels.append(Kernel(pid, dev, 7, t + k * MS, t + k * MS + 900_000, f"step{k}"))
            t += 5 * MS
    path = write_nsys(sc, tmp_path / "loop.sqlite")
    stage1 = summarize_run([path], options=RunOptions(workers=1))
    assert stage1.cross is not None and stage1.judged is not None
    primary = stage1.rank_set.ranks[stage1.primary] if stage1.rank_set else None
    assert primary is not None and stage1.judged.profile.pid == primary.pid
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        in_loop = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE \"end\" >= ? "
                              "AND (globalPid >> 24) & 16777215 = ?", (loop_start, primary.pid)).fetchone()[0]
    assert stage1.judged.gpu.kernel_count == in_loop == 100
    assert stage1.judged.judged_range is not None and stage1.judged.judged_range.count == 20
    assert summarize_run([path], options=RunOptions(workers=1, steady=False)).judged is None


@pytest.mark.slow  # starts a local dask cluster of two worker processes (~10 s)
@pytest.mark.skipif(importlib.util.find_spec("dask") is None, reason="dask not installed (pa[dask])")
def test_dask_splits_one_export_into_its_processes_as_the_pool_does(tmp_path: Path) -> None:
    from dask.distributed import LocalCluster

    from pa.ranks import cross_rank, summarize_ranks

    run = write_nccl_run(tmp_path / "dp.sqlite", "dp_straggler")
    local = summarize_ranks([run.path], workers=2)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        remote = summarize_ranks([run.path], executor="dask", scheduler=cluster.scheduler_address)
    assert [r.pid for r in remote.ranks] == run.truth.pids
    assert cross_rank(remote).model_dump() == cross_rank(local).model_dump()


def test_the_process_table_counts_each_process_s_gpu_work_and_mpi_rank(tmp_path: Path) -> None:
    from pa.metrics.summarize import summarize

    run = write_nccl_run(tmp_path / "mpi.sqlite", "dp_straggler", mpi_ranks=True)
    with sqlite3.connect(f"file:{run.path}?mode=ro", uri=True) as con:
        ops = dict(con.execute(
            "SELECT pid, count(*) FROM (SELECT (globalPid >> 24) & 16777215 AS pid FROM CUPTI_ACTIVITY_KIND_KERNEL "
            "UNION ALL SELECT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_MEMCPY "
            "UNION ALL SELECT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_MEMSET) GROUP BY pid"))
        ranks = dict(con.execute("SELECT (globalTid >> 24) & 16777215, rank FROM MPI_RANKS"))
    table = summarize(run.path).processes
    assert {p.pid: p.gpu_ops for p in table} == ops
    assert {p.pid: p.mpi_rank for p in table} == ranks
    assert {p.pid: p.devices for p in table} == {pid: [d] for pid, d in run.truth.device_of.items()}


def test_the_notebook_api_summarizes_a_multi_process_export_whole(tmp_path: Path) -> None:
    from pa import api

    run = write_nccl_run(tmp_path / "dp.sqlite", "dp_straggler")
    whole = api.summarize(run.path)
    assert whole.profile.pid is None and whole.gpu.kernel_count == sum(_kernels_by_pid(run.path).values())
    ranks = api.summarize_ranks(run.path)
    assert [s.profile.pid for s in ranks.summaries] == run.truth.pids


def test_collective_kernels_are_lined_up_by_their_common_end() -> None:
    from pa.ranks.cross import END_TOLERANCE_NS, align_instances

    ends = np.arange(10, dtype=np.int64) * 5 * MS
    # rank 1's first kernel was running when the capture started (not recorded), rank 2's last one not ended
    assert align_instances([ends, ends[1:] + 2_000, ends[:-1] - 3_000]) == ([1, 0, 1], 8)
    assert align_instances([ends, ends + 2_000]) == ([0, 0], 10)
    # kernels that do not end together at any shift are no collective (or the clocks differ)
    assert align_instances([ends, ends + 2 * MS]) is None
    assert align_instances([ends, ends + END_TOLERANCE_NS + 1]) is None


def test_a_collective_cut_by_the_capture_start_on_one_rank_still_matches(tmp_path: Path) -> None:
    """Rank 0's first all-reduce kernel is missing (it began before the capture): the others are not shifted."""
    run = write_nccl_run(tmp_path / "dp.sqlite", "dp_straggler")
    cut = tmp_path / "cut.sqlite"
    shutil.copy(run.path, cut)
    with sqlite3.connect(cut) as con:
        con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = (SELECT k.rowid FROM "
                    "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%' "
                    "AND (k.globalPid >> 24) & 16777215 = ? ORDER BY k.start LIMIT 1)", (run.truth.pids[0],))
    whole = summarize_run([run.path], options=RunOptions(workers=1)).cross
    part = summarize_run([cut], options=RunOptions(workers=1)).cross
    assert whole is not None and part is not None
    assert part.gpu_straggler_rank == whole.gpu_straggler_rank == run.truth.straggler_rank
    assert part.gpu_collective_instances == whole.gpu_collective_instances - 1
    assert any("matched" in w and "common end" in w for w in part.warnings)
    # the per-instance lead is the same, one instance fewer: at most one instance's lead is lost
    assert whole.gpu_straggler_delay_ns is not None and part.gpu_straggler_delay_ns is not None
    assert 0 < whole.gpu_straggler_delay_ns - part.gpu_straggler_delay_ns <= whole.gpu_straggler_delay_ns / 8


def test_the_probe_and_the_summary_give_the_same_process_table(tmp_path: Path) -> None:
    """The single-file decision reads the processes with SQL alone; the summary counts them from its arrays."""
    from pa.metrics.processes import probe_processes
    from pa.metrics.summarize import bound, summarize

    for kind, fmt in (("dp_straggler", "nsys"), ("rccl_dp_straggler", "rocpd"), ("pipeline", "nsys")):
        run = write_nccl_run(tmp_path / f"{kind}.{'db' if fmt == 'rocpd' else 'sqlite'}", kind, fmt=fmt)
        with bound(run.path, ()) as (_, rel):
            probed = probe_processes(rel)
        assert probed == summarize(run.path).processes and [p.pid for p in probed] == run.truth.pids


def test_the_probe_matches_the_summary_on_every_real_profile(summary_of: Any) -> None:
    from conftest import real_nsys_profiles, real_rocpd_profiles

    from pa.metrics.processes import probe_processes
    from pa.metrics.summarize import bound

    profiles = real_nsys_profiles() + real_rocpd_profiles()
    if not profiles:
        pytest.skip("no shared real profiles")
    for path in profiles:
        with bound(path, ()) as (_, rel):
            assert probe_processes(rel) == summary_of(path).processes, path.name


def test_the_late_rank_s_largest_idle_cause_is_named(tmp_path: Path) -> None:
    from pa.metrics.gaps import GAP_CAUSE_NAMES

    run = write_nccl_run(tmp_path / "dp.sqlite", "dp_straggler")
    stage1 = summarize_run([run.path], options=RunOptions(workers=1))
    cr, rs = stage1.cross, stage1.rank_set
    assert cr is not None and rs is not None and cr.gpu_straggler_rank == run.truth.straggler_rank
    late = next(r.summary for r in rs.ranks if r.rank == cr.gpu_straggler_rank)
    causes = {c: ns for c, ns in late.gpu.idle_by_cause.items() if ns}
    if causes:
        top = max(causes, key=lambda c: (causes[c], c))
        assert cr.gpu_late_idle_cause == GAP_CAUSE_NAMES[top]
        assert cr.gpu_late_idle_cause_share == causes[top] / late.gpu.idle_in_window_ns
    else:
        assert cr.gpu_late_idle_cause is None


def test_mpi_collectives_cut_by_the_capture_on_one_rank_are_lined_up_by_their_end(tmp_path: Path) -> None:
    """Rank 0's capture misses its first MPI_Allreduce: matching the first calls would pair every call with the
    next one; lined up by their common end, the straggler and its lead per call stay what they were."""
    from testkit.rank_sets import write_rank_set

    from pa.ranks import cross_rank, summarize_ranks

    paths = write_rank_set(tmp_path / "run", "compute_straggler", ranks=4, straggler=2, iters=10)
    whole = cross_rank(summarize_ranks([tmp_path / "run"], workers=1))
    with sqlite3.connect(paths[0]) as con:
        con.execute("DELETE FROM MPI_COLLECTIVES_EVENTS WHERE rowid = (SELECT rowid FROM MPI_COLLECTIVES_EVENTS "
                    "ORDER BY start LIMIT 1)")
    part = cross_rank(summarize_ranks([tmp_path / "run"], workers=1))
    assert whole.straggler_rank == part.straggler_rank == 2
    assert part.collective_instances == whole.collective_instances - 1
    assert any("by their common end" in w for w in part.warnings)
    assert whole.straggler_delay_ns is not None and part.straggler_delay_ns is not None
    assert 0 < whole.straggler_delay_ns - part.straggler_delay_ns <= whole.straggler_delay_ns / 5
