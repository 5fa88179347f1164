"""Generate docs/relations.md from the canonical relation table (one copy of the knowledge)."""

from __future__ import annotations

from pa.profile.canonical import DOMAINS, MAX_DURATION_NS, MAX_TIMESTAMP_NS, RELATIONS


def render_relations_md() -> str:
    """Markdown reference of every canonical relation and column."""
    lines = [
        "# Canonical relations",
        "",
        "Generated from `pa/profile/canonical.py` by `python -m pa.profile.docs`; a test fails",
        "when this file is out of date. Every query set produces these columns; metrics see nothing",
        "else. In SQL the relations are named `pa_<relation>` (profiles have tables of their own",
        "called `kernels` or `processes`). Times are integer ns, sizes bytes, clocks Hz.",
        "",
        "## Domains",
        "",
        "Every relation is read through its domain checks (`DOMAINS` in the same module): a row that",
        "fails one is dropped before any metric, rule or phase sees it, and the summary's `warnings` say",
        "how many rows of which relation failed which check (`kernels: 3 row(s) outside the relation's",
        "domain were dropped ...`), for the relations the summary read (a relation no metric read, such",
        "as rocpd's `memcpy_requests` outside a degraded capture, dropped nothing from any figure and is",
        "not counted). A row counts for the first check it fails. Timestamps must be numbers",
        f"in [0, 2^62) ns ({MAX_TIMESTAMP_NS}: no sum or difference of two overflows 64 bits) and no record",
        f"may last longer than 2^48 ns ({MAX_DURATION_NS} ns, about 3.3 days). A NULL end (a record still",
        "open when the capture stopped) and end < start are in the domain: the metrics exclude and count",
        "those themselves. Text columns are read as text whatever the profile stored (invalid UTF-8",
        "becomes U+FFFD).",
        "",
    ]
    for name, cols in RELATIONS.items():
        lines += [f"## {name}", "", "| column | type | meaning |", "|---|---|---|"]
        lines += [f"| `{c.name}` | {c.type} | {c.meaning} |" for c in cols]
        checks = DOMAINS[name].checks
        lines.append("")
        if checks:
            lines += ["Domain (a row failing a check is dropped and counted):", ""]
            lines += [f"- {c.label}: a row must satisfy `{c.sql}`" for c in checks]
        else:
            lines.append("Domain: no checks.")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(render_relations_md(), end="")
