"""A degraded capture (host issued GPU work, no GPU records) is reported as "not captured", never 0."""

from __future__ import annotations

import json

from click.testing import CliRunner
from testkit import scenarios
from testkit.nsys_writer import write_nsys

from pa.cli import main


def test_report_key_metrics_are_null_not_zero_when_gpu_activity_was_not_captured(tmp_path):
    p = tmp_path / "degraded.sqlite"
    write_nsys(scenarios.launch_bound(), p, omit_tables=["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"])
    res = CliRunner().invoke(main, ["analyze", str(p), "--no-llm", "-f", "json"])
    assert res.exit_code == 0, res.output
    km = json.loads(res.stdout)["summary"]
    assert km["gpu_activity_captured"] is False
    assert all(km[k] is None for k in ("kernel_count", "kernel_time_ns", "gpu_busy_ns", "exposed_copy_ns"))
    text = CliRunner().invoke(main, ["analyze", str(p), "--no-llm", "-f", "text"]).output
    assert "not captured" in text and "0 launches" not in text


def test_report_marks_gpu_activity_captured_on_a_normal_profile(tmp_path):
    p = tmp_path / "ok.sqlite"
    scen = scenarios.launch_bound()
    write_nsys(scen, p)
    km = json.loads(CliRunner().invoke(main, ["analyze", str(p), "--no-llm", "-f", "json"]).stdout)["summary"]
    assert km["gpu_activity_captured"] is True and km["kernel_count"] == len(scen.kernels)
