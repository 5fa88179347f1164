"""The grounding check (pa.llm.grounding) and the engine's re-checks of an answer (pa.llm.output)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from grounding_battery import rates, run_battery

from pa.llm.grounding import claims_in, facts_for, facts_of, ungrounded, value_grounded
from pa.llm.output import LlmAnswer, Scope, apply_answer, basis_ns, hypothesis_facts
from pa.rules.hypothesis import Evidence, EvidenceValue, Hypothesis, amdahl_bounds


@pytest.fixture(scope="module")
def battery(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    return run_battery(tmp_path_factory.mktemp("battery"))


def test_battery_false_accepts_at_most_5_percent_and_true_numbers_pass(battery: list[Any]) -> None:
    r = rates(battery, lambda c: ungrounded(c.text, c.facts))
    assert r["false_claims"] > 500 and r["true_claims"] > 200
    assert set(r["by_family"]) == {"unit", "quantity", "near", "speedup", "random", "laundered", "scope"}
    assert r["false_accept_rate"] <= 0.05, r["accepted_false"]
    assert r["true_pass_rate"] >= 0.99, r["rejected_true"]
    for family in ("unit", "speedup", "laundered", "near", "scope"):
        assert r["by_family"][family] <= 0.02, (family, r["by_family"])


@pytest.mark.parametrize(("text", "ok"), [
    ("73.2 % of runtime", False),        # the kernel's 72.87 ns standard deviation is a duration
    ("72.9 ns", True),
    ("4.7× speedup", False),             # a 4.72 % share is not a speedup
    ("4.7 % of GPU time", True),
    ("36.2 % of the run", True), ("36 % of the run", True), ("36.8 % of the run", False),
    ("36.2 % of GPU time", False),       # a share of the run is not a share of GPU time
    ("up to 1.57× faster", True), ("a speedup of at most 56.7 %", True), ("1.6× faster", True),
    ("2.1× faster", False),
    ("1.2 s", True), ("1,234.6 ms", True), ("1.23 s", True), ("1.25 s", False),
    ("512 MB", True), ("488.3 MiB", True), ("0.48 GiB", True), ("600 MB", False),
    ("3,442 kernels", True), ("3.4 k kernels", True), ("3,443 kernels", False),
    ("12 streams", True),                # small integers are not checked
    ("−36.2 % time", True),              # a time reduction is the runtime fraction, sign ignored
])
def test_claims_are_typed_and_matched_at_their_precision(text: str, ok: bool) -> None:
    facts = (facts_for("kernels.std_ns", 72.87) + facts_for("kernels.share_of_gpu_time_pct", 4.72)
             + facts_for("runtime_fraction_pct", 36.2) + facts_for("estimated_speedup_pct_upper", 56.7)
             + facts_for("estimated_speedup_pct_lower", 22.1) + facts_for("total_ns", 1_234_567_890)
             + facts_for("copies.bytes", 512_000_000) + facts_for("gpu.kernel_count", 3442))
    assert (ungrounded(text, facts) == []) is ok, (text, [(c.kind, c.cls) for c in claims_in(text)])


def test_names_and_ids_are_not_claims() -> None:
    assert claims_in("H1, KERNEL_12 and sm80_xmma_gemm run on 3x3 tiles") == []
    assert [c.kind for c in claims_in("a 256x1x1 block")] == ["plain"]


def test_sql_result_columns_are_typed_by_their_names() -> None:
    facts = facts_of({"columns": ["total_ns", "busy_pct_of_span", "calls_count", "bytes"],
                      "rows": [[5_000_000, 12.5, 40, 1 << 20]]})
    assert ungrounded("5.0 ms, 12.5 % of the run, 40 calls, 1.0 MiB", facts) == []
    assert ungrounded("5.0 % of the run", facts) == ["5.0 %"]


def test_value_of_a_new_hypothesis_must_be_in_its_tool_call() -> None:
    facts = facts_of({"columns": ["total_ns", "n"], "rows": [[1_500_000, 12]]})
    assert value_grounded(1_500_000, "ns", "total_ns", facts)
    assert value_grounded(1.5, "ms", "time", facts)
    assert not value_grounded(1.5, "%", "share", facts)  # the right number with the wrong kind
    assert not value_grounded(1_600_000, "ns", "total_ns", facts)


# ---------------------------------------------------------------- apply_answer


def _summary() -> Any:
    """A minimal summary for apply_answer: a 1 s span, one device active all of it, two kernels."""
    from types import SimpleNamespace as NS

    return NS(span_ns=1_000_000_000, gpu=NS(device_count=1, window_ns=1_000_000_000, exposed_copy_ns=80_000_000,
                                            recoverable_by_cause={"cpu_stall": 300_000_000, "sync": 20_000_000}),
              markers=None, phases=None, sync=None, mpi=None, launch=None, overhead=None, idle_gaps=[],
              devices=[NS(used=True, exposed_copy_ns=80_000_000, kernel_only_ns=50_000_000)],
              copies=NS(by_kind=[NS(pinned_estimate_ns=10_000_000, total_ns=70_000_000),
                                 NS(pinned_estimate_ns=None, total_ns=10_000_000)]),
              kernels=[NS(name="gemm", short_name="gemm", total_ns=300_000_000),
                       NS(name="axpy", short_name="axpy", total_ns=50_000_000)])


def _hyp(hid: str, frac: float, bucket: str = "sync", value: float = 1234) -> Hypothesis:
    lo, hi = amdahl_bounds(frac / 100)
    return Hypothesis(id=hid, rule_id=f"r_{hid}", bottleneck_type="synchronization", bucket=bucket,  # type: ignore[arg-type]
                      title=hid, description="d", suggestion="s", expected_impact="low",
                      action_category="code_optimization", runtime_fraction_pct=frac, confidence=0.5,
                      estimated_speedup_pct_lower=lo, estimated_speedup_pct_upper=hi,
                      evidence=[Evidence(text="e", values=[EvidenceValue(name="blocked_ns", value=value, unit="ns",
                                                                         source="x")])])


def _new(**kw: Any) -> dict[str, Any]:
    base = {"title": "new", "bottleneck_type": "compute_bound", "bucket": "compute", "description": "d",
            "suggestion": "s", "action_category": "algorithm", "confidence": 0.9,
            "evidence": [{"text": "t", "values": [{"name": "total_ns", "value": 300_000_000, "unit": "ns",
                                                   "source": "c1"}]}]}
    return {**base, **kw}


def _apply(answer: dict[str, Any], tools: dict[str, list[Any]] | None = None,
           hyps: list[Hypothesis] | None = None, params: dict[str, Any] | None = None) -> tuple[Any, list[str]]:
    warnings: list[str] = []
    review = apply_answer(LlmAnswer.model_validate({"rank_changes": [], "refinements": [], "new_hypotheses": [],
                                                    "narrative": "n", **answer}),
                          hyps or [_hyp("H1", 10), _hyp("H2", 5, value=5678)],
                          Scope(context=[], tools=tools or {}), {"sync": 1_000_000_000, "compute": 400_000_000},
                          _summary(), warnings, params=params)
    return review, warnings


def test_moves_need_reasons_and_are_reported() -> None:
    review, warnings = _apply({"ranking": ["H2", "H1"]})
    assert [h.id for h in review.hypotheses] == ["H1", "H2"] and review.moves == []
    assert any("carries no reason" in w for w in warnings)
    review, warnings = _apply({"ranking": ["H2", "H1"], "rank_changes": [{"id": "H2", "reason": "H1 overlaps H2"}]})
    assert [h.id for h in review.hypotheses] == ["H2", "H1"] and review.engine_order == ["H1", "H2"]
    assert review.moves == [{"id": "H2", "engine_rank": 2, "llm_rank": 1, "reason": "H1 overlaps H2"}]


def test_refinements_are_checked_in_the_scope_of_their_finding_and_marked() -> None:
    review, warnings = _apply({"ranking": [], "refinements": [
        {"id": "H1", "description": "blocked for 1234 ns, 10 % of the run", "reason": "sharper"},
        {"id": "H2", "description": "blocked for 1234 ns", "reason": "H1's number"},   # not H2's fact
        {"id": "H2", "suggestion": "gain 73.5 %", "reason": "r", "confidence_delta": 0.9}]})
    h1, h2 = review.hypotheses
    assert h1.description == "blocked for 1234 ns, 10 % of the run"
    assert review.refined["H1"] == [{"part": "description", "original": "d", "reason": "sharper"}]
    assert h2.description == "d" and h2.suggestion == "s" and h2.confidence == pytest.approx(0.8)
    assert [p["part"] for p in review.refined["H2"]] == ["confidence"]
    assert sum("dropped" in w for w in warnings) == 2


def test_new_hypothesis_fraction_from_a_basis_the_engine_recomputes() -> None:
    tools = {"c1": facts_of({"columns": ["total_ns"], "rows": [[300_000_000]]})}
    review, _warnings = _apply({"ranking": [], "new_hypotheses": [
        _new(fraction_basis={"kind": "fact", "name": "gpu.recoverable_by_cause.cpu_stall"},
             runtime_fraction_pct=90)]}, tools)
    new = review.hypotheses[-1]
    assert new.source == "llm" and new.confidence == 0.6 and new.claim == "recoverable"
    assert new.runtime_fraction_pct == pytest.approx(30.0)  # 300 ms recoverable of the 1 s span, not the model's 90
    lo, hi = amdahl_bounds(0.3)
    assert (new.estimated_speedup_pct_lower, new.estimated_speedup_pct_upper) == (pytest.approx(lo), pytest.approx(hi))
    assert review.fraction_basis["L1"].startswith("gpu.recoverable_by_cause.cpu_stall") and review.speculative == []
    assert new.expected_impact == "high"    # 30 % >= the built-in impact_high_fraction (20 %)


def test_new_hypothesis_impact_uses_the_runs_params() -> None:
    # a site that calls only 40 % of the span high impact: the same 30 % claim is medium
    tools = {"c1": facts_of({"columns": ["total_ns"], "rows": [[300_000_000]]})}
    answer = {"ranking": [], "new_hypotheses": [
        _new(fraction_basis={"kind": "fact", "name": "gpu.recoverable_by_cause.cpu_stall"})]}
    review, _ = _apply(answer, tools, params={"impact_high_fraction": 0.4, "impact_medium_fraction": 0.05})
    assert review.hypotheses[-1].expected_impact == "medium"
    review, _ = _apply(answer, tools, params={"impact_high_fraction": 0.4, "impact_medium_fraction": 0.35})
    assert review.hypotheses[-1].expected_impact == "low"


def test_new_hypothesis_without_basis_is_speculative_with_no_bound() -> None:
    tools = {"c1": facts_of({"columns": ["total_ns"], "rows": [[300_000_000]]})}
    review, warnings = _apply({"ranking": [], "new_hypotheses": [_new(runtime_fraction_pct=40)]}, tools)
    new = review.hypotheses[-1]
    assert new.runtime_fraction_pct is None and new.estimated_speedup_pct_upper is None
    assert new.claim == "speculative"
    assert review.speculative == ["L1"] and any("ignored" in w for w in warnings)


@pytest.mark.parametrize(("tools", "values", "needle"), [
    ({}, [{"name": "total_ns", "value": 3e8, "unit": "ns", "source": "c1"}], "did not happen"),
    ({"c1": []}, [{"name": "total_ns", "value": 3e8, "unit": "ns", "source": "c1"}], "not measurements"),
    ({"c1": facts_of({"columns": ["n"], "rows": [[7]]})}, [{"name": "n", "value": 8, "source": "c1"}],
     "not measurements"),
])
def test_new_hypothesis_values_must_be_measurements_of_the_cited_call(tools: dict[str, Any], values: list[Any],
                                                                      needle: str) -> None:
    review, warnings = _apply({"ranking": [], "new_hypotheses": [_new(evidence=[{"text": "t", "values": values}])]},
                              tools)
    assert [h.id for h in review.hypotheses] == ["H1", "H2"] and any(needle in w for w in warnings)


def test_claims_per_bucket_stay_within_the_span() -> None:
    tools = {"c1": facts_of({"columns": ["total_ns"], "rows": [[300_000_000]]})}
    hyps = [_hyp("H1", 35, bucket="compute")]  # 350 ms of the 400 ms compute bucket already claimed
    review, warnings = _apply({"ranking": [], "new_hypotheses": [
        _new(fraction_basis={"kind": "fact", "name": "gpu.recoverable_by_cause.cpu_stall"})]}, tools, hyps)
    assert review.hypotheses[-1].runtime_fraction_pct == pytest.approx(5.0)
    assert any("claim reduced" in w for w in warnings)


def test_fraction_basis_kinds(tmp_path: Path) -> None:
    from pa.llm.output import FractionBasis

    # recoverable time only: what overlap, pinning or a gap cause's fix wins back, per device
    assert basis_ns(FractionBasis(name="copy_overlap"), _summary())[0] == 50_000_000   # min(80, 50) ms
    assert basis_ns(FractionBasis(name="pinning_saving"), _summary())[0] == 60_000_000  # 70 − 10, ≤ 80 exposed
    assert basis_ns(FractionBasis(name="gpu.recoverable_by_cause.sync"), _summary())[0] == 20_000_000
    assert basis_ns(FractionBasis(name="nope"), _summary())[0] is None
    # a kernel's whole time is not recoverable time: no such basis exists
    with pytest.raises(ValueError):
        FractionBasis.model_validate({"kind": "kernel", "name": "axpy"})


def test_hypothesis_facts_cover_evidence_fraction_and_bounds() -> None:
    facts = hypothesis_facts(_hyp("H1", 20))
    assert ungrounded("1234 ns, 20 % of the run, up to 1.25× faster, at most 25 % faster", facts) == []
