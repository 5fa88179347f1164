"""`pa compare` on generated captures whose difference is planted (one phase made 2x faster)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from testkit.phased import MS, phased, write

from pa.cli import main
from pa.compare import compare
from pa.compare.diff import significant
from pa.metrics.model import ProfileSummary
from pa.metrics.summarize import summarize
from pa.rules.hypothesis import Hypothesis

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
    assert c.narrative[0].startswith("Verdict: improvement.") and c.verdict == "improvement"
    assert "faster by 70 ms" in c.narrative[1]


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
    assert "Finding gone (gone) from BEFORE is gone in AFTER (was 10.0 % of the run)." in c.narrative
    assert "Finding new (new) appeared in AFTER (3.0 % of the run)." in c.narrative
    assert "Finding less (less) shrank: 20.0 % → 8.0 % of the run." in c.narrative
    # a speculative finding (no fraction) that appears is said just as plainly
    spec = _hyp("spec", 0).model_copy(update={"runtime_fraction_pct": None})
    c = compare(b, a, before_hypotheses=[], after_hypotheses=[spec])
    assert "Finding spec (spec) appeared in AFTER." in c.narrative
    from pa.compare.render import render_text

    lines = render_text(compare(b, a, before_hypotheses=[_hyp("gone", 10), _hyp("same", 5)],
                                after_hypotheses=[_hyp("same", 5), spec])).splitlines()
    # one finding per line, each said plainly
    assert any(ln.strip().startswith("disappeared  gone: gone (gone in AFTER; was 10.0 % of the run)") for ln in lines)
    assert any(ln.strip().startswith("appeared     spec: spec (appeared in AFTER)") for ln in lines)
    assert any(ln.strip().startswith("unchanged    same: same") for ln in lines)


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


# ---- rendering, schema and the LLM hook (issue 7) ------------------------------------------------

FORMATS = ["text", "markdown", "html", "json"]


def test_committed_compare_schema_matches_the_model() -> None:
    from pa.compare.schema import build_compare_schema
    from pa.paths import data_dir
    from pa.report.schema import dump_schema

    committed = (data_dir("schemas") / "compare.schema.json").read_text(encoding="utf-8")
    assert committed == dump_schema(build_compare_schema()), \
        "regenerate: pa schema compare > schemas/compare.schema.json"


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_compare_every_format_planted_change_first_nothing_below_noise(pair: tuple, fmt: str,
                                                                           tmp_path: Path) -> None:
    from pa.compare.schema import compare_schema_errors

    pb, pa, _, _ = pair
    out = tmp_path / "cmp"
    r = CliRunner().invoke(main, ["compare", str(pb), str(pa), "--no-rules", "--no-llm", "-f", fmt, "-o", str(out)])
    assert r.exit_code == 0, r.output
    ext = {"text": ".txt", "markdown": ".md", "html": ".html", "json": ".json"}[fmt]
    text = (tmp_path / f"cmp{ext}").read_text(encoding="utf-8")
    doc = json.loads(CliRunner().invoke(main, ["compare", str(pb), str(pa), "--no-rules", "--no-llm",
                                               "--json"]).output)
    assert compare_schema_errors(doc) == []
    keys = doc["key_differences"]
    # the planted change (phase B 130 ms -> 60 ms) is the first key difference
    assert keys[0]["phase"] == "stencil3d_kernel" and keys[0]["what"] == "duration"
    assert keys[0]["delta_ns"] == pytest.approx(-70 * MS, rel=0.05)
    # nothing below the noise floor is a key difference or a listed kernel
    floor = doc["noise_floor_pct"] / 100
    assert all(abs(k["delta_ns"]) > floor * max(k["before_ns"], k["after_ns"]) for k in keys)
    unchanged = [k["name"] for k in doc["kernels"] if k["status"] == "unchanged"]
    assert "gemm_tn_kernel" in unchanged
    if fmt != "json":
        for name in unchanged:
            assert name not in text, f"{name} is within the noise floor but appears in the {fmt} output"
        first = text.index("duration")
        assert "stencil3d_kernel" in text[first - 300:first + 300]
        assert "within noise" in text            # utilisation did not change
    if fmt == "html":
        assert text.startswith("<!DOCTYPE html>") and 'id="key-differences-chart"' in text
        assert text.count('class="bar bar-') == min(len(keys), 15)


def test_ungrounded_numbers() -> None:
    from pa.llm.compare import ungrounded

    doc = {"span": {"before": 400_000_000, "after": 330_000_000, "delta_pct": -17.5}}
    assert ungrounded("The span fell from 400 ms to 330 ms (-17.5 %), i.e. 70 ms.", doc) == ["70"]


def test_llm_explanation_is_checked_and_rendered(pair: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    import pa.llm.compare as llm_compare
    from pa.llm.model import LlmExplanation

    pb, pa, _, _ = pair
    calls: list[dict] = []

    def explain_comparison(doc: dict, options: dict | None = None) -> LlmExplanation:
        calls.append(doc)
        return LlmExplanation(text="Phase stencil3d_kernel got 54.8 % shorter; 12345 is invented.",
                              provider="fake", model="m1")

    monkeypatch.setattr(llm_compare, "explain_comparison", explain_comparison)
    r = CliRunner().invoke(main, ["compare", str(pb), str(pa), "--no-rules", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert len(calls) == 1 and calls[0]["key_differences"]
    assert doc["llm"]["ungrounded_numbers"] == ["12345"] and doc["llm_reason"] is None
    assert any("12345" in w for w in doc["warnings"])
    r = CliRunner().invoke(main, ["compare", str(pb), str(pa), "--no-rules", "-f", "markdown"])
    assert "## Explanation" in r.output and "Numbers not found in the comparison: 12345" in r.output
    r = CliRunner().invoke(main, ["compare", str(pb), str(pa), "--no-rules", "--no-llm", "--json"])
    assert json.loads(r.output)["llm"] is None and len(calls) == 2      # --no-llm: no call
