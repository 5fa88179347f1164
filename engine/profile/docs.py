"""Generate docs/relations.md from the canonical relation table (one copy of the knowledge)."""

from __future__ import annotations

from engine.profile.canonical import RELATIONS


def render_relations_md() -> str:
    """Markdown reference of every canonical relation and column."""
    lines = [
        "# Canonical relations",
        "",
        "Generated from `engine/profile/canonical.py` by `python -m engine.profile.docs`; a test fails",
        "when this file is out of date. Every query set produces these columns; metrics see nothing",
        "else. In SQL the relations are named `pa_<relation>` (profiles have tables of their own",
        "called `kernels` or `processes`). Times are integer ns, sizes bytes, clocks Hz.",
        "",
    ]
    for name, cols in RELATIONS.items():
        lines += [f"## {name}", "", "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{c.name}` | {c.type} | {c.meaning} |" for c in cols]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(render_relations_md(), end="")
