"""No Python `None` ever reaches a reader: every planted scenario, every real profile and a rank set,
rendered as text, markdown and HTML (and `pa summary`), holds no word None."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import real_nsys_profiles
from testkit.accuracy import generate_profile
from testkit.cache import ScenarioProfiles
from testkit.rank_sets import write_rank_set
from testkit.scenarios import ALL_SCENARIOS

from pa.cli import main
from pa.pipeline import analyze as analyze_profiles
from pa.report.render import render

NONE = re.compile(r"\bNone\b")


def _check(paths: list[Path]) -> None:
    doc = analyze_profiles(paths)
    for fmt in ("text", "markdown", "html"):
        out = render(doc, fmt)
        hits = [out[max(0, m.start() - 60):m.end() + 20] for m in NONE.finditer(out)]
        assert not hits, f"{fmt} render of {paths[0].name} prints None: {hits[:3]}"


CASES = [(name, fmt) for name in sorted(ALL_SCENARIOS) for fmt in ALL_SCENARIOS[name]().expected.formats]


@pytest.mark.parametrize("scenario, fmt", CASES)
def test_no_none_in_any_scenario_render(scenario: str, fmt: str, scenario_profiles: ScenarioProfiles) -> None:
    path = scenario_profiles.path(scenario, fmt)  # written once per session, shared with the rule tests
    _check([path])
    r = CliRunner().invoke(main, ["summary", str(path)], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and not NONE.search(r.output), r.output


def test_no_none_in_comparison_renders(tmp_path: Path) -> None:
    before = generate_profile("sync_after_launch", "nsys", tmp_path)
    after = generate_profile("healthy", "rocpd", tmp_path)   # different app, vendor and GPU: every warning
    for fmt in ("text", "markdown", "html"):
        r = CliRunner().invoke(main, ["compare", str(before), str(after), "--no-llm", "-f", fmt])
        assert r.exit_code == 0, r.output
        assert "different" in r.output and not NONE.search(r.output), f"{fmt}: {r.output[:2000]}"


@pytest.mark.parametrize("profile", real_nsys_profiles(), ids=lambda p: p.name)
def test_no_none_in_real_profile_render(profile: Path) -> None:
    _check([profile])


def test_no_none_in_a_rank_set_render(tmp_path: Path) -> None:
    _check(write_rank_set(tmp_path / "ranks", ranks=4, straggler=2, iters=10))


def test_rank_chart_never_draws_busy_longer_than_the_span(tmp_path: Path) -> None:
    from pa.report.charts import rank_bars

    doc = analyze_profiles(write_rank_set(tmp_path / "ranks", ranks=3, straggler=1, iters=10))
    bars = rank_bars(doc)
    assert bars is not None and len(bars["rows"]) == 3
    for row in bars["rows"]:
        assert row["busy_w"] <= row["w"] and row["wait_w"] <= row["w"]
    # a rank of two GPUs busy 90 % each sums to 1.8 × its span: drawn per GPU, 0.9 of the bar
    fake = {"cross_rank": None, "ranks": [{"rank": 0, "span_ns": 100, "busy_ns": 180, "idle_ns": 20,
                                           "collective_wait_ns": 500, "utilization_pct": 90.0}]}
    row = rank_bars(fake)["rows"][0]  # type: ignore[index]
    assert row["devices"] == 2 and row["busy_w"] == pytest.approx(0.9 * row["w"], abs=0.01)
    assert row["wait_w"] == row["w"]
