"""Accuracy targets of the built-in rules on planted scenarios (small version of benchmarks/accuracy.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from rocpd_ddl import needs_rocpd_ddl  # tests/ is on sys.path
from testkit.accuracy import rates, run
from testkit.cache import ScenarioProfiles

from pa.rules.engine import load_ruleset


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("accuracy")


def test_accuracy_targets_nsys(out_dir: Path, scenario_profiles: ScenarioProfiles) -> None:
    scores = run(out_dir, formats=("nsys",), summaries=scenario_profiles.summary)
    r = rates(scores)
    assert r["planted"] and r["planted"] >= 10
    misses = [(s.scenario, s.expected, s.ranked[:3]) for s in scores if s.expected and not s.hit_at_1]
    assert r["detection_at_1"] >= 0.9, misses
    assert r["detection_at_3"] == 1.0, misses
    assert r["false_positives_control"] == 0
    assert r["order_failures"] == 0


@needs_rocpd_ddl
def test_accuracy_targets_rocpd(out_dir: Path, scenario_profiles: ScenarioProfiles) -> None:
    scores = run(out_dir, formats=("rocpd",), summaries=scenario_profiles.summary)
    evaluable = scores
    r = rates(evaluable)
    misses = [(s.scenario, s.expected, s.ranked[:3]) for s in evaluable if s.expected and not s.hit_at_1]
    assert r["detection_at_1"] >= 0.9, misses
    assert r["detection_at_3"] == 1.0, misses
    assert r["false_positives_control"] == 0
    assert r["order_failures"] == 0


def test_site_example_in_docs_validates(tmp_path: Path) -> None:
    doc = (Path(__file__).parent.parent / "docs" / "rules.md").read_text()
    block = re.search(r"## Example site pack\n\n```yaml\n(.*?)```", doc, re.S)
    assert block
    p = tmp_path / "mysite.yaml"
    p.write_text(block.group(1))
    rs = load_ruleset([p])
    assert "SITE-ALLOC-001" in rs.rules and "CAP-WARMUP-001" in rs.disabled
    assert rs.params["idle_min_fraction"].value == 0.10
    assert yaml.safe_load(block.group(1))["pack"] == "mysite"
