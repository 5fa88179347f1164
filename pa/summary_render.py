"""Render a ProfileSummary as readable rich tables for `pa summary`.

Rendering is the only place where integers become rounded text; what was skipped is printed as
skipped, never as zero.

Every string from the profile (file, host, device, kernel, API and phase names, and the warnings
that quote them) goes through `_t`: the terminal would otherwise obey an ESC or OSC sequence in it.
Nothing is printed as rich markup: a `[...]` in a kernel name is text (and `[/x]` cannot fail).

The view fits the terminal (issue 29): tables are built by pa.report.terminal, where no cell
wraps, the name column gets the width first, optional columns (std, grid, block, wave fill…)
leave below a width and come back with `--wide`, and names are shortened in the middle so they
stay distinguishable; the lines between the tables wrap between words, never inside a number.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from pa import formatting
from pa.controls import escape_controls
from pa.report.terminal import Column, add_row, fitted_table, wrap_line

if TYPE_CHECKING:   # annotations only: the one-file summary must not import the cross-rank models
    from pa.metrics.model import DeviceGaps, ProfileSummary
    from pa.ranks.model import CrossRank


def _wave_fill(ratio: float | None) -> str:
    """Waves a kernel's grid fills, as the summary table shows them.

    Two decimals, but two significant digits below 0.01, so a 2-block grid on 108 SMs reads 0.0046,
    not a flat 0.00 that looks like no data (issue 25, item 5).
    """
    if ratio is None:
        return "n/a"
    return f"{ratio:.2f}" if ratio >= 0.01 or ratio == 0 else formatting.number(ratio, 2)   # never '4.6e-05'


def _t(value: Any) -> str:
    """A value from the profile as inert text: control characters shown as escapes (printed as Text, not markup)."""
    return escape_controls(str(value))


# One family of number formats for every text pa renders (pa.formatting).
fmt_ns = formatting.duration
fmt_bytes = formatting.data_size
fmt_pct = formatting.percent
fmt_count = formatting.count


def _of_peak(pct: float | None) -> str:
    """Share of the link peak; above 100 % it is a measurement problem, not a number to read."""
    return "above peak (measurement?)" if pct is not None and pct > 100.0 else fmt_pct(pct)


PIPE_WIDTH = 1000   # columns when stdout is not a terminal: a file or a pipe gets whole rows


class _Console(Console):
    """A rich console whose reader may go away (`pa summary X | head`): the closed pipe goes up to pa.cli.

    rich's own answer to a broken pipe is to exit with status 1 on the spot; pa decides that in one
    place for every command (pa.cli: exit 0, as git does), so the error is handed on instead.
    """

    def on_broken_pipe(self) -> None:
        """Print nothing more and raise BrokenPipeError to pa.cli (rich's default exits with 1)."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def output_console(color: bool | None = None, to_file: bool = False) -> Console:
    """The console `pa summary` prints to: the terminal's width, or PIPE_WIDTH when redirected.

    rich assumes 80 columns when stdout is not a terminal, which cut kernel names and table rows
    in `pa summary > file` and `pa summary | grep`; a redirected table keeps its natural width.
    Without colours rich's number and string highlighting styles text no one sees: it is turned off
    there, the same characters out and ~5 ms less start-up. `color`: pa's --color decision (None:
    rich's own, from the terminal and $NO_COLOR / $FORCE_COLOR; False: no ANSI styles at all, bold
    and dim included, as --color never and the analyze report promise). `to_file`: record the output for
    `-o` instead of printing it (Console.export_text), at PIPE_WIDTH and without colour.
    """
    if to_file:
        return _Console(width=PIPE_WIDTH, highlight=False, no_color=True, record=True, file=io.StringIO())
    width = None if sys.stdout.isatty() else PIPE_WIDTH
    if color is False:
        return _Console(width=width, highlight=False, color_system=None)   # no bold or dim either
    if color is True:
        return _Console(width=width, force_terminal=True)
    console = _Console(width=width)
    return console if console.color_system is not None else _Console(width=width, highlight=False)


class _Out:
    """Where the summary goes: the console, the layout width, and whether every column is wanted."""

    def __init__(self, console: Console, wide: bool) -> None:
        self.c = console
        self.wide = wide
        self.width = console.width

    def line(self, text: str, style: str | None = None) -> None:
        """A line of text, wrapped between words to the width (never inside a number)."""
        for piece in wrap_line(text, self.width):
            self.c.print(Text(piece, style=style or ""), soft_wrap=True)

    def table(self, title: str | None, cols: list[Column]) -> None:
        """A table fitted to the width (pa.report.terminal.fitted_table); `wide`: at its natural width.

        A wide table is drawn whole even on a narrower terminal, which folds its rows: rich would
        otherwise squeeze the columns back and cut what `--wide` asked to see.
        """
        table = fitted_table(title, cols, self.width, self.wide)
        natural = self.c.measure(table, options=self.c.options.update_width(PIPE_WIDTH)).maximum
        if not self.wide or natural <= self.c.width:
            self.c.print(table)
            return
        width = self.c.width
        self.c.width = natural
        try:
            self.c.print(table)
        finally:
            self.c.width = width


def print_summary(s: ProfileSummary, console: Console | None = None, wide: bool = False) -> None:
    """Print the summary as a sequence of tables fitted to the console's width (`wide`: every column)."""
    o = _Out(console or output_console(), wide)
    p = s.profile
    o.line(f"{_t(p.file_name)}  {p.format} schema {_t(p.schema_version)} (query set {_t(p.query_set)}), "
           f"host {_t(p.host_name or 'unknown')}", style="bold")
    not_captured = s.host_side is not None or any(sk.what in ("kernels", "gpu_activity") for sk in s.skipped)
    if not_captured:
        # "Could not look" is never "idle": no GPU records means no GPU numbers, not zeros.
        o.line(f"span {fmt_ns(s.span_ns)}; GPU activity: not captured (see the warnings below)")
    else:
        graphs = (f" ({fmt_count(s.gpu.graph_execution_count)} of them whole CUDA graph executions)"
                  if s.gpu.graph_execution_count else "")
        o.line(f"span {fmt_ns(s.span_ns)}; GPU: {fmt_count(s.gpu.kernel_count)} kernels{graphs}, kernel time "
               f"{fmt_ns(s.gpu.kernel_time_ns)}, busy {fmt_ns(s.gpu.busy_ns)} on {s.gpu.device_count} "
               f"device(s), utilisation {fmt_pct(s.gpu.utilization_pct)}")
    _devices(o, s, not_captured)
    if s.kernels:
        _kernels(o, s)
    for g in s.idle_gaps:
        _idle_gaps(o, g)
    if s.copies:
        _copies(o, s)
    _activity_lines(o, s)
    for w in s.warnings:
        o.line(f"warning: {_t(w)}", style="yellow")
    for sk in s.skipped:
        o.line(f"skipped {_t(sk.what)}: {_t(sk.reason)}", style="dim")


def _devices(o: _Out, s: ProfileSummary, not_captured: bool) -> None:
    """The device table; 'concurrency' is optional (it leaves first at 80 columns, beside a long GPU name)."""
    cols = [Column("id", numeric=True), Column("name", name=True), Column("used"), Column("kernels", numeric=True),
            Column("kernel time", numeric=True), Column("busy", numeric=True), Column("util", numeric=True),
            Column("concurrency", drop=1, numeric=True)]
    for d in s.devices:
        if not_captured and not d.used:
            row = [str(d.id), _t(d.name or "?"), "unknown", "not captured", "-", "-", "-", "-"]
        else:
            row = [str(d.id), _t(d.name or "?"), "yes" if d.used else "no", fmt_count(d.kernel_count),
                   fmt_ns(d.kernel_time_ns), fmt_ns(d.busy_ns), fmt_pct(d.utilization_pct),
                   "n/a" if d.kernel_concurrency is None else f"{d.kernel_concurrency:.2f}"]
        add_row(cols, row)
    o.table("Devices", cols)


def _kernels(o: _Out, s: ProfileSummary) -> None:
    """The top kernels: the name first; std, grid, block and wave fill leave, in that order, below a width."""
    cols = [Column("kernel", name=True), Column("count", numeric=True), Column("total", numeric=True),
            Column("mean", numeric=True), Column("std", drop=1, numeric=True), Column("share", numeric=True),
            Column("grid", drop=2), Column("block", drop=3), Column("wave fill", drop=4, numeric=True)]
    for k in s.kernels[:15]:
        # a whole graph execution has no launch configuration of its own
        grid, block = ("whole graph", "-") if k.kernel_class == "graph" else (_t(k.grid), _t(k.block))
        row = [_t(k.display_name or k.short_name or k.name), fmt_count(k.count), fmt_ns(k.total_ns),
               fmt_ns(k.mean_ns), fmt_ns(k.std_ns), fmt_pct(k.share_of_gpu_time_pct), grid, block,
               _wave_fill(k.wave_fill_ratio)]
        add_row(cols, row)
    o.table(f"Top kernels (of {fmt_count(len(s.kernels))})", cols)


def _idle_gaps(o: _Out, g: DeviceGaps) -> None:
    """One device's idle gaps: the facts as a line above the table (a title would wrap to the table's width)."""
    o.line(f"Idle gaps, device {g.device}: {fmt_count(g.gap_count)} gaps, idle {fmt_ns(g.idle_ns)} of window "
           f"{fmt_ns(g.window_ns)}; leading {fmt_ns(g.leading_idle_ns)}, trailing {fmt_ns(g.trailing_idle_ns)}",
           style="italic")
    cols = [Column("bucket"), Column("count", numeric=True), Column("total", numeric=True)]
    for b in g.histogram:
        add_row(cols, [_t(b.label), fmt_count(b.count), fmt_ns(b.total_ns)])
    o.table(None, cols)
    causes = ", ".join(f"{k} {fmt_ns(v)}" for k, v in sorted(g.idle_by_cause.items(), key=lambda kv: -kv[1]))
    o.line(f"  idle in window by cause: {causes or 'none'}")
    rec = ", ".join(f"{k} {fmt_ns(v)}" for k, v in sorted(g.recoverable_by_cause.items(), key=lambda kv: -kv[1]))
    o.line(f"  recoverable by the fix of each cause: {rec or 'none'}")
    for gap in g.largest[:5]:
        o.line(f"  gap at +{fmt_ns(gap.start_ns)}: {fmt_ns(gap.duration_ns)}, cause: {_t(gap.host_activity)}, "
               f"recoverable {fmt_ns(gap.recoverable_ns)}")


def _copies(o: _Out, s: ProfileSummary) -> None:
    """The copies by kind; '% of peak' is optional (the bandwidth beside it says the same in GB/s)."""
    assert s.copies is not None
    o.line(f"Copies: {fmt_count(s.copies.count)}, {fmt_bytes(s.copies.bytes)}, exposed {fmt_ns(s.copies.exposed_ns)}, "
           f"pageable share {fmt_pct(s.copies.pageable_share_pct)}", style="italic")
    cols = [Column("direction"), Column("src"), Column("dst"), Column("count", numeric=True),
            Column("bytes", numeric=True), Column("time", numeric=True), Column("bandwidth", numeric=True),
            Column("% of peak", drop=1, numeric=True)]
    for cs in s.copies.by_kind:
        row = [_t(cs.direction), _t(cs.src_kind), _t(cs.dst_kind), fmt_count(cs.count), fmt_bytes(cs.bytes),
               fmt_ns(cs.total_ns), formatting.bandwidth(cs.effective_bandwidth_bps),
               _of_peak(cs.bandwidth_pct_of_peak)]
        add_row(cols, row)
    o.table(None, cols)


def _activity_lines(o: _Out, s: ProfileSummary) -> None:
    """The one-line facts: sync, launches, markers, MPI, profiler overhead."""
    if s.sync:
        o.line(f"CPU blocked in sync: {fmt_ns(s.sync.cpu_blocked_ns)} ({fmt_pct(s.sync.cpu_blocked_pct_of_span)} "
               f"of the span per process) in {fmt_count(s.sync.call_count)} calls")
    if s.launch:
        o.line(f"Launches: {fmt_count(s.launch.launch_count)}, small-kernel fraction "
               f"{'n/a' if s.launch.small_kernel_fraction is None else f'{s.launch.small_kernel_fraction:.2f}'}")
        if s.launch.graph_launch_count:
            o.line(f"  graph launches: {fmt_count(s.launch.graph_launch_count)}, issuing "
                   f"{fmt_count(s.launch.graph_launched_kernels)} GPU record(s) (whole graph executions, or the "
                   "graphs' kernels traced one by one); the latency is from each launch to the first of its records")
        for la in s.launch.by_api[:5]:
            o.line(f"  {_t(la.name)}: {fmt_count(la.count)} calls, API mean {fmt_ns(la.api_mean_ns)}, launch latency "
                   f"(idle queue, {fmt_count(la.idle_queue_launches)}) median {fmt_ns(la.latency_median_ns)}")
    if s.markers:
        o.line(f"Markers: {fmt_count(s.markers.count)} ranges, {fmt_count(s.markers.open_ranges)} still open at "
               "capture end")
    if s.mpi:
        o.line(f"MPI: {fmt_count(s.mpi.call_count)} calls, {fmt_ns(s.mpi.total_ns)} ({fmt_pct(s.mpi.pct_of_span)} "
               "of the span per process)")
    if s.overhead:
        o.line(f"Profiler overhead: {fmt_ns(s.overhead.total_ns)} ({fmt_pct(s.overhead.pct_of_span)} of the span "
               "per process)")


_imb = formatting.fraction   # an imbalance ratio, as a percentage


def _rank_or_na(rank: int | None) -> str:
    """A rank number, or n/a where the run has none (never Python's None on screen)."""
    return "n/a" if rank is None else str(rank)


def print_rank_summary(cr: CrossRank, console: Console | None = None, top_collectives: int = 10,
                       wide: bool = False) -> None:
    """Print a multi-rank run: the per-rank table, the roles, per-phase imbalance and collective skew."""
    o = _Out(console or output_console(), wide)
    by_pid = any(r.pid is not None for r in cr.ranks)       # the processes of one export (pa.ranks.processes)
    files = len({r.file_name for r in cr.ranks}) > 1 or not by_pid
    comm = any(r.communication_ns for r in cr.ranks)
    mpi = any(r.mpi_ns is not None for r in cr.ranks) or not comm
    cols = [Column("rank"), Column("from", drop=4), *([Column("file", name=True)] if files else []),
            *([Column("pid", numeric=True)] if by_pid else []), Column("span", numeric=True),
            Column("kernel time", numeric=True), Column("GPU busy", numeric=True), Column("util", drop=2, numeric=True),
            Column("idle", drop=3, numeric=True)]
    if comm:
        cols += [Column("NCCL/RCCL", numeric=True), Column("exposed", drop=2, numeric=True),
                 Column("GPU wait", numeric=True)]
    if mpi:
        cols += [Column("MPI", numeric=True), Column("collective wait", drop=1, numeric=True)]
    for r in cr.ranks:
        late = r.rank in (cr.straggler_rank, cr.gpu_straggler_rank)
        row = [f"{r.rank}{' (straggler)' if late else ''}", _t(r.rank_source),
               *([_t(r.file_name)] if files else []),
               *([str(r.pid) if r.pid is not None else "all"] if by_pid else []), fmt_ns(r.span_ns),
               fmt_ns(r.kernel_time_ns),
               fmt_ns(r.busy_ns), fmt_pct(r.utilization_pct), fmt_ns(r.idle_ns)]
        if comm:
            row += [fmt_ns(r.communication_ns), fmt_ns(r.communication_exposed_ns), fmt_ns(r.gpu_collective_wait_ns)]
        if mpi:
            row += [fmt_ns(r.mpi_ns), fmt_ns(r.collective_wait_ns)]
        add_row(cols, row)
    o.table(f"Ranks ({cr.rank_count})", cols)
    if by_pid:
        o.line("ranks: the processes of " + ("one export" if cr.rank_source == "process_order" else "the exports")
               + (", numbered by their MPI rank" if cr.rank_source == "mpi"
                  else ", numbered in ascending pid order (the export records no rank)"))
    if cr.gpu_straggler_rank is not None:
        o.line(f"GPU collectives: rank {cr.gpu_straggler_rank} is the late rank (its lead over the next-latest rank, "
               f"summed over {fmt_count(cr.gpu_collective_instances)} matched collective kernels: "
               f"{fmt_ns(cr.gpu_straggler_delay_ns)}; before those arrivals it computed "
               f"{fmt_ns(cr.gpu_late_compute_ns)} and idled {fmt_ns(cr.gpu_late_idle_ns)} more than the others: "
               f"late because of {_t(cr.gpu_late_because)}); waits most: {_rank_or_na(cr.gpu_most_waiting_rank)}")
    if cr.straggler_rank is not None or not comm:
        o.line(f"straggler rank: {cr.straggler_rank if cr.straggler_rank is not None else 'n/a (no collectives)'}; "
               f"most waited on: {_rank_or_na(cr.most_waited_on_rank)}; "
               f"waits most: {_rank_or_na(cr.most_waiting_rank)}")
    o.line(f"imbalance: {_t(cr.imbalance_side)} (kernel time {_imb(cr.compute_imbalance)}, MPI time "
           f"{_imb(cr.communication_imbalance)}, MPI outside collectives {_imb(cr.noncollective_imbalance)}; "
           f"(max − min) / mean)")
    o.line(f"primary rank for the detailed analysis: {cr.primary_rank} ({_t(cr.primary_reason)})")
    o.line(f"Imbalance per phase (phases aligned by {cr.phase_alignment})", style="italic")
    cols = [Column("phase", name=True), Column("kernel imbalance", numeric=True), Column("slowest rank", numeric=True),
            Column("MPI imbalance", numeric=True), Column("most MPI", drop=1, numeric=True)]
    for p in [cr.overall, *cr.phases]:
        row = [_t(p.phase), _imb(p.kernel_time.imbalance), str(p.kernel_time.max_rank),
               _imb(p.mpi.imbalance) if p.mpi else "n/a",
               str(p.mpi.max_rank) if p.mpi and p.mpi.imbalance is not None else "n/a"]
        add_row(cols, row)
    o.table(None, cols)
    if cr.collectives:
        shown = cr.collectives[:top_collectives]
        o.line(f"Collective skew (top {len(shown)} of {fmt_count(cr.collective_count)} collectives, "
               f"{fmt_count(cr.collective_instances)} matched instances)", style="italic")
        cols = [Column("collective", name=True), Column("instances", numeric=True), Column("total wait", numeric=True),
                Column("max skew", numeric=True), Column("last to arrive", drop=1)]
        for sk in shown:
            last = ", ".join(f"rank {k}: {fmt_count(v)}"
                             for k, v in sorted(sk.last_arrivals.items(), key=lambda kv: -kv[1])[:3])
            row = [_t(sk.name), fmt_count(sk.instances), fmt_ns(sk.total_wait_ns), fmt_ns(sk.max_skew_ns), last]
            add_row(cols, row)
        o.table(None, cols)
    if cr.gpu_collectives:
        o.line(f"GPU collective skew ({fmt_count(cr.gpu_collective_instances)} matched collective kernels)",
               style="italic")
        cols = [Column("collective", name=True), Column("instances", numeric=True), Column("total wait", numeric=True),
                Column("max skew", numeric=True), Column("last to arrive", drop=1)]
        for sk in cr.gpu_collectives[:top_collectives]:
            last = ", ".join(f"rank {k}: {fmt_count(v)}"
                             for k, v in sorted(sk.last_arrivals.items(), key=lambda kv: -kv[1])[:3])
            add_row(cols, [_t(sk.name), fmt_count(sk.instances), fmt_ns(sk.total_wait_ns), fmt_ns(sk.max_skew_ns),
                           last])
        o.table(None, cols)
    for w in cr.warnings:
        o.line(f"warning: {_t(w)}", style="yellow")
