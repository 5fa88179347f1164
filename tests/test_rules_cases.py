"""Rule cases as data: tests/rule_cases/<RULE-ID>.yaml, run on generated profiles by one test.

A case expects the rule to be `fires` (with its `claim` kind, recoverable by default, and the
`runtime_fraction` range a planted truth allows), `silent`, `skipped`, `suppressed` (`by` another
rule) or `below_noise_floor`. It names either a single-profile `scenario` (testkit.scenarios,
in each of `formats`), a multi-rank `rank_set` (testkit.rank_sets kinds, 8 ranks, nsys): the rules
then run on the primary rank's summary with the cross-rank facts, as `pa analyze DIR` does; or a planted-phase profile
`phased` (testkit.phased.phased, nsys): a list of `[duration_ms, {kernel: weight}, busy]`
phases, with optional `markers` (one label per phase) and `seed`. A case may name the `phase` whose
outcome it checks (default: the rule fires in some phase / stays silent in every phase).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from rocpd_ddl import needs_rocpd_ddl  # tests/ is on sys.path
from testkit.accuracy import generate_profile
from testkit.phased import MS, phased, write
from testkit.rank_sets import KINDS, write_rank_set
from testkit.scenarios import ALL_SCENARIOS

from engine.metrics.summarize import summarize
from engine.ranks import cross_rank, summarize_ranks
from engine.rules.engine import evaluate, load_ruleset
from engine.rules.loader import builtin_pack_paths

CASE_DIR = Path(__file__).parent / "rule_cases"


def _cases() -> list[Any]:
    out = []
    for f in sorted(CASE_DIR.glob("*.yaml")):
        data = yaml.safe_load(f.read_text())
        assert data["rule"] == f.stem, f"{f.name}: rule id differs from the file name"
        for i, case in enumerate(data["cases"]):
            name = case.get("scenario") or (f"ranks:{case['rank_set']}" if "rank_set" in case
                                            else f"phased:{case.get('name', i)}")
            for fmt in case.get("formats", ["nsys"]):
                out.append(pytest.param(data["rule"], case, fmt, id=f"{f.stem}-{i}-{name}-{fmt}",
                                        marks=[needs_rocpd_ddl] if fmt == "rocpd" else []))
    return out


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rule_case_profiles")


@pytest.mark.parametrize(("rule_id", "case", "fmt"), _cases())
def test_rule_case(rule_id: str, case: dict[str, Any], fmt: str, profiles: Path, tmp_path: Path) -> None:
    site = []
    if case.get("params"):
        pack = tmp_path / "case.yaml"
        pack.write_text(yaml.safe_dump({"pack": "case", "description": "test case params",
                                        "override_params": case["params"]}))
        site.append(pack)
    rs = load_ruleset(site)
    if "rank_set" in case:
        assert case["rank_set"] in KINDS
        folder = profiles / f"ranks-{case['rank_set']}"
        if not folder.is_dir():
            write_rank_set(folder, case["rank_set"])
        ranks = summarize_ranks([folder], workers=1)
        cr = cross_rank(ranks)
        primary = next(r.summary for r in ranks.ranks if r.rank == cr.primary_rank)
        result = evaluate(primary, rs, extra_facts=cr.facts())
    elif "phased" in case:
        phases = [(int(ms * MS), dict(mix), float(busy)) for ms, mix, busy in case["phased"]]
        scen, _ = phased(phases, seed=case.get("seed", 0), markers=case.get("markers"))
        result = evaluate(summarize(write(scen, tmp_path / "phased.sqlite")), rs)
    else:
        assert case["scenario"] in ALL_SCENARIOS
        result = evaluate(summarize(generate_profile(case["scenario"], fmt, profiles)), rs)
    outcomes = [o for o in result.outcomes if o.rule_id == rule_id]
    hyps = [h for h in result.hypotheses if h.rule_id == rule_id]
    if "phase" in case:
        outcomes = [o for o in outcomes if o.phase == case["phase"]]
        hyps = [h for h in hyps if h.phase == case["phase"]]
        assert outcomes, f"no outcome of {rule_id} in phase {case['phase']!r}"
    outcome = next((o for o in outcomes if o.status == "fired"), outcomes[0])
    hyp = hyps[0] if hyps else None
    expect = case["expect"]
    if expect == "silent":
        assert all(o.status == "silent" for o in outcomes), (outcomes, hyp)
        assert hyp is None
    elif expect == "suppressed":
        assert outcome.status == "suppressed" and case["by"] in (outcome.reason or ""), outcome
        assert hyp is None
    elif expect == "below_noise_floor":
        assert outcome.status == "below_noise_floor", outcome
        assert hyp is None
    elif expect == "skipped":
        assert outcome.status == "skipped" and outcome.reason, outcome
        assert any(s.what == f"rule {rule_id}" for s in result.skipped)
    else:
        assert expect == "fires"
        assert outcome.status == "fired", outcome
        assert hyp is not None
        # the claim kind: recoverable (default) carries a fraction; speculative and none never do
        assert hyp.claim == case.get("claim", "recoverable"), hyp.claim
        if hyp.claim != "recoverable":
            assert hyp.runtime_fraction_pct is None and hyp.estimated_speedup_pct_upper is None
        if "runtime_fraction" in case:
            lo, hi = case["runtime_fraction"]
            frac = outcome.values["runtime_fraction"]
            assert frac is not None and lo <= frac <= hi, frac
        for name, (lo, hi) in case.get("values", {}).items():
            assert lo <= result.metrics[name] <= hi, (name, result.metrics[name])
        # Evidence cites numbers, and each cited value names its source.
        assert all(e.values for e in hyp.evidence[:1])
        assert any(ch.isdigit() for ch in hyp.evidence[0].text)
        assert all(v.source for e in hyp.evidence for v in e.values)
        if "title_contains" in case:
            assert case["title_contains"] in hyp.title, hyp.title


def test_every_builtin_rule_has_cases_and_description() -> None:
    rs = load_ruleset()
    assert builtin_pack_paths()
    for rid, rule in rs.rules.items():
        f = CASE_DIR / f"{rid}.yaml"
        assert f.is_file(), f"rule {rid} has no case file {f.name}"
        cases = yaml.safe_load(f.read_text())["cases"]
        assert cases, f"rule {rid} has no cases"
        assert len(rule.description.strip()) >= 20, f"rule {rid} has no description"
    for p in rs.params.values():
        assert p.description.strip(), f"param {p.name} has no description"
        if p.pack != "rules/core.yaml" or p.name.startswith("wave"):
            assert p.source, f"param {p.name} does not say where its value comes from"
    for m in rs.metrics.values():
        assert m.description.strip(), f"metric {m.name} has no description"
