"""Rules scoped to a phase (`scope: phase`): one evaluation per phase, hypotheses carry the phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from testkit.phased import MS, phased, write

from pa.cli import main
from pa.metrics.summarize import summarize
from pa.rules.engine import evaluate, load_ruleset

BUSY = {"gemm_kernel": 1.0}
SPARSE = {"pack_kernel": 1.0}

PACK = {
    "pack": "phases",
    "description": "a phase-scoped site rule",
    # the built-in GPU-PHASE-001 and GPU-IDLE-001 own the same host-work idle time and would claim it
    # first (time has one owner)
    "disable": ["GPU-PHASE-001", "GPU-IDLE-001"],
    "hypotheses": [{
        "id": "SITE-PHASE-001",
        "title": "GPU mostly idle in phase {{ phase.label }}",
        "description": "A phase of the run leaves the GPU idle most of the time.",
        "scope": "phase",
        "when": "not phase.warmup and phase.utilization_pct < 50 and phase_idle_frac >= 0.1",
        "bottleneck_type": "other",
        "bucket": "idle",
        "runtime_fraction": "phase_idle_frac",
        "counterfactual": "the host work of the phase runs beside GPU work: all of the phase's idle time",
        "confidence": 0.5,
        "action_category": "code_optimization",
        "evidence": [{"text": "Phase {{ phase.label }}: GPU busy {{ phase.utilization_pct | pctv }} of "
                              "{{ phase.duration_ns | dur }}.",
                      "cite": ["phase.utilization_pct", "phase.idle_ns", "phase_idle_frac"]}],
        "suggestion": "Overlap the host work of phase {{ phase.label }} with GPU work.",
    }],
    "metrics": {"phase_idle_frac": {"expr": "clamp(safe_div(phase.idle_ns, summary.span_ns * device_count))",
                                    "unit": "fraction", "description": "idle of this phase over device time"}},
}


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("phase_scope")
    scen, _ = phased([(120 * MS, BUSY, 0.95), (100 * MS, SPARSE, 0.15), (120 * MS, BUSY, 0.95)], seed=3,
                     markers=["setup", "exchange", "compute"])
    return write(scen, d / "phased.sqlite")


@pytest.fixture()
def pack(tmp_path: Path) -> Path:
    p = tmp_path / "phases.yaml"
    p.write_text(yaml.safe_dump(PACK, sort_keys=False))
    return p


def test_phase_rule_fires_only_in_the_idle_phase(profile: Path, pack: Path) -> None:
    s = summarize(profile)
    assert s.phases is not None and [p.label for p in s.phases] == ["setup", "exchange", "compute"]
    res = evaluate(s, load_ruleset([pack]))
    outs = {o.phase: o.status for o in res.outcomes if o.rule_id == "SITE-PHASE-001"}
    assert outs == {"setup": "silent", "exchange": "fired", "compute": "silent"}
    (h,) = [h for h in res.hypotheses if h.rule_id == "SITE-PHASE-001"]
    assert h.phase == "exchange" and "exchange" in h.title
    idle = next(p for p in s.phases if p.label == "exchange").idle_ns
    assert h.runtime_fraction_pct == pytest.approx(100 * idle / s.span_ns, rel=1e-6)
    assert {v.name for v in h.evidence[0].values} >= {"phase.utilization_pct", "phase.idle_ns"}


def test_phase_rule_without_phases_is_skipped(profile: Path, pack: Path) -> None:
    s = summarize(profile).model_copy(update={"phases": None})
    res = evaluate(s, load_ruleset([pack]))
    o = next(o for o in res.outcomes if o.rule_id == "SITE-PHASE-001")
    assert o.status == "skipped" and "no phases" in (o.reason or "")


def test_report_carries_the_phase(profile: Path, pack: Path) -> None:
    r = CliRunner().invoke(main, ["analyze", str(profile), "--no-llm", "-f", "json", "--rules", str(pack)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    h = next(h for h in doc["hypotheses"] if h["rule_id"] == "SITE-PHASE-001")
    assert h["phase"] == "exchange"
    assert {o["phase"] for o in doc["rule_outcomes"] if o["rule_id"] == "SITE-PHASE-001"} == \
        {"setup", "exchange", "compute"}
    r = CliRunner().invoke(main, ["analyze", str(profile), "--no-llm", "--max-phases", "1", "-f", "json",
                                  "--rules", str(pack)])
    assert r.exit_code == 0, r.output
    assert all(h["rule_id"] != "SITE-PHASE-001" for h in json.loads(r.output)["hypotheses"])


def test_builtin_host_bound_phase_rule(profile: Path) -> None:
    """GPU-PHASE-001 (rules/phase.yaml) fires in the sparse marker phase only, with the phase's numbers."""
    s = summarize(profile)
    res = evaluate(s, load_ruleset())
    outs = {o.phase: o.status for o in res.outcomes if o.rule_id == "GPU-PHASE-001"}
    assert outs == {"setup": "silent", "exchange": "fired", "compute": "silent"}
    (h,) = [h for h in res.hypotheses if h.rule_id == "GPU-PHASE-001"]
    assert h.phase == "exchange" and h.bucket == "idle"
    ph = next(p for p in s.phases or [] if p.label == "exchange")
    values = {v.name: v.value for v in h.evidence[0].values}
    assert values["phase_util"] == pytest.approx(ph.utilization_pct / 100, rel=1e-6)
    assert values["phase_rest_util"] > 0.9 and h.runtime_fraction_pct is not None
    # the claim: idle beyond the rest of the run's rate, never more than the phase's own idle time
    assert 0 < h.runtime_fraction_pct <= 100 * ph.idle_ns / s.span_ns
