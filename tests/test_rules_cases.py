"""Rule cases as data: tests/rule_cases/<RULE-ID>.yaml, run on generated profiles by one test.

A case expects the rule to be `fires` (with its `claim` kind, recoverable by default, and the
`runtime_fraction` range a planted truth allows), `silent`, `skipped`, `suppressed` (`by` another
rule) or `below_noise_floor`. It names either a single-profile `scenario` (testkit.scenarios,
in each of `formats`), a multi-rank `rank_set` (testkit.rank_sets kinds, 8 ranks, nsys): the rules
then run on the primary rank's summary with the cross-rank facts, as `pa analyze DIR` does; a
multi-process export `nccl_run` (testkit.nccl_runs kinds, in each of `formats`), its processes the
ranks as `pa analyze FILE` takes them; or a planted-phase profile
`phased` (testkit.phased.phased, nsys): a list of `[duration_ms, {kernel: weight}, busy]`
phases, with optional `markers` (one label per phase) and `seed`. A case may name the `phase` whose
outcome it checks (default: the rule fires in some phase / stays silent in every phase).

A case may instead state its input inline: `input` is a list of blocks of steps (launch, sync, host,
copy, memset, malloc, mpi, call, migrate; see testkit.facts), written in each of `formats`
(default nsys).

A case with `boundary: {param, metric}` (inline, a scenario or a rank set) is a threshold-boundary
check: the rule must fire with the param set exactly to the metric's value on that input and stay
silent with it set to the next float above; the metric is a derived metric's name or a summary
path. Every built-in rule has one, except the one whose threshold the check cannot reach
(test_every_rule_has_a_boundary_case says which and why).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from rocpd_ddl import needs_rocpd_ddl  # tests/ is on sys.path
from testkit.cache import ScenarioProfiles
from testkit.facts import scenario_from_facts
from testkit.nccl_runs import write_nccl_run
from testkit.nsys_writer import write_nsys
from testkit.phased import MS, phased, write
from testkit.rank_sets import KINDS, write_rank_set
from testkit.rocpd_writer import write_rocpd
from testkit.scenarios import ALL_SCENARIOS

from pa.metrics.model import ProfileSummary
from pa.metrics.summarize import summarize
from pa.pipeline import RunOptions, summarize_run
from pa.ranks import cross_rank, summarize_ranks
from pa.rules.engine import RuleSet, evaluate, load_ruleset
from pa.rules.expr import Scope, compile_expr
from pa.rules.expr import evaluate as evaluate_expr
from pa.rules.loader import builtin_pack_paths

CASE_DIR = Path(__file__).parent / "rule_cases"


def _cases() -> list[Any]:
    out = []
    for f in sorted(CASE_DIR.glob("*.yaml")):
        data = yaml.safe_load(f.read_text())
        assert data["rule"] == f.stem, f"{f.name}: rule id differs from the file name"
        for i, case in enumerate(data["cases"]):
            name = case.get("scenario") or (f"ranks:{case['rank_set']}" if "rank_set" in case
                                            else f"nccl:{case['nccl_run']}" if "nccl_run" in case
                                            else f"inline:{case.get('name', i)}" if "input" in case
                                            else f"phased:{case.get('name', i)}")
            for fmt in case.get("formats", ["nsys"]):
                out.append(pytest.param(data["rule"], case, fmt, id=f"{f.stem}-{i}-{name}-{fmt}",
                                        marks=[needs_rocpd_ddl] if fmt == "rocpd" else []))
    return out


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rule_case_profiles")


@pytest.fixture(scope="module")
def rank_facts(profiles: Path) -> Callable[[str], tuple[ProfileSummary, dict[str, Any]]]:
    """The primary rank's summary and the cross-rank facts of a generated 8-rank set, once per kind."""
    cache: dict[str, tuple[ProfileSummary, dict[str, Any]]] = {}

    def get(kind: str) -> tuple[ProfileSummary, dict[str, Any]]:
        if kind not in cache:
            folder = profiles / f"ranks-{kind}"
            write_rank_set(folder, kind)
            ranks = summarize_ranks([folder], workers=1)
            cr = cross_rank(ranks)
            cache[kind] = (next(r.summary for r in ranks.ranks if r.rank == cr.primary_rank), cr.facts())
        summary, facts = cache[kind]
        return summary.model_copy(deep=True), facts

    return get


@pytest.fixture(scope="module")
def nccl_facts(profiles: Path) -> Callable[[str, str], tuple[ProfileSummary, dict[str, Any]]]:
    """The primary rank's summary and the cross-rank facts of a generated multi-process NCCL/RCCL export
    (testkit.nccl_runs), through the pipeline as `pa analyze FILE` runs it: one rank per process."""
    cache: dict[tuple[str, str], tuple[ProfileSummary, dict[str, Any]]] = {}

    def get(kind: str, fmt: str) -> tuple[ProfileSummary, dict[str, Any]]:
        if (kind, fmt) not in cache:
            run = write_nccl_run(profiles / f"nccl-{kind}.{'db' if fmt == 'rocpd' else 'sqlite'}", kind, fmt=fmt)
            stage1 = summarize_run([run.path], options=RunOptions(workers=1))
            assert stage1.cross is not None, kind
            cache[(kind, fmt)] = (stage1.for_rules, stage1.cross.facts())
        summary, facts = cache[(kind, fmt)]
        return summary.model_copy(deep=True), facts

    return get


def _ruleset(tmp_path: Path, params: dict[str, Any]) -> RuleSet:
    """The built-in rules with `params` overridden through a site pack, as a site would."""
    if not params:
        return load_ruleset()
    pack = tmp_path / f"case-{len(list(tmp_path.glob('case-*.yaml')))}.yaml"
    pack.write_text(yaml.safe_dump({"pack": "case", "description": "test case params", "override_params": params}))
    return load_ruleset([pack])


def _check_boundary(rule_id: str, case: dict[str, Any], summary: Any, extra: dict[str, Any] | None,
                    tmp_path: Path) -> None:
    """The rule fires with its threshold param exactly at the input's metric and is silent just above it.

    Put the other way round: an input whose metric equals the threshold fires, one whose metric is the
    next float below it does not, so the rule compares that metric with that param by `>=`.
    """
    param, metric = case["boundary"]["param"], case["boundary"]["metric"]
    params = dict(case.get("params") or {})
    derived = evaluate(summary, _ruleset(tmp_path, params), extra_facts=extra).metrics
    # a derived metric by name, or a summary field by its path (summary.sync.cpu_blocked_pct_of_span)
    value = derived[metric] if metric in derived else \
        evaluate_expr(compile_expr(metric), Scope(names={}, roots={"summary": summary.model_dump(mode="python")}))
    assert isinstance(value, (int, float)) and value > 0, (metric, value)
    for threshold, want in ((value, "fired"), (math.nextafter(float(value), math.inf), "silent")):
        result = evaluate(summary, _ruleset(tmp_path, {**params, param: threshold}), extra_facts=extra)
        got = [o.status for o in result.outcomes if o.rule_id == rule_id]
        assert got == [want], f"{param} = {threshold!r} with {metric} = {value!r}: {got}, want {want}"


@pytest.mark.parametrize(("rule_id", "case", "fmt"), _cases())
def test_rule_case(rule_id: str, case: dict[str, Any], fmt: str, rank_facts: Any, nccl_facts: Any,
                   scenario_profiles: ScenarioProfiles, tmp_path: Path) -> None:
    rs = _ruleset(tmp_path, case.get("params") or {})
    extra = None
    if "rank_set" in case:
        assert case["rank_set"] in KINDS
        summary, extra = rank_facts(case["rank_set"])
    elif "nccl_run" in case:
        summary, extra = nccl_facts(case["nccl_run"], fmt)
    elif "input" in case:
        scen = scenario_from_facts(case["input"])
        if fmt == "nsys":
            summary = summarize(write_nsys(scen, tmp_path / "inline.sqlite"))
        else:  # rocprofv3 does not trace MPI; rocprof-sys does, as for the named scenarios
            flavour = "rocprof-sys" if scen.mpi_calls else "rocprofv3"
            summary = summarize(write_rocpd(scen, tmp_path / "inline.db", flavour=flavour))
    elif "phased" in case:
        phases = [(int(ms * MS), dict(mix), float(busy)) for ms, mix, busy in case["phased"]]
        scen, _ = phased(phases, seed=case.get("seed", 0), markers=case.get("markers"))
        summary = summarize(write(scen, tmp_path / "phased.sqlite"))
    else:
        assert case["scenario"] in ALL_SCENARIOS
        summary = scenario_profiles.summary(case["scenario"], fmt)
    if "boundary" in case:
        _check_boundary(rule_id, case, summary, extra, tmp_path)
        return
    result = evaluate(summary, rs, extra_facts=extra)
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


def test_every_rule_fires_in_a_case_and_is_silent_in_another() -> None:
    """Each built-in rule is shown firing and shown silent (its `when` false) by cases that run above.

    A threshold-boundary case counts as both: it checks the rule firing at its threshold and silent
    just below it.
    """
    seen: dict[str, set[str]] = {}
    for f in sorted(CASE_DIR.glob("*.yaml")):
        for case in yaml.safe_load(f.read_text())["cases"]:
            kinds = {"fires", "silent"} if "boundary" in case else {case["expect"]}
            seen.setdefault(f.stem, set()).update(kinds)
    rules = sorted(load_ruleset().rules)
    never_fires = [r for r in rules if "fires" not in seen.get(r, set())]
    never_silent = [r for r in rules if "silent" not in seen.get(r, set())]
    assert not never_fires, f"rules no case shows firing: {never_fires}"
    assert not never_silent, f"rules no case shows silent: {never_silent}"


def test_inline_and_boundary_cases_exist() -> None:
    """Cases state their input inline, and the main thresholds have boundary cases."""
    cases = [c for f in CASE_DIR.glob("*.yaml") for c in yaml.safe_load(f.read_text())["cases"]]
    assert sum("input" in c for c in cases) >= 10
    assert sum("boundary" in c for c in cases) >= 8


# Rules without a boundary case, and why: the check reads the threshold's metric back from the
# evaluation's derived metrics or the summary, which this condition does not compare with its param.
NO_BOUNDARY = {
    "GPU-PHASE-001": "evaluated per phase, with per-phase metrics",
    "CAP-NOGPU-001": "no threshold: it fires on the absence of any GPU work",
}


def test_every_rule_has_a_boundary_case():
    """A new rule gets a threshold-boundary case, or a reason here."""
    packs = [yaml.safe_load(f.read_text()) for f in CASE_DIR.glob("*.yaml")]
    with_boundary = {p["rule"] for p in packs if any("boundary" in c for c in p["cases"])}
    rule_ids = set(load_ruleset().rules)
    assert rule_ids - with_boundary == set(NO_BOUNDARY), sorted(rule_ids - with_boundary)
