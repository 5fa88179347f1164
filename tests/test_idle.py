"""The one definition of GPU idle time (pa/metrics/idle.py), checked by hand and where it is used."""

from __future__ import annotations

from pathlib import Path

from conftest import needs_real_profile, real_nsys_profile

from pa.metrics.idle import idle_ns, run_idle_ns
from pa.metrics.summarize import summarize


def test_idle_by_hand() -> None:
    assert idle_ns(100, 30) == 70
    assert idle_ns(100, 130, devices=2) == 70          # two devices: 200 of device time, 130 busy
    assert idle_ns(100, 120) == 0                      # never negative
    assert idle_ns(0, 0, devices=0) == 0


CLOVER = real_nsys_profile("nsys2024.5_cloverleaf_a100.sqlite")


@needs_real_profile(CLOVER)
def test_every_idle_figure_of_a_summary_follows_the_definition() -> None:
    s = summarize(Path(CLOVER))
    # whole span, devices with activity: start-up and tear-down included
    devices = max(s.gpu.device_count, 1)
    assert run_idle_ns(s) == s.span_ns * devices - s.gpu.busy_ns
    # the rules' figure: the active window only, so start-up and tear-down are the difference
    assert s.gpu.idle_in_window_ns + s.gpu.leading_idle_ns + s.gpu.trailing_idle_ns == run_idle_ns(s)
    for d in s.idle_gaps:
        assert d.idle_ns == d.window_ns - d.busy_ns
    for p in s.phases or []:
        assert p.idle_ns == p.duration_ns * devices - p.busy_ns
