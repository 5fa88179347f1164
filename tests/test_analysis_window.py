"""The analysis window (issue 24): findings are judged on the GPU's active window, not the capture.

Claims stay span-relative (runtime_fraction_pct, capped per bucket and by the span); impact, the
order within a tier and the noise floor use the claim's share of the analysis window (the GPU's
active window per device), and a capture caveat (group `capture`) ranks after every other finding.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from testkit.nsys_writer import write_nsys
from testkit.rocpd_writer import write_rocpd
from testkit.scenario import Scenario
from testkit.scenarios import K_GEMM, MS, T0, US, _Builder
from testkit.site_rules import site_rule as _rule

from pa.cli import main
from pa.metrics.model import DeviceSummary, GpuTotals, ProfileInfo, ProfileSummary, SyncSummary
from pa.rules.engine import evaluate, load_ruleset
from pa.rules.evaluate import _tier, analysis_window_ns, impact_level
from pa.rules.hypothesis import amdahl_bounds

SPAN = 1_000_000_000
WINDOW = 100_000_000          # the GPU works only in the last 10 % of the capture
BUSY = 60_000_000


def window_summary(devices: int = 1, window: int = WINDOW) -> ProfileSummary:
    """`devices` GPUs idle for the first 90 % of the span, then busy 60 % of their 100 ms window; the
    rest of the window (40 ms per GPU) is host work."""
    idle = (window - BUSY) * devices if window else 0
    return ProfileSummary(
        pa_version="test",
        profile=ProfileInfo(file_name="p.sqlite", sha256="0" * 64, size_bytes=1, format="nsys", vendor="nvidia",
                            schema_version="1", query_set="nsys/test"),
        span_ns=SPAN,
        gpu=GpuTotals(device_count=devices, kernel_count=10, kernel_time_ns=BUSY * devices, busy_ns=BUSY * devices,
                      kernel_busy_ns=BUSY * devices, compute_busy_ns=BUSY * devices, exposed_copy_ns=0,
                      window_ns=window * devices, idle_in_window_ns=idle,
                      leading_idle_ns=(SPAN - window) * devices, idle_by_cause={"cpu_stall": idle} if idle else {},
                      first_operation_ns=SPAN - window, last_operation_ns=SPAN, critical_busy_ns=BUSY * devices),
        devices=[DeviceSummary(id=i, used=True, kernel_busy_ns=BUSY, busy_ns=BUSY) for i in range(devices)],
        idle_gaps=[], kernels=[], streams=[],
        sync=SyncSummary(cpu_blocked_ns=0, call_count=1, by_api=[]),
    )


# the built-in capture rules, by id: disabling the group would disable the test's own caveat too
BUILTIN_CAPTURE = sorted(r.id for r in load_ruleset().rules.values() if "capture" in r.groups)


def _ruleset(tmp_path: Path, rules: list[dict[str, Any]]) -> Any:
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump({"pack": "site", "version": 1, "description": "test rules",
                                    "disable": ["gpu", "mpi", *BUILTIN_CAPTURE], "hypotheses": rules}))
    return load_ruleset([path])


@pytest.mark.parametrize(("devices", "window", "want"), [
    (1, WINDOW, WINDOW), (2, WINDOW, WINDOW),   # Σ over devices of their windows ÷ devices with GPU work
    (1, 0, SPAN),                               # no GPU operation: the span
])
def test_analysis_window_is_the_active_window_per_device(devices: int, window: int, want: int) -> None:
    assert analysis_window_ns(window_summary(devices, window)) == want


def test_impact_and_floor_are_measured_on_the_window(tmp_path: Path) -> None:
    rs = _ruleset(tmp_path, [_rule("SITE-BIG-001", "0.03"),      # 30 ms: 3 % of the span, 30 % of the window
                             _rule("SITE-MED-001", "0.005"),     # 5 ms: 0.5 % of the span, 5 % of the window
                             _rule("SITE-TINY-001", "0.0005")])  # 0.5 ms: 0.5 % of the window
    params = {name: p.value for name, p in rs.params.items()}
    floor = params["noise_floor_fraction"]
    assert floor > 0.0005 * SPAN / WINDOW and 0.005 < floor <= 0.005 * SPAN / WINDOW
    res = evaluate(window_summary(), rs)
    assert res.analysis_ns == WINDOW
    got = {h.rule_id: h for h in res.hypotheses}
    assert list(got) == ["SITE-BIG-001", "SITE-MED-001"]     # kept although 0.5 % of the span < the floor
    for rid, ns in (("SITE-BIG-001", 30_000_000), ("SITE-MED-001", 5_000_000)):
        h = got[rid]
        assert h.runtime_fraction_pct == pytest.approx(100 * ns / SPAN)          # the claim: span-relative
        assert h.window_fraction_pct == pytest.approx(100 * ns / WINDOW)
        lower, upper = amdahl_bounds(ns / WINDOW)
        assert (h.window_speedup_pct_lower, h.window_speedup_pct_upper) == (pytest.approx(lower),
                                                                             pytest.approx(upper))
        assert (h.estimated_speedup_pct_lower, h.estimated_speedup_pct_upper) == tuple(
            pytest.approx(b) for b in amdahl_bounds(ns / SPAN))
        assert h.expected_impact == impact_level(ns / WINDOW, params)
    assert got["SITE-BIG-001"].expected_impact == "high" and got["SITE-MED-001"].expected_impact == "medium"
    tiny = next(o for o in res.outcomes if o.rule_id == "SITE-TINY-001")
    assert tiny.status == "below_noise_floor"
    assert "0.50% of the GPU's active window" in (tiny.reason or "")
    assert res.claims["idle"] == 35_000_000


def test_capture_caveat_never_outranks_a_recoverable_finding(tmp_path: Path) -> None:
    rs = _ruleset(tmp_path, [
        _rule("SITE-CAP-001", None, claim="none", impact="high", conf=0.9, groups=["capture"]),
        _rule("SITE-NOTE-001", None, claim="none", impact="low"),
        _rule("SITE-SPEC-001", None, claim="speculative", impact="low"),
        _rule("SITE-SMALL-001", "0.0015", conf=0.1)])       # 1.5 % of the window: low impact
    res = evaluate(window_summary(), rs)
    order = [h.rule_id for h in res.hypotheses]
    assert order == ["SITE-SMALL-001", "SITE-SPEC-001", "SITE-NOTE-001", "SITE-CAP-001"]
    assert res.hypotheses[0].expected_impact == "low" and res.hypotheses[-1].expected_impact == "high"
    # alone, the caveat leads
    alone = evaluate(window_summary(), _ruleset(tmp_path, [_rule("SITE-CAP-001", None, claim="none",
                                                                 impact="medium", groups=["capture"])]))
    assert [h.rule_id for h in alone.hypotheses] == ["SITE-CAP-001"]
    # the tier function itself, over every impact: a capture caveat is after every other kind
    for impact in ("low", "medium", "high"):
        cap = _tier("none", impact, capture=True)
        assert all(cap > _tier(claim, other) for claim in ("recoverable", "speculative", "none")
                   for other in ("low", "medium", "high"))


def warmup_then_sync(gap_us: int = 60) -> Scenario:
    """~430 ms of start-up (context, allocations), then 50 steps of a 1 ms kernel, a stream sync and
    `gap_us` of host work: the sync round trips are ~6 % of the GPU's active window, < 1 % of the span."""
    b = _Builder("warmup_then_sync", "start-up, then a steady state with a sync after every launch")
    t = b.api(T0, 25 * MS, "free")
    for _ in range(40):
        t = b.api(t + 20 * US, 10 * MS, "malloc")
    for _ in range(50):
        t, _ = b.launch(t, 5 * US, 1 * MS, K_GEMM)
        t = b.sync(t + US, "stream_sync") + gap_us * US
    return b.done(["synchronization"], "sync round trips in a capture that is mostly start-up")


@pytest.mark.parametrize("fmt", ["nsys", "rocpd"])
def test_planted_window_fraction_and_ranking(tmp_path: Path, fmt: str) -> None:
    sc = warmup_then_sync()
    path = tmp_path / f"w.{fmt}.sqlite"
    if fmt == "nsys":
        write_nsys(sc, path)
    else:
        write_rocpd(sc, path, flavour="rocprofv3")
    r = CliRunner().invoke(main, ["analyze", str(path), "--no-llm", "-f", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    # the window from the scenario's own GPU operations: first start to last end per device, averaged
    ops = [(o.device, o.start, o.end) for o in (*sc.kernels, *sc.copies, *sc.memsets)]
    per_device = {d: max(e for dd, _, e in ops if dd == d) - min(s for dd, s, _ in ops if dd == d)
                  for d in {d for d, _, _ in ops}}
    window = sum(per_device.values()) / len(per_device)
    span = doc["summary"]["span_ns"]
    assert doc["summary"]["analysis_window_ns"] == pytest.approx(window, abs=1)
    assert window < 0.2 * span
    params = {name: p.value for name, p in load_ruleset().params.items()}
    recoverable = [h for h in doc["hypotheses"] if h["claim"] == "recoverable"]
    assert [h["rule_id"] for h in recoverable] == ["GPU-SYNC-001"]
    for h in recoverable:
        share = h["runtime_fraction_pct"] / 100 * span / window
        assert h["window_fraction_pct"] == pytest.approx(100 * share, rel=1e-6)
        assert h["expected_impact"] == impact_level(share, params)
        assert (h["window_speedup_pct_lower"], h["window_speedup_pct_upper"]) == tuple(
            pytest.approx(b) for b in amdahl_bounds(share))
    sync = recoverable[0]
    # below the noise floor of the span, above it (and medium impact) on the window
    assert sync["runtime_fraction_pct"] < 100 * params["noise_floor_fraction"]
    assert sync["expected_impact"] == "medium"
    # the warm-up caveat fires and ranks last; the headline leads with the steady-state finding
    assert doc["hypotheses"][0]["rule_id"] == "GPU-SYNC-001"
    assert doc["hypotheses"][-1]["rule_id"] == "CAP-WARMUP-001"
    assert doc["headline"]["text"].startswith("Primary bottleneck:")
    assert "of the GPU's active window (0.7" in doc["headline"]["text"]
