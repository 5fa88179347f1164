"""Rule templates compute no numbers: every number in a sentence is a metric the engine computed and cites.

The templates of every built-in pack are parsed into Jinja's AST and searched for arithmetic
(+ - * / // % **, unary minus) and for filters that compute a number (length, count, sum, round,
abs, min, max, int, float). A sentence that needs a derived number gets a metric in the pack instead,
listed in the evidence's `cite`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from jinja2 import Environment, nodes

from pa.rules.loader import builtin_pack_paths

ARITHMETIC = (nodes.Add, nodes.Sub, nodes.Mul, nodes.Div, nodes.FloorDiv, nodes.Mod, nodes.Pow, nodes.Neg)
COMPUTING_FILTERS = {"length", "count", "sum", "round", "abs", "min", "max", "int", "float"}


def _templates(node: object, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, str):
        if "{{" in node or "{%" in node:
            yield where, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _templates(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _templates(value, f"{where}[{i}]")


def _rule_templates() -> list[tuple[str, str]]:
    out = []
    for path in builtin_pack_paths():
        pack = yaml.safe_load(path.read_text())
        for rule in pack.get("hypotheses") or []:
            out += list(_templates(rule, f"{path.name}:{rule['id']}"))
    return out


def arithmetic_in(text: str) -> list[str]:
    """What in `text` computes a number: operator node names and computing filter names."""
    ast = Environment().parse(text)
    found = [type(n).__name__ for n in ast.find_all(ARITHMETIC)]
    found += [f"| {f.name}" for f in ast.find_all(nodes.Filter) if f.name in COMPUTING_FILTERS]
    return found


def test_the_check_finds_arithmetic() -> None:
    assert arithmetic_in("{{ (a / b) | pct }}") == ["Div"]
    assert arithmetic_in("{{ (span - last) | dur }} and {{ xs | length }}") == ["Sub", "| length"]
    assert arithmetic_in("{{ -x }} {{ x | round }}") == ["Neg", "| round"]
    assert arithmetic_in("{{ a_frac | pct }} of {{ summary.span_ns | dur }}, {{ vendor.name }}") == []


def test_templates_are_found() -> None:
    found = _rule_templates()
    assert len(found) > 50
    assert any(where.startswith("phase.yaml:GPU-PHASE-001") for where, _ in found)


@pytest.mark.parametrize(("where", "text"), _rule_templates(), ids=lambda v: v if "{" not in str(v) else "")
def test_no_rule_template_computes_a_number(where: str, text: str) -> None:
    assert arithmetic_in(text) == [], f"{where}: compute this number as a metric and cite it"


def test_builtin_packs_exist() -> None:
    assert all(isinstance(p, Path) and p.is_file() for p in builtin_pack_paths())
