"""Marker name normalisation (pa/metrics/marker_names.py): the documented steps, the aggregation,
and a rule pack's `marker_names:` override."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit.nsys_writer import write_nsys
from testkit.scenario import Device, Kernel, Marker, Process, Scenario

from pa.errors import UserError
from pa.metrics.marker_names import DEFAULT_NAMING, RAW_NAMING, MarkerNaming
from pa.metrics.summarize import summarize
from pa.pipeline import AnalyzeRequest, analyze
from pa.rules.engine import load_ruleset

CASES = [
    ("aten::mm, seq = 1234, op_id = 77", "aten::mm"),
    ("aten::add_, op_id = 9", "aten::add_"),
    ("Iteration 57", "Iteration #"),
    ("step=12", "step=#"),
    ("epoch 3 step 100", "epoch # step #"),
    ("free 0x7f3a12c04000", "free 0x…"),
    ("0x12 small", "0x12 small"),          # too short for an address
    ("conv2d", "conv2d"),                  # a number inside a word is part of the name
    ("layer_3", "layer_3"),
    ("fp16 gemm", "fp16 gemm"),
    ("v1.2", "v1.2"),
]


@pytest.mark.parametrize(("raw", "want"), CASES)
def test_default_normalisation(raw: str, want: str) -> None:
    assert DEFAULT_NAMING.normalise(raw) == want
    assert RAW_NAMING.normalise(raw) == raw.rstrip()


def _profile(tmp_path: Path) -> Path:
    # 40 iterations "Iteration 0" .. "Iteration 39" of 1 ms around one kernel each, and PyTorch op ranges
    marks, kernels = [], []
    for i in range(40):
        t = 1_000_000 + i * 1_000_000
        marks.append(Marker(100, 100, t, t + 900_000, f"Iteration {i}"))
        marks.append(Marker(100, 100, t + 10_000, t + 20_000, f"aten::mm, seq = {i}, op_id = {1000 + i}"))
        kernels.append(Kernel(pid=100, device=0, stream=7, start=t + 100_000, end=t + 800_000, name="k"))
    scen = Scenario(name="m", description="hand-built", devices=[Device(id=0)],
                    processes=[Process(pid=100, name="app", threads={100: "main"})], kernels=kernels, markers=marks)
    write_nsys(scen, tmp_path / "m.sqlite")
    return tmp_path / "m.sqlite"


def test_ranges_that_differ_by_ids_aggregate_under_one_name(tmp_path: Path) -> None:
    s = summarize(_profile(tmp_path))
    assert s.markers is not None
    by = {m.name: m for m in s.markers.by_name}
    assert set(by) == {"Iteration #", "aten::mm"}
    assert (by["Iteration #"].count, by["Iteration #"].total_ns, by["Iteration #"].name_variants) == \
           (40, 40 * 900_000, 40)
    assert (by["aten::mm"].count, by["aten::mm"].total_ns, by["aten::mm"].max_depth) == (40, 40 * 10_000, 1)
    assert s.markers.merged_names == 39 + 39
    raw = summarize(_profile(tmp_path), marker_naming=RAW_NAMING)
    assert raw.markers is not None and len(raw.markers.by_name) == 80 and raw.markers.merged_names == 0


def test_a_rule_pack_sets_the_normalisation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("pack: site\ndescription: keep iteration numbers\nmarker_names:\n  number_words: false\n")
    rs = load_ruleset(site_packs=(site,))
    assert rs.marker_naming == MarkerNaming(number_words=False)
    s = summarize(_profile(tmp_path), marker_naming=rs.marker_naming)
    assert s.markers is not None
    assert {m.name for m in s.markers.by_name} == {f"Iteration {i}" for i in range(40)} | {"aten::mm"}
    # pa analyze hands the site pack's naming to Stage 1
    import pa.metrics.summarize as stage1

    seen: list[MarkerNaming] = []
    real = stage1.summarize
    monkeypatch.setattr(stage1, "summarize", lambda *a, **k: seen.append(k["marker_naming"]) or real(*a, **k))
    analyze([_profile(tmp_path)], AnalyzeRequest(site_packs=(site,)))
    assert seen == [MarkerNaming(number_words=False)]


def test_a_rule_pack_cannot_give_unknown_normalisation_keys(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("pack: site\ndescription: x\nmarker_names:\n  regex: '(a+)+$'\n")
    with pytest.raises(UserError, match="marker_names"):
        load_ruleset(site_packs=(site,))
