"""Golden expert verdicts on the real profiles (tests/golden/*.yaml) against `pa analyze --no-llm`.

Each verdict is what a performance engineer concludes from the timeline (see tests/golden/README.md):
the acceptable first finding, the largest claim each rule may make, findings that must or must not
appear. Every report also passes the checks common to all: nothing below the noise floor is listed,
no share of the span exceeds 100 %, the claims fit in the span, gains are worded as speedup factors
and every bounded finding states its counterfactual.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import NSYS_PROFILES, missing_reason, real_nsys_profiles

from pa.rules.engine import load_ruleset

GOLDEN = Path(__file__).parent / "golden"
VERDICTS = sorted(GOLDEN.glob("*.yaml"))


@pytest.fixture(scope="module")
def reports(real_report: Any) -> dict[str, tuple[dict[str, Any], str]]:
    """The JSON and text reports of every real profile (`pa analyze --no-llm`), shared with test_report_cli."""
    return {p.name: (json.loads(real_report(p, "json")), real_report(p, "text")) for p in real_nsys_profiles()}


def _verdict(path: Path) -> dict[str, Any]:
    v = yaml.safe_load(path.read_text())
    assert v["profile"] == f"{path.stem}.sqlite", f"{path.name} names another profile"
    assert len(v.get("reading", "")) > 80, f"{path.name}: say what the engineer reads in the timeline"
    return v


def test_every_real_profile_has_a_verdict() -> None:
    profiles = real_nsys_profiles()
    if not profiles:
        pytest.skip(missing_reason(NSYS_PROFILES))
    missing = sorted({p.stem for p in profiles} - {v.stem for v in VERDICTS})
    assert not missing, f"real profiles without a golden verdict in tests/golden/: {missing}"


@pytest.mark.parametrize("verdict_file", VERDICTS, ids=lambda p: p.stem)
def test_golden_verdict(verdict_file: Path, reports: dict[str, tuple[dict[str, Any], str]]) -> None:
    v = _verdict(verdict_file)
    if v["profile"] not in reports:
        pytest.skip(missing_reason(NSYS_PROFILES / v["profile"]))
    doc, _ = reports[v["profile"]]
    hyps = doc["hypotheses"]
    listed = {h["rule_id"]: h for h in hyps}
    primary = v.get("primary", {})
    if primary:
        assert hyps, "no finding at all"
        h1 = hyps[0]
        if "rules" in primary:
            assert h1["rule_id"] in primary["rules"], (h1["rule_id"], h1["title"])
        if "types" in primary:
            assert h1["bottleneck_type"] in primary["types"], (h1["rule_id"], h1["bottleneck_type"])
        assert h1["rule_id"] not in primary.get("not_rules", []), h1["rule_id"]
        assert doc["headline"]["hypothesis_id"] == h1["id"], "the headline follows the ranking"
    for rid, cap in v.get("max_claim_pct", {}).items():
        if rid in listed and listed[rid]["runtime_fraction_pct"] is not None:
            assert listed[rid]["runtime_fraction_pct"] <= cap, (rid, listed[rid]["runtime_fraction_pct"])
    for rid, cap in v.get("max_speedup_pct", {}).items():
        if rid in listed and listed[rid]["estimated_speedup_pct_upper"] is not None:
            assert listed[rid]["estimated_speedup_pct_upper"] <= cap, (rid, listed[rid]["estimated_speedup_pct_upper"])
    for rid in v.get("must_appear", []):
        assert rid in listed, f"{rid} must be listed; listed: {sorted(listed)}"
    if v.get("must_appear_any"):
        assert set(v["must_appear_any"]) & set(listed), f"one of {v['must_appear_any']} must be listed"
    for rid in v.get("must_not_appear", []):
        assert rid not in listed, f"{rid} must not be listed: {listed[rid]['title']}"
    statuses = {o["rule_id"]: o["status"] for o in doc["rule_outcomes"]}
    for rid, bad in v.get("outcome_not", {}).items():
        assert statuses.get(rid) not in bad, (rid, statuses.get(rid))
    for name, want in v.get("key_metrics", {}).items():
        got = doc["summary"][name]
        if isinstance(want, list):
            assert got is not None and want[0] <= got <= want[1], (name, got)
        else:
            assert got == want, (name, got)


def test_common_invariants_on_every_real_profile(real_profile: Path,
                                                 reports: dict[str, tuple[dict[str, Any], str]]) -> None:
    doc, text = reports[real_profile.name]
    floor = 100 * load_ruleset().params["noise_floor_fraction"].value
    span = doc["summary"]["span_ns"]
    for h in doc["hypotheses"]:
        if h["claim"] == "recoverable":
            assert h["runtime_fraction_pct"] is not None and h["runtime_fraction_pct"] >= floor, h["rule_id"]
            assert h["counterfactual"], f"{h['rule_id']} claims time without stating its counterfactual"
        else:
            assert h["runtime_fraction_pct"] is None and h["estimated_speedup_pct_upper"] is None, h["rule_id"]
    assert sum(doc["time_claims_ns"].values()) <= span
    s = doc["summary"]
    for key in ("gpu_utilization_pct", "kernel_utilization_pct", "window_busy_pct", "outside_window_pct",
                "cpu_blocked_pct_of_span", "mpi_pct_of_span", "profiler_overhead_pct_of_span"):
        assert s[key] is None or 0 <= s[key] <= 100, (key, s[key])
    for d in s["devices"]:
        assert sum(d["idle_by_cause"].values()) == d["idle_in_window_ns"], d["id"]
    assert not re.search(r"gains? at most|\b0[–-]0 ?%", text), "gains are worded as speedup factors"
    assert "None" not in re.sub(r"\bNone of\b", "", text.split("Provenance")[0])
