"""Hand-built inputs for the report tests: a small ProfileSummary and a RuleResult-like object.

Built by hand (not through summarize/evaluate) so the report layer is tested on its own, with
values chosen to exercise every section: two devices, gaps, a hostile kernel name, two findings.
No tests here; the other test_report*.py modules import these builders.
"""

from __future__ import annotations

from typing import Any

from pa.metrics.model import (
    DeviceGaps,
    DeviceSummary,
    Gap,
    GapBucket,
    GpuTotals,
    KernelStats,
    ProfileInfo,
    ProfileSummary,
    QueryFileRef,
    SkippedItem,
    SyncSummary,
)
from pa.report.assemble import RunInfo, build_report
from pa.report.model import Report
from pa.rules.evaluate import RuleOutcome, RuleResult
from pa.rules.hypothesis import Evidence, EvidenceValue, Hypothesis, amdahl_bounds
from pa.rules.loader import PackRef

SPAN = 1_000_000_000
HOSTILE = "k<script>alert(1)</script>|pipe"


def make_summary(file_name: str = "app.sqlite", span: int = SPAN, rank: int | None = None,
                 path: str | None = None) -> ProfileSummary:
    buckets = [GapBucket(label="<10 µs", lower_ns=0, upper_ns=10_000, count=40, total_ns=200_000),
               GapBucket(label="10 µs–1 ms", lower_ns=10_000, upper_ns=1_000_000, count=12, total_ns=3_000_000),
               GapBucket(label=">1ms", lower_ns=1_000_000, upper_ns=None, count=3, total_ns=90_000_000)]
    gaps = [DeviceGaps(device=d, window_ns=span - 150_000_000, busy_ns=600_000_000,
                       idle_ns=span - 150_000_000 - 600_000_000, gap_count=55, leading_idle_ns=100_000_000,
                       trailing_idle_ns=50_000_000, histogram=buckets,
                       largest=[Gap(device=d, start_ns=400_000_000, duration_ns=40_000_000,
                                    host_activity="sync")])
            for d in (0, 1)]
    return ProfileSummary(
        pa_version="0.1.0",
        profile=ProfileInfo(file_name=file_name, path=path, sha256="ab" * 32, size_bytes=1234, format="nsys",
                            vendor="nvidia", schema_version="3.13.2", query_set="nsys/3.13", rank=rank,
                            query_files=[QueryFileRef(relation="api_calls", path="nsys/base/api_calls.sql",
                                                      sha256="cd" * 32),
                                         QueryFileRef(relation="syncs", path="nsys/base/syncs.sql",
                                                      sha256="ef" * 32),
                                         QueryFileRef(relation="kernels", path="nsys/base/kernels.sql",
                                                      sha256="01" * 32)]),
        span_ns=span,
        gpu=GpuTotals(device_count=2, kernel_count=100, kernel_time_ns=1_300_000_000, busy_ns=1_200_000_000,
                      utilization_pct=60.0),
        devices=[DeviceSummary(id=d, name="A100", used=True, kernel_count=50, busy_ns=600_000_000,
                               utilization_pct=60.0) for d in (0, 1)],
        idle_gaps=gaps,
        kernels=[KernelStats(name=HOSTILE, count=100, total_ns=1_300_000_000, mean_ns=13_000_000.0,
                             min_ns=1, max_ns=20_000_000, std_ns=1.0, share_of_gpu_time_pct=100.0)],
        sync=SyncSummary(cpu_blocked_ns=300_000_000, cpu_blocked_pct_of_span=30.0, call_count=10, by_api=[]),
        streams=[],
        skipped=[SkippedItem(what="markers", reason="table NVTX_EVENTS absent")],
        warnings=["capture ended while ranges were open"],
    )


def make_hypothesis(hid: str, fraction: float | None, title: str = "GPU idle while the CPU synchronises",
                    next_capture: str | None = None) -> Hypothesis:
    lower, upper = amdahl_bounds(fraction)
    return Hypothesis(
        id=hid, rule_id=f"rule.{hid.lower()}", bottleneck_type="synchronization", bucket="sync",
        title=title, description="The host blocks in cudaDeviceSynchronize after every launch.",
        evidence=[Evidence(text="CPU blocked 30% of the span in sync calls", values=[
            EvidenceValue(name="sync.cpu_blocked_ns", value=300_000_000, unit="ns",
                          source="summary.sync.cpu_blocked_ns"),
            EvidenceValue(name="sync_share", value=0.3, unit=None, source="metric:sync_share")])],
        suggestion="Remove the synchronisation after each launch; use events.",
        expected_impact="high", action_category="code_optimization",
        runtime_fraction_pct=None if fraction is None else fraction * 100, estimated_speedup_pct_lower=lower,
        estimated_speedup_pct_upper=upper, confidence=0.8, next_capture=next_capture)


def make_rule_result(site_pack_path: str = "/home/someone/site.yaml") -> RuleResult:
    return RuleResult(
        hypotheses=[make_hypothesis("H1", 0.3, next_capture="nsys --trace=cuda,osrt"),
                    make_hypothesis("H2", 0.1, title="Small kernels")],
        skipped=[SkippedItem(what="rule mpi.imbalance", reason="needs mpi, not captured")],
        packs=[PackRef("builtin", "core.yaml", "12" * 32, 0, True),
               PackRef("site", site_pack_path, "34" * 32, 1, False)],
        outcomes=[RuleOutcome("rule.h1", "fired", None, {}), RuleOutcome("rule.quiet", "silent", None, {})],
        metrics={}, buckets={"sync": 300_000_000, "idle": 100_000_000})


def make_report(n_profiles: int = 1, keep_paths: bool = False, **kw: Any) -> Report:
    summaries = [make_summary(f"rank{i}.sqlite", span=SPAN + i * 100_000_000, rank=i,
                              path=f"/data/secret/rank{i}.sqlite" if keep_paths else None)
                 for i in range(n_profiles)]
    run = RunInfo(command_line=["pa", "analyze", "/data/secret/rank0.sqlite", "--no-llm"], duration_s=0.5,
                  keep_paths=keep_paths)
    return build_report(summaries, kw.pop("rule_result", make_rule_result()), run, **kw)
