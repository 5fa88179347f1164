"""Generate the rule and param tables of docs/rules.md from the built-in packs (one source of truth).

`python -m engine.rules.docs` rewrites the block between the BEGIN/END markers in docs/rules.md;
a test fails when the committed block differs from what the packs say.
"""

from __future__ import annotations

import sys
from pathlib import Path

from engine.rules.loader import load_ruleset

BEGIN = "<!-- BEGIN GENERATED RULE TABLE (python -m engine.rules.docs) -->"
END = "<!-- END GENERATED RULE TABLE -->"


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def render_rule_table() -> str:
    """Markdown tables of every built-in rule and param, in id / name order."""
    rs = load_ruleset()
    lines = ["| id | pack | bottleneck | bucket | confidence | when | description |",
             "|---|---|---|---|---|---|---|"]
    for r in sorted(rs.rules.values(), key=lambda r: r.id):
        lines.append(f"| {r.id} | {r.pack} | {r.bottleneck_type} | {r.bucket} | {r.confidence} | "
                     f"`{_cell(r.when.source)}` | {_cell(r.description)} |")
    lines += ["", "What each rule claims (`claim`), the time it claims (`runtime_fraction`) and why the trace "
                  "proves that time recoverable (`counterfactual`):", "",
              "| id | claim | runtime_fraction | counterfactual |", "|---|---|---|---|"]
    for r in sorted(rs.rules.values(), key=lambda r: r.id):
        frac = f"`{_cell(r.runtime_fraction.source)}`" if r.runtime_fraction is not None else "—"
        lines.append(f"| {r.id} | {r.claim} | {frac} | {_cell(r.counterfactual or '')} |")
    lines += ["", "| param | value | unit | meaning | source |", "|---|---|---|---|---|"]
    for p in sorted(rs.params.values(), key=lambda p: p.name):
        lines.append(f"| {p.name} | {p.value} | {p.unit or ''} | {_cell(p.description)} | "
                     f"{_cell(p.source or '')} |")
    return "\n".join(lines)


def update(doc: Path) -> bool:
    """Rewrite the generated block of `doc`; return True when it changed."""
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{render_rule_table()}\n{END}{tail}"
    if new != text:
        doc.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":  # pragma: no cover
    default = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    print(f"{target}: {'updated' if update(target) else 'up to date'}")
