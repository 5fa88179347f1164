"""Build a Report from ProfileSummaries, the rule engine's result and the optional LLM outcome.

Pure data plumbing: no I/O, no rendering. Everything a reviewer needs is copied into the report
(key metrics, ranked hypotheses with traced evidence, skipped analyses, provenance) so that the
templates never reach back into the summary or the rules.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import PurePath

from pa.llm.model import LlmFailure, LlmOutcome
from pa.metrics.idle import gpu_activity_captured
from pa.metrics.model import ProfileSummary
from pa.ranks.model import CrossRank
from pa.report.gains import gain_text
from pa.report.llm_marks import annotate, rules_only_provenance
from pa.report.model import (
    REPORT_SCHEMA_VERSION,
    DeviceRow,
    GapBucketRow,
    GapRow,
    Headline,
    JudgedIterations,
    KernelRow,
    KeyMetrics,
    LlmReview,
    ProfileRef,
    Provenance,
    QueryFileTrace,
    RankMove,
    RankRow,
    Report,
    ReportHypothesis,
    RuleOutcomeRow,
    RulePackRef,
    SkippedRow,
    SourceTrace,
    TracedEvidence,
    TracedValue,
)
from pa.report.sources import build_sources, resolve_section
from pa.rules.evaluate import RuleResult, analysis_window_ns
from pa.rules.hypothesis import Hypothesis
from pa.version import __version__

TOP_KERNELS = 10
TOP_COLLECTIVES = 10

# What to capture next when a relation is absent from the profile, keyed by the exact relation name
# of the skipped item (a skipped *analysis* of a relation that was read, such as copies.pageable_share,
# must not ask to capture what the file already holds).
_CAPTURE_HINTS: dict[str, str] = {
    "markers": "NVTX / rocTX ranges (nsys --trace=nvtx; rocprofv3 --marker-trace) to attribute "
               "time to application phases",
    "mpi_calls": "if the application uses MPI: MPI tracing (nsys --trace=mpi; rocprof-sys with its MPI "
                 "wrappers) to measure communication",
    "kernels": "GPU activity (nsys --trace=cuda; rocprofv3 --kernel-trace) to see kernels at all",
    "copies": "memory copy activity (nsys --trace=cuda; rocprofv3 --memory-copy-trace)",
    "api_calls": "runtime API calls (nsys --trace=cuda; rocprofv3 --hip-runtime-trace) to see launch "
                 "and sync costs",
    "syncs": "synchronisation records (nsys --trace=cuda; rocprofv3 --hip-runtime-trace)",
}


@dataclass(frozen=True)
class RunInfo:
    """Facts about this run of `pa analyze` that go into the provenance."""

    command_line: Sequence[str]
    duration_s: float
    keep_paths: bool = False
    generated_at: datetime | None = None


def scrub_path(text: str, keep_paths: bool) -> str:
    """Reduce an absolute path (alone or after `--opt=`) to its file name unless keep_paths."""
    if keep_paths:
        return text
    prefix, sep, value = text.partition("=") if text.startswith("-") else ("", "", text)
    if os.path.isabs(value):
        value = PurePath(value).name
    return f"{prefix}{sep}{value}"


def _traced(h: Hypothesis, rank: int, sources: dict[str, SourceTrace]) -> ReportHypothesis:
    evidence = []
    for ev in h.evidence:
        values = []
        for v in ev.values:
            section = resolve_section(v.source)
            trace = sources.get(section) if section else None
            values.append(TracedValue(
                **v.model_dump(), section=section,
                relations=list(trace.relations) if trace else [],
                query_files=[qf.path for qf in trace.query_files] if trace else []))
        evidence.append(TracedEvidence(text=ev.text, values=values))
    data = h.model_dump()
    data["evidence"] = evidence
    return ReportHypothesis(**data, rank=rank)


def _profile_ref(s: ProfileSummary, keep_paths: bool) -> ProfileRef:
    p = s.profile
    return ProfileRef(file_name=p.file_name, path=p.path if keep_paths else None, sha256=p.sha256,
                      size_bytes=p.size_bytes, format=p.format, vendor=p.vendor,
                      schema_version=p.schema_version, product_version=p.product_version,
                      query_set=p.query_set, rank=p.rank, host_name=p.host_name)


def _device_rows(s: ProfileSummary) -> list[DeviceRow]:
    gaps = {g.device: g for g in s.idle_gaps}
    rows = []
    for d in s.devices:
        if not d.used:
            continue
        g = gaps.get(d.id)
        first = last = None
        if g is not None:
            # Offsets from the span start, taken from the idle-gap analysis, which measures them.
            first, last = g.leading_idle_ns, s.span_ns - g.trailing_idle_ns
        rows.append(DeviceRow(
            id=d.id, name=d.name, kernel_count=d.kernel_count, busy_ns=d.busy_ns,
            utilization_pct=d.utilization_pct, first_activity_ns=first, last_activity_ns=last,
            leading_idle_ns=g.leading_idle_ns if g else None,
            trailing_idle_ns=g.trailing_idle_ns if g else None,
            idle_in_window_ns=g.idle_ns if g else None, gap_count=g.gap_count if g else None,
            gap_histogram=[GapBucketRow(**b.model_dump()) for b in g.histogram] if g else [],
            idle_by_cause=dict(g.idle_by_cause) if g else {},
            largest_gaps=[GapRow(start_ns=x.start_ns, duration_ns=x.duration_ns, host_activity=x.host_activity,
                                 recoverable_ns=x.recoverable_ns) for x in g.largest] if g else []))
    return rows


def _copy_bytes(s: ProfileSummary, directions: tuple[str, ...]) -> int | None:
    """Bytes of the explicit copies in these directions (None when copies were not captured)."""
    if s.copies is None:
        return None
    return sum(t.bytes for t in s.copies.by_direction if t.direction in directions)


def key_metrics(s: ProfileSummary, analysis_ns: int | None = None, steady: bool | None = None) -> KeyMetrics:
    """Copy the headline numbers of one ProfileSummary (None stays None: never a silent 0)."""
    g = s.gpu
    captured = gpu_activity_captured(s)
    issued = None
    if s.launch is not None:
        issued = bool(s.launch.launch_count or (s.host_side or {}).get("host_memcpy_calls")
                      or (s.copies and s.copies.count) or g.kernel_count)
    outside = None
    if captured and s.span_ns and g.first_operation_ns is not None and g.last_operation_ns is not None:
        outside = min(100.0, 100.0 * (g.first_operation_ns + s.span_ns - g.last_operation_ns) / s.span_ns)
    return KeyMetrics(
        span_ns=s.span_ns, gpu_activity_captured=captured, host_issued_gpu_work=issued,
        device_count=g.device_count if captured else None,
        kernel_count=g.kernel_count if captured else None,
        kernel_time_ns=g.kernel_time_ns if captured else None,
        gpu_busy_ns=g.busy_ns if captured else None,
        gpu_utilization_pct=g.utilization_pct if captured else None,
        kernel_busy_ns=g.kernel_busy_ns if captured else None,
        kernel_utilization_pct=g.kernel_utilization_pct if captured else None,
        window_ns=g.window_ns if captured else None,
        window_busy_pct=min(100.0, 100.0 * g.busy_ns / g.window_ns) if captured and g.window_ns else None,
        outside_window_pct=outside,
        analysis_window_ns=analysis_ns if analysis_ns is not None else analysis_window_ns(s),
        steady_state=steady,
        exposed_copy_ns=g.exposed_copy_ns if captured and s.copies is not None else None,
        copy_bytes=s.copies.bytes if s.copies else None,
        pageable_share_pct=s.copies.pageable_share_pct if s.copies else None,
        host_copy_bytes=_copy_bytes(s, ("HtoD", "DtoH", "HtoH")),
        device_copy_bytes=_copy_bytes(s, ("DtoD",)),
        peer_copy_bytes=_copy_bytes(s, ("PtoP",)),
        migration_count=s.copies.migrations.count if s.copies and s.copies.migrations else None,
        migrated_bytes=s.copies.migrations.bytes if s.copies and s.copies.migrations else None,
        cpu_blocked_in_sync_ns=s.sync.cpu_blocked_ns if s.sync else None,
        cpu_blocked_pct_of_span=s.sync.cpu_blocked_pct_of_span if s.sync else None,
        cpu_blocked_in_copies_ns=s.sync.blocking_copy_ns if s.sync else None,
        cpu_blocked_in_copies_pct_of_span=min(100.0, s.sync.blocking_copy_pct_of_span)
        if s.sync and s.sync.blocking_copy_pct_of_span is not None else None,
        cpu_blocked_in_frees_ns=s.sync.free_wait_ns if s.sync else None,
        launch_count=s.launch.launch_count if s.launch else None,
        launches_per_s=s.launch.launches_per_s if s.launch else None,
        mpi_ns=s.mpi.total_ns if s.mpi else None,
        mpi_pct_of_span=s.mpi.pct_of_span if s.mpi else None,
        mpi_setup_ns=s.mpi.setup_ns if s.mpi else None,
        profiler_overhead_pct_of_span=s.overhead.pct_of_span if s.overhead else None,
        devices=_device_rows(s),
        top_kernels=[KernelRow(name=k.display_name or k.short_name or k.name, count=k.count, total_ns=k.total_ns,
                               mean_ns=k.mean_ns, share_of_gpu_time_pct=k.share_of_gpu_time_pct)
                     for k in s.kernels[:TOP_KERNELS]],
        kernel_names_total=len(s.kernels),
    )


def _headline(hyps: list[ReportHypothesis], skipped: int, gpu_captured: bool = True,
              steady: bool | None = None) -> Headline:
    """The headline follows the ranking: its first finding, worded by what that finding can claim.

    `steady` False: the capture holds no steady state, so the findings were judged on the whole capture.
    """
    if not hyps:
        text = "No bottleneck found by the rules"
        text += f"; {skipped} analyses could not be done (see below)." if skipped else "."
        return Headline(text=text)
    h = hyps[0]
    big = h.expected_impact in ("high", "medium")
    ref = {"hypothesis_id": h.id, "bottleneck_type": h.bottleneck_type, "claim": h.claim}
    proven = [x for x in hyps if x.claim == "recoverable"]
    if h.claim == "recoverable" and big:
        gain = gain_text(h.claim, h.runtime_fraction_pct, h.estimated_speedup_pct_lower,
                         h.estimated_speedup_pct_upper, h.window_fraction_pct, h.window_speedup_pct_lower,
                         h.window_speedup_pct_upper)
        return Headline(text=f"Primary bottleneck: {h.title} ({h.bottleneck_type}): {gain}.",
                        speedup_pct_upper=h.estimated_speedup_pct_upper, **ref)
    if h.claim == "none":
        text = f"Read with care: {h.title}."
        if proven and proven[0].expected_impact in ("high", "medium"):
            p = proven[0]
            gain = gain_text(p.claim, p.runtime_fraction_pct, None, p.estimated_speedup_pct_upper,
                             p.window_fraction_pct, None, p.window_speedup_pct_upper)
            text += f" Largest demonstrated gain: {p.title} ({p.bottleneck_type}): {gain}."
        elif gpu_captured:
            where = "this capture" if steady is False else "the GPU's active window"
            text += f" No finding demonstrates a gain of medium or high impact in {where}."
        return Headline(text=text, **ref)
    if h.claim == "recoverable":
        gain = gain_text(h.claim, h.runtime_fraction_pct, None, h.estimated_speedup_pct_upper,
                         h.window_fraction_pct, None, h.window_speedup_pct_upper)
        return Headline(text=f"No dominant bottleneck: the largest demonstrated gain is {h.title} "
                             f"({h.bottleneck_type}): {gain}.",
                        speedup_pct_upper=h.estimated_speedup_pct_upper, **ref)
    text = (f"No finding demonstrates a gain of medium or high impact; the largest concern is {h.title} "
            f"({h.bottleneck_type}), whose headroom this trace cannot bound.")
    return Headline(text=text, **ref)


def _next_captures(hyps: list[ReportHypothesis], skipped: list[SkippedRow], processes: int) -> list[str]:
    """Captures that would close the gaps: the findings' own, then data the profile lacks.

    MPI tracing is asked for only when several processes made GPU calls (an MPI job is likely):
    most single-process captures have no MPI to trace.
    """
    out: list[str] = []
    for h in hyps:
        if h.next_capture and h.next_capture not in out:
            out.append(h.next_capture)
    for row in skipped:
        if row.stage != "summary":
            continue
        relation = row.what.rsplit(": ", 1)[-1]   # several profiles: "file.sqlite: relation"
        hint = _CAPTURE_HINTS.get(relation)
        if relation == "mpi_calls" and processes < 2:
            continue
        if hint and hint not in out:
            out.append(hint)
    return out


def _rank_label(s: ProfileSummary) -> str:
    """A rank's file name, with its process when the export holds several."""
    return s.profile.file_name + (f" (pid {s.profile.pid})" if s.profile.pid is not None else "")


def _skipped(summaries: Sequence[ProfileSummary], rule_result: RuleResult, llm_reason: str | None,
             primary: int) -> list[SkippedRow]:
    many = len(summaries) > 1
    rows: list[SkippedRow] = []
    for s in summaries:
        for x in s.skipped:
            row = SkippedRow(stage="summary", what=f"{s.profile.file_name}: {x.what}" if many else x.what,
                             reason=x.reason)
            if row not in rows:   # the processes of one export lack the same tables: said once
                rows.append(row)
    rows += [SkippedRow(stage="rules", what=x.what, reason=x.reason) for x in rule_result.skipped]
    if many:
        rows.append(SkippedRow(
            stage="report", what="rules on the other ranks",
            reason=f"rules ran on {_rank_label(summaries[primary])} only; per-rank facts are in the ranks table"))
    if llm_reason:
        rows.append(SkippedRow(stage="llm", what="LLM ranking and explanation", reason=llm_reason))
    return rows


def _packs(rule_result: RuleResult, keep_paths: bool) -> list[RulePackRef]:
    out = []
    for p in rule_result.packs:
        path = str(p.path)
        out.append(RulePackRef(name=p.name, path=path if p.builtin else scrub_path(path, keep_paths),
                               sha256=p.sha256, order=p.order, builtin=p.builtin))
    return out


def _cross_block(cross: CrossRank | None) -> CrossRank | None:
    """The cross-rank block as the report carries it: collectives cut to the top entries.

    The TOP_COLLECTIVES with the largest total wait are kept; collective_count and
    collective_instances keep the totals.
    """
    if cross is None:
        return None
    top = sorted(cross.collectives, key=lambda sk: (-sk.total_wait_ns, sk.name))[:TOP_COLLECTIVES]
    return cross.model_copy(update={"collectives": top})


def primary_index(summaries: Sequence[ProfileSummary]) -> int:
    """The profile the rules run on: the longest span (the straggler decides the wall time)."""
    return max(range(len(summaries)), key=lambda i: summaries[i].span_ns)


def build_report(summaries: Sequence[ProfileSummary], rule_result: RuleResult, run: RunInfo,
                 llm: LlmOutcome | None = None, llm_reason: str | None = "rules only",
                 cross: CrossRank | None = None, primary: int | None = None,
                 rank_numbers: Sequence[int] | None = None, judged: ProfileSummary | None = None) -> Report:
    """Assemble the Report from the summaries, the rules' result and the LLM stage's outcome.

    Multi-rank: `cross` is the cross-rank analysis, `primary` the index of the rank the rules ran on
    (default: primary_index) and `rank_numbers` the assigned rank of each summary. `judged`: the
    steady-window summary the rules read (pa.metrics.steady), when there is one; the key metrics stay
    the capture's and say which loop the findings are judged on.
    """
    if not summaries:
        raise ValueError("build_report needs at least one ProfileSummary")
    primary = primary_index(summaries) if primary is None else primary
    main_summary = summaries[primary]
    sources = build_sources(main_summary)
    raw = llm.hypotheses if llm is not None else list(rule_result.hypotheses)
    hyps = [_traced(h, i + 1, sources) for i, h in enumerate(raw)]
    skipped = _skipped(summaries, rule_result, None if llm else llm_reason, primary)
    many = len(summaries) > 1
    warnings = [f"{s.profile.file_name}: {w}" if many else w for s in summaries for w in s.warnings]
    warnings += [f"rules: {w}" for w in rule_result.warnings]
    if llm is not None:
        warnings += llm.warnings
    elif isinstance(llm_reason, LlmFailure):  # configured, tried and failed: a warning, not only a skip
        warnings.append(str(llm_reason))
    narrative = llm.narrative if llm is not None else None
    llm_prov = llm.provenance if llm is not None else rules_only_provenance(llm_reason)
    if llm_prov.log_path:
        llm_prov = llm_prov.model_copy(update={"log_path": scrub_path(llm_prov.log_path, run.keep_paths)})
    query_files: list[QueryFileTrace] = []
    for s in summaries:
        for qf in s.profile.query_files:
            trace = QueryFileTrace(relation=qf.relation, path=qf.path, sha256=qf.sha256)
            if trace not in query_files:
                query_files.append(trace)
    when = run.generated_at or datetime.now(timezone.utc)
    # The LLM's marks (engine rank, reasons, rewritten parts) and the headline's note on the rules' primary.
    steady = rule_result.metrics.get("steady_state")
    metrics = key_metrics(main_summary, rule_result.analysis_ns or None,
                          steady if isinstance(steady, bool) else None)
    if judged is not None and judged.judged_range is not None:
        w = judged.judged_range
        metrics = metrics.model_copy(update={"judged_iterations": JudgedIterations(
            name=w.name, count=w.count, start_ns=w.start_ns, end_ns=w.end_ns, kernel_share_pct=w.kernel_share_pct)})
    hyps, headline = annotate(hyps, _headline(hyps, sum(1 for k in skipped if k.stage in ("summary", "rules")),
                                              metrics.gpu_activity_captured, metrics.steady_state), llm)
    return Report(
        headline=headline,
        profiles=[_profile_ref(s, run.keep_paths) for s in summaries],
        primary_profile=primary,
        summary=metrics,
        hypotheses=hyps,
        time_claims_ns=dict(rule_result.claims),
        time_buckets_ns=dict(rule_result.buckets),
        rule_outcomes=[RuleOutcomeRow(rule_id=o.rule_id, status=str(o.status), reason=o.reason, phase=o.phase)
                       for o in rule_result.outcomes],
        skipped=skipped,
        warnings=warnings,
        next_captures=_next_captures(hyps, skipped, max(len(summaries), max(
            (s.sync.process_count for s in summaries if s.sync is not None), default=1))),
        llm=LlmReview(narrative=narrative, ungrounded_numbers=list(llm.narrative_ungrounded),
                      engine_order=list(llm.engine_order), moves=[RankMove(**m) for m in llm.moves])
        if llm is not None and narrative else None,
        cross_rank=_cross_block(cross),
        ranks=[RankRow(rank=rank_numbers[i] if rank_numbers is not None
                       else s.profile.rank if s.profile.rank is not None else i,
                       file_name=s.profile.file_name, span_ns=s.span_ns, gpu_busy_ns=s.gpu.busy_ns,
                       gpu_utilization_pct=s.gpu.utilization_pct,
                       mpi_ns=s.mpi.total_ns if s.mpi else None)
               for i, s in enumerate(summaries)] if many else None,
        sources=sources,
        provenance=Provenance(
            pa_version=__version__, report_schema_version=REPORT_SCHEMA_VERSION,
            summary_schema_version=main_summary.summary_schema_version,
            generated_at=when.astimezone(timezone.utc).isoformat(timespec="seconds"),
            duration_s=max(0.0, run.duration_s),
            command_line=[scrub_path(a, run.keep_paths) for a in run.command_line],
            query_sets=sorted({s.profile.query_set for s in summaries}),
            query_files=query_files, rule_packs=_packs(rule_result, run.keep_paths), llm=llm_prov),
    )
