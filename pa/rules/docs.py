"""Generate the tables of docs/rules.md from the code and the built-in packs (one source of truth).

Two generated blocks: the expression language's operators and functions (from the registry in
pa.rules.functions) and the rule and param tables (from the built-in packs).
`python -m pa.rules.docs` rewrites the blocks between their BEGIN/END markers in docs/rules.md;
a test fails when a committed block differs from what the code says.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pa.rules.loader import load_ruleset

BEGIN = "<!-- BEGIN GENERATED RULE TABLE (python -m pa.rules.docs) -->"
END = "<!-- END GENERATED RULE TABLE -->"
FN_BEGIN = "<!-- BEGIN GENERATED FUNCTION TABLE (python -m pa.rules.docs) -->"
FN_END = "<!-- END GENERATED FUNCTION TABLE -->"


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


def render_function_table() -> str:
    """Markdown tables of the expression language's operators and functions, from the registry."""
    from pa.rules.functions import FUNCTIONS, OPERATORS

    lines = ["| operator / form | meaning |", "|---|---|"]
    lines += [f"| `{_cell(o.syntax)}` | {_cell(o.description)} |" for o in OPERATORS]
    lines += ["", "| function | meaning |", "|---|---|"]
    lines += [f"| `{_cell(f.signature)}` | {_cell(f.description)} |"
              for f in sorted(FUNCTIONS.values(), key=lambda f: f.name)]
    return "\n".join(lines)


def _replace_block(text: str, begin: str, end: str, body: str) -> str:
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def update(doc: Path) -> bool:
    """Rewrite the generated blocks of `doc`; return True when it changed."""
    text = doc.read_text(encoding="utf-8")
    new = _replace_block(text, BEGIN, END, render_rule_table())
    new = _replace_block(new, FN_BEGIN, FN_END, render_function_table())
    if new != text:
        doc.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":  # pragma: no cover
    default = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    print(f"{target}: {'updated' if update(target) else 'up to date'}")
