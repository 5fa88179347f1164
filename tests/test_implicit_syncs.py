"""A free waits for the GPU (issue 25, item 7): the host time blocked in cudaFree is counted, and
allocations inside launch-owned gaps are the allocation's.

References are hand counts from the planted scenario's own events and plain SQL over the real exports;
neither shares code with pa.metrics.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from reference import reference_merge, reference_union  # tests/ is on sys.path
from testkit.scenarios import alloc_churn


@pytest.mark.parametrize("fmt", ["nsys", "rocpd"])
def test_a_free_that_waits_for_its_kernel_is_host_time_blocked_on_the_gpu(scenario_profiles, fmt: str) -> None:
    s = scenario_profiles.summary("alloc_churn", fmt)
    sc = alloc_churn()
    frees = [c for c in sc.api_calls if c.kind == "free"]
    busy = sorted((k.start, k.end) for k in sc.kernels)
    # each free starts while its kernel runs and returns 150 µs after it: the wait is the overlap
    want = sum(max(0, min(fe, ke) - max(fs, ks)) for fs, fe in ((c.start, c.end) for c in frees) for ks, ke in busy)
    assert want > 70_000_000                 # 150 × ~500 µs: the scenario's own design
    assert s.sync is not None
    assert s.sync.free_wait_ns == want
    assert s.sync.free_wait_calls == len(frees) == 150
    assert s.allocations is not None
    lo, hi = busy[0][0], max(e for _, e in busy)
    allocs = [c for c in sc.api_calls if c.kind == "malloc"]
    inside = sum(1 for c in allocs if c.start < hi and c.end > lo)
    assert inside == 149                    # the first cudaMalloc precedes the first kernel
    assert (s.allocations.allocs_in_window, s.allocations.frees_in_window) == (inside, 150)


def _free_wait_reference(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        ops = []
        for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
            if t in tables:
                ops += conn.execute(f'SELECT start, "end", deviceId, (globalPid >> 24) & 16777215 FROM {t} '
                                    'WHERE "end" >= start').fetchall()
        calls = []
        for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"):
            if t in tables:
                calls += conn.execute(
                    f'SELECT c.start, c."end", (c.globalTid >> 24) & 16777215 FROM {t} c JOIN StringIds s '
                    "ON s.id = c.nameId WHERE (s.value LIKE 'cudaFree%' OR s.value LIKE 'cuMemFree%') "
                    "AND s.value NOT LIKE '%Async%' AND c.\"end\" >= c.start").fetchall()
    finally:
        conn.close()
    n = ns = 0
    for pid in {p for _, _, p in calls}:
        devices = {d for _, _, d, p in ops if p == pid}
        busy = reference_merge([(s, e) for s, e, d, _ in ops if d in devices])
        mine = reference_merge([(s, e) for s, e, p in calls if p == pid])
        n += sum(1 for s, e, p in calls if p == pid and any(bs < e and be > s for bs, be in busy))
        ns += reference_union([(max(s, bs), min(e, be)) for s, e in mine for bs, be in busy
                               if max(s, bs) < min(e, be)])
    return n, ns


def test_free_waits_match_sql_on_every_real_export(real_profile: Path, summary_of) -> None:
    s = summary_of(real_profile)
    if s.sync is None:
        pytest.skip("no GPU API calls in this export")
    calls, ns = _free_wait_reference(real_profile)
    assert (s.sync.free_wait_calls, s.sync.free_wait_ns) == (calls, ns)
