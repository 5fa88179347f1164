"""`pa compare` on generated captures whose difference is planted (one phase made 2x faster)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import main
from engine.compare import compare
from engine.compare.diff import significant
from engine.metrics.model import ProfileSummary
from engine.metrics.summarize import summarize
from engine.phases.synth import MS, phased, write
from engine.rules.hypothesis import Hypothesis

A = {"gemm_tn_kernel": 1.0}
B = {"stencil3d_kernel": 0.7, "reduce_sum_kernel": 0.3}
C = {"axpy_kernel": 0.5, "scale_kernel": 0.5}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ProfileSummary, ProfileSummary]:
    d = tmp_path_factory.mktemp("cmp")
    sb, _ = phased([(150 * MS, A, 0.9), (130 * MS, B, 0.9), (120 * MS, C, 0.9)], seed=0)
    sa, _ = phased([(150 * MS, A, 0.9), (60 * MS, B, 0.9), (120 * MS, C, 0.9)], seed=0)
    pb, pa = write(sb, d / "before.sqlite"), write(sa, d / "after.sqlite")
    return pb, pa, summarize(pb), summarize(pa)


def test_noise_floor_formula() -> None:
    assert not significant(100, 101.9, 2.0)
    assert significant(100, 103, 2.0)
    assert not significant(0, 0, 2.0)


def test_identical_captures_recognised(pair: tuple) -> None:
    _, _, b, _ = pair
    c = compare(b, b)
    assert c.identical and c.within_noise
    assert c.key_differences == []
    assert c.narrative == ["The two captures are identical (same sha256); there is nothing to compare."]


def test_planted_speedup_is_the_key_difference(pair: tuple) -> None:
    _, _, b, a = pair
    c = compare(b, a)
    assert not c.identical and not c.within_noise
    assert c.mode == "per_phase" and "name" in c.mode_reason
    span = next(x for x in c.overview if x.metric == "span")
    assert span.delta == a.span_ns - b.span_ns == -70 * MS
    # ordered by absolute time change
    deltas = [abs(k.delta_ns) for k in c.key_differences]
    assert deltas == sorted(deltas, reverse=True)
    top = c.key_differences[0]
    assert top.phase == "stencil3d_kernel" and top.delta_ns < -60 * MS
    # the unchanged phase stays within the noise floor
    gemm = next(p for p in c.phases if p.phase == "gemm_tn_kernel")
    assert not next(x for x in gemm.changes if x.metric == "kernel time").significant
    # per-kernel changes by name, independent of the phase machinery
    st = next(k for k in c.kernels if k.name == "stencil3d_kernel")
    bk = next(k for k in b.kernels if k.name == "stencil3d_kernel")
    ak = next(k for k in a.kernels if k.name == "stencil3d_kernel")
    assert st.delta_ns == ak.total_ns - bk.total_ns and st.status == "changed"
    assert "faster by 70.000 ms" in c.narrative[0]


def test_new_and_vanished_kernels(pair: tuple) -> None:
    _, _, b, a = pair
    a2 = a.model_copy(deep=True)
    a2.kernels[0].name = "renamed_kernel"
    c = compare(b, a2)
    statuses = {k.name: k.status for k in c.kernels}
    assert statuses["renamed_kernel"] == "new"
    assert statuses[a.kernels[0].name] == "vanished"


def test_overall_mode_when_phases_do_not_align(pair: tuple) -> None:
    _, _, b, a = pair
    a2 = a.model_copy(deep=True)
    assert a2.phases is not None
    a2.phases = a2.phases[:2]
    for p in a2.phases:
        p.label += " x"
    c = compare(b, a2)
    assert c.mode == "overall" and c.phases == []


def _hyp(rule: str, pct: float) -> Hypothesis:
    return Hypothesis(id="H1", rule_id=rule, bottleneck_type="other", bucket="idle", title=rule, description="d",
                      evidence=[], suggestion="s", expected_impact="low", action_category="runtime_config",
                      runtime_fraction_pct=pct, confidence=0.5)


def test_hypothesis_changes(pair: tuple) -> None:
    _, _, b, a = pair
    c = compare(b, a, before_hypotheses=[_hyp("gone", 10), _hyp("less", 20), _hyp("same", 5)],
                after_hypotheses=[_hyp("less", 8), _hyp("same", 5), _hyp("new", 3)])
    assert c.hypotheses is not None
    assert {h.rule_id: h.status for h in c.hypotheses} == {
        "gone": "disappeared", "less": "shrank", "same": "unchanged", "new": "appeared"}
    assert any("gone disappeared" in s for s in c.narrative)


def test_narrative_is_deterministic(pair: tuple) -> None:
    _, _, b, a = pair
    assert compare(b, a).narrative == compare(b, a).narrative


def test_cli_compare_text_and_json(pair: tuple, tmp_path: Path) -> None:
    pb, pa, b, _ = pair
    runner = CliRunner()
    r = runner.invoke(main, ["compare", str(pb), str(pa)])
    assert r.exit_code == 0, r.output
    assert "Key differences" in r.output and "mode per_phase" in r.output
    summary_json = tmp_path / "before.json"
    summary_json.write_text(b.model_dump_json())
    r = runner.invoke(main, ["compare", str(summary_json), str(pa), "--json", "--no-rules"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["before"]["file_name"] == "before.sqlite" and data["hypotheses"] is None
    r = runner.invoke(main, ["compare", str(tmp_path / "nope.json"), str(pa)])
    assert r.exit_code == 2 and "pa: error" in r.output
