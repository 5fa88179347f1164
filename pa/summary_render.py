"""Render a ProfileSummary as readable rich tables for `pa summary`.

Rendering is the only place where integers become rounded text; what was skipped is printed as
skipped, never as zero.

Every string from the profile (file, host, device, kernel, API and phase names, and the warnings
that quote them) goes through `_t`: rich would otherwise read `[...]` in a kernel name as markup
(and fail on `[/x]`), and the terminal would obey an ESC or OSC sequence in it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pa import formatting
from pa.controls import escape_controls

if TYPE_CHECKING:   # annotations only: the one-file summary must not import the cross-rank models
    from pa.metrics.model import ProfileSummary
    from pa.ranks.model import CrossRank


def _wave_fill(ratio: float | None) -> str:
    """Waves a kernel's grid fills, as the summary table shows them.

    Two decimals, but two significant digits below 0.01, so a 2-block grid on 108 SMs reads 0.0046,
    not a flat 0.00 that looks like no data (issue 25, item 5).
    """
    if ratio is None:
        return "n/a"
    return f"{ratio:.2f}" if ratio >= 0.01 or ratio == 0 else f"{ratio:.2g}"


def _t(value: Any) -> str:
    """A value from the profile as inert rich text: control characters shown as escapes, markup escaped."""
    return escape(escape_controls(str(value)))


# One family of number formats for every text pa renders (pa.formatting).
fmt_ns = formatting.duration
fmt_bytes = formatting.data_size
fmt_pct = formatting.percent


def _of_peak(pct: float | None) -> str:
    """Share of the link peak; above 100 % it is a measurement problem, not a number to read."""
    return "above peak (measurement?)" if pct is not None and pct > 100.0 else fmt_pct(pct)


PIPE_WIDTH = 1000   # columns when stdout is not a terminal: a file or a pipe gets whole rows


def output_console() -> Console:
    """The console `pa summary` prints to: the terminal's width, or PIPE_WIDTH when redirected.

    rich assumes 80 columns when stdout is not a terminal, which cut kernel names and table rows
    in `pa summary > file` and `pa summary | grep`; a redirected table keeps its natural width.
    Without colours (no terminal and no FORCE_COLOR) rich's number and string highlighting styles
    text no one sees: it is turned off there, the same characters out and ~5 ms less start-up.
    """
    if sys.stdout.isatty():
        return Console()
    console = Console(width=PIPE_WIDTH)
    return console if console.color_system is not None else Console(width=PIPE_WIDTH, highlight=False)


def print_summary(s: ProfileSummary, console: Console | None = None) -> None:
    """Print the summary as a sequence of tables."""
    c = console or output_console()
    p = s.profile
    c.print(f"[bold]{_t(p.file_name)}[/bold]  {p.format} schema {_t(p.schema_version)} "
            f"(query set {_t(p.query_set)}), host {_t(p.host_name or 'unknown')}")
    not_captured = s.host_side is not None or any(sk.what in ("kernels", "gpu_activity") for sk in s.skipped)
    if not_captured:
        # "Could not look" is never "idle": no GPU records means no GPU numbers, not zeros.
        c.print(f"span {fmt_ns(s.span_ns)}; GPU activity: [bold]not captured[/bold] (see the warnings below)")
    else:
        graphs = (f" ({s.gpu.graph_execution_count} of them whole CUDA graph executions)"
                  if s.gpu.graph_execution_count else "")
        c.print(f"span {fmt_ns(s.span_ns)}; GPU: {s.gpu.kernel_count} kernels{graphs}, kernel time "
                f"{fmt_ns(s.gpu.kernel_time_ns)}, busy {fmt_ns(s.gpu.busy_ns)} on {s.gpu.device_count} "
                f"device(s), utilisation {fmt_pct(s.gpu.utilization_pct)}")
    t = Table(title="Devices")
    for col in ("id", "name", "used", "kernels", "kernel time", "busy", "util", "concurrency"):
        t.add_column(col)
    for d in s.devices:
        if not_captured and not d.used:
            t.add_row(str(d.id), _t(d.name or "?"), "unknown", "not captured", "-", "-", "-", "-")
            continue
        t.add_row(str(d.id), _t(d.name or "?"), "yes" if d.used else "no", str(d.kernel_count),
                  fmt_ns(d.kernel_time_ns), fmt_ns(d.busy_ns), fmt_pct(d.utilization_pct),
                  "n/a" if d.kernel_concurrency is None else f"{d.kernel_concurrency:.2f}")
    c.print(t)
    if s.kernels:
        t = Table(title=f"Top kernels (of {len(s.kernels)})")
        for col in ("kernel", "count", "total", "mean", "std", "share", "grid", "block", "wave fill"):
            t.add_column(col)
        for k in s.kernels[:15]:
            # a whole graph execution has no launch configuration of its own
            grid, block = ("whole graph", "-") if k.kernel_class == "graph" else (_t(k.grid), _t(k.block))
            t.add_row(_t((k.display_name or k.short_name or k.name)[:60]), str(k.count), fmt_ns(k.total_ns),
                      fmt_ns(k.mean_ns), fmt_ns(k.std_ns), fmt_pct(k.share_of_gpu_time_pct), grid, block,
                      _wave_fill(k.wave_fill_ratio))
        c.print(t)
    for g in s.idle_gaps:
        t = Table(title=f"Idle gaps, device {g.device}: {g.gap_count} gaps, idle {fmt_ns(g.idle_ns)} "
                        f"of window {fmt_ns(g.window_ns)}; leading {fmt_ns(g.leading_idle_ns)}, "
                        f"trailing {fmt_ns(g.trailing_idle_ns)}")
        t.add_column("bucket")
        t.add_column("count")
        t.add_column("total")
        for b in g.histogram:
            t.add_row(_t(b.label), str(b.count), fmt_ns(b.total_ns))
        c.print(t)
        causes = ", ".join(f"{k} {fmt_ns(v)}" for k, v in sorted(g.idle_by_cause.items(), key=lambda kv: -kv[1]))
        c.print(f"  idle in window by cause: {causes or 'none'}")
        rec = ", ".join(f"{k} {fmt_ns(v)}" for k, v in sorted(g.recoverable_by_cause.items(), key=lambda kv: -kv[1]))
        c.print(f"  recoverable by the fix of each cause: {rec or 'none'}")
        for gap in g.largest[:5]:
            c.print(f"  gap at +{fmt_ns(gap.start_ns)}: {fmt_ns(gap.duration_ns)}, cause: {_t(gap.host_activity)}, "
                    f"recoverable {fmt_ns(gap.recoverable_ns)}")
    if s.copies:
        t = Table(title=f"Copies: {s.copies.count}, {fmt_bytes(s.copies.bytes)}, exposed "
                        f"{fmt_ns(s.copies.exposed_ns)}, pageable share {fmt_pct(s.copies.pageable_share_pct)}")
        for col in ("direction", "src", "dst", "count", "bytes", "time", "bandwidth", "% of peak"):
            t.add_column(col)
        for cs in s.copies.by_kind:
            bw = formatting.bandwidth(cs.effective_bandwidth_bps)
            t.add_row(_t(cs.direction), _t(cs.src_kind), _t(cs.dst_kind), str(cs.count), fmt_bytes(cs.bytes),
                      fmt_ns(cs.total_ns), bw, _of_peak(cs.bandwidth_pct_of_peak))
        c.print(t)
    if s.sync:
        c.print(f"CPU blocked in sync: {fmt_ns(s.sync.cpu_blocked_ns)} ({fmt_pct(s.sync.cpu_blocked_pct_of_span)} "
                f"of the span per process) in {s.sync.call_count} calls")
    if s.launch:
        c.print(f"Launches: {s.launch.launch_count}, small-kernel fraction "
                f"{'n/a' if s.launch.small_kernel_fraction is None else f'{s.launch.small_kernel_fraction:.2f}'}")
        if s.launch.graph_launch_count:
            c.print(f"  graph launches: {s.launch.graph_launch_count}, issuing {s.launch.graph_launched_kernels} "
                    "GPU record(s) (whole graph executions, or the graphs' kernels traced one by one); the "
                    "latency is from each launch to the first of its records")
        for la in s.launch.by_api[:5]:
            c.print(f"  {_t(la.name)}: {la.count} calls, API mean {fmt_ns(la.api_mean_ns)}, launch latency "
                    f"(idle queue, {la.idle_queue_launches}) median {fmt_ns(la.latency_median_ns)}")
    if s.markers:
        c.print(f"Markers: {s.markers.count} ranges, {s.markers.open_ranges} still open at capture end")
    if s.mpi:
        c.print(f"MPI: {s.mpi.call_count} calls, {fmt_ns(s.mpi.total_ns)} ({fmt_pct(s.mpi.pct_of_span)} of the span "
                f"per process)")
    if s.overhead:
        c.print(f"Profiler overhead: {fmt_ns(s.overhead.total_ns)} ({fmt_pct(s.overhead.pct_of_span)} of the span "
                f"per process)")
    for w in s.warnings:
        c.print(f"[yellow]warning:[/yellow] {_t(w)}")
    for sk in s.skipped:
        c.print(f"[dim]skipped {_t(sk.what)}: {_t(sk.reason)}[/dim]")


_imb = formatting.fraction   # an imbalance ratio, as a percentage


def print_rank_summary(cr: CrossRank, console: Console | None = None, top_collectives: int = 10) -> None:
    """Print a multi-rank run: the per-rank table, the roles, per-phase imbalance and collective skew."""
    c = console or output_console()
    t = Table(title=f"Ranks ({cr.rank_count})")
    for col in ("rank", "from", "file", "span", "kernel time", "GPU busy", "util", "idle", "MPI",
                "collective wait"):
        t.add_column(col)
    for r in cr.ranks:
        mark = " (straggler)" if r.rank == cr.straggler_rank else ""
        t.add_row(f"{r.rank}{mark}", _t(r.rank_source), _t(r.file_name), fmt_ns(r.span_ns), fmt_ns(r.kernel_time_ns),
                  fmt_ns(r.busy_ns), fmt_pct(r.utilization_pct), fmt_ns(r.idle_ns), fmt_ns(r.mpi_ns),
                  fmt_ns(r.collective_wait_ns))
    c.print(t)
    def rank_or_na(r: int | None) -> str:
        return "n/a" if r is None else str(r)
    c.print(f"straggler rank: {cr.straggler_rank if cr.straggler_rank is not None else 'n/a (no collectives)'}; "
            f"most waited on: {rank_or_na(cr.most_waited_on_rank)}; waits most: {rank_or_na(cr.most_waiting_rank)}")
    c.print(f"imbalance: {_t(cr.imbalance_side)} (kernel time {_imb(cr.compute_imbalance)}, MPI time "
            f"{_imb(cr.communication_imbalance)}, MPI outside collectives {_imb(cr.noncollective_imbalance)}; "
            f"(max − min) / mean)")
    c.print(f"primary rank for the detailed analysis: {cr.primary_rank} ({_t(cr.primary_reason)})")
    t = Table(title=f"Imbalance per phase (phases aligned by {cr.phase_alignment})")
    for col in ("phase", "kernel imbalance", "slowest rank", "MPI imbalance", "most MPI"):
        t.add_column(col)
    for p in [cr.overall, *cr.phases]:
        t.add_row(_t(p.phase), _imb(p.kernel_time.imbalance), str(p.kernel_time.max_rank),
                  _imb(p.mpi.imbalance) if p.mpi else "n/a",
                  str(p.mpi.max_rank) if p.mpi and p.mpi.imbalance is not None else "n/a")
    c.print(t)
    if cr.collectives:
        shown = cr.collectives[:top_collectives]
        t = Table(title=f"Collective skew (top {len(shown)} of {cr.collective_count} collectives, "
                        f"{cr.collective_instances} matched instances)")
        for col in ("collective", "instances", "total wait", "max skew", "last to arrive"):
            t.add_column(col)
        for sk in shown:
            last = ", ".join(f"rank {k}: {v}" for k, v in sorted(sk.last_arrivals.items(), key=lambda kv: -kv[1])[:3])
            t.add_row(_t(sk.name), str(sk.instances), fmt_ns(sk.total_wait_ns), fmt_ns(sk.max_skew_ns), _t(last))
        c.print(t)
    for w in cr.warnings:
        c.print(f"[yellow]warning:[/yellow] {_t(w)}")
