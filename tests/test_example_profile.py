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
