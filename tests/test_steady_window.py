"""The steady window (pa.metrics.steady): findings judged from the marked loop's start on (issue 24, item 1).

Hand-built cases pin the criteria; the real cuDF exports check that the judged summary counts exactly
the events a direct SQL query finds from the loop's start on, and that the capture's facts (span,
first GPU operation) stay the capture's.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
from conftest import needs_real_profile, real_nsys_profile

from pa.metrics import intervals as iv
from pa.metrics.activity import DeviceActivity
from pa.metrics.iterations import iteration_stats
from pa.metrics.model import IterationStats
from pa.metrics.steady import steady_window
from pa.pipeline import RunOptions, summarize_run

MS = 1_000_000
CUDF = real_nsys_profile("nsys_legacy_cudf_2proc.sqlite")
GROUPBY = real_nsys_profile("nvtx_groupby_legacy.sqlite")


def merged(*pairs: tuple[int, int]) -> iv.Merged:
    return iv.merge(np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64))


def activity(kernels: iv.Merged, copies: iv.Merged) -> dict[int, DeviceActivity]:
    busy = iv.union_of([kernels, copies])
    return {0: DeviceActivity(device=0, kernels=kernels, copies=copies, memsets=iv.EMPTY, busy=busy)}


def loop(start: int, end: int, count: int = 4) -> IterationStats:
    d = (end - start) // count
    return IterationStats(name="step", pid=1, tid=1, count=count, total_ns=d * count, median_ns=d, min_ns=d,
                          max_ns=d, start_ns=start, end_ns=end)


def test_a_marked_loop_after_a_set_up_is_the_steady_window() -> None:
    # set-up: uploads [0, 40) ms; the loop's kernels [50, 90) ms, marked from 48 ms; span starts at 0
    acts = activity(merged((50 * MS, 60 * MS), (65 * MS, 90 * MS)), merged((0, 40 * MS)))
    w = steady_window(loop(48 * MS, 92 * MS), acts, 0)
    assert w is not None and w.start_ns == 48 * MS and w.end_ns == 90 * MS   # to the last GPU operation
    assert w.kernel_share_pct == 100.0 and w.count == 4


def test_a_marked_range_after_most_of_the_kernels_is_not_the_loop() -> None:
    # kernels [0, 30) ms, then three marked calls holding the kernels [40, 60): 20 of 50 ms (40 %)
    acts = activity(merged((0, 30 * MS), (40 * MS, 60 * MS)), iv.EMPTY)
    assert steady_window(loop(38 * MS, 60 * MS, 3), acts, 0) is None


def test_a_loop_that_starts_with_the_window_changes_nothing() -> None:
    # the loop starts 2 ms into a 100 ms active window: the set-up is under 10 % of it
    acts = activity(merged((0, 100 * MS)), iv.EMPTY)
    assert steady_window(loop(2 * MS, 100 * MS), acts, 0) is None
    assert steady_window(loop(11 * MS, 100 * MS), acts, 0) is not None


def test_no_iterations_no_gpu_work_no_window() -> None:
    acts = activity(merged((50 * MS, 90 * MS)), iv.EMPTY)
    assert steady_window(None, acts, 0) is None
    assert steady_window(loop(48 * MS, 92 * MS), {}, 0) is None


def test_a_loop_marked_in_a_library_domain_inside_a_user_range_is_found() -> None:
    # one thread: a user range [0, 100) (code 0) holding four library ranges 'step' (code 1) back to
    # back; both are at depth 0 of their own domain. Across domains the steps start inside the user
    # range, which hid them; per name they are a loop.
    s = np.array([0, 1, 26, 51, 76], dtype=np.int64) * MS
    e = np.array([100, 25, 50, 75, 99], dtype=np.int64) * MS
    c = np.array([0, 1, 1, 1, 1], dtype=np.int64)
    it = iteration_stats({(1, 1): (s, e, c)}, ["user", "step"], span_start=0)
    assert it is not None and it.name == "step" and it.count == 4
    assert it.start_ns == 1 * MS and it.end_ns == 99 * MS
    # steps that nest in themselves are not a loop of four
    s2 = np.array([1, 2, 3, 4], dtype=np.int64) * MS
    e2 = np.array([99, 98, 97, 96], dtype=np.int64) * MS
    assert iteration_stats({(1, 1): (s2, e2, np.ones(4, dtype=np.int64))}, ["user", "step"]) is None


def _sql_count(path: Path, table: str, lo: int) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return int(conn.execute(f'SELECT count(*) FROM {table} WHERE "end" >= ? AND "end" >= start', (lo,))
                   .fetchone()[0])
    finally:
        conn.close()


@needs_real_profile(CUDF, GROUPBY)
def test_the_judged_summary_counts_the_events_from_the_loops_start_on() -> None:
    for path in (CUDF, GROUPBY):
        run = summarize_run([path])
        s, j = run.main, run.judged
        assert s.steady_window is not None and j is not None and j.judged_range == s.steady_window
        lo = s.span_start_ns + s.steady_window.start_ns
        assert j.gpu.kernel_count == _sql_count(path, "CUPTI_ACTIVITY_KIND_KERNEL", lo)
        assert sum(c.count for c in j.copies.by_direction) == _sql_count(path, "CUPTI_ACTIVITY_KIND_MEMCPY", lo)
        # the capture's facts stay the capture's; the GPU's active window is the loop's
        assert j.span_ns == s.span_ns and j.gpu.first_operation_ns == s.gpu.first_operation_ns
        assert j.startup_call == s.startup_call and j.profile == s.profile
        assert j.gpu.window_ns < s.gpu.window_ns
        # and judging the whole active window is still one option away
        assert summarize_run([path], options=RunOptions(steady=False)).judged is None


@needs_real_profile(GROUPBY)
def test_judge_active_restores_the_whole_active_window() -> None:
    import json

    from click.testing import CliRunner

    from pa.cli import main

    def findings(*extra: str) -> tuple[list[str], dict]:
        res = CliRunner().invoke(main, ["analyze", str(GROUPBY), "--no-llm", "-f", "json", *extra])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        return [h["rule_id"] for h in doc["hypotheses"]], doc["summary"]

    steady, s_metrics = findings()
    active, a_metrics = findings("--judge", "active")
    # the 85 MB input upload before the loop reads as unoverlapped copies only on the whole window
    assert "GPU-COPY-002" in active and "GPU-COPY-002" not in steady
    assert s_metrics["judged_iterations"]["name"] == "GROUPBY_AGG" and a_metrics["judged_iterations"] is None
    assert s_metrics["analysis_window_ns"] < a_metrics["analysis_window_ns"]
