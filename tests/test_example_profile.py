"""`pa example`: the small product-side writer gives a readable profile whose planted causes fire."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from pa.cli import main


def _write(tmp_path: Path) -> Path:
    out = tmp_path / "demo.sqlite"
    result = CliRunner().invoke(main, ["example", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_example_lists_what_it_plants() -> None:
    result = CliRunner().invoke(main, ["example", "--list"])
    assert result.exit_code == 0
    assert result.output.startswith("example: ")
    assert "GPU-COPY-001" in result.output and "GPU-PHASE-001" in result.output


def test_example_unknown_scenario_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["example", str(tmp_path / "x.sqlite"), "--scenario", "nope"])
    assert result.exit_code == 2 and "unknown scenario 'nope'" in result.output
    assert not (tmp_path / "x.sqlite").exists()


def test_example_summary_matches_direct_sql(tmp_path: Path) -> None:
    out = _write(tmp_path)
    with sqlite3.connect(out) as conn:
        kernels, kernel_ns = conn.execute(
            "SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        copy_bytes, pageable = conn.execute(
            "SELECT sum(bytes), sum(bytes * (srcKind = 0 OR dstKind = 0)) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
        phases = [r[0] for r in conn.execute("SELECT text FROM NVTX_EVENTS ORDER BY start")]
    assert (kernels, copy_bytes, pageable) == (920, 4 * 48 * 2**20 + 3 * 32 * 2**20, copy_bytes)
    assert phases == ["init", "solve", "io"]
    result = CliRunner().invoke(main, ["summary", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["gpu"]["kernel_count"] == kernels
    assert summary["copies"]["bytes"] == copy_bytes
    assert summary["gpu"]["kernel_time_ns"] == kernel_ns
    assert summary["copies"]["pageable_share_pct"] == 100.0


def test_example_planted_causes_fire(tmp_path: Path) -> None:
    out = _write(tmp_path)
    result = CliRunner().invoke(main, ["analyze", str(out), "--no-llm", "-f", "json"])
    assert result.exit_code == 0, result.output
    fired = [(h["rule_id"], h["phase"]) for h in json.loads(result.output)["hypotheses"]]
    # the planted causes, then what the steady state shows besides them: kernels fill more than half of
    # the GPU's active window and stencil3d_kernel most of that (no time claimed)
    assert fired == [("GPU-COPY-001", None), ("GPU-PHASE-001", "io"), ("GPU-KERN-001", None)]


def test_example_ranks_writes_a_rank_set_with_a_planted_straggler(tmp_path: Path) -> None:
    """Issue 30.5: the README's multi-rank commands need a rank set to try: `pa example --ranks 4 run/`."""
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["example", "--ranks", "4", str(out) + "/"])
    assert r.exit_code == 0, r.output
    files = sorted(out.glob("report.*.sqlite"))
    assert [f.name for f in files] == [f"report.{i}.sqlite" for i in range(4)]
    stencil, calls = {}, {}
    for f in files:   # independent: what each file holds, by SQL
        with sqlite3.connect(f) as con:
            rank = con.execute("SELECT rank FROM MPI_RANKS").fetchone()[0]
            stencil[rank] = con.execute(
                "SELECT sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                "ON s.id = k.demangledName WHERE s.value = 'stencil3d_kernel'").fetchone()[0]
            calls[rank] = con.execute("SELECT count(*) FROM MPI_COLLECTIVES_EVENTS").fetchone()[0]
    assert sorted(stencil) == [0, 1, 2, 3] and set(calls.values()) == {20}
    slowest = max(stencil, key=lambda k: stencil[k])
    assert slowest == 2 and stencil[2] > 1.4 * max(v for k, v in stencil.items() if k != 2)
    r = CliRunner().invoke(main, ["summary", "--json", str(out)])
    doc = json.loads(r.stdout)
    assert doc["cross_rank"]["straggler_rank"] == 2 and doc["cross_rank"]["rank_count"] == 4
    assert {x["rank_source"] for x in doc["ranks"]} == {"mpi"}
    r = CliRunner().invoke(main, ["analyze", str(out), "--no-llm", "-f", "json"])
    assert json.loads(r.stdout)["hypotheses"][0]["rule_id"] == "MPI-IMB-002"


def test_example_ranks_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    for args in (["--ranks", "4", "--straggler", "9", str(tmp_path / "run")], ["--ranks", "4", str(tmp_path / "afile")],
                 ["--straggler", "1", str(tmp_path / "x.sqlite")], ["--ranks", "3", str(tmp_path / "no" / "run")]):
        r = CliRunner().invoke(main, ["example", *args])
        assert r.exit_code == 2 and "Traceback" not in r.output, (args, r.output)
