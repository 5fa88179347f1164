"""Edges of the report: a copy rate above the link peak, several MPI processes in one export, and
the warm-up sentence on a run of several GPUs."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

from click.testing import CliRunner
from testkit import scenarios
from testkit.accuracy import generate_profile
from testkit.nsys_writer import write_nsys
from testkit.scenario import Device, Kernel, Marker, Process, Scenario

from pa.cli import main
from pa.metrics.summarize import summarize
from pa.pipeline import analyze as analyze_profiles
from pa.rules.engine import evaluate, load_ruleset

MS = 1_000_000


def test_copy_rate_above_the_link_peak_is_a_measurement_problem(tmp_path: Path) -> None:
    scen = scenarios.pageable_htod()
    # ten times the bytes in the same time: ~55 GB/s over a PCIe 4.0 x16 link of 31.5 GB/s
    scen.copies = [dataclasses.replace(c, bytes=c.bytes * 10) if c.direction == "HtoD" else c for c in scen.copies]
    path = write_nsys(scen, tmp_path / "fast.sqlite")
    with sqlite3.connect(path) as con:   # independent: the HtoD rate as written (copyKind 1 = HtoD)
        nb, ns = con.execute("SELECT sum(bytes), sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                             "WHERE copyKind = 1").fetchone()
    s = summarize(path)
    htod = next(c for c in s.copies.by_kind if c.direction == "HtoD")  # type: ignore[union-attr]
    assert htod.peak_bandwidth_bps is not None and nb / ns * 1e9 > 1.5 * htod.peak_bandwidth_bps
    assert any("above the assumed peak" in w and "measurement problem" in w for w in s.warnings)
    res = evaluate(s, load_ruleset())
    assert res.metrics["host_link_pct"] is None and res.metrics["host_link_above_peak"] is True
    h = next(h for h in res.hypotheses if h.rule_id == "GPU-COPY-003")
    text = " ".join(e.text for e in h.evidence)
    assert "measurement problem" in text and "% of the assumed host-link peak" not in text
    assert "the host link is unknown" not in text
    r = CliRunner().invoke(main, ["summary", str(path)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "above peak (measurement?)" in r.output
    assert f"{100 * htod.effective_bandwidth_bps / htod.peak_bandwidth_bps:.1f} %" not in r.output
    # the ordinary case still gives the share of peak
    normal = summarize(generate_profile("pageable_htod", "nsys", tmp_path))
    res = evaluate(normal, load_ruleset())
    h = next(h for h in res.hypotheses if h.rule_id == "GPU-COPY-003")
    assert "of the assumed host-link peak" in " ".join(e.text for e in h.evidence)
    assert res.metrics["host_link_above_peak"] is False


def test_an_unknown_link_peak_is_not_said_to_be_within_it(tmp_path: Path) -> None:
    """No peak known (the GPU is unnamed): above-peak is unknown (null, n/a), never a 0 that reads as 'within'."""
    path = generate_profile("pageable_htod", "nsys", tmp_path)
    with sqlite3.connect(path) as con:
        con.execute("DROP TABLE TARGET_INFO_GPU")
    s = summarize(path)
    assert all(c.peak_bandwidth_bps is None for c in s.copies.by_kind)  # type: ignore[union-attr]
    res = evaluate(s, load_ruleset())
    assert res.metrics["host_link_pct"] is None and res.metrics["host_link_above_peak"] is None


def test_several_mpi_processes_in_one_export_are_its_ranks(tmp_path: Path) -> None:
    """One export of an MPI job (every process in one file) is analysed as the job's rank set (issue 28)."""
    path = generate_profile("mpi_collectives", "nsys", tmp_path)
    with sqlite3.connect(path) as con:   # independent: each process's rank in the MPI table
        by_pid = dict(con.execute("SELECT (globalTid >> 24) & 16777215, rank FROM MPI_RANKS"))
    assert sorted(by_pid.values()) == [0, 1]
    doc = analyze_profiles([path])
    cr = doc["cross_rank"]
    assert cr["rank_count"] == 2 and cr["rank_source"] == "mpi"
    assert {r["pid"]: r["rank"] for r in cr["ranks"]} == by_pid
    assert not any("MPI processes" in w for w in doc["warnings"])   # no "export one file per rank" advice
    assert cr["straggler_rank"] is not None and cr["collective_instances"] > 0


def test_warmup_sentence_names_the_earliest_gpu_operation_over_all_devices(tmp_path: Path) -> None:
    t0, pid = 1_000_000_000, 77
    k = [Kernel(pid, 1, 7, t0 + 300 * MS + i * 2 * MS, t0 + 300 * MS + i * 2 * MS + MS, "k1", correlation_id=i + 1)
         for i in range(50)]
    k += [Kernel(pid, 0, 7, t0 + 800 * MS + i * 2 * MS, t0 + 800 * MS + i * 2 * MS + MS, "k0",
                 correlation_id=100 + i) for i in range(50)]
    scen = Scenario(name="two_gpus", description="GPU 1 starts at 300 ms, GPU 0 at 800 ms",
                    devices=[Device(id=0), Device(id=1)], processes=[Process(pid, "app", {pid: "main"})],
                    kernels=k, markers=[Marker(pid, pid, t0, t0 + 1000 * MS, "run")])
    path = write_nsys(scen, tmp_path / "two.sqlite")
    with sqlite3.connect(path) as con:
        first_kernel = con.execute("SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    s = summarize(path)
    assert s.span_start_ns == t0 and s.gpu.first_operation_ns == first_kernel - t0 == 300 * MS
    res = evaluate(s, load_ruleset())
    h = next(h for h in res.hypotheses if h.rule_id == "CAP-WARMUP-001")
    sentence = h.evidence[0].text
    assert "starts 300" in sentence and "ms into" in sentence, sentence
