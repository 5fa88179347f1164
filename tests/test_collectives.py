"""NCCL/RCCL collectives as records (pa/metrics/collectives.py) and COMM-LAT-001.

Kernel names are parsed as the libraries' generators write them; the summary's per (device, type)
block and the rule's claim are checked against direct SQL over the written file or a hand count of
the planted kernels, never against pa's own output.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import needs_real_profile, real_nsys_profile
from reference import reference_union  # tests/ is on sys.path
from rocpd_ddl import needs_rocpd_ddl
from testkit.facts import scenario_from_facts
from testkit.nsys_writer import write_nsys
from testkit.rocpd_writer import write_rocpd
from testkit.scenario import Scenario

from pa.metrics.collectives import CollectiveName, bandwidths, base_name, bus_factor, parse_collective
from pa.metrics.summarize import summarize
from pa.metrics.thresholds import Thresholds
from pa.rules.engine import RuleResult, evaluate, load_ruleset

US = 1_000

# (name, type, op, dtype, algorithm, protocol, family). The first three are the names the real
# exports hold (mfu_before.sqlite, mfu_after.sqlite: StringIds); the others follow NCCL's and
# RCCL's generators (src/device/generate.py) and older NCCL's NCCL_KERN_NAME macros.
NAMES = [
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
     "SendRecv", None, None, None, None, "dev_kernel"),
    ("_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE", "SendRecv", None, None, None, None, "dev_kernel"),
    ("ncclDevKernel_SendRecv", "SendRecv", None, None, None, None, "dev_kernel"),
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "AllReduce", "Sum", "bf16", "RING", "LL", "dev_kernel"),
    ("ncclDevKernel_AllReduce_Sum_f32_TREE_LL", "AllReduce", "Sum", "f32", "TREE", "LL", "dev_kernel"),
    ("ncclDevKernel_AllReduce_Sum_f32_NVLS_TREE_SIMPLE", "AllReduce", "Sum", "f32", "NVLS_TREE", "SIMPLE",
     "dev_kernel"),
    ("ncclDevKernel_ReduceScatter_Sum_u8_RING_LL", "ReduceScatter", "Sum", "u8", "RING", "LL", "dev_kernel"),
    ("ncclDevKernel_AllGather_RING_LL", "AllGather", None, None, "RING", "LL", "dev_kernel"),
    ("ncclDevKernel_Broadcast_RING_LL", "Broadcast", None, None, "RING", "LL", "dev_kernel"),
    ("ncclDevKernel_Reduce_Sum_f16_RING_LL", "Reduce", "Sum", "f16", "RING", "LL", "dev_kernel"),
    ("ncclDevKernel_Generic", "Generic", None, None, None, None, "dev_kernel"),
    ("ncclDevKernel_Generic_1", "Generic", None, None, None, None, "dev_kernel"),
    ("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "Generic", None, None, None, None, "dev_kernel"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float", "AllReduce", "Sum", "f32", "RING", "LL", "kernel"),
    ("void ncclKernel_AllReduce_COLLNET_DIRECT_SIMPLE_Sum___nv_bfloat16(ncclDevComm*, unsigned long, ncclWork*)",
     "AllReduce", "Sum", "bf16", "COLLNET_DIRECT", "SIMPLE", "kernel"),
    ("ncclKernel_AllReduce_TREE_LL128_Prod_double", "AllReduce", "Prod", "f64", "TREE", "LL128", "kernel"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", "SendRecv", None, None, "RING", "SIMPLE", "kernel"),
    ("ncclKernel_AllToAllPivot_RING_SIMPLE_Sum_int8_t", "AllToAll", None, None, "RING", "SIMPLE", "kernel"),
    ("ncclKernel_ReduceScatter_RING_LL_MinMax_hip_bfloat16", "ReduceScatter", "MinMax", "bf16", "RING", "LL", "kernel"),
    ("ncclAllReduceRingLLKernel_sum_f32", "AllReduce", "Sum", "f32", "RING", "LL", "legacy"),
    ("ncclReduceScatterTreeKernel_max_f16", "ReduceScatter", "Max", "f16", "TREE", None, "legacy"),
    ("ncclSendRecvKernel_copy_i8", "SendRecv", None, None, None, None, "legacy"),
    ("ncclAllGatherRingKernel_copy_i8", "AllGather", None, None, "RING", None, "legacy"),
    ("rcclGenericKernel", "Generic", None, None, None, None, "rccl"),
    ("ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32", "AllReduce", "Sum", "f32", "AGxLL_R", None, "symmetric"),
    ("NCCLDEVKERNEL_ALLREDUCE_SUM_F32_RING_LL", "AllReduce", "Sum", "f32", "RING", "LL", "dev_kernel"),
]
# Names no scheme fits: a collective of type unknown, never an error or a dropped kernel.
ODD = ["", "nccl", "ncclFoo", "ncclDevKernel_", "ncclDevKernel_Frobnicate_Sum_f32", "rcclSomethingNew",
       "_Z9999ncclDevKernel", "(", "void ", "ncclKernel_____", "nccl\u00e9Kernel_\u2603", "_Z3abc"]


@pytest.mark.parametrize(("name", "ctype", "op", "dtype", "algo", "proto", "family"), NAMES,
                         ids=[n[0][:60] for n in NAMES])
def test_names_parse_as_their_generators_write_them(name: str, ctype: str, op: str | None, dtype: str | None,
                                                    algo: str | None, proto: str | None, family: str) -> None:
    assert parse_collective(name) == CollectiveName(ctype, op, dtype, algo, proto, family)


@pytest.mark.parametrize("name", ODD)
def test_an_odd_name_is_an_unknown_collective(name: str) -> None:
    assert parse_collective(name).type == "unknown"


def test_parsing_is_linear_on_a_hostile_name() -> None:
    name = "ncclDevKernel_AllReduce" + "_Sum" * 200_000 + "(" + "<" * 100_000
    t = time.perf_counter()
    assert parse_collective(name).type == "AllReduce"
    assert parse_collective("ncclAllReduce" + "Ring" * 100_000 + "Kernel_").type == "unknown"
    assert time.perf_counter() - t < 2.0


def test_base_name_decodes_mangled_and_demangled_names() -> None:
    assert base_name("_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE") == "ncclDevKernel_SendRecv"
    assert base_name("void ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)") == \
        "ncclKernel_AllReduce_RING_LL_Sum_float"


def test_bus_bandwidth_follows_nccl_tests() -> None:
    # nccl-tests doc/PERFORMANCE.md: busbw = algbw × 2(n−1)/n (AllReduce), (n−1)/n (AllGather,
    # ReduceScatter, AllToAll), 1 (Broadcast, Reduce, SendRecv)
    assert bus_factor("AllReduce", 8) == pytest.approx(1.75)
    assert bus_factor("AllGather", 4) == bus_factor("ReduceScatter", 4) == pytest.approx(0.75)
    assert bus_factor("SendRecv", 8) == bus_factor("Broadcast", 8) == bus_factor("Reduce", 8) == 1.0
    assert bus_factor("Generic", 8) is None and bus_factor("unknown", 8) is None
    alg, bus = bandwidths("AllReduce", 1 << 30, 10_000_000, 8)       # 1 GiB in 10 ms on 8 ranks
    assert alg == pytest.approx((1 << 30) / 0.01) and bus == pytest.approx(alg * 1.75)
    assert bandwidths("AllReduce", None, 10_000_000, 8) == (None, None)   # bytes unknown: no guess
    assert bandwidths("AllReduce", 1 << 30, 10_000_000, None)[1] is None   # ranks unknown: no busbw


# ---- the summary block, against SQL over the real exports ----

DUR = 'k."end" - k.start'
NCCL_KERNELS = ("FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName "
                "WHERE s.value LIKE 'nccl%'")
MFU = [real_nsys_profile("mfu_before.sqlite"), real_nsys_profile("mfu_after.sqlite")]


@needs_real_profile(*MFU)
@pytest.mark.parametrize("path", MFU, ids=lambda p: p.stem)
def test_real_sendrecv_kernels_match_sql(path: Path) -> None:
    s = summarize(path)
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
        rows = db.execute(f"SELECT k.deviceId, count(*), sum({DUR}), min({DUR}), max({DUR}), sum({DUR} < 50000) "
                          f"{NCCL_KERNELS} GROUP BY 1 ORDER BY 1").fetchall()
    assert s.collectives is not None
    got = [(c.device, c.count, c.total_ns, c.min_ns, c.max_ns, c.small_count) for c in s.collectives]
    assert got == [tuple(r) for r in rows]
    assert {c.type for c in s.collectives} == {"SendRecv"}
    assert all(c.bytes is None and c.busbw_bps is None for c in s.collectives)   # the export holds no sizes
    # every SendRecv is 89 µs or longer (up to 3.6 ms on mfu_before): none is latency-bound
    result = evaluate(s, load_ruleset())
    assert _outcome(result, "COMM-LAT-001").status == "silent"


# ---- planted single-process scenarios ----

AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
RCCL_AR = "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"


def _steps(n: int, compute_us: int, comm_us: int, comm: str = AR, comm_stream: int = 7) -> Scenario:
    return scenario_from_facts([
        {"repeat": n, "steps": [{"launch": "gemm_kernel", "us": compute_us},
                                {"launch": comm, "us": comm_us, "stream": comm_stream}]},
        {"steps": [{"sync": "device"}]}])


def _outcome(result: RuleResult, rule_id: str) -> Any:
    return next(o for o in result.outcomes if o.rule_id == rule_id)


def _claimed_ns(result: RuleResult, rule_id: str, span: int) -> int:
    h = next(h for h in result.hypotheses if h.rule_id == rule_id)
    assert h.runtime_fraction_pct is not None
    return round(h.runtime_fraction_pct / 100 * span)


def _nsys_span(path: Path) -> int:
    """First start to last end over every table with GPU or host records that the writer filled."""
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN "
                                           "('CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_RUNTIME', "
                                           "'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION')")]
        union = " UNION ALL ".join(f'SELECT start AS a, "end" AS b FROM {t}' for t in tables)
        lo, hi = db.execute(f"SELECT min(a), max(b) FROM ({union})").fetchone()
    return int(hi - lo)


def test_tiny_exposed_allreduces_fire_with_the_hand_computed_claim(tmp_path: Path) -> None:
    # (a) 400 × (10 µs gemm, 20 µs all-reduce) on one stream: every all-reduce small and exposed.
    scen = _steps(400, 10, 20)
    path = write_nsys(scen, tmp_path / "a.sqlite")
    s = summarize(path)
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
        count, total, small = db.execute(f"SELECT count(*), sum({DUR}), sum({DUR} < 50000) {NCCL_KERNELS}").fetchone()
    assert (count, total, small) == (400, 8_000_000, 400)
    comm = [(k.start, k.end) for k in scen.kernels if k.name.startswith("nccl")]
    compute = [(k.start, k.end) for k in scen.kernels if not k.name.startswith("nccl")]
    exposed = reference_union(comm + compute) - reference_union(compute)   # the union minus compute's
    assert exposed == 8_000_000                                       # nothing beside them
    assert s.collectives is not None and len(s.collectives) == 1
    c = s.collectives[0]
    assert (c.device, c.type, c.count, c.total_ns, c.small_count, c.small_min_ns) == \
        (0, "AllReduce", 400, total, 400, 20_000)
    assert (c.busy_ns, c.exposed_ns, c.small_exposed_ns, c.median_ns) == \
        (reference_union(comm), exposed, exposed, 20_000)
    assert c.kernel_names == ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"]

    result = evaluate(s, load_ruleset())
    span = _nsys_span(path)
    assert s.span_ns == span
    # fused 8 at a time, 400 calls become 50: 350 go, each saving at most the fastest (20 µs)
    want = exposed * (400 - 50) * 20_000 // total
    assert want == 7_000_000
    assert abs(_claimed_ns(result, "COMM-LAT-001", span) - want) <= 1
    # COMM-001 (overlap) claims from the same exposed time: 4 ms of compute could hide 4 ms, but only
    # the 1 ms COMM-LAT-001 leaves is there to claim; together they claim the exposed time, no more
    assert [h.rule_id for h in result.hypotheses][:2] == ["COMM-LAT-001", "COMM-001"]
    assert abs(_claimed_ns(result, "COMM-001", span) - (exposed - want)) <= 1
    assert result.claims["exposed_communication"] == pytest.approx(exposed, abs=2)


def test_the_same_allreduces_overlapped_by_compute_stay_quiet(tmp_path: Path) -> None:
    # (b) the same 400 × 20 µs all-reduces on a second stream, each under a 30 µs gemm
    scen = _steps(400, 30, 20, comm_stream=8)
    s = summarize(write_nsys(scen, tmp_path / "b.sqlite"))
    comm = [(k.start, k.end) for k in scen.kernels if k.name.startswith("nccl")]
    compute = [(k.start, k.end) for k in scen.kernels if not k.name.startswith("nccl")]
    assert reference_union(comm + compute) == reference_union(compute)   # hand check: all hidden
    assert s.collectives is not None
    c = s.collectives[0]
    assert (c.count, c.small_count, c.exposed_ns, c.small_exposed_ns) == (400, 400, 0, 0)
    result = evaluate(s, load_ruleset())
    assert _outcome(result, "COMM-LAT-001").status == "silent"
    assert _outcome(result, "COMM-001").status == "silent"


def test_few_large_allreduces_are_not_latency_bound(tmp_path: Path) -> None:
    # (c) 20 × (3 ms gemm, 2 ms all-reduce): exposed, COMM-001's, but none is small
    s = summarize(write_nsys(_steps(20, 3000, 2000), tmp_path / "c.sqlite"))
    assert s.collectives is not None
    c = s.collectives[0]
    assert (c.count, c.small_count, c.small_min_ns, c.exposed_ns) == (20, 0, None, 20 * 2_000_000)
    result = evaluate(s, load_ruleset())
    assert _outcome(result, "COMM-LAT-001").status == "silent"
    assert _outcome(result, "COMM-001").status == "fired"


def test_the_latency_threshold_is_site_tunable(tmp_path: Path) -> None:
    path = write_nsys(_steps(400, 10, 20), tmp_path / "t.sqlite")
    s = summarize(path, thresholds=Thresholds(collective_latency_ns=20_000))   # 20 µs is not under 20 µs
    assert s.collectives is not None and s.collectives[0].small_count == 0
    assert _outcome(evaluate(s, load_ruleset()), "COMM-LAT-001").status == "silent"


@needs_rocpd_ddl
@pytest.mark.parametrize("flavour", ["rocprofv3", "rocprof-sys"])
def test_rccl_kernels_in_rocpd_give_the_same_block(tmp_path: Path, flavour: str) -> None:
    # (d) the rocpd counterpart of (a), RCCL's generic kernel in place of the named all-reduce
    scen = _steps(400, 10, 20, comm=RCCL_AR)
    s = summarize(write_rocpd(scen, tmp_path / "d.db", flavour=flavour))
    comm = [(k.start, k.end) for k in scen.kernels if k.name.startswith("nccl")]
    compute = [(k.start, k.end) for k in scen.kernels if not k.name.startswith("nccl")]
    exposed = reference_union(comm + compute) - reference_union(compute)
    assert s.collectives is not None and len(s.collectives) == 1
    c = s.collectives[0]
    assert (c.type, c.count, c.total_ns, c.small_count, c.small_min_ns) == \
        ("Generic", len(comm), sum(e - b for b, e in comm), len(comm), 20_000)
    assert (c.exposed_ns, c.small_exposed_ns) == (exposed, exposed)
    assert c.kernel_names == ["ncclDevKernel_Generic_4"]
    result = evaluate(s, load_ruleset())
    start = min(min(k.start for k in scen.kernels), min(a.start for a in scen.api_calls))
    end = max(max(k.end for k in scen.kernels), max(a.end for a in scen.api_calls))
    assert s.span_ns == end - start
    assert abs(_claimed_ns(result, "COMM-LAT-001", s.span_ns) - exposed * 350 // 400) <= 1
