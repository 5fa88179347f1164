"""What a report may say: never 0 for what was not read, never ask to capture what the file holds,
never call a CPU-only capture degraded, and claims that add up within the span."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from testkit.accuracy import generate_profile
from testkit.nsys_writer import write_nsys
from testkit.scenario import Marker, Process, Scenario

from pa.cli import main


def analyze(path: Path, fmt: str = "json") -> str:
    r = CliRunner().invoke(main, ["analyze", str(path), "--no-llm", "-f", fmt])
    assert r.exit_code == 0, r.output
    return r.output


def test_copies_not_read_render_as_not_captured_not_zero(tmp_path: Path) -> None:
    src = generate_profile("sync_after_launch", "nsys", tmp_path)
    path = tmp_path / "no_copies.sqlite"
    path.write_bytes(src.read_bytes())
    with sqlite3.connect(path) as conn:              # our own generated file, not a user's profile
        conn.execute("DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY")
    doc = json.loads(analyze(path))
    assert doc["summary"]["exposed_copy_ns"] is None and doc["summary"]["copy_bytes"] is None
    text = analyze(path, "text")
    assert "exposed copy time    not captured" in text
    assert "memory copy activity" in text             # and the capture hint asks for it


def test_capture_next_never_asks_for_what_the_file_holds(tmp_path: Path) -> None:
    # rocpd records copies but not whether host memory was pageable: that analysis is skipped, yet the
    # copies are in the file, so "capture memory copy activity" would be wrong
    doc = json.loads(analyze(generate_profile("pageable_htod", "rocpd", tmp_path)))
    assert any(k["what"] == "copies.pageable_share" for k in doc["skipped"])
    assert not any("memory copy activity" in c for c in doc["next_captures"])
    # host-work gaps ask for CPU sampling, unless the export has it
    src = generate_profile("host_idle_gaps", "nsys", tmp_path)
    doc = json.loads(analyze(src))
    idle = next(h for h in doc["hypotheses"] if h["rule_id"] == "GPU-IDLE-001")
    assert "CPU sampling" in idle["next_capture"]
    sampled = tmp_path / "sampled.sqlite"
    sampled.write_bytes(src.read_bytes())
    with sqlite3.connect(sampled) as conn:
        conn.execute("CREATE TABLE COMPOSITE_EVENTS (id INTEGER PRIMARY KEY, start INTEGER NOT NULL, "
                     "cpu INTEGER, threadState INTEGER, globalTid INTEGER, cpuCycles INTEGER NOT NULL)")
        conn.execute("INSERT INTO COMPOSITE_EVENTS VALUES (1, 1000000000, 0, 1, ?, 0)", ((4242 << 24) | 4242,))
    doc = json.loads(analyze(sampled))
    idle = next(h for h in doc["hypotheses"] if h["rule_id"] == "GPU-IDLE-001")
    assert idle["next_capture"] is None
    assert not any("CPU sampling" in c for c in doc["next_captures"])


def test_cpu_only_capture_is_not_called_degraded(tmp_path: Path) -> None:
    scen = Scenario(name="cpu_only", description="markers only", devices=[], processes=[Process(7, "app", {7: "main"})])
    for i in range(5):
        scen.markers.append(Marker(7, 7, 1_000_000_000 + i * 10_000_000, 1_005_000_000 + i * 10_000_000, "step"))
    path = write_nsys(scen, tmp_path / "cpu.sqlite")
    doc = json.loads(analyze(path))
    assert doc["summary"]["gpu_activity_captured"] is False
    assert not doc["summary"]["host_issued_gpu_work"]
    text = analyze(path, "text")
    assert "the host issued GPU work" not in text
    assert "none in this capture" in text


@pytest.mark.parametrize("scenario", ["mixed_sync_and_idle", "mixed_launch_and_copies", "copies_not_overlapped"])
def test_claims_are_what_the_listed_findings_claim_and_fit_the_span(tmp_path: Path, scenario: str) -> None:
    doc = json.loads(analyze(generate_profile(scenario, "nsys", tmp_path)))
    span = doc["summary"]["span_ns"]
    claimed = sum(round(h["runtime_fraction_pct"] / 100 * span) for h in doc["hypotheses"]
                  if h["claim"] == "recoverable")
    assert abs(sum(doc["time_claims_ns"].values()) - claimed) <= len(doc["hypotheses"])
    assert sum(doc["time_claims_ns"].values()) <= span
    for bucket, ns in doc["time_claims_ns"].items():
        assert ns <= doc["time_buckets_ns"][bucket], bucket
    # the headline names the first finding in rank order and words the gain as a factor
    h1 = doc["hypotheses"][0]
    assert doc["headline"]["hypothesis_id"] == h1["id"]
    if h1["claim"] == "recoverable" and h1["expected_impact"] != "low":
        assert "faster (−" in doc["headline"]["text"] and "×" in doc["headline"]["text"]
