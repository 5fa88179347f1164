"""Plain-text rendering of a Comparison (markdown/html go through the report templates later)."""

from __future__ import annotations

from engine.compare.model import Change, Comparison

KEY_ROWS = 15


def _fmt(c: Change, v: float | None) -> str:
    if v is None:
        return "-"
    if c.unit == "ns":
        return f"{v / 1e6:.3f} ms"
    if c.unit == "pct":
        return f"{v:.1f} %"
    if c.unit == "bytes":
        return f"{v / (1 << 20):.1f} MiB"
    return f"{v:.0f}"


def render_text(c: Comparison) -> str:
    """The comparison as a fixed-width text report."""
    lines = [f"pa compare: {c.before.file_name} -> {c.after.file_name} "
             f"(noise floor {c.noise_floor_pct:g} %, mode {c.mode})", ""]
    lines += [*c.narrative, ""]
    lines.append(f"{'metric':<22}{'before':>16}{'after':>16}{'change':>12}")
    for ch in c.overview:
        pct = f"{ch.delta_pct:+.1f} %" if ch.delta_pct is not None else "-"
        mark = " *" if ch.significant else ""
        lines.append(f"{ch.metric:<22}{_fmt(ch, ch.before):>16}{_fmt(ch, ch.after):>16}{pct:>12}{mark}")
    lines.append("(* above the noise floor)")
    if c.key_differences:
        lines += ["", "Key differences (largest absolute time change first):"]
        for k in c.key_differences[:KEY_ROWS]:
            where = f" [{k.phase}]" if k.phase else ""
            lines.append(f"  {k.delta_ns / 1e6:+12.3f} ms  {k.what}{where}")
    for w in c.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines)
