"""`pa rules list|show|validate|explain`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from testkit.accuracy import generate_profile

from pa.cli import main


def test_list_show_validate(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["rules", "list"])
    assert r.exit_code == 0 and "GPU-SYNC-001" in r.output and "rules/gpu.yaml" in r.output
    r = CliRunner().invoke(main, ["rules", "show", "GPU-SYNC-001"])
    assert r.exit_code == 0 and "idle_min_fraction = 0.05" in r.output
    assert "# claim: recoverable" in r.output and "# counterfactual: The host stops blocking" in r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("pack: bad\ndescription: x\noverride_params: {nosuch: 1}\n")
    r = CliRunner().invoke(main, ["rules", "validate", str(bad)])
    assert r.exit_code == 2 and "bad.yaml" in r.output and "override_params.nosuch" in r.output
    good = tmp_path / "good.yaml"
    good.write_text("pack: good\ndescription: x\ndisable: [GPU-SYNC-001]\n")
    r = CliRunner().invoke(main, ["rules", "validate", str(good)])
    assert r.exit_code == 0 and "ok: good.yaml" in r.output


def test_explain(tmp_path: Path) -> None:
    prof = generate_profile("sync_after_launch", "nsys", tmp_path)
    r = CliRunner().invoke(main, ["rules", "explain", "GPU-SYNC-001", str(prof), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["status"] == "fired" and 0.25 <= data["inputs"]["sync_recoverable_frac"] <= 0.45
    r = CliRunner().invoke(main, ["rules", "explain", "GPU-COPY-001", str(prof)])
    assert (r.exit_code == 0 and "skipped" in r.output) or "silent" in r.output


def test_explain_never_prints_python_none(tmp_path: Path) -> None:
    """Issue 30.8: `pa rules explain` printed `straggler_delay_frac = None`; unknown reads null."""
    prof = generate_profile("sync_after_launch", "nsys", tmp_path)
    for rule in ("MPI-IMB-002", "GPU-COPY-001", "CAP-GPU-001"):
        r = CliRunner().invoke(main, ["rules", "explain", rule, str(prof)])
        assert r.exit_code == 0, r.output
        assert "None" not in r.output, r.output
    r = CliRunner().invoke(main, ["rules", "explain", "MPI-IMB-002", str(prof)])
    assert "cross_rank.straggler_rank = null (unknown on this profile)" in r.output
