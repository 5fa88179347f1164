"""The function and operator registry of the rule expression language: one place for code and docs.

Every function a pack may call is one `Function` entry: its name, its signature as a rule author
writes it, the implementation and a description of its semantics (null handling, matching rules).
`pa rules functions` prints the registry; `python -m pa.rules.docs` writes it into
docs/rules.md, and a test fails when the committed table differs, so a function added without a
description cannot reach the docs silently. The operators, which the parser handles itself, are
described in OPERATORS the same way.

All functions are pure over plain data (numbers, strings, lists of dict records) and null-tolerant:
a null where a value is needed gives null rather than an error, because "could not look" must never
read as "healthy".
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class ExprError(Exception):
    """An expression that cannot be parsed or evaluated (wrong types, unknown function, over a bound)."""


@dataclass(frozen=True)
class Function:
    """One callable of the expression language: what a rule author writes and what it does."""

    name: str
    signature: str
    description: str
    impl: Callable[..., Any]


@dataclass(frozen=True)
class Operator:
    """One operator or literal form the parser accepts, with its null semantics."""

    syntax: str
    description: str


COMPARE_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq,
    "!=": operator.ne,
}


def _min(*a: Any) -> Any:
    return None if not a or any(x is None for x in a) else min(a)


def _max(*a: Any) -> Any:
    return None if not a or any(x is None for x in a) else max(a)


def _abs(x: Any) -> Any:
    return None if x is None else abs(x)


def _coalesce(*a: Any) -> Any:
    return next((x for x in a if x is not None), None)


def _present(x: Any) -> bool:
    return x is not None


def _clamp(x: Any, lo: Any = 0.0, hi: Any = 1.0) -> Any:
    return None if x is None or lo is None or hi is None else min(max(x, lo), hi)


def _safe_div(a: Any, b: Any) -> Any:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _pct(a: Any, b: Any) -> Any:
    q = _safe_div(a, b)
    return None if q is None else q * 100.0


def items(xs: Any) -> list[Any]:
    """The records of a list argument ([] for null); anything else is an ExprError."""
    if xs is None:
        return []
    if not isinstance(xs, list):
        raise ExprError(f"expected a list, got {type(xs).__name__}")
    return xs


def field_of(item: Any, name: str) -> Any:
    """Field `name` of a record (null when absent); a non-record is an ExprError."""
    if not isinstance(item, Mapping):
        raise ExprError(f"expected a record with field {name!r}, got {type(item).__name__}")
    return item.get(name)


def _count(xs: Any) -> Any:
    return None if xs is None else len(items(xs))


def _sum_of(xs: Any, name: str) -> Any:
    if xs is None:
        return None
    vals = [field_of(i, name) for i in items(xs)]
    return sum(v for v in vals if v is not None)


def _max_of(xs: Any, name: str) -> Any:
    vals = [v for v in (field_of(i, name) for i in items(xs)) if v is not None]
    return max(vals) if vals else None


def _min_of(xs: Any, name: str) -> Any:
    vals = [v for v in (field_of(i, name) for i in items(xs)) if v is not None]
    return min(vals) if vals else None


def _top(xs: Any, name: str) -> Any:
    best = None
    for i in items(xs):
        v = field_of(i, name)
        if v is not None and (best is None or v > field_of(best, name)):
            best = i
    return best


def _first(xs: Any) -> Any:
    recs = items(xs)
    return recs[0] if recs else None


def _select(xs: Any, name: str, *values: Any) -> Any:
    return None if xs is None else [i for i in items(xs) if field_of(i, name) in values]


def _select_match(xs: Any, name: str, *needles: str) -> Any:
    if xs is None:
        return None
    low = [str(n).lower() for n in needles]
    out = []
    for i in items(xs):
        v = field_of(i, name)
        if isinstance(v, str) and any(n in v.lower() for n in low):
            out.append(i)
    return out


def _select_where(xs: Any, name: str, op: str, value: Any) -> Any:
    if op not in COMPARE_OPS:
        raise ExprError(f"select_where: unknown operator {op!r}; use one of {', '.join(COMPARE_OPS)}")
    fn = COMPARE_OPS[op]
    if xs is None:
        return None
    return [i for i in items(xs) if field_of(i, name) is not None and value is not None
            and fn(field_of(i, name), value)]


def _flatten(xs: Any, name: str) -> Any:
    if xs is None:
        return None
    out: list[Any] = []
    for i in items(xs):
        out.extend(items(field_of(i, name)))
    return out


def _get(rec: Any, key: Any, default: Any = None) -> Any:
    if rec is None:
        return default
    if not isinstance(rec, Mapping):
        raise ExprError(f"get: expected a mapping, got {type(rec).__name__}")
    v = rec.get(key)
    return default if v is None else v


def _sqrt(x: Any) -> Any:
    return None if x is None or x < 0 else math.sqrt(x)


def _per_record_placeholder(*_: Any) -> Any:
    """sum_over is evaluated by the evaluator itself: its second argument is an expression."""
    return None


_REGISTRY: tuple[Function, ...] = (
    Function("abs", "abs(x)", "Absolute value; null when x is null.", _abs),
    Function("clamp", "clamp(x, lo=0, hi=1)",
             "The value x limited to [lo, hi]; null when any argument is null.", _clamp),
    Function("coalesce", "coalesce(a, b, ...)",
             "The first non-null argument; null when all are null. Use it where absence really means "
             "a value, e.g. coalesce(summary.mpi.total_ns, 0).", _coalesce),
    Function("count", "count(list)", "Number of records of a list; null when the list is null (not captured).",
             _count),
    Function("first", "first(list)", "The first record, or null for an empty or null list.", _first),
    Function("flatten", "flatten(list, 'field')",
             "The list-valued field of every record concatenated, in order (e.g. the largest gaps of every "
             "device); null when the list is null; a record whose field is null adds nothing.", _flatten),
    Function("get", "get(mapping, 'key', default=null)",
             "The value under a key of a mapping (e.g. get(summary.mpi.by_kind, 'collective')), or default "
             "when the mapping is null or the value is absent or null.", _get),
    Function("max", "max(a, b, ...)", "Largest argument; null when any argument is null.", _max),
    Function("max_of", "max_of(list, 'field')",
             "Largest non-null value of a field over the records; null for an empty or null list.", _max_of),
    Function("min", "min(a, b, ...)", "Smallest argument; null when any argument is null.", _min),
    Function("min_of", "min_of(list, 'field')",
             "Smallest non-null value of a field over the records; null for an empty or null list.", _min_of),
    Function("pct", "pct(a, b)", "The percentage 100 × a / b; null when a or b is null or b is 0.", _pct),
    Function("present", "present(x)",
             "True when x is not null, else false: never null itself, so it can guard other terms "
             "(present(summary.mpi) and ...).", _present),
    Function("safe_div", "safe_div(a, b)", "The quotient a / b; null when a or b is null or b is 0 (never an error).",
             _safe_div),
    Function("select", "select(list, 'field', v1, v2, ...)",
             "The records whose field equals one of the values exactly (== on strings is case-sensitive); "
             "null when the list is null.", _select),
    Function("select_match", "select_match(list, 'field', 'text', ...)",
             "The records whose text field contains one of the texts as a case-insensitive substring "
             "(not a regular expression and not a glob: 'gemm' matches 'volta_sgemm_128x64', '.*' matches "
             "only a literal '.*'); records whose field is null or not text never match; null when the "
             "list is null. `pa rules validate --profile` warns when a call matches nothing.", _select_match),
    Function("select_where", "select_where(list, 'field', 'op', value)",
             "The records whose field compares true against value with op, one of > >= < <= == !=; "
             "records whose field is null, or a null value, never match; an unknown op is an error.",
             _select_where),
    Function("sqrt", "sqrt(x)", "Square root; null when x is null or negative.", _sqrt),
    Function("sum_of", "sum_of(list, 'field')",
             "Sum of a field over the records, null values skipped (0 for an empty list); null when the "
             "list is null.", _sum_of),
    Function("sum_over", "sum_over(list, 'expression')",
             "Sum of a quoted expression evaluated once per record, the record's fields visible as bare "
             "names before params and metrics; null results are skipped; null when the list is null. "
             "E.g. sum_over(summary.devices, 'min(exposed_copy_ns, kernel_only_ns)') takes the minimum "
             "per device before adding up.", _per_record_placeholder),
    Function("top", "top(list, 'field')",
             "The record with the largest non-null field value (the first one on ties, so the result is "
             "deterministic); null for an empty list.", _top),
)

FUNCTIONS: dict[str, Function] = {f.name: f for f in _REGISTRY}

# Functions whose second argument is an expression (a string constant) evaluated once per record.
PER_RECORD = frozenset({"sum_over"})

OPERATORS: tuple[Operator, ...] = (
    Operator("42, 1.5, 'text', true, false, null",
             "Literals; True/False/None are accepted as spellings of true/false/null."),
    Operator("name", "A param or metric by name; an unknown name is a load error."),
    Operator("summary.a.b, cross_rank.x, phase.x, facts.x",
             "A dotted fact path through the summary (or a root filled by a later stage); an absent key, "
             "a null parent or an unknown root gives null. Names starting with _ are rejected."),
    Operator("x[0], x['key']", "Constant subscript of a list (out of range: null) or a mapping (absent: null)."),
    Operator("[a, b, ...]", "List literal (for `in`)."),
    Operator("+ - * / // %",
             "Arithmetic on numbers (+ also joins two strings); any null operand gives null; division or "
             "modulo by zero gives null and is named among the rule's null inputs."),
    Operator("-x", "Negation; null stays null."),
    Operator("== != < <= > >=",
             "Comparison; with a null operand the result is unknown (null). Chains (0 < x < 1) are "
             "allowed."),
    Operator("x in list, x not in list", "Membership in a list or substring of a string; null operand: unknown."),
    Operator("and, or, not",
             "Three-valued (Kleene) logic: a decisive operand wins (x > 1 or true is true, x > 1 and "
             "false is false), otherwise a null operand makes the result unknown."),
    Operator("a if cond else b", "Conditional; an unknown cond gives null."),
)


def function_table() -> dict[str, Callable[..., Any]]:
    """Name → implementation, as the evaluator calls them."""
    return {f.name: f.impl for f in _REGISTRY}
