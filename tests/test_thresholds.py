"""Site-tunable analysis thresholds (pa/metrics/thresholds.py, rules/thresholds.yaml).

The summary's classifications (gap causes, warm-up phases, imbalance side, link measurements) read
their thresholds from rule-pack params, so a site pack's `override_params` must reach them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import needs_real_profile, real_nsys_profile

from pa.errors import UserError
from pa.metrics import intervals as iv
from pa.metrics.gaps import GAP_CAUSES, HostSets, classify_gaps
from pa.metrics.summarize import summarize
from pa.metrics.thresholds import DEFAULT_THRESHOLDS, Thresholds
from pa.paths import data_dir
from pa.rules.loader import load_ruleset

Z = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
MS = 1_000_000


def _site(tmp_path: Path, **overrides: object) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump({"pack": "site", "description": "test site",
                                    "override_params": overrides}))
    return path


def test_every_threshold_is_a_builtin_param_with_the_same_default() -> None:
    declared = yaml.safe_load((data_dir("rules") / "thresholds.yaml").read_text())["params"]
    fields = {f.name for f in dataclasses.fields(Thresholds)}
    assert set(declared) == fields
    for name in fields:
        assert declared[name]["value"] == getattr(DEFAULT_THRESHOLDS, name), name
        assert declared[name].get("unit") and declared[name].get("source"), name
    assert load_ruleset().thresholds == DEFAULT_THRESHOLDS


def test_every_threshold_is_documented_in_docs_rules() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "rules.md").read_text()
    for f in dataclasses.fields(Thresholds):
        assert f"`{f.name}`" in text, f"{f.name} has no entry in docs/rules.md"


def test_site_override_reaches_the_thresholds(tmp_path: Path) -> None:
    rs = load_ruleset(site_packs=(_site(tmp_path, host_work_min_ns=3 * MS, imbalance_side_min=0.3),))
    assert rs.thresholds.host_work_min_ns == 3 * MS
    assert rs.thresholds.imbalance_side_min == 0.3
    assert rs.thresholds.warmup_util_ratio == DEFAULT_THRESHOLDS.warmup_util_ratio   # untouched
    with pytest.raises(UserError, match="does not match"):
        load_ruleset(site_packs=(_site(tmp_path, host_work_min_ns="1ms"),))


def test_site_override_moves_a_gap_from_host_work_to_the_sync_round_trip(tmp_path: Path) -> None:
    # GPU busy [0, 10 ms) and [12 ms, 20 ms); the host waits in a sync until 10 ms + 10 ns, works on its
    # own, then launches at [12 ms - 10, 12 ms - 5). Its own work in the 2 ms gap, counted by hand:
    # (12 ms - 10) - (10 ms + 10) + (12 ms - (12 ms - 5)) = 2 ms - 15 ns. The 10 ms kernel before the gap
    # could hide the whole gap (a round trip), so only the host-work threshold decides the cause.
    busy = iv.merge(np.array([0, 12 * MS]), np.array([10 * MS, 20 * MS]))
    host = HostSets(**{k: Z for k in ("copy", "alloc", "mpi", "overhead")},
                    sync=iv.merge(np.array([9 * MS]), np.array([10 * MS + 10])),
                    launch=iv.merge(np.array([12 * MS - 10]), np.array([12 * MS - 5])))
    default = classify_gaps(0, busy, host, DEFAULT_THRESHOLDS.host_work_min_ns)
    assert [GAP_CAUSES[int(c)] for c in default.owner] == ["cpu_stall"]   # 2 ms - 15 ns >= 1 ms
    site = load_ruleset(site_packs=(_site(tmp_path, host_work_min_ns=2 * MS),)).thresholds
    tuned = classify_gaps(0, busy, host, site.host_work_min_ns)
    assert [GAP_CAUSES[int(c)] for c in tuned.owner] == ["sync"]          # 2 ms - 15 ns < 2 ms
    exact = classify_gaps(0, busy, host, 2 * MS - 15)                     # at the threshold: host work
    assert [GAP_CAUSES[int(c)] for c in exact.owner] == ["cpu_stall"]


CUDF = real_nsys_profile("nsys_legacy_cudf_2proc.sqlite")


@needs_real_profile(CUDF)
def test_site_override_moves_the_warmup_call_on_a_real_profile(tmp_path: Path) -> None:
    before = summarize(CUDF).phases
    assert before is not None and len(before) >= 2 and before[0].marker is None
    # the warm-up test by hand from the phases' own busy and idle time (one formula, written here)
    first = before[0].busy_ns / (before[0].busy_ns + before[0].idle_ns)
    per_dev = (before[0].busy_ns + before[0].idle_ns) / before[0].duration_ns
    rest = sum(p.busy_ns for p in before[1:]) / (sum(p.duration_ns for p in before[1:]) * per_dev)
    ratio = first / rest
    assert 0 < ratio < DEFAULT_THRESHOLDS.warmup_util_ratio and before[0].warmup
    # a site that calls warm-up only a first phase ten times less busy than the rest, below this one's
    site = load_ruleset(site_packs=(_site(tmp_path, warmup_util_ratio=ratio / 2),)).thresholds
    after = summarize(CUDF, thresholds=site).phases
    assert after is not None and not after[0].warmup
    assert [p.label for p in after] == [p.label for p in before]   # nothing else moved


def test_validate_does_not_call_a_threshold_override_useless(tmp_path: Path) -> None:
    # no rule expression names host_work_min_ns (the summary reads it), yet overriding it has effect
    from click.testing import CliRunner

    from pa.cli import main

    rs = load_ruleset()
    assert not any("host_work_min_ns" in r.when.names for r in rs.rules.values())
    r = CliRunner().invoke(main, ["rules", "validate", str(_site(tmp_path, host_work_min_ns=2 * MS))])
    assert r.exit_code == 0, r.output
    assert "0 warning(s)" in r.output and "no effect" not in r.output


@pytest.mark.parametrize(("name", "value", "says"), [
    ("phase_min_kernels_per_window", 0, "between 1 and inf"),     # would divide by zero
    ("phase_min_kernels_per_window", 2.5, "whole number"),
    ("marker_coverage_min", 1.5, "between 0 and 1"),
    ("host_work_min_ns", -1, "between 0 and inf"),
    ("imbalance_side_min", True, "finite number"),
    ("warmup_util_ratio", float("nan"), "finite number"),
])
def test_a_threshold_out_of_range_is_the_site_packs_error(tmp_path: Path, name: str, value: object,
                                                          says: str) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(f"pack: site\ndescription: test site\noverride_params:\n  {name}: "
                    f"{'.nan' if value != value else str(value).lower()}\n")
    with pytest.raises(UserError, match=f"site.yaml: field override_params.{name}: .*{says}"):
        load_ruleset(site_packs=(site,))


def test_every_threshold_has_a_range() -> None:
    from pa.metrics.thresholds import _RANGES, problem

    assert set(_RANGES) == {f.name for f in dataclasses.fields(Thresholds)}
    assert all(problem(f.name, getattr(DEFAULT_THRESHOLDS, f.name)) is None for f in dataclasses.fields(Thresholds))
