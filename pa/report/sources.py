"""Trace a summary section to the canonical relations and query files that produced it.

The metrics layer records which query file produced each relation (ProfileSummary.profile.
query_files); which relations feed which summary section is fixed by the metrics code and written
down once, here. Together they answer "where does sync.cpu_blocked_ns come from?":

    summary.sync → relations api_calls, syncs → nsys/base/api_calls.sql (sha256 …), …

An evidence value whose source is a rule metric (not a summary field) resolves to section None:
which summary fields the metric's expression read is the rule pack's business, and the pack's
sha256 in the provenance is the trace for it.
"""

from __future__ import annotations

from pa.metrics.model import ProfileSummary
from pa.report.model import QueryFileTrace, SourceTrace

_ACTIVITY = ("kernels", "copies", "memsets")

# summary section → canonical relations it is computed from (see pa/metrics/).
SECTION_RELATIONS: dict[str, tuple[str, ...]] = {
    "summary.profile": ("meta", "devices"),
    "summary.span_ns": ("kernels", "copies", "memsets", "api_calls", "syncs", "markers", "mpi_calls", "overhead",
                        "os_calls", "driver_jit"),
    # busy and kernel totals come from the activity relations; the active windows' idle by cause
    # also reads the host calls, MPI calls and profiler overhead of each device's processes
    "summary.gpu": (*_ACTIVITY, "api_calls", "mpi_calls", "overhead", "driver_jit"),
    "summary.devices": ("devices", *_ACTIVITY),
    "summary.idle_gaps": (*_ACTIVITY, "api_calls", "mpi_calls", "overhead", "driver_jit", "os_calls", "cpu_samples"),
    "summary.kernels": ("kernels", "devices"),
    "summary.copies": ("copies", "devices"),
    "summary.memsets": ("memsets",),
    "summary.sync": ("api_calls", "syncs"),
    "summary.launch": ("api_calls", "kernels"),
    "summary.streams": _ACTIVITY,
    "summary.markers": ("markers",),
    "summary.mpi": ("mpi_calls",),
    "summary.overhead": ("overhead",),
    "summary.phases": (*_ACTIVITY, "api_calls", "markers", "mpi_calls", "overhead"),
    "summary.captured": ("kernels", "copies", "memsets", "api_calls", "syncs", "markers", "mpi_calls",
                         "os_calls", "cpu_samples", "overhead"),
    "summary.host_side": ("api_calls",),
    # cross-rank facts (pa.ranks): every rank's kernels/copies/memsets (busy, kernel time) and
    # MPI calls (collective skew); the query files listed are the primary rank's (same query set).
    "cross_rank": ("kernels", "copies", "memsets", "mpi_calls"),
}


def build_sources(summary: ProfileSummary) -> dict[str, SourceTrace]:
    """Return the `sources` map of a report from the primary profile's query files."""
    by_relation = {qf.relation: qf for qf in summary.profile.query_files}
    out: dict[str, SourceTrace] = {}
    for section, relations in SECTION_RELATIONS.items():
        files = [QueryFileTrace(relation=r, path=by_relation[r].path, sha256=by_relation[r].sha256)
                 for r in relations if r in by_relation]
        out[section] = SourceTrace(relations=list(relations), query_files=files)
    return out


def resolve_section(source: str) -> str | None:
    """Map an EvidenceValue.source (a summary field path) to its `sources` key, or None.

    Accepts 'summary.sync.cpu_blocked_ns', 'sync.cpu_blocked_ns' and indexed paths such as
    'devices[0].busy_ns'; anything else (a rule metric, a tool call id) is derived: None.
    """
    text = source.strip()
    if text == "cross_rank" or text.startswith("cross_rank."):
        return "cross_rank"
    if text.startswith("summary."):
        text = text[len("summary."):]
    head = text.split(".", 1)[0].split("[", 1)[0].split(" ", 1)[0]
    key = f"summary.{head}"
    return key if key in SECTION_RELATIONS else None
