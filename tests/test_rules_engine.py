"""Rule engine on hand-built summaries: bounds, buckets, ranking, site packs, errors, provenance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from testkit.site_rules import site_rule as _site_rule

from pa.errors import UserError
from pa.metrics.model import (
    CopySummary,
    DeviceSummary,
    GpuTotals,
    LaunchSummary,
    ProfileInfo,
    ProfileSummary,
    SyncSummary,
)
from pa.paths import data_dir
from pa.rules.engine import evaluate, load_ruleset
from pa.rules.hypothesis import amdahl_bounds

SPAN = 1_000_000_000


def make_summary(vendor: str = "nvidia", busy: int = SPAN, kernel_busy: int = SPAN, exposed_copy: int = 0,
                 launches: int = 10, small: float = 0.0, launch_api: int = 1000, syncs: int = 1,
                 blocked: int = 0, idle_by_cause: dict[str, int] | None = None,
                 recoverable_by_cause: dict[str, int] | None = None,
                 critical_busy: int | None = None) -> ProfileSummary:
    """One GPU whose active window is the whole span; its idle time is owned by `idle_by_cause`
    (default: all of it host work, none of it recoverable) and the host waited on `critical_busy` of
    its busy time (default: all of it)."""
    idle = SPAN - busy
    by_cause = idle_by_cause if idle_by_cause is not None else ({"cpu_stall": idle} if idle else {})
    return ProfileSummary(
        pa_version="test",
        profile=ProfileInfo(file_name="p.sqlite", sha256="0" * 64, size_bytes=1,
                            format="nsys" if vendor == "nvidia" else "rocpd", vendor=vendor,
                            schema_version="1", query_set="nsys/test"),
        span_ns=SPAN,
        gpu=GpuTotals(device_count=1, kernel_count=launches, kernel_time_ns=kernel_busy, busy_ns=busy,
                      kernel_busy_ns=kernel_busy, exposed_copy_ns=exposed_copy, window_ns=SPAN,
                      idle_in_window_ns=idle, idle_by_cause=by_cause,
                      recoverable_by_cause=recoverable_by_cause or {}, first_operation_ns=0,
                      last_operation_ns=SPAN, critical_busy_ns=critical_busy if critical_busy is not None else busy),
        devices=[DeviceSummary(id=0, used=True, kernel_busy_ns=kernel_busy, busy_ns=busy)],
        idle_gaps=[], kernels=[], streams=[],
        copies=CopySummary(count=0, bytes=0, total_ns=exposed_copy, busy_ns=exposed_copy,
                           exposed_ns=exposed_copy, pageable_bytes=0, by_direction=[], by_kind=[]),
        sync=SyncSummary(cpu_blocked_ns=blocked, call_count=syncs, by_api=[]),
        launch=LaunchSummary(launch_count=launches, correlated_kernels=launches,
                             small_kernel_count=int(small * launches), small_kernel_fraction=small,
                             api_time_ns=launch_api, by_api=[]),
    )


def pack(tmp_path: Path, body: dict[str, Any], name: str = "site.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump({"pack": "site", "description": "test pack", **body}, sort_keys=False))
    return p


def launch_bound() -> ProfileSummary:
    # GPU busy 30 %, 1000 tiny kernels; the 70 % idle is in gaps spent inside launch calls, and the
    # gap analysis found 60 % of the span recoverable by removing them.
    return make_summary(busy=300_000_000, kernel_busy=300_000_000, launches=1000, small=0.9,
                        launch_api=600_000_000, idle_by_cause={"launch": 700_000_000},
                        recoverable_by_cause={"launch": 600_000_000})


def test_rulepack_schema_lists_the_one_vocabulary() -> None:
    # bottleneck types, buckets, action categories and claims are defined once, as Literals in
    # pa/rules/hypothesis.py; the hand-written rule-pack schema must list exactly those values
    from pa.rules.hypothesis import ACTION_CATEGORIES, BOTTLENECK_TYPES, BUCKETS, CLAIMS

    schema = json.loads((data_dir("schemas") / "rulepack.schema.json").read_text())
    found: dict[str, list[list[str]]] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, dict) and "enum" in value:
                    found.setdefault(key, []).append(value["enum"])
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    for key, values in (("bottleneck_type", BOTTLENECK_TYPES), ("bucket", BUCKETS),
                        ("action_category", ACTION_CATEGORIES), ("claim", CLAIMS)):
        assert found.get(key), f"rulepack schema has no enum for {key}"
        assert all(enum == list(values) for enum in found[key]), (key, found[key], values)


def test_builtin_packs_validate_against_schema() -> None:
    schema = json.loads((data_dir("schemas") / "rulepack.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    for p in sorted(data_dir("rules").glob("*.yaml")):
        jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(p.read_text()))


def test_fires_with_engine_computed_bounds_and_sources() -> None:
    res = evaluate(launch_bound(), load_ruleset())
    h = next(h for h in res.hypotheses if h.rule_id == "GPU-LAUNCH-001")
    assert h.id == "H1" and h.bottleneck_type == "cpu_launch_overhead"
    assert h.runtime_fraction_pct == pytest.approx(60.0)
    lo, up = amdahl_bounds(0.6)
    assert h.estimated_speedup_pct_lower == pytest.approx(lo)
    assert h.estimated_speedup_pct_upper == pytest.approx(up)
    assert h.expected_impact == "high"
    assert "CUDA Graphs" in h.suggestion
    sources = {v.source for e in h.evidence for v in e.values}
    assert "summary.launch.small_kernel_fraction" in sources and "metric:launch_recoverable_frac" in sources
    assert h.claim == "recoverable" and h.counterfactual and "launch calls go" in h.counterfactual
    assert "90.0 %" in h.evidence[0].text  # the text cites the number it rests on


def test_vendor_words_follow_the_profile() -> None:
    res = evaluate(launch_bound().model_copy(update={"profile": launch_bound().profile.model_copy(
        update={"vendor": "amd"})}), load_ruleset())
    h = next(h for h in res.hypotheses if h.rule_id == "GPU-LAUNCH-001")
    assert "HIP Graphs" in h.suggestion and "CUDA" not in h.suggestion


def test_healthy_summary_has_nothing_above_low() -> None:
    res = evaluate(make_summary(), load_ruleset())
    assert all(h.expected_impact == "low" for h in res.hypotheses)
    assert res.buckets["idle"] == 0 and res.buckets["compute"] == SPAN


def test_missing_relation_is_skipped_with_reason_not_silent() -> None:
    s = make_summary().model_copy(update={"sync": None, "mpi": None})
    res = evaluate(s, load_ruleset())
    status = {o.rule_id: o for o in res.outcomes}
    assert status["GPU-SYNC-001"].status == "skipped"
    assert "summary.sync" in (status["GPU-SYNC-001"].reason or "")
    assert status["MPI-TIME-001"].status == "skipped"
    assert {"rule GPU-SYNC-001", "rule MPI-TIME-001"} <= {k.what for k in res.skipped}


def test_site_pack_overrides_threshold_disables_and_adds(tmp_path: Path) -> None:
    s = launch_bound()
    # Raising the small-kernel threshold above 0.9 silences the launch rule.
    p1 = pack(tmp_path, {"override_params": {"small_kernel_min_fraction": 0.95}}, "strict.yaml")
    out = {o.rule_id: o.status for o in evaluate(s, load_ruleset([p1])).outcomes}
    assert out["GPU-LAUNCH-001"] == "silent"
    # Disabling by group, and adding a new rule with its own metric.
    p2 = pack(tmp_path, {
        "disable": ["launch"],
        "metrics": {"busy_share": {"expr": "summary.gpu.busy_ns / summary.span_ns", "unit": "fraction",
                                   "description": "busy over span"}},
        "hypotheses": [{
            "id": "SITE-BUSY-001", "title": "GPU under-used",
            "description": "The site wants GPUs busy > 50 %.",
            "when": "busy_share < 0.5", "bottleneck_type": "other", "bucket": "idle",
            "runtime_fraction": "1 - busy_share", "confidence": 0.5, "action_category": "runtime_config",
            "counterfactual": "the site packs more work on the GPU: all of its idle time",
            "evidence": [{"text": "busy {{ busy_share | pct }}", "cite": ["busy_share"]}],
            "suggestion": "pack more work per GPU"}]}, "site.yaml")
    rs = load_ruleset([p2])
    res = evaluate(s, rs)
    out = {o.rule_id: o.status for o in res.outcomes}
    assert out["GPU-LAUNCH-001"] == "disabled"
    site = next(h for h in res.hypotheses if h.rule_id == "SITE-BUSY-001")
    assert site.runtime_fraction_pct == pytest.approx(70.0)
    assert [p.path for p in res.packs][-1] == "site.yaml" and not res.packs[-1].builtin
    assert [p.order for p in res.packs] == list(range(len(res.packs)))
    assert all(len(p.sha256) == 64 for p in res.packs)
    assert res.packs[0].path.startswith("rules/")


def test_replace_needs_flag(tmp_path: Path) -> None:
    rule = yaml.safe_load((data_dir("rules") / "gpu.yaml").read_text())["hypotheses"][0]
    with pytest.raises(UserError, match=r"site.yaml: rule GPU-LAUNCH-001: field replace"):
        load_ruleset([pack(tmp_path, {"hypotheses": [rule]})])
    rule = {**rule, "replace": True, "confidence": 0.1}
    rs = load_ruleset([pack(tmp_path, {"hypotheses": [rule]})])
    assert rs.rules["GPU-LAUNCH-001"].confidence == 0.1 and rs.rules["GPU-LAUNCH-001"].pack == "site.yaml"


@pytest.mark.parametrize(("body", "match"), [
    ({"hypotheses": [{"id": "X-1", "title": "t"}]}, r"bad.yaml: rule X-1: field"),
    ({"metrics": {"m": {"expr": "__import__('os')", "description": "d"}}},
     r"bad.yaml: rule metric m: field expr"),
    ({"metrics": {"m": {"expr": "summary.nosuch.x", "description": "d"}}}, r"not a summary field"),
    ({"override_params": {"nosuch": 1}}, r"field override_params.nosuch"),
    ({"disable": ["NOPE-1"]}, r"field disable"),
    ({"metrics": {"m": {"expr": "typo_metric + 1", "description": "d"}}}, r"unknown name 'typo_metric'"),
])
def test_malformed_pack_names_file_rule_and_field(tmp_path: Path, body: dict[str, Any], match: str) -> None:
    with pytest.raises(UserError, match=match):
        load_ruleset([pack(tmp_path, body, "bad.yaml")])


def test_bad_template_is_a_load_error(tmp_path: Path) -> None:
    rule = yaml.safe_load((data_dir("rules") / "gpu.yaml").read_text())["hypotheses"][0]
    rule = {**rule, "id": "SITE-T-001", "suggestion": "{{ nosuch_name }}"}
    with pytest.raises(UserError, match=r"rule SITE-T-001: field suggestion: template uses unknown name"):
        load_ruleset([pack(tmp_path, {"hypotheses": [rule]})])


def test_fraction_outside_unit_interval_is_a_rule_error(tmp_path: Path) -> None:
    p = pack(tmp_path, {"hypotheses": [_site_rule("SITE-BAD-001", "1.5")]})
    res = evaluate(make_summary(), load_ruleset([p]))
    o = next(o for o in res.outcomes if o.rule_id == "SITE-BAD-001")
    assert o.status == "skipped" and "outside [0, 1]" in (o.reason or "")
    assert not any(h.rule_id == "SITE-BAD-001" for h in res.hypotheses)


def test_claims_capped_by_bucket_and_span(tmp_path: Path) -> None:
    # idle bucket is 70 % of the span; three rules claim 60 %, 50 % and 40 % of it.
    s = make_summary(busy=300_000_000, kernel_busy=300_000_000)
    p = pack(tmp_path, {"disable": ["gpu", "capture", "mpi"], "hypotheses": [
        _site_rule("SITE-A-001", "0.6", conf=0.9), _site_rule("SITE-B-001", "0.5", conf=0.8),
        _site_rule("SITE-C-001", "0.4", bucket="compute", conf=0.7)]})
    res = evaluate(s, load_ruleset([p]))
    fr = {h.rule_id: h.runtime_fraction_pct for h in res.hypotheses}
    assert fr["SITE-A-001"] == pytest.approx(60.0)
    assert fr["SITE-B-001"] == pytest.approx(10.0)       # what is left of the idle bucket
    assert fr["SITE-C-001"] == pytest.approx(30.0)       # compute bucket is 30 %
    assert sum(v or 0 for v in fr.values()) <= 100.0 + 1e-9
    b = next(h for h in res.hypotheses if h.rule_id == "SITE-B-001")
    assert "claim reduced" in b.evidence[-1].text


def test_ranking_is_deterministic_with_ties_by_rule_id(tmp_path: Path) -> None:
    s = make_summary(busy=0, kernel_busy=0)
    p = pack(tmp_path, {"disable": ["gpu", "capture", "mpi"], "hypotheses": [
        _site_rule("SITE-Z-001", "0.2"), _site_rule("SITE-A-001", "0.2"), _site_rule("SITE-M-001", "0.3")]})
    res = evaluate(s, load_ruleset([p]))
    assert [h.rule_id for h in res.hypotheses] == ["SITE-M-001", "SITE-A-001", "SITE-Z-001"]
    assert [h.id for h in res.hypotheses] == ["H1", "H2", "H3"]


def test_extra_facts_reach_rules_and_absent_ones_skip(tmp_path: Path) -> None:
    rule = _site_rule("SITE-RANK-001", "0.1", bucket="compute")  # the GPU is busy all span: compute time
    rule["when"] = "cross_rank.imbalance_pct > 20"
    p = pack(tmp_path, {"hypotheses": [rule]})
    rs = load_ruleset([p])
    skipped = next(o for o in evaluate(make_summary(), rs).outcomes if o.rule_id == "SITE-RANK-001")
    assert skipped.status == "skipped" and "cross_rank.imbalance_pct" in (skipped.reason or "")
    fired = evaluate(make_summary(), rs, {"cross_rank.imbalance_pct": 35.0})
    assert any(h.rule_id == "SITE-RANK-001" for h in fired.hypotheses)


def test_docs_list_every_rule() -> None:
    from pa.rules.docs import render_rule_table

    docs = (Path(__file__).parent.parent / "docs" / "rules.md").read_text()
    table = render_rule_table()
    for rid in load_ruleset().rules:
        assert rid in docs and rid in table
    assert table in docs, "docs/rules.md rule table is stale: regenerate with python -m pa.rules.docs"


def test_claim_below_noise_floor_is_an_outcome_not_a_finding(tmp_path: Path) -> None:
    s = make_summary(busy=300_000_000, kernel_busy=300_000_000)
    p = pack(tmp_path, {"disable": ["gpu", "capture", "mpi"], "hypotheses": [
        _site_rule("SITE-TINY-001", "0.004"), _site_rule("SITE-BIG-001", "0.3")]})
    rs = load_ruleset([p])
    floor = rs.params["noise_floor_fraction"].value
    assert 0.004 < floor < 0.3
    res = evaluate(s, rs)
    assert [h.rule_id for h in res.hypotheses] == ["SITE-BIG-001"]
    tiny = next(o for o in res.outcomes if o.rule_id == "SITE-TINY-001")
    assert tiny.status == "below_noise_floor" and "noise floor" in (tiny.reason or "")
    # the listed claims are what the report counts as claimed; the tiny one claims nothing
    assert res.claims["idle"] == 300_000_000 and sum(res.claims.values()) <= SPAN


def test_tiers_capture_before_small_gains_speculation_after(tmp_path: Path) -> None:
    s = make_summary(busy=300_000_000, kernel_busy=300_000_000)
    p = pack(tmp_path, {"disable": ["gpu", "capture", "mpi"], "hypotheses": [
        _site_rule("SITE-SPEC-001", None, claim="speculative", impact="high", conf=0.9),
        _site_rule("SITE-CAP-001", None, claim="none", impact="medium"),
        _site_rule("SITE-CAPLOW-001", None, claim="none", impact="low"),
        _site_rule("SITE-SMALL-001", "0.03", conf=0.9),
        _site_rule("SITE-MED-001", "0.10", conf=0.3),
        _site_rule("SITE-HIGH-001", "0.25", conf=0.3)]})
    res = evaluate(s, load_ruleset([p]))
    # demonstrated medium/high gains, then the capture caveat, then small gains, speculation, low caveats
    assert [h.rule_id for h in res.hypotheses] == ["SITE-HIGH-001", "SITE-MED-001", "SITE-CAP-001",
                                                   "SITE-SMALL-001", "SITE-SPEC-001", "SITE-CAPLOW-001"]
    spec = next(h for h in res.hypotheses if h.rule_id == "SITE-SPEC-001")
    assert spec.claim == "speculative" and spec.runtime_fraction_pct is None
    assert spec.estimated_speedup_pct_upper is None and spec.expected_impact == "high"


def test_recoverable_rule_with_unknown_fraction_reads_as_speculative(tmp_path: Path) -> None:
    rule = _site_rule("SITE-UNK-001", "summary.copies.pageable_share_pct / 100")  # null in make_summary
    res = evaluate(make_summary(), load_ruleset([pack(tmp_path, {"hypotheses": [rule]})]))
    h = next(h for h in res.hypotheses if h.rule_id == "SITE-UNK-001")
    assert h.claim == "speculative" and h.runtime_fraction_pct is None and h.estimated_speedup_pct_upper is None
    assert "cannot bound" in h.evidence[-1].text


@pytest.mark.parametrize(("change", "match"), [
    ({"counterfactual": None}, r"field counterfactual: a recoverable claim must state its counterfactual"),
    ({"runtime_fraction": None}, r"field runtime_fraction: a recoverable claim needs"),
    ({"claim": "speculative"}, r"field runtime_fraction: claim: speculative claims no time"),
    ({"claim": "none", "runtime_fraction": None}, r"field expected_impact: claim: none has no fraction"),
])
def test_claim_fields_are_checked_at_load(tmp_path: Path, change: dict[str, Any], match: str) -> None:
    rule = {k: v for k, v in {**_site_rule("SITE-C-001", "0.1"), **change}.items() if v is not None}
    if "runtime_fraction" in change and change["runtime_fraction"] is None:
        rule["runtime_fraction"] = None
    with pytest.raises(UserError, match=match):
        load_ruleset([pack(tmp_path, {"hypotheses": [rule]}, "bad.yaml")])


def test_compute_claims_only_from_busy_time_the_host_waited_on(tmp_path: Path) -> None:
    # GPU busy 60 %, but the host waited on only a third of it (the rest ended while it was launching):
    # a faster kernel shortens the run only there, so a compute claim is capped at 20 % of the span.
    s = make_summary(busy=600_000_000, kernel_busy=600_000_000, critical_busy=200_000_000)
    p = pack(tmp_path, {"disable": ["gpu", "capture", "mpi"], "hypotheses": [
        _site_rule("SITE-K-001", "0.5", bucket="compute")]})
    res = evaluate(s, load_ruleset([p]))
    assert res.buckets["compute"] == 200_000_000
    (h,) = [h for h in res.hypotheses if h.rule_id == "SITE-K-001"]
    assert h.runtime_fraction_pct == pytest.approx(20.0)
    assert "only 20.0% of the span is compute time that can shorten the run" in h.evidence[-1].text
