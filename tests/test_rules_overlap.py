"""One cause, one finding: the phase-level host-bound rule and the run-level idle rule must not both
claim the same host stalls."""

from __future__ import annotations

from testkit import scenarios
from testkit.nsys_writer import write_nsys

from pa.metrics.summarize import summarize
from pa.rules.engine import evaluate, load_ruleset


def test_host_bound_phase_suppresses_the_run_level_idle_finding(tmp_path):
    path = tmp_path / "example.sqlite"
    write_nsys(scenarios.example(), path)  # planted: an "io" phase in which the host writes checkpoints
    result = evaluate(summarize(path), load_ruleset())
    fired = {h.rule_id for h in result.hypotheses}
    assert "GPU-PHASE-001" in fired
    assert "GPU-IDLE-001" not in fired
    idle = [o for o in result.outcomes if o.rule_id == "GPU-IDLE-001"]
    assert idle and idle[0].status == "suppressed" and "GPU-PHASE-001" in (idle[0].reason or "")
    claimed_idle = sum(h.runtime_fraction_pct or 0 for h in result.hypotheses if h.bucket == "idle")
    assert claimed_idle <= 100 * result.buckets["idle"] / summarize(path).span_ns
