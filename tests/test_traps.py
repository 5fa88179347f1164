"""One test per correctness trap of ../shared/reference/correctness-traps.md (Stage 1 part).

Profiles are generated from planted scenarios; expected values are computed from the scenario's
own event lists (never by the code under test).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import defaultdict

import pytest
from reference import reference_union  # tests/ is on sys.path
from testkit import scenarios
from testkit.nsys_writer import write_nsys
from testkit.scenario import Copy, Device, Kernel, Marker, Process, Scenario

from pa.metrics.summarize import summarize


def _write(tmp_path, scen, name="p.sqlite", **kw):
    path = tmp_path / name
    write_nsys(scen, path, **kw)
    return summarize(path)


def _tiny(kernels=(), copies=(), markers=(), devices=(0,)):
    return Scenario(name="tiny", description="hand-built", devices=[Device(id=d) for d in devices],
                    processes=[Process(pid=100, name="app", threads={100: "main"})],
                    kernels=list(kernels), copies=list(copies), markers=list(markers))


def test_utilization_is_a_union_with_concurrent_streams(tmp_path):
    scen = scenarios.multi_stream_overlap()
    s = _write(tmp_path, scen)
    for d in s.devices:
        if d.used:
            pairs = [(k.start, k.end) for k in scen.kernels if k.device == d.id]
            pairs += [(c.start, c.end) for c in scen.copies if c.device == d.id]
            pairs += [(m.start, m.end) for m in scen.memsets if m.device == d.id]
            assert d.busy_ns == reference_union(pairs)
            assert d.utilization_pct <= 100.0
            assert d.kernel_time_ns > d.kernel_busy_ns  # the streams really overlap


def test_gaps_after_merging_and_copies_are_not_idle(tmp_path):
    # k1 [0,100) on stream 1; k2 [200,300) stream 1; a long kernel on stream 2 covers [90, 150);
    # a copy covers [150, 200). No idle gap may be reported at all.
    ks = [Kernel(pid=100, device=0, stream=1, start=0, end=100, name="a"),
          Kernel(pid=100, device=0, stream=1, start=200, end=300, name="a"),
          Kernel(pid=100, device=0, stream=2, start=90, end=150, name="b")]
    cs = [Copy(pid=100, device=0, stream=3, start=150, end=200, bytes=10, direction="HtoD",
               src_kind="pinned", dst_kind="device")]
    s = _write(tmp_path, _tiny(ks, cs))
    g = s.idle_gaps[0]
    assert g.gap_count == 0 and g.idle_ns == 0


def test_stream_ids_are_keyed_with_the_device(tmp_path):
    ks = [Kernel(pid=100, device=0, stream=7, start=0, end=100, name="a"),
          Kernel(pid=100, device=1, stream=7, start=0, end=50, name="a")]
    s = _write(tmp_path, _tiny(ks, devices=(0, 1)))
    streams = {(st.device, st.stream): st.busy_ns for st in s.streams}
    assert streams == {(0, 7): 100, (1, 7): 50}
    assert {d.id: d.busy_ns for d in s.devices} == {0: 100, 1: 50}


def test_variance_is_numerically_stable(tmp_path):
    # durations 1e9 + {1, 2, 3}: E[x^2] - E[x]^2 in float64 loses all precision here.
    ks = [Kernel(pid=100, device=0, stream=1, start=i * 2_000_000_000, end=i * 2_000_000_000 + 1_000_000_000 + i + 1,
                 name="long") for i in range(3)]
    s = _write(tmp_path, _tiny(ks))
    assert s.kernels[0].std_ns == pytest.approx(math.sqrt(2 / 3), rel=1e-9)


def test_shared_memory_is_static_plus_dynamic_not_the_carveout(tmp_path):
    ks = [Kernel(pid=100, device=0, stream=1, start=0, end=10, name="k", static_shared_bytes=1024,
                 dynamic_shared_bytes=4096)]
    s = _write(tmp_path, _tiny(ks))
    assert s.kernels[0].shared_bytes == 5120


@pytest.mark.parametrize("layout", ["3.13", "3.24"])
def test_enums_are_joined_by_label(tmp_path, layout):
    scen = scenarios.pageable_htod()
    plain = _write(tmp_path, scen, "plain.sqlite", layout=layout)
    permuted = _write(tmp_path, scen, "perm.sqlite", layout=layout, permute_enums=True)
    assert plain.copies.model_dump() == permuted.copies.model_dump()
    assert plain.sync.model_dump() == permuted.sync.model_dump()
    pageable = sum(c.bytes for c in scen.copies if "pageable" in (c.src_kind, c.dst_kind))
    assert plain.copies.pageable_bytes == pageable > 0
    pinned = sum(c.bytes for c in scen.copies if "pinned" in (c.src_kind, c.dst_kind))
    got_pinned = sum(c.bytes for c in plain.copies.by_kind if "pinned" in (c.src_kind, c.dst_kind))
    assert got_pinned == pinned


def test_missing_enum_table_does_not_drop_copies(tmp_path):
    scen = scenarios.copies_not_overlapped()
    s = _write(tmp_path, scen, layout="3.13", omit_tables=["ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND"])
    assert s.copies.count == len(scen.copies)
    expected = defaultdict(int)
    for c in scen.copies:
        expected[c.direction] += c.bytes
    assert {t.direction: t.bytes for t in s.copies.by_direction} == dict(expected)


def test_missing_table_is_skipped_and_empty_table_is_no_activity(tmp_path):
    scen = scenarios.launch_bound()
    scen_empty = dataclasses.replace(scen, copies=[])
    missing = _write(tmp_path, scen, "missing.sqlite", omit_tables=["CUPTI_ACTIVITY_KIND_MEMCPY"])
    empty = _write(tmp_path, scen_empty, "empty.sqlite")
    assert missing.copies is None
    assert any(sk.what == "copies" for sk in missing.skipped)
    assert empty.copies is not None and empty.copies.count == 0
    assert not any(sk.what == "copies" for sk in empty.skipped)


@pytest.mark.parametrize("layout", ["2.9", "legacy", "3.24"])
def test_every_layout_gives_the_same_answers(tmp_path, layout):
    scen = scenarios.example()
    ref = _write(tmp_path, scen, "ref.sqlite", layout="3.13")
    other = _write(tmp_path, scen, f"{layout}.sqlite", layout=layout)
    assert other.gpu.model_dump() == ref.gpu.model_dump()
    assert [k.model_dump() for k in other.kernels] == [k.model_dump() for k in ref.kernels]
    assert other.copies.model_dump(exclude={"by_kind"}) == ref.copies.model_dump(exclude={"by_kind"})
    assert other.launch.launch_count == ref.launch.launch_count
    assert other.sync.cpu_blocked_ns == ref.sync.cpu_blocked_ns


def test_open_ranges_are_counted_not_summed(tmp_path):
    ms = [Marker(pid=100, tid=100, start=0, end=100, text="outer"),
          Marker(pid=100, tid=100, start=10, end=20, text="inner"),
          Marker(pid=100, tid=100, start=50, end=-1, text="open")]  # end < start: written as NULL
    ks = [Kernel(pid=100, device=0, stream=1, start=0, end=100, name="k")]
    s = _write(tmp_path, _tiny(ks, markers=ms))
    assert s.markers.open_ranges == 1
    names = {m.name: m for m in s.markers.by_name}
    assert set(names) == {"outer", "inner"}
    assert names["inner"].max_depth == 1 and names["outer"].total_ns == 100
    assert s.markers.top_level_count == 1


def test_nvtx_inline_and_registered_text_and_domains(tmp_path):
    scen = scenarios.nvtx_nested()
    s = _write(tmp_path, scen)
    closed = [m for m in scen.markers if m.end >= m.start]
    assert s.markers.count == len(closed)
    # "step 5", "step 12", ... are one range name with a step number (normalised to "step #")
    assert {m.name for m in s.markers.by_name} == {re.sub(r"^step \d+$", "step #", m.text) for m in closed}
    assert {m.domain for m in s.markers.by_name} == {m.domain for m in closed}
    assert max(m.max_depth for m in s.markers.by_name) == 2  # depth 3 nesting: 0, 1, 2


def test_sync_is_merged_over_threads_not_summed(tmp_path):
    scen = scenarios.sync_after_launch()
    s = _write(tmp_path, scen)
    per_pid = defaultdict(list)
    for a in scen.api_calls:
        if a.kind in ("device_sync", "stream_sync", "event_sync"):
            per_pid[a.pid].append((a.start, a.end))
    assert s.sync.cpu_blocked_ns == sum(reference_union(v) for v in per_pid.values())
    assert s.sync.cpu_blocked_ns <= s.span_ns * len(per_pid)


def test_launch_overhead_only_for_idle_queue_and_all_api_spellings(tmp_path):
    scen = scenarios.launch_bound()
    s = _write(tmp_path, scen)
    launches = [a for a in scen.api_calls if a.kind in ("launch", "graph_launch")]
    assert s.launch.launch_count == len(launches)
    assert s.launch.correlated_kernels == len([k for k in scen.kernels if k.correlation_id])
    # API end -> kernel start, computed from the scenario for launches whose stream was idle
    by_corr = {a.correlation_id: a for a in launches}
    last_end: dict[tuple[int, int], int] = {}
    lat = []
    for k in sorted(scen.kernels, key=lambda k: k.start):
        a = by_corr.get(k.correlation_id)
        if a and last_end.get((k.device, k.stream), -1) < a.end:
            lat.append(k.start - a.end)
        last_end[(k.device, k.stream)] = max(last_end.get((k.device, k.stream), -1), k.end)
    total_idle = sum(x.idle_queue_launches for x in s.launch.by_api)
    assert total_idle == len(lat)
    mean = sum(x.latency_mean_ns * x.idle_queue_launches for x in s.launch.by_api) / total_idle
    assert mean == pytest.approx(sum(lat) / len(lat))


def test_profiler_overhead_is_reported_apart(tmp_path):
    scen = scenarios.heavy_overhead()
    s = _write(tmp_path, scen)
    per_pid = defaultdict(list)
    for o in scen.overhead:
        per_pid[o.pid].append((o.start, o.end))
    assert s.overhead.total_ns == sum(reference_union(v) for v in per_pid.values())
    assert s.overhead.pct_of_span > 10


def test_mpi_time_is_merged_per_thread(tmp_path):
    scen = scenarios.mpi_collectives()
    s = _write(tmp_path, scen)
    per_pid = defaultdict(list)
    for m in scen.mpi_calls:
        per_pid[m.pid].append((m.start, m.end))
    assert s.mpi.total_ns == sum(reference_union(v) for v in per_pid.values())
    assert s.mpi.call_count == len(scen.mpi_calls)
    assert sorted(s.mpi.ranks) == sorted({m.rank for m in scen.mpi_calls})


def test_small_profile_keeps_integer_nanoseconds(tmp_path):
    ks = [Kernel(pid=100, device=0, stream=1, start=0, end=3, name="tiny")]
    s = _write(tmp_path, _tiny(ks))
    assert s.gpu.kernel_time_ns == 3 and isinstance(s.gpu.kernel_time_ns, int)


@pytest.mark.parametrize(("name", "expected"), [
    ("host_idle_gaps", "cpu_stall"),    # planted: long gaps with no GPU API call on the host
    ("launch_bound", "launch"),         # planted: the GPU waits for the next launch call
    ("sync_after_launch", "sync"),      # planted: a synchronize round trip after every launch
])
def test_largest_gaps_name_what_the_host_was_doing(tmp_path, name, expected):
    s = _write(tmp_path, scenarios.ALL_SCENARIOS[name]())
    largest = s.idle_gaps[0].largest
    assert largest and largest[0].host_activity == expected, [(g.host_activity, g.host_cover_pct) for g in largest]


def test_one_call_written_twice_counts_once(tmp_path):
    """A runtime record and the driver record it made, sharing one correlation id, are one launch."""
    from testkit.scenario import ApiCall

    ks, calls = [], []
    for i in range(10):
        t = 1_000_000 + i * 100_000
        ks.append(Kernel(pid=100, device=0, stream=1, start=t + 20_000, end=t + 60_000, name="k", correlation_id=i + 1))
        calls.append(ApiCall(100, 100, t, t + 10_000, "launch", i + 1))
        if i % 2 == 0:   # the inner driver call, inside the outer one, same correlation id
            calls.append(ApiCall(100, 100, t + 2_000, t + 8_000, "launch", i + 1, name="cuLaunchKernel"))
    scen = _tiny(ks)
    scen.api_calls = calls
    s = _write(tmp_path, scen)
    assert s.launch is not None and s.launch.launch_count == 10
    assert s.launch.api_time_ns == 10 * 10_000
    assert any("counted once" in w for w in s.warnings)
