"""CUDA and HIP graphs (issue 25, item 8): one run traced at graph and at node granularity.

One synthetic run: three ordinary kernels (the warm-up), then six graph launches of two graphs
whose nodes run back to back on the launch stream, and one ordinary kernel on another stream that
overlaps a graph execution. Written three ways from the same intervals:

- graph granularity (nsys --cuda-graph-trace=graph, the default): one CUPTI_ACTIVITY_KIND_GRAPH_TRACE
  row per launch spanning its nodes, no kernel rows for the nodes;
- node granularity (--cuda-graph-trace=node): every node a kernel row with its graphNodeId and the
  correlation id of the one cudaGraphLaunch call;
- rocpd: the nodes as kernel dispatches correlated to one hipGraphLaunch call each.

Every expected number is computed here from the scenario's intervals or by SQL on the file, never
from pa's output: busy time, the active window and the idle gaps must be the same at both
granularities, and each graph launch pairs with one GPU execution (the first node to start), so the
launch latency is one per launch and the nodes never count as small kernels of a launch call they
did not pay each.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from reference import reference_union
from rocpd_ddl import needs_rocpd_ddl
from testkit.nsys_writer import GRAPH_TRACE, INT_MAX, write_nsys
from testkit.rocpd_writer import write_rocpd
from testkit.scenario import ApiCall, Device, GraphExecution, Kernel, Process, Scenario

from pa.metrics.model import ProfileSummary
from pa.metrics.summarize import summarize

PID, DEV, STREAM = 100, 0, 7
GRAPH_NODES = {1: (3_000, 5_000, 2_000, 4_000), 2: (6_000, 1_000, 9_000)}   # graph id -> node durations
CALL_NS = 8_000          # every launch call (graph or kernel) lasts 8 µs: longer than any node
# (call start, execution start) of the six graph launches, absolute ns. The fourth call returns while
# the third execution still runs (its queue is not idle); its execution follows the third back to back.
LAUNCHES = [(2_000_000, 2_012_000), (2_200_000, 2_215_000), (2_400_000, 2_410_000),
            (2_403_000, 2_424_000), (2_800_000, 2_811_000), (3_000_000, 3_020_000)]
WARMUP = [(1_000_000 + i * 100_000, 50_000) for i in range(3)]   # (call start, kernel duration)
# an ordinary kernel on another stream, launched at 2.395 ms, overlapping the third graph execution
SIDE_STREAM, SIDE_CALL, SIDE_KERNEL = 9, 2_395_000, (2_405_000, 2_420_000)


def _graph_of(launch: int) -> int:
    """The graph the launch-th graph launch runs: graphs 1 and 2 alternate."""
    return 1 if launch % 2 == 0 else 2


NODES = sum(len(GRAPH_NODES[_graph_of(j)]) for j in range(len(LAUNCHES)))   # kernels inside all launches


def _run(granularity: str, warmup: bool = True, per_kernel_launches: bool = False) -> Scenario:
    """The run at `granularity` ("graph" or "node"); `per_kernel_launches`: every node its own launch call."""
    sc = Scenario(name=f"graphs-{granularity}", description="graph launches", devices=[Device(id=DEV)],
                  processes=[Process(pid=PID, name="app", threads={PID: "main"})])
    corr = 0
    if warmup:
        for start, dur in WARMUP:
            corr += 1
            sc.api_calls.append(ApiCall(PID, PID, start, start + 6_000, "launch", corr))
            sc.kernels.append(Kernel(PID, DEV, STREAM, start + 9_000, start + 9_000 + dur, "warmup(float*)",
                                     grid=(1024, 1, 1), correlation_id=corr))
        corr += 1
        sc.api_calls.append(ApiCall(PID, PID, SIDE_CALL, SIDE_CALL + 6_000, "launch", corr))
        sc.kernels.append(Kernel(PID, DEV, SIDE_STREAM, *SIDE_KERNEL, "side(float*)", grid=(1024, 1, 1),
                                 correlation_id=corr))
    node_id = 0
    for j, (call_start, exec_start) in enumerate(LAUNCHES):
        graph = _graph_of(j)
        corr += 1
        if not per_kernel_launches:
            sc.api_calls.append(ApiCall(PID, PID, call_start, call_start + CALL_NS, "graph_launch", corr))
        t = exec_start
        first_node = len(sc.kernels)
        for n, dur in enumerate(GRAPH_NODES[graph]):
            node_id += 1
            if per_kernel_launches:
                corr += int(n > 0)   # a call of its own for every node after the first
                sc.api_calls.append(ApiCall(PID, PID, call_start + n, call_start + n + CALL_NS, "launch", corr))
            if granularity == "node":
                sc.kernels.append(Kernel(PID, DEV, STREAM, t, t + dur, f"graph{graph}_node{n}(float*)",
                                         grid=(64, 1, 1), correlation_id=corr,
                                         graph_node_id=None if per_kernel_launches else node_id))
            t += dur
        # the export's row order need not be start order: the launch pairs with the node that starts first
        sc.kernels[first_node:] = sc.kernels[first_node:][::-1]
        if granularity == "graph":
            sc.graph_executions.append(GraphExecution(PID, DEV, STREAM, exec_start, t, graph_id=graph,
                                                      graph_exec_id=10 + graph, correlation_id=corr))
    sc.api_calls.append(ApiCall(PID, PID, 3_060_000, 3_070_000, "device_sync"))
    return sc


def _execution_intervals(with_warmup: bool = True) -> list[tuple[int, int]]:
    """Each graph execution's [first node start, last node end), plus the warm-up kernels: stream 7."""
    out = [(s, s + sum(GRAPH_NODES[_graph_of(j)])) for j, (_, s) in enumerate(LAUNCHES)]
    if with_warmup:
        out += [(start + 9_000, start + 9_000 + dur) for start, dur in WARMUP]
    return sorted(out)


def _gpu_intervals(with_kernels: bool = True) -> list[tuple[int, int]]:
    """Every GPU operation's interval: the graph executions and, `with_kernels`, the ordinary kernels."""
    return sorted(_execution_intervals(with_kernels) + ([SIDE_KERNEL] if with_kernels else []))


def _gaps(intervals: list[tuple[int, int]]) -> list[int]:
    """Idle gaps between the merged intervals (a plain sweep)."""
    gaps, end = [], None
    for s, e in sorted(intervals):
        if end is not None and s > end:
            gaps.append(s - end)
        end = e if end is None else max(end, e)
    return gaps


def _expected_graph_launches() -> tuple[int, float]:
    """Graph launches whose stream was idle when the call returned, and their mean latency.

    Latency: first node start − call end; idle: every earlier operation on the stream ended before the
    call returned. One latency per launch, whatever its number of nodes.
    """
    ops = _execution_intervals()   # what ran on the launch stream
    lat = []
    for call_start, exec_start in LAUNCHES:
        call_end = call_start + CALL_NS
        if all(e < call_end for s, e in ops if s < exec_start) and exec_start >= call_end:
            lat.append(exec_start - call_end)
    return len(lat), sum(lat) / len(lat)


def _write(tmp_path: Path, sc: Scenario, **kw: object) -> Path:
    return write_nsys(sc, tmp_path / f"{sc.name}.sqlite", layout="3.24", **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, ProfileSummary]]:
    folder = tmp_path_factory.mktemp("graphs")
    out = {}
    for g in ("graph", "node"):
        path = _write(folder, _run(g))
        out[g] = (path, summarize(path))
    return out


def test_the_writer_records_what_each_granularity_records(twins):
    with sqlite3.connect(twins["graph"][0]) as conn:
        rows = conn.execute(f'SELECT start, "end", deviceId, streamId, correlationId, graphId FROM {GRAPH_TRACE} '
                            "ORDER BY start").fetchall()
        assert [(s, e) for s, e, *_ in rows] == _execution_intervals(with_warmup=False)
        assert conn.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone() == (len(WARMUP) + 1,)
    with sqlite3.connect(twins["node"][0]) as conn:
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (GRAPH_TRACE,)).fetchall()
        # every node carries a graph node id and its launch's correlation id: one per graph launch
        assert conn.execute("SELECT count(*), count(DISTINCT correlationId) FROM CUPTI_ACTIVITY_KIND_KERNEL "
                            "WHERE graphNodeId IS NOT NULL").fetchone() == (NODES, len(LAUNCHES))


def test_busy_window_and_gaps_are_the_same_at_both_granularities(twins):
    (gpath, g), (_, n) = twins["graph"], twins["node"]
    # busy from the graph-granularity file's own rows (direct SQL), as a plain union
    with sqlite3.connect(gpath) as conn:
        rows = conn.execute(f'SELECT start, "end" FROM {GRAPH_TRACE} UNION ALL '
                            'SELECT start, "end" FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchall()
    busy = reference_union(rows)
    ivs = _gpu_intervals()
    assert busy == reference_union(ivs) < sum(e - s for s, e in ivs)   # the side kernel overlaps a graph
    window = max(e for _, e in ivs) - min(s for s, _ in ivs)
    for s in (g, n):
        assert s.gpu.busy_ns == s.devices[0].busy_ns == busy       # a union, never a sum
        assert s.gpu.window_ns == window
        assert s.gpu.idle_in_window_ns == window - busy
        assert s.idle_gaps[0].gap_count == len(_gaps(ivs))
    assert g.idle_gaps == n.idle_gaps                              # every gap, its cause and recoverable time
    assert g.gpu.idle_by_cause == n.gpu.idle_by_cause
    assert g.span_ns == n.span_ns
    assert g.gpu.kernel_busy_ns == n.gpu.kernel_busy_ns == busy
    assert [(st.stream, st.busy_ns) for st in g.streams] == [(st.stream, st.busy_ns) for st in n.streams]


def test_one_graph_launch_pairs_with_one_gpu_execution(twins):
    idle, mean = _expected_graph_launches()
    for granularity, (_, s) in twins.items():
        la = s.launch
        assert la is not None
        assert la.launch_count == len(WARMUP) + 1 + len(LAUNCHES)
        assert la.graph_launch_count == len(LAUNCHES)
        assert la.graph_launched_kernels == (len(LAUNCHES) if granularity == "graph" else NODES)
        # one pairing per call: the warm-up kernels and one execution per graph launch
        assert la.correlated_kernels == len(WARMUP) + 1 + len(LAUNCHES)
        by = {a.name: a for a in la.by_api}
        graph = by["cudaGraphLaunch_v10000"]
        assert graph.count == len(LAUNCHES)
        assert graph.idle_queue_launches == idle
        assert graph.latency_mean_ns == pytest.approx(mean)
        kernel = by["cudaLaunchKernel_v7000"]
        # warm-up latencies 3 µs, the side kernel's 4 µs (its stream was idle although stream 7 was busy)
        assert (kernel.count, kernel.idle_queue_launches) == (len(WARMUP) + 1, len(WARMUP) + 1)
        assert kernel.latency_mean_ns == pytest.approx((3_000 * len(WARMUP) + 4_000) / (len(WARMUP) + 1))
        # every node is shorter than the 8 µs graph launch call; none is compared with it, and the
        # ordinary kernels (50 µs, 15 µs) outlast their 6 µs calls
        assert (la.small_kernel_count, la.small_kernel_fraction) == (0, 0.0)
        assert la.started_before_return == 0
        assert la.api_time_ns == 6_000 * (len(WARMUP) + 1) + CALL_NS * len(LAUNCHES)


def test_per_kernel_launches_of_the_same_nodes_pair_every_kernel(tmp_path):
    """Control: the same nodes, each launched by its own call, keep the per-kernel pairing."""
    sc = _run("node", per_kernel_launches=True)
    s = summarize(_write(tmp_path, sc))
    assert s.launch is not None
    launched = [k for k in sc.kernels if k.correlation_id]
    calls = {a.correlation_id: a for a in sc.api_calls if a.kind == "launch"}
    assert s.launch.graph_launch_count == s.launch.graph_launched_kernels == 0
    assert s.launch.correlated_kernels == len(launched) == len(calls)
    small = sum((k.end - k.start) < (calls[k.correlation_id].end - calls[k.correlation_id].start) for k in launched)
    assert small > 0
    assert s.launch.small_kernel_count == small
    assert s.launch.small_kernel_fraction == pytest.approx(small / len(launched))
    assert s.gpu.busy_ns == reference_union(_gpu_intervals())   # the same GPU work


def test_graph_executions_are_listed_as_graphs_without_launch_configurations(twins):
    g, n = twins["graph"][1], twins["node"][1]
    assert g.gpu.graph_execution_count == len(LAUNCHES)
    assert g.gpu.kernel_count == len(WARMUP) + 1 + len(LAUNCHES)
    assert n.gpu.graph_execution_count == 0
    graphs = {k.name: k for k in g.kernels if k.kernel_class == "graph"}
    assert set(graphs) == {"CUDA graph 1", "CUDA graph 2"}
    for gid, k in ((1, graphs["CUDA graph 1"]), (2, graphs["CUDA graph 2"])):
        runs = [sum(GRAPH_NODES[gid]) for j in range(len(LAUNCHES)) if _graph_of(j) == gid]
        assert (k.count, k.total_ns) == (len(runs), sum(runs))
        assert k.grid is None and k.block is None and k.wave_fill_ratio is None
    assert {k.kernel_class for k in n.kernels} == {"compute"}
    assert [k.name for k in g.kernels if k.kernel_class == "compute"] == ["warmup(float*)", "side(float*)"]
    # the kernels inside the graphs were not traced: said once, at graph granularity only
    assert [sk.what for sk in g.skipped if sk.what == "kernels.graph_nodes"] == ["kernels.graph_nodes"]
    assert "--cuda-graph-trace=node" in next(sk.reason for sk in g.skipped if sk.what == "kernels.graph_nodes")
    assert not [sk for sk in n.skipped if sk.what == "kernels.graph_nodes"]


def test_untimed_and_host_started_graph_executions_are_dropped_and_counted(tmp_path):
    sc = _run("graph")
    sc.graph_executions += [GraphExecution(PID, DEV, STREAM, 0, 0, graph_id=1, graph_exec_id=11),
                            GraphExecution(PID, INT_MAX, STREAM, 2_500_000, 2_600_000, graph_id=3, graph_exec_id=13)]
    s = summarize(_write(tmp_path, sc))
    assert s.gpu.busy_ns == reference_union(_gpu_intervals())
    assert s.gpu.graph_execution_count == len(LAUNCHES)
    assert [d.id for d in s.devices if d.used] == [DEV]
    note = next(w for w in s.warnings if w.startswith("kernels:"))
    assert "2 row(s) outside the relation's domain" in note
    assert "1 start and end both 0 (timing not collected)" in note
    assert "1 device missing" in note


def test_a_capture_of_graph_launches_only_needs_no_kernel_table(tmp_path):
    sc = _run("graph", warmup=False)
    path = _write(tmp_path, sc, omit_tables=("CUPTI_ACTIVITY_KIND_KERNEL",))
    s = summarize(path)
    assert not [sk for sk in s.skipped if sk.what in ("kernels", "kernel_names", "kernel_classes")]
    assert s.gpu.busy_ns == reference_union(_gpu_intervals(with_kernels=False))
    assert s.gpu.kernel_count == s.gpu.graph_execution_count == len(LAUNCHES)
    assert s.launch is not None and s.launch.correlated_kernels == len(LAUNCHES)


def test_a_graph_table_without_its_columns_is_skipped_with_the_reason(tmp_path):
    path = _write(tmp_path, _run("graph", warmup=False), omit_tables=("CUPTI_ACTIVITY_KIND_KERNEL",))
    with sqlite3.connect(path) as conn:
        conn.execute(f"ALTER TABLE {GRAPH_TRACE} DROP COLUMN graphId")
    s = summarize(path)
    reason = next(sk.reason for sk in s.skipped if sk.what == "kernels")
    assert f"column(s) graphId absent from {GRAPH_TRACE}" in reason


@needs_rocpd_ddl
@pytest.mark.parametrize(("flavour", "schema_version"),
                         [("rocprofv3", "3"), ("rocprofv3", "4.0.0"), ("rocprof-sys", "3")])
def test_hip_graph_kernels_pair_once_with_their_graph_launch(tmp_path, twins, flavour, schema_version):
    """rocpd records a HIP graph's kernels as dispatches correlated to the one hipGraphLaunch call."""
    sc = _run("node")
    s = summarize(write_rocpd(sc, tmp_path / f"graphs-{flavour}-{schema_version}.db", flavour=flavour,
                              schema_version=schema_version))
    idle, mean = _expected_graph_launches()
    la = s.launch
    assert la is not None
    assert (la.launch_count, la.graph_launch_count) == (len(WARMUP) + 1 + len(LAUNCHES), len(LAUNCHES))
    assert la.graph_launched_kernels == NODES
    assert la.correlated_kernels == len(WARMUP) + 1 + len(LAUNCHES)
    graph = next(a for a in la.by_api if a.name == "hipGraphLaunch")
    assert (graph.count, graph.idle_queue_launches) == (len(LAUNCHES), idle)
    assert graph.latency_mean_ns == pytest.approx(mean)
    assert (la.small_kernel_count, la.small_kernel_fraction) == (0, 0.0)
    assert s.gpu.busy_ns == reference_union(_gpu_intervals())
    assert s.gpu.window_ns == twins["graph"][1].gpu.window_ns
    assert s.idle_gaps[0].gap_count == twins["graph"][1].idle_gaps[0].gap_count


def test_rocpd_writer_refuses_whole_graph_records(tmp_path):
    with pytest.raises(ValueError, match="dispatches"):
        write_rocpd(_run("graph"), tmp_path / "x.db")
