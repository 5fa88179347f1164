"""The expression sandbox: whitelist, null propagation, three-valued logic."""

from __future__ import annotations

from typing import Any

import pytest

from pa.rules.expr import ExprError, Scope, compile_expr, evaluate


def ev(src: str, names: dict[str, Any] | None = None, **roots: Any) -> Any:
    return evaluate(compile_expr(src), Scope(names=names or {}, roots=roots))


@pytest.mark.parametrize("src", [
    "__import__('os')", "(lambda: 1)()", "[x for x in y]", "summary.__class__",
    "getattr(summary, 'x')", "open('f')", "summary._private", "a ** 2", "{'a': 1}", "f'{a}'",
    "summary.kernels[a]", "min(a, key=b)",
])
def test_rejects_outside_whitelist(src: str) -> None:
    with pytest.raises(ExprError):
        compile_expr(src)


def test_arithmetic_and_null_propagation() -> None:
    s = {"sync": {"cpu_blocked_ns": 50, "x": None}, "span_ns": 200}
    assert ev("summary.sync.cpu_blocked_ns / summary.span_ns", summary=s) == 0.25
    assert ev("summary.sync.x + 1", summary=s) is None
    assert ev("summary.mpi.total_ns * 2", summary=s) is None
    assert ev("1 / 0") is None and ev("safe_div(1, 0)") is None
    assert ev("coalesce(summary.mpi.total_ns, 0) + 1", summary=s) == 1
    assert ev("-a", {"a": 3}) == -3


def test_three_valued_logic() -> None:
    n = {"x": None, "t": True, "f": False}
    assert ev("x > 3", n) is None
    assert ev("x > 3 or t", n) is True
    assert ev("x > 3 and f", n) is False
    assert ev("x > 3 and t", n) is None
    assert ev("not (x > 3)", n) is None
    assert ev("1 if x > 3 else 2", n) is None


def test_functions_over_records() -> None:
    ks = [{"name": "a", "total_ns": 5, "cv": 2.0}, {"name": "b", "total_ns": 9, "cv": None}]
    s = {"kernels": ks, "gaps": [{"largest": [{"d": 1}]}, {"largest": [{"d": 2}]}]}
    assert ev("top(summary.kernels, 'total_ns').name", summary=s) == "b"
    assert ev("sum_of(summary.kernels, 'total_ns')", summary=s) == 14
    assert ev("count(select_where(summary.kernels, 'cv', '>=', 1))", summary=s) == 1
    assert ev("sum_of(flatten(summary.gaps, 'largest'), 'd')", summary=s) == 3
    assert ev("summary.kernels[5]", summary=s) is None
    assert ev("clamp(1.7)") == 1.0 and ev("pct(1, 4)") == 25.0
    assert ev("first(summary.kernels).name", summary=s) == "a"


def test_unknown_name_and_type_errors() -> None:
    with pytest.raises(ExprError, match="unknown name"):
        ev("nope + 1")
    with pytest.raises(ExprError):
        ev("'a' * 2")
    with pytest.raises(ExprError, match="unknown function"):
        compile_expr("eval('1')")


def test_names_and_paths_are_collected() -> None:
    e = compile_expr("summary.sync.cpu_blocked_ns / span + top(summary.kernels, 'x').name")
    assert e.names == {"span"}
    assert e.paths == {"summary.sync.cpu_blocked_ns", "summary.kernels"}
