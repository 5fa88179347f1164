"""Planted multi-process NCCL/RCCL training runs (tests/testkit/nccl_runs.py, issue 28).

Part A proves, by reading the written files with plain SQL and numpy (never pa), that every generator
plants what its ground truth says. Part B (marked `issue28`) states what pa's multi-process analysis must
find in those files: one rank per GPU-driving process, NCCL/RCCL kernels matched across ranks as
collectives, and the rules COMM-001 / COMM-SKEW-001 / COMM-LAT-001.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from testkit.nccl_runs import KINDS, SMALL_COLLECTIVE_NS, NcclRun, write_nccl_run
from testkit.rocpd_writer import ddl_available

from pa.cli import main

needs_ddl = pytest.mark.skipif(not ddl_available(), reason="the rocpd writers' DDL is not present")


def _kind_param(kind: str) -> Any:
    return pytest.param(kind, marks=needs_ddl) if kind.startswith("rccl_") else kind


ALL_KINDS = [_kind_param(k) for k in KINDS]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, NcclRun]:
    """Each kind written once per module (plus `dp_mpi`: dp_straggler with MPI rank metadata)."""
    folder = tmp_path_factory.mktemp("nccl_runs")
    out: dict[str, NcclRun] = {}

    def get(kind: str) -> NcclRun:
        if kind not in out:
            if kind == "dp_mpi":
                out[kind] = write_nccl_run(folder / "dp_mpi.sqlite", "dp_straggler", mpi_ranks=True)
            else:
                suffix = ".db" if kind.startswith("rccl_") else ".sqlite"
                out[kind] = write_nccl_run(folder / f"{kind}{suffix}", kind)
        return out[kind]

    class _Lazy(dict):  # type: ignore[type-arg]
        def __missing__(self, kind: str) -> NcclRun:
            return get(kind)

    return _Lazy()


# --------------------------------------------------------------------------------------------------
# Part A: the files hold what the ground truth says (direct SQL, no pa)


def _rows(run: NcclRun) -> list[tuple[int, int, int, int, int, str, int]]:
    """(pid, device, stream, start, end, name, correlation id) of every kernel, read from the file."""
    with sqlite3.connect(f"file:{run.path}?mode=ro", uri=True) as conn:
        if run.fmt == "nsys":
            q = """SELECT (k.globalPid >> 24) & 16777215, k.deviceId, k.streamId, k.start, k."end", s.value,
                          k.correlationId
                   FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName"""
        else:
            q = """SELECT k.pid, a.type_index, k.stream_id, k.start, k."end", s.display_name, e.stack_id
                   FROM rocpd_kernel_dispatch k
                   JOIN rocpd_info_agent a ON a.id = k.agent_id AND a.guid = k.guid
                   JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id AND s.guid = k.guid
                   JOIN rocpd_event e ON e.id = k.event_id AND e.guid = k.guid"""
        return [tuple(r) for r in conn.execute(q)]


def _launches(run: NcclRun) -> dict[int, tuple[int, int, str]]:
    """correlation id -> (pid, start, API name) of the launch calls, read from the file."""
    with sqlite3.connect(f"file:{run.path}?mode=ro", uri=True) as conn:
        if run.fmt == "nsys":
            q = """SELECT r.correlationId, (r.globalTid >> 24) & 16777215, r.start, s.value
                   FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId"""
        else:
            q = """SELECT e.stack_id, r.pid, r.start, s.string FROM rocpd_region r
                   JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
                   JOIN rocpd_string s ON s.id = r.name_id AND s.guid = r.guid"""
        return {c: (p, s, n) for c, p, s, n in conn.execute(q)}


def _union(iv: np.ndarray) -> int:
    """Length of the union of [start, end) rows (numpy, independent of the generator's helper)."""
    if len(iv) == 0:
        return 0
    iv = iv[np.argsort(iv[:, 0], kind="stable")]
    ends = np.maximum.accumulate(iv[:, 1])
    new = np.r_[True, iv[1:, 0] > ends[:-1]]
    group = np.cumsum(new) - 1
    starts = iv[new, 0]
    group_end = np.zeros(len(starts), dtype=np.int64)
    np.maximum.at(group_end, group, iv[:, 1])
    return int((group_end - starts).sum())


def _per_pid(run: NcclRun) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for pid, dev, stream, s, e, name, _ in _rows(run):
        d = out.setdefault(pid, {"devices": set(), "comm": [], "comp": [], "comm_streams": set(),
                                 "comp_streams": set()})
        d["devices"].add(dev)
        comm = name.startswith(("nccl", "rccl"))
        d["comm" if comm else "comp"].append((s, e))
        d["comm_streams" if comm else "comp_streams"].add(stream)
    for d in out.values():
        d["comm"] = np.array(sorted(d["comm"]), dtype=np.int64).reshape(-1, 2)
        d["comp"] = np.array(sorted(d["comp"]), dtype=np.int64).reshape(-1, 2)
    return out


def _file_pids(run: NcclRun) -> list[int]:
    with sqlite3.connect(f"file:{run.path}?mode=ro", uri=True) as conn:
        q = "SELECT pid FROM PROCESSES" if run.fmt == "nsys" else "SELECT pid FROM rocpd_info_process"
        return sorted(r[0] for r in conn.execute(q))


def _kth_matching(run: NcclRun, pids: list[int]) -> tuple[dict[int, int], dict[int, int], int]:
    """Waits and last arrivals by matching the k-th collective kernel of one name on every rank."""
    starts: dict[int, dict[str, list[int]]] = {p: {} for p in pids}
    for pid, _, _, s, _, name, _ in _rows(run):
        if name.startswith(("nccl", "rccl")):
            starts[pid].setdefault(name.split("(")[0], []).append(s)
    wait = dict.fromkeys(pids, 0)
    last = dict.fromkeys(pids, 0)
    n_total = 0
    for t in sorted({t for p in pids for t in starts[p]}):
        arr = [np.sort(np.array(starts[p].get(t, []), dtype=np.int64)) for p in pids]
        n = min(len(a) for a in arr)
        m = np.stack([a[:n] for a in arr])          # ranks × instances
        latest = m.max(axis=0)
        for i, p in enumerate(pids):
            wait[p] += int((latest - m[i]).sum())
        for i in m.argmax(axis=0):
            last[pids[int(i)]] += 1
        n_total += n
    return wait, last, n_total


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_processes_devices_and_launches(runs: dict[str, NcclRun], kind: str) -> None:
    run = runs[kind]
    tr = run.truth
    assert _file_pids(run) == sorted(tr.pids)
    per = _per_pid(run)
    assert sorted(per) == sorted(tr.pids)
    for pid in tr.pids:
        assert per[pid]["devices"] == {tr.device_of[pid]}, pid          # one device per process
    assert len(set(tr.device_of.values())) == tr.rank_count
    streams = [s for p in tr.pids for s in per[p]["comm_streams"] | per[p]["comp_streams"]]
    assert len(streams) == len(set(streams))                            # no two processes share a stream
    launches = _launches(run)
    for pid, _, _, s, _, _, corr in _rows(run):
        call_pid, call_start, api = launches[corr]
        assert call_pid == pid and call_start <= s
        assert api.startswith("cudaLaunchKernel" if run.fmt == "nsys" else "hipLaunchKernel")


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_nccl_time_exposed_and_small_counts(runs: dict[str, NcclRun], kind: str) -> None:
    run = runs[kind]
    tr = run.truth
    per = _per_pid(run)
    for pid in tr.pids:
        comm, comp = per[pid]["comm"], per[pid]["comp"]
        assert int((comm[:, 1] - comm[:, 0]).sum()) == tr.nccl_time_ns[pid]
        assert len(comm) == tr.nccl_kernels[pid]
        exposed = _union(np.vstack([comm, comp])) - _union(comp)
        assert exposed == tr.exposed_comm_ns[pid]
        assert int(((comm[:, 1] - comm[:, 0]) < SMALL_COLLECTIVE_NS).sum()) == tr.small_collectives[pid]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_collective_matching_and_straggler(runs: dict[str, NcclRun], kind: str) -> None:
    run = runs[kind]
    tr = run.truth
    wait, last, n = _kth_matching(run, tr.pids)
    assert wait == tr.collective_wait_ns and last == tr.last_arrivals and n == tr.collective_instances
    if tr.straggler_pid is not None:
        # the planted straggler arrives last at every instance and never waits
        assert last[tr.straggler_pid] == n and wait[tr.straggler_pid] == 0
        assert all(wait[p] > 0 for p in tr.pids if p != tr.straggler_pid)
        assert 0 < tr.straggler_lead_pct < 100
    elif kind != "pipeline":
        # balanced: every rank arrives last equally often, and nobody waits more than the jitter
        assert len(set(last.values())) == 1
        assert max(wait.values()) <= n * 8_000


def test_dp_straggler_numbers(runs: dict[str, NcclRun]) -> None:
    tr = runs["dp_straggler"].truth
    s = tr.straggler_pid
    assert tr.straggler_rank == 2 and s == tr.pids[2]
    # all-reduces end together: the others' kernels are longer by their wait, the straggler's are the transfer
    for p in tr.pids:
        assert tr.nccl_time_ns[p] - tr.nccl_time_ns[s] == tr.collective_wait_ns[p]
    assert tr.collective_instances == 16 and tr.collective_types == ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"]


def test_rccl_run_is_one_rocpd_file_with_four_processes(runs: dict[str, NcclRun]) -> None:
    if not ddl_available():
        pytest.skip("the rocpd writers' DDL is not present")
    run = runs["rccl_dp_straggler"]
    assert run.fmt == "rocpd" and run.truth.straggler_rank == 2
    with sqlite3.connect(f"file:{run.path}?mode=ro", uri=True) as conn:
        # the writers' own `kernels` view finds each dispatch's process through its queue
        by_view = dict(conn.execute("SELECT pid, count(*) FROM kernels GROUP BY pid"))
        names = {r[0] for r in conn.execute("SELECT DISTINCT name FROM kernels WHERE name LIKE 'nccl%'")}
        gpus = conn.execute("SELECT count(*) FROM rocpd_info_agent WHERE type = 'GPU'").fetchone()[0]
    assert by_view == {p: 64 for p in run.truth.pids}
    assert names == {"ncclKernel_AllReduce_RING_LL_Sum_bf16(ncclDevComm*, unsigned long, ncclWork*)"}
    assert gpus == 4


def test_overlapped_vs_exposed_streams(runs: dict[str, NcclRun]) -> None:
    for kind, same_stream in (("overlapped", False), ("exposed", True)):
        run = runs[kind]
        per = _per_pid(run)
        for pid in run.truth.pids:
            assert (per[pid]["comm_streams"] == per[pid]["comp_streams"]) is same_stream
    ov, ex = runs["overlapped"].truth, runs["exposed"].truth
    for p in ov.pids:
        assert ov.exposed_comm_ns[p] < 0.01 * ov.nccl_time_ns[p]      # only the gaps between backward kernels
        assert ex.exposed_comm_ns[p] == ex.nccl_time_ns[p]
        assert ov.nccl_time_ns[p] == ex.nccl_time_ns[p]


def test_tiny_vs_bucketed(runs: dict[str, NcclRun]) -> None:
    tiny, buck = runs["tiny_allreduce"].truth, runs["bucketed"].truth
    per = _per_pid(runs["tiny_allreduce"])
    for p in tiny.pids:
        d = per[p]["comm"][:, 1] - per[p]["comm"][:, 0]
        assert tiny.small_collectives[p] == tiny.nccl_kernels[p] == 600
        assert d.min() >= 10_000 and d.max() <= 20_000
        assert buck.small_collectives[p] == 0 and buck.nccl_kernels[p] == 12


def test_pipeline_bubbles_and_waiting_receivers(runs: dict[str, NcclRun]) -> None:
    run = runs["pipeline"]
    tr = run.truth
    per = _per_pid(run)
    starts = [per[p]["comp"][0, 0] for p in tr.pids]
    assert starts == sorted(starts) and len(set(starts)) == 4           # later stages start computing later
    fill = [tr.fill_bubble_ns[p] for p in tr.pids]
    assert fill == sorted(fill) and fill[0] < fill[1] < fill[2] < fill[3]
    # stage k (k > 0) posts its first receive at the start, before stage k-1 sends: it waits in it
    first_comm = [per[p]["comm"][0, 0] for p in tr.pids]
    for k in range(1, 4):
        assert first_comm[k] < per[tr.pids[k - 1]]["comp"][0, 1]
        assert tr.p2p_wait_ns[tr.pids[k]] > 0
    assert tr.p2p_wait_ns[tr.pids[3]] == max(tr.p2p_wait_ns.values())
    assert [tr.nccl_kernels[p] for p in tr.pids] == [16, 32, 32, 16]


def test_mpi_metadata_gives_the_rank_order(runs: dict[str, NcclRun]) -> None:
    run = runs["dp_mpi"]
    tr = run.truth
    assert tr.pids != sorted(tr.pids)                                    # pid order would give other ranks
    with sqlite3.connect(f"file:{run.path}?mode=ro", uri=True) as conn:
        ranks = dict(conn.execute("SELECT rank, (globalTid >> 24) & 16777215 FROM MPI_RANKS"))
    assert [ranks[r] for r in range(4)] == tr.pids
    assert tr.straggler_pid == tr.pids[2]


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_small_and_fast(tmp_path: Path, kind: str) -> None:
    t = time.perf_counter()
    run = write_nccl_run(tmp_path / "run.db", kind)
    assert time.perf_counter() - t < 1.0
    assert len(run.scenario.kernels) + len(run.scenario.api_calls) < 5000


def test_unknown_kind_and_mpi_on_rocpd(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown NCCL run kind"):
        write_nccl_run(tmp_path / "x.sqlite", "nope")
    with pytest.raises(ValueError, match="no MPI rank"):
        write_nccl_run(tmp_path / "x.db", "dp_straggler", fmt="rocpd", mpi_ranks=True)


# --------------------------------------------------------------------------------------------------
# Part B: what pa's multi-process analysis must find (issue 28; run after the merge with -m issue28)


def _analyze(path: Path) -> dict[str, Any]:
    r = CliRunner().invoke(main, ["analyze", str(path), "--no-llm", "-f", "json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads(r.output)
    return doc


@pytest.fixture(scope="module")
def reports(runs: dict[str, NcclRun]) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}

    class _Lazy(dict):  # type: ignore[type-arg]
        def __missing__(self, kind: str) -> dict[str, Any]:
            if kind not in done:
                done[kind] = _analyze(runs[kind].path)
            return done[kind]

    return _Lazy()


def _rules(report: dict[str, Any]) -> list[str]:
    return [h["rule_id"] for h in report["hypotheses"]]


@pytest.mark.issue28
@pytest.mark.parametrize("kind", [*ALL_KINDS, "dp_mpi"])
def test_pa_one_rank_per_process(runs: dict[str, NcclRun], reports: dict[str, dict[str, Any]], kind: str) -> None:
    tr = runs[kind].truth
    cr = reports[kind]["cross_rank"]
    assert cr is not None
    assert cr["rank_count"] == tr.rank_count
    assert [r["pid"] for r in cr["ranks"]] == tr.pids
    assert [r["rank"] for r in cr["ranks"]] == list(range(tr.rank_count))


@pytest.mark.issue28
@pytest.mark.parametrize("kind", ["dp_straggler", "dp_mpi", _kind_param("rccl_dp_straggler")])
def test_pa_names_the_gpu_straggler(runs: dict[str, NcclRun], reports: dict[str, dict[str, Any]],
                                    kind: str) -> None:
    tr = runs[kind].truth
    report = reports[kind]
    cr = report["cross_rank"]
    assert cr["gpu_straggler_rank"] == tr.straggler_rank
    assert cr["straggler_rank"] is None   # no MPI collective was matched: the MPI straggler stays unnamed
    assert cr["gpu_late_because"] == "compute"   # the planted straggler computes longer before each all-reduce
    waits = {r["pid"]: r["gpu_collective_wait_ns"] for r in cr["ranks"]}
    assert waits == tr.collective_wait_ns
    skew = [h for h in report["hypotheses"] if h["rule_id"] == "COMM-SKEW-001"]
    assert skew, _rules(report)
    # what the straggler costs is at most its lead over the next-latest rank, summed over the instances
    frac = skew[0]["runtime_fraction_pct"]
    assert frac is not None and 0 < frac <= tr.straggler_lead_pct + 0.01


@pytest.mark.issue28
def test_pa_balanced_has_no_skew_finding(reports: dict[str, dict[str, Any]]) -> None:
    assert "COMM-SKEW-001" not in _rules(reports["dp_balanced"])


@pytest.mark.issue28
def test_pa_exposed_vs_overlapped(reports: dict[str, dict[str, Any]]) -> None:
    assert "COMM-001" in _rules(reports["exposed"])
    assert "COMM-001" not in _rules(reports["overlapped"])


@pytest.mark.issue28
def test_pa_latency_bound_collectives(reports: dict[str, dict[str, Any]]) -> None:
    assert "COMM-LAT-001" in _rules(reports["tiny_allreduce"])
    assert "COMM-LAT-001" not in _rules(reports["bucketed"])


@pytest.mark.issue28
def test_pa_pipeline(runs: dict[str, NcclRun], reports: dict[str, dict[str, Any]]) -> None:
    cr = reports["pipeline"]["cross_rank"]
    assert cr["rank_count"] == 4
    # Point-to-point kernels pair neighbouring stages, not all ranks: with unequal counts per stage the
    # k-th kernels are not one collective, so nothing is matched and no late rank is invented ...
    assert cr["gpu_straggler_rank"] is None and cr["gpu_collectives"] == []
    assert any("point-to-point" in w for w in cr["warnings"])
    # ... while each stage's exposed communication holds its receive waits: the last stage waits most.
    tr = runs["pipeline"].truth
    exposed = {r["pid"]: r["communication_exposed_ns"] for r in cr["ranks"]}
    assert exposed == tr.exposed_comm_ns
    assert max(exposed, key=exposed.__getitem__) == tr.pids[-1] == max(tr.p2p_wait_ns, key=tr.p2p_wait_ns.__getitem__)
    # the receives that wait through the bubbles are exposed communication, and pa says so
    assert "COMM-001" in _rules(reports["pipeline"])


@pytest.mark.issue28
@pytest.mark.parametrize("kind", ["dp_straggler", "pipeline", _kind_param("rccl_dp_straggler")])
def test_pa_summary_json_is_multi_rank(runs: dict[str, NcclRun], kind: str) -> None:
    tr = runs[kind].truth
    r = CliRunner().invoke(main, ["summary", str(runs[kind].path), "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc.get("kind") == "multi_rank_summary", sorted(doc)
    assert len(doc["ranks"]) == tr.rank_count
    assert [x["rank"] for x in doc["ranks"]] == list(range(tr.rank_count))
