"""`pa compare` of two exports of several rank processes: the ranks block (issue 28).

Planted pairs from testkit.nccl_runs are checked against their ground truth (NcclTruth, computed
from the kernels the generator built), never against pa's own output; the real torchrun pair
mfu_before → mfu_after against the export's own tables.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import needs_real_profile, real_nsys_profile
from testkit.nccl_runs import NcclRun, write_nccl_run

from pa.compare import compare as diff
from pa.pipeline import CompareRequest, compare, load_capture, render_comparison

REQUEST = CompareRequest(rules=False)
MFU_BEFORE = real_nsys_profile("mfu_before.sqlite")
MFU_AFTER = real_nsys_profile("mfu_after.sqlite")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, NcclRun]:
    d = tmp_path_factory.mktemp("nccl_pairs")
    return {"straggler": write_nccl_run(d / "straggler.sqlite", "dp_straggler"),
            "straggler1": write_nccl_run(d / "straggler1.sqlite", "dp_straggler", straggler=1),
            "balanced": write_nccl_run(d / "balanced.sqlite", "dp_balanced"),
            "balanced2": write_nccl_run(d / "balanced2.sqlite", "dp_balanced", ranks=2)}


@pytest.fixture(scope="module")
def straggler_to_balanced(runs: dict[str, NcclRun]) -> dict[str, Any]:
    return compare(runs["straggler"].path, runs["balanced"].path, REQUEST)


def _metric(row: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in row["changes"] if c["metric"] == name)


def _rank_keys(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [k for k in doc["key_differences"] if k["kind"] == "ranks"]


def test_straggler_to_balanced_per_rank_matches_the_planted_runs(straggler_to_balanced: dict[str, Any],
                                                                 runs: dict[str, NcclRun]) -> None:
    tb, ta = runs["straggler"].truth, runs["balanced"].truth
    rk = straggler_to_balanced["ranks"]
    assert rk["before_rank_count"] == tb.rank_count == 4 and rk["after_rank_count"] == ta.rank_count
    for row in rk["ranks"]:
        r = row["rank"]
        pb, pa_ = tb.pids[r], ta.pids[r]
        assert (row["before_pid"], row["after_pid"]) == (pb, pa_)
        wait = _metric(row, "GPU collective wait")
        assert (wait["before"], wait["after"]) == (tb.collective_wait_ns[pb], ta.collective_wait_ns[pa_])
        # the waits drop by the planted amount, per rank
        assert wait["delta"] == ta.collective_wait_ns[pa_] - tb.collective_wait_ns[pb]
        assert _metric(row, "communication time")["before"] == tb.nccl_time_ns[pb]
        assert _metric(row, "communication time")["after"] == ta.nccl_time_ns[pa_]
        assert _metric(row, "compute kernel time")["before"] == tb.compute_time_ns[pb]
        assert _metric(row, "exposed communication")["after"] == ta.exposed_comm_ns[pa_]
    assert rk["gpu_collective_wait"]["before"] == sum(tb.collective_wait_ns.values())
    assert rk["gpu_collective_wait"]["after"] == sum(ta.collective_wait_ns.values())
    (kind,) = rk["gpu_collectives"]
    assert kind["before_instances"] == tb.collective_instances and kind["after_instances"] == ta.collective_instances
    assert kind["total_wait"]["before"] == sum(tb.collective_wait_ns.values())


def test_the_late_rank_disappears(straggler_to_balanced: dict[str, Any], runs: dict[str, NcclRun]) -> None:
    tb = runs["straggler"].truth
    rk = straggler_to_balanced["ranks"]
    late = rk["gpu_late_before"]
    assert (late["rank"], late["pid"], late["late"]) == (tb.straggler_rank, tb.straggler_pid, True)
    assert late["lead_ns"] == tb.straggler_lead_ns and late["because"] == "compute"
    after = rk["gpu_late_after"]
    assert after is None or not after["late"]       # rotating jitter: a lead far below the noise floor
    (key,) = _rank_keys(straggler_to_balanced)
    assert key["before_ns"] == sum(tb.collective_wait_ns.values())
    assert key["sentence"].startswith("No rank is late at the GPU collectives any more")
    assert f"rank {tb.straggler_rank}, pid {tb.straggler_pid} was" in key["sentence"]
    assert key["sentence"] in straggler_to_balanced["narrative"]
    assert rk["mpi_collective_wait"] is None and rk["mpi_late_before"] is None


def test_the_verdict_still_reads_the_whole_capture(straggler_to_balanced: dict[str, Any],
                                                   runs: dict[str, NcclRun]) -> None:
    whole = diff(load_capture(runs["straggler"].path), load_capture(runs["balanced"].path))
    assert whole.ranks is None
    assert straggler_to_balanced["verdict"] == whole.verdict
    assert straggler_to_balanced["verdict_reason"] == whole.verdict_reason
    assert straggler_to_balanced["overview"] == [c.model_dump(mode="json") for c in whole.overview]


def test_a_late_rank_appears_and_one_moves(runs: dict[str, NcclRun]) -> None:
    appears = compare(runs["balanced"].path, runs["straggler"].path, REQUEST)
    (key,) = _rank_keys(appears)
    t = runs["straggler"].truth
    assert key["sentence"].startswith(f"Rank {t.straggler_rank} (pid {t.straggler_pid}) is now late at the GPU "
                                      "collectives (no rank was late in BEFORE)")
    assert "late arrivals follow more compute" in key["sentence"]
    waiting = sorted(r for r in range(t.rank_count) if r != t.straggler_rank)
    assert f"ranks {', '.join(map(str, waiting[:-1]))} and {waiting[-1]} now wait " in key["sentence"]
    moved = compare(runs["straggler"].path, runs["straggler1"].path, REQUEST)
    t1 = runs["straggler1"].truth
    (key,) = _rank_keys(moved)   # the same total wait, but another rank is late: still a key difference
    assert key["delta_ns"] == sum(t1.collective_wait_ns.values()) - sum(t.collective_wait_ns.values()) == 0
    assert key["sentence"].startswith(f"Rank {t1.straggler_rank} (pid {t1.straggler_pid}) is now the late rank at "
                                      f"the GPU collectives (was rank {t.straggler_rank}, pid {t.straggler_pid})")
    assert not moved["within_noise"]


def test_a_rank_count_mismatch_is_said_not_guessed(runs: dict[str, NcclRun]) -> None:
    doc = compare(runs["balanced2"].path, runs["straggler"].path, REQUEST)
    rk = doc["ranks"]
    assert (rk["before_rank_count"], rk["after_rank_count"]) == (2, 4)
    assert any(n.startswith("rank counts differ (2 in BEFORE, 4 in AFTER)") and "ranks 2, 3 only in AFTER" in n
               for n in rk["notes"])
    assert any("rank counts differ" in w for w in doc["warnings"])
    only_after = [r for r in rk["ranks"] if r["rank"] >= 2]
    assert len(only_after) == 2 and all(r["before_pid"] is None for r in only_after)
    assert all(c["before"] is None and not c["significant"] for r in only_after for c in r["changes"])
    assert not _rank_keys(doc)        # totals over 2 and 4 ranks are not like for like


def test_a_summary_json_side_is_no_rank_set(runs: dict[str, NcclRun], tmp_path: Path) -> None:
    js = tmp_path / "base.json"
    js.write_text(load_capture(runs["straggler"].path).model_dump_json())
    doc = compare(js, runs["balanced"].path, REQUEST)
    rk = doc["ranks"]
    assert rk["before_rank_count"] is None and rk["after_rank_count"] == 4
    assert any(n.startswith("BEFORE is not a rank set") for n in rk["notes"])
    assert rk["gpu_collective_wait"]["before"] is None and not _rank_keys(doc)
    assert compare(js, js, REQUEST)["ranks"] is None


def test_the_renderings_show_the_ranks_block(straggler_to_balanced: dict[str, Any]) -> None:
    text = render_comparison(straggler_to_balanced, "text")
    md = render_comparison(straggler_to_balanced, "markdown")
    html = render_comparison(straggler_to_balanced, "html")
    assert "Ranks (matched by rank number; 4 in BEFORE, 4 in AFTER)" in text
    assert "late rank at the GPU collectives: before rank 2 (pid 41031)" in text
    assert "## Ranks" in md and "| AllReduce |" in md and "| GPU collectives | rank 2 (pid 41031)" in md
    assert 'id="rank-changes"' in html and 'id="gpu-collectives"' in html
    for out in (text, md, html):
        assert "No rank is late at the GPU collectives any more" in out


@needs_real_profile(MFU_BEFORE, MFU_AFTER)
def test_real_pair_mfu_before_after() -> None:
    doc = compare(MFU_BEFORE, MFU_AFTER, REQUEST)
    rk = doc["ranks"]
    assert (rk["gpu_late_before"]["pid"], rk["gpu_late_after"]["pid"]) == (145, 148)
    assert (rk["gpu_late_before"]["rank"], rk["gpu_late_after"]["rank"]) == (1, 0)
    assert any("rank 0: pid 144 → 148" in n for n in rk["notes"])
    (key,) = _rank_keys(doc)
    assert key["sentence"].startswith("Rank 0 (pid 148) is now the late rank at the GPU collectives (was rank 1, "
                                      "pid 145): rank 1 now waits ")
    assert "in the SendRecv collectives" in key["sentence"]
    for path, side in ((MFU_BEFORE, "before"), (MFU_AFTER, "after")):
        con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        try:
            nccl = dict(con.execute(
                "SELECT (globalPid >> 24) & 16777215, sum(end-start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                "JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%' GROUP BY 1").fetchall())
        finally:
            con.close()
        got = {r[f"{side}_pid"]: _metric(r, "communication time")[side] for r in rk["ranks"]}
        assert got == nccl
