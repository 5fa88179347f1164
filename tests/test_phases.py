"""Phase detection on generated profiles with planted phase boundaries (truth known exactly)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from testkit.phased import MS, T0, phased, write
from testkit.scenario import Kernel, Marker

from pa.metrics.model import ProfileSummary
from pa.metrics.phases import segment as sg
from pa.metrics.summarize import summarize

A = {"gemm_tn_kernel": 1.0}
B = {"stencil3d_kernel": 0.7, "reduce_sum_kernel": 0.3}
C = {"axpy_kernel": 0.5, "scale_kernel": 0.5}
MIX = {"gemm_tn_kernel": 0.4, "stencil3d_kernel": 0.3, "reduce_sum_kernel": 0.2, "axpy_kernel": 0.1}

PLANTED = {
    "three_mixes": [(150 * MS, A, 0.9), (130 * MS, B, 0.9), (120 * MS, C, 0.9)],
    "idle_stretch": [(150 * MS, MIX, 0.9), (60 * MS, MIX, 0.0), (190 * MS, MIX, 0.9)],
    "utilisation_step": [(150 * MS, MIX, 0.3), (250 * MS, MIX, 0.95)],
    "four_mixes_uneven": [(40 * MS, B, 0.8), (200 * MS, A, 0.9), (30 * MS, C, 0.9), (130 * MS, B, 0.9)],
}


def _summary(tmp_path: Path, phases: list, seed: int = 0, **kw: object) -> tuple[ProfileSummary, list[int]]:
    scen, bounds = phased(phases, seed=seed, **kw)  # type: ignore[arg-type]
    return summarize(write(scen, tmp_path / "p.sqlite")), bounds


def test_clipped_time_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    s = rng.integers(0, 1000, 300)
    e = s + rng.integers(0, 200, 300)
    edges = np.array([0, 7, 100, 333, 334, 800, 1300])
    got = sg.clipped_time(s, e, edges)
    want = [sum(max(0, min(b, hi) - max(a, lo)) for a, b in zip(s.tolist(), e.tolist(), strict=True))
            for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True)]
    assert got.tolist() == want


def test_js_divergence_bounds() -> None:
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    q = np.array([[0.0, 1.0], [0.5, 0.5]])
    js = sg.js_divergence(p, q)
    assert js[0] == pytest.approx(np.log(2))
    assert js[1] == pytest.approx(0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_boundaries_found_within_one_window(tmp_path: Path, name: str, seed: int) -> None:
    s, planted = _summary(tmp_path, PLANTED[name], seed)
    assert s.phases is not None
    window = s.span_ns / sg.DEFAULT_WINDOWS
    found = [T0 + p.start_ns for p in s.phases[1:]]
    assert len(found) == len(planted), (name, [f // MS for f in found], [b // MS for b in planted])
    for f, b in zip(found, planted, strict=True):
        assert abs(f - b) <= window, (name, f, b, window)
    assert all(p.source == "kernel_mix" for p in s.phases)


@pytest.mark.parametrize("seed", range(5))
def test_no_spurious_phase_on_stationary_profile(tmp_path: Path, seed: int) -> None:
    s, _ = _summary(tmp_path, [(400 * MS, MIX, 0.85)], seed)
    assert s.phases is not None and len(s.phases) == 1
    assert s.phases[0].source == "single"
    assert s.phases[0].label == "gemm_tn_kernel"


def test_phases_tile_the_span_and_conserve_time(tmp_path: Path) -> None:
    s, _ = _summary(tmp_path, PLANTED["three_mixes"])
    assert s.phases is not None
    assert s.phases[0].start_ns == 0
    assert s.phases[-1].end_ns == s.span_ns            # the last window is included
    for a, b in zip(s.phases, s.phases[1:], strict=False):
        assert a.end_ns == b.start_ns
    assert sum(p.kernel_time_ns for p in s.phases) == s.gpu.kernel_time_ns
    assert sum(p.kernel_count for p in s.phases) == s.gpu.kernel_count
    assert sum(p.busy_ns for p in s.phases) == s.gpu.busy_ns
    assert [p.label for p in s.phases] == ["gemm_tn_kernel", "stencil3d_kernel", "axpy_kernel"] or \
        [p.label for p in s.phases][:2] == ["gemm_tn_kernel", "stencil3d_kernel"]


def test_straddling_kernel_is_clipped_to_each_phase(tmp_path: Path) -> None:
    phases = [(100 * MS, A, 0.9), (100 * MS, C, 0.9)]
    scen, _ = phased(phases, markers=["solve", "output"])
    # one long kernel from 95 ms to 110 ms crosses the marker boundary at 100 ms
    scen.kernels = [k for k in scen.kernels if not (k.end > T0 + 95 * MS and k.start < T0 + 110 * MS)]
    scen.kernels.append(Kernel(4242, 0, 7, T0 + 95 * MS, T0 + 110 * MS, "long_kernel"))
    s = summarize(write(scen, tmp_path / "p.sqlite"))
    assert s.phases is not None and [p.label for p in s.phases] == ["solve", "output"]
    assert s.phases[0].source == "markers"
    long0 = [k for k in s.phases[0].top_kernels if k.name == "long_kernel"]
    long1 = [k for k in s.phases[1].top_kernels if k.name == "long_kernel"]
    assert long0 and long0[0].time_ns == 5 * MS and long0[0].count == 1
    assert long1 and long1[0].time_ns == 10 * MS and long1[0].count == 0
    assert sum(p.kernel_time_ns for p in s.phases) == s.gpu.kernel_time_ns


def test_phase_shorter_than_one_window_is_absorbed(tmp_path: Path) -> None:
    # a 1 ms burst of another kernel in a 400 ms run: 128 windows of ~3 ms cannot resolve it
    phases = [(200 * MS, MIX, 0.85), (1 * MS, C, 1.0), (199 * MS, MIX, 0.85)]
    s, _ = _summary(tmp_path, phases)
    assert s.phases is not None and len(s.phases) == 1
    assert s.phases[0].kernel_time_ns == s.gpu.kernel_time_ns


def test_max_phases_one_disables_detection(tmp_path: Path) -> None:
    scen, _ = phased(PLANTED["three_mixes"])
    s = summarize(write(scen, tmp_path / "p.sqlite"), max_phases=1)
    assert s.phases is not None and len(s.phases) == 1
    assert s.phases[0].duration_ns == s.span_ns


def test_max_phases_caps_the_count(tmp_path: Path) -> None:
    scen, _ = phased(PLANTED["four_mixes_uneven"])
    s = summarize(write(scen, tmp_path / "p.sqlite"), max_phases=2)
    assert s.phases is not None and len(s.phases) == 2


def test_marker_phases_label_and_warmup(tmp_path: Path) -> None:
    phases = [(50 * MS, C, 0.3), (300 * MS, A, 0.9), (50 * MS, B, 0.9)]
    scen, planted = phased(phases, markers=["initialize", "timestep", "checkpoint"])
    # repeated iteration ranges nested inside "timestep" must not split it
    for i in range(10):
        t = T0 + 50 * MS + i * 30 * MS
        scen.markers.append(Marker(4242, 4242, t, t + 30 * MS, "iter"))
    s = summarize(write(scen, tmp_path / "p.sqlite"))
    assert s.phases is not None
    assert [p.label for p in s.phases] == ["initialize", "timestep", "checkpoint"]
    assert [T0 + p.start_ns for p in s.phases[1:]] == planted
    assert s.phases[0].warmup and not s.phases[1].warmup


def test_warmup_by_low_utilisation(tmp_path: Path) -> None:
    s, _ = _summary(tmp_path, PLANTED["utilisation_step"])
    assert s.phases is not None and len(s.phases) == 2
    assert s.phases[0].warmup and not s.phases[1].warmup


def test_idle_phase_is_labelled_idle(tmp_path: Path) -> None:
    s, _ = _summary(tmp_path, PLANTED["idle_stretch"])
    assert s.phases is not None
    assert s.phases[1].label == "idle"
    assert s.phases[1].largest_gap_ns >= 55 * MS
    assert len({p.label for p in s.phases}) == len(s.phases)   # labels unique


def test_summary_json_round_trip_keeps_phases(tmp_path: Path) -> None:
    s, _ = _summary(tmp_path, PLANTED["three_mixes"])
    back = ProfileSummary.model_validate_json(s.model_dump_json())
    assert back.phases == s.phases
