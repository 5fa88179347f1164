"""The launch configuration reported per kernel name is the most frequent one, counted by hand here.

pa finds the distinct configurations with one DISTINCT and counts rows only for names that have
several; this plants names with one, two and tied configurations, plus a malformed row whose
configuration must not count, and checks both vendors' query sets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rocpd_ddl import rocpd_flavours  # tests/ is on sys.path
from testkit.nsys_writer import write_nsys
from testkit.rocpd_writer import write_rocpd
from testkit.scenario import ApiCall, Device, Kernel, Process, Scenario

from pa.metrics.summarize import summarize
from pa.profile.detect import detect
from pa.profile.open import open_readonly
from pa.profile.queryset import resolve

A = dict(grid=(128, 1, 1), block=(256, 1, 1), registers_per_thread=32)
B = dict(grid=(64, 2, 1), block=(128, 2, 1), registers_per_thread=40, static_shared_bytes=4096)
C = dict(grid=(8, 1, 1), block=(1024, 1, 1), registers_per_thread=64, dynamic_shared_bytes=2048)
PLAN = {
    "single(float*)": [A] * 4,                # one configuration
    "mostly_b(float*)": [A] * 3 + [B] * 5,     # B is the mode, 2 configurations
    "tied(float*)": [B] * 2 + [C] * 2 + [A],   # B and C tie; 3 configurations
}


def _scenario() -> Scenario:
    dev = Device(id=0, name="NVIDIA A100-SXM4-40GB", sm_count=108, clock_hz=1_410_000_000,
                 threads_per_warp=32, max_warps_per_sm=64, max_shared_per_sm=167936,
                 max_shared_per_block=49152, compute_capability=(8, 0))
    sc = Scenario(name="configs", description="", host_name="h", devices=[dev],
                  processes=[Process(pid=7, name="app", threads={7: "main"})])
    t, corr = 1_000_000, 0
    for name, cfgs in PLAN.items():
        for cfg in cfgs:
            corr += 1
            sc.api_calls.append(ApiCall(7, 7, t, t + 400, "launch", corr))
            sc.kernels.append(Kernel(7, 0, 1, t + 1000, t + 3000, name, correlation_id=corr, **cfg))  # type: ignore[arg-type]
            t += 10_000
    # still open at the end of the capture (end < start): its configuration must not count
    sc.kernels.append(Kernel(7, 0, 1, t + 3000, t + 1000, "single(float*)", correlation_id=0, **C))  # type: ignore[arg-type]
    return sc


@pytest.mark.parametrize("fmt", ["nsys", *rocpd_flavours("rocprofv3")])
def test_modal_configuration_and_count_of_configurations(tmp_path: Path, fmt: str):
    path = tmp_path / f"configs.{fmt}.db"
    if fmt == "nsys":
        write_nsys(_scenario(), path)
    else:
        write_rocpd(_scenario(), path, flavour=fmt)
    by_name = {k.name: k for k in summarize(path).kernels}
    single, mostly_b, tied = (by_name[n] for n in PLAN)
    assert (single.grid, single.block, single.registers_per_thread, single.launch_configs) == \
        ([128, 1, 1], [256, 1, 1], 32, 1)
    assert (mostly_b.grid, mostly_b.block, mostly_b.registers_per_thread, mostly_b.shared_bytes,
            mostly_b.launch_configs) == ([64, 2, 1], [128, 2, 1], 40, 4096, 2)
    assert tied.launch_configs == 3
    # A tie goes to the smaller packed configuration: grid x 8 (C) packs below grid x 64 (B).
    assert (tied.grid, tied.block, tied.shared_bytes) == ([8, 1, 1], [1024, 1, 1], 2048)


def test_a_null_and_a_minus_one_field_are_one_configuration(tmp_path: Path):
    # pa maps NULL to -1 (unknown) on the distinct rows in Python: a name whose kernels read NULL
    # registers on odd rows and -1 on even rows still has one configuration, with registers unknown
    sc = _scenario()
    sc.kernels = [k for k in sc.kernels if k.name == "single(float*)"][:4]
    path = write_nsys(sc, tmp_path / "nulls.sqlite")
    conn = open_readonly(path)
    try:
        version = resolve("nsys", detect(conn, path).schema_version).version
    finally:
        conn.close()
    target = tmp_path / "q" / "nsys" / version
    target.mkdir(parents=True)
    bundled = Path(__file__).resolve().parent.parent / "queries" / "nsys" / "base" / "kernels.sql"
    body = bundled.read_text().replace("k.registersPerThread AS registers_per_thread",
                                       "CASE WHEN k.rowid % 2 THEN NULL ELSE -1 END AS registers_per_thread")
    assert "rowid % 2 THEN NULL" in body
    (target / "kernels.sql").write_text(body)
    (single,) = summarize(path, query_dirs=[tmp_path / "q"]).kernels
    assert (single.count, single.launch_configs, single.registers_per_thread, single.grid) == \
        (4, 1, None, [128, 1, 1])
