"""A small sandboxed expression language for rule packs (never Python `eval`).

Expressions are parsed with `ast` and only a whitelist of node types is accepted: numbers, strings,
booleans, `null`/`None`, names, dotted fact paths (`summary.sync.cpu_blocked_ns`), integer or string
subscripts, arithmetic (+ - * / // %), unary minus and `not`, comparisons (including `in`),
`and`/`or`, `a if c else b`, list literals, and calls to the fixed function table of
pa.rules.functions (where each function's semantics are documented).
Attribute names starting with `_` are rejected, and attribute access never calls `getattr`: the
evaluator only looks keys up in the plain dicts and lists built from `summary.model_dump()`, so an
expression can see data and nothing else.

Null semantics (why: "could not look" must never read as "healthy"):
- a missing fact, or any arithmetic with null, is null; division by zero is null;
- comparisons with null are *unknown* (null), and `and`/`or`/`not` follow three-valued (Kleene)
  logic, so `x > 3 or True` is True but `x > 3 and True` is null when x is null;
- the rule engine turns a `when` that ends unknown into a skipped rule naming the null inputs.
Use `coalesce(x, 0)` where a missing value legitimately means zero. A division by zero is recorded
among the scope's nulls ("`a / b` (division by zero)"), so a rule that cannot decide says why.

Cost is bounded, so a hostile pack cannot make pa run for minutes: an expression has at most
MAX_SOURCE_CHARS characters, MAX_NODES syntax nodes and MAX_DEPTH nesting; an integer result may
not exceed MAX_INT_BITS bits (`x * x` squared 29 times would otherwise build a number of hundreds
of megabytes), a string result MAX_STRING_CHARS characters, and a float result must be finite.
Each is an ExprError naming the expression.
"""

from __future__ import annotations

import ast
import math
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pa.errors import closest
from pa.rules.functions import PER_RECORD, ExprError, function_table, items

MAX_SOURCE_CHARS = 4000
MAX_NODES = 500
MAX_DEPTH = 64
MAX_INT_BITS = 256
MAX_STRING_CHARS = 10_000


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_CONST_NAMES = {"null": None, "None": None, "true": True, "True": True, "false": False, "False": False}
_ALLOWED = (ast.Expression, ast.Constant, ast.Name, ast.Attribute, ast.Subscript, ast.BinOp, ast.UnaryOp,
            ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.List, ast.Tuple, ast.Load, ast.And, ast.Or,
            ast.Not, ast.USub, ast.UAdd, *_BINOPS, *_CMPOPS)


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# The function table lives in pa.rules.functions (one entry per function, with its documentation).
FUNCTIONS: dict[str, Callable[..., Any]] = function_table()
_PER_RECORD = PER_RECORD


@dataclass(frozen=True)
class Expr:
    """A parsed, whitelisted expression and the names and dotted paths it references."""

    source: str
    tree: ast.Expression
    names: frozenset[str]
    paths: frozenset[str]
    size: int = 1   # syntax nodes: what one evaluation costs, for the pack's cost bound
    # per-record expressions of sum_over(...), by source; their bare names are record fields first,
    # so they are listed apart (a metric named there is still a dependency of this expression)
    per_record: Mapping[str, Expr] = field(default_factory=dict)
    record_names: frozenset[str] = frozenset()


def _depth(node: ast.AST) -> int:
    """Nesting depth of `node`, iteratively (a recursive walk is what a hostile expression would break)."""
    deepest = 0
    stack = [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_DEPTH:
            break
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(n))
    return deepest


def _dotted(node: ast.AST) -> str | None:
    """'a.b.c' for a pure attribute chain rooted at a Name, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def compile_expr(source: str | int | float | bool) -> Expr:
    """Parse `source` and reject anything outside the whitelist; raise ExprError with the reason."""
    if isinstance(source, (int, float, bool)):
        source = repr(source)
    if not isinstance(source, str) or not source.strip():
        raise ExprError("empty expression")
    if len(source) > MAX_SOURCE_CHARS:
        raise ExprError(f"expression of {len(source)} characters is longer than the {MAX_SOURCE_CHARS} allowed")
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"syntax error in {source!r}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise ExprError(f"expression {source[:60]!r}... cannot be parsed ({type(exc).__name__})") from None
    if _depth(tree) > MAX_DEPTH:
        raise ExprError(f"expression nested more than {MAX_DEPTH} levels deep: {source[:60]!r}...")
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ExprError(f"expression of {len(nodes)} syntax nodes is larger than the {MAX_NODES} allowed: "
                        f"{source[:60]!r}...")
    names: set[str] = set()
    paths: set[str] = set()
    for node in nodes:
        if not isinstance(node, _ALLOWED):
            raise ExprError(f"{type(node).__name__} is not allowed in {source!r}")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ExprError(f"attribute {node.attr!r} is not allowed (leading underscore) in {source!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, bool, type(None))):
            raise ExprError(f"constant {node.value!r} is not allowed in {source!r}")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                fname = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
                raise ExprError(f"unknown function {fname!r} in {source!r}; "
                                f"{closest(fname, FUNCTIONS, '`pa rules functions` lists them')}")
            if node.keywords:
                raise ExprError(f"keyword arguments are not allowed in {source!r}")
            if node.func.id in _PER_RECORD and (
                    len(node.args) != 2 or not isinstance(node.args[1], ast.Constant)
                    or not isinstance(node.args[1].value, str)):
                raise ExprError(f"{node.func.id}(list, 'expression') needs a list and a quoted expression "
                                f"in {source!r}")
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            raise ExprError(f"only constant subscripts are allowed in {source!r}")
    # Collect referenced names and the longest dotted chains (skip function names).
    func_names = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in inner:
            d = _dotted(node)
            if d is not None:
                paths.add(d)
                sub: ast.AST = node.value
                while isinstance(sub, ast.Attribute):
                    inner.add(id(sub))
                    sub = sub.value
                inner.add(id(sub))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and id(node) not in func_names and id(node) not in inner
                and node.id not in _CONST_NAMES):
            names.add(node.id)
    # A path may be a prefix of a longer one seen first; keep only maximal chains.
    paths = {p for p in paths if not any(q != p and q.startswith(p + ".") for q in paths)}
    per_record: dict[str, Expr] = {}
    record_names: set[str] = set()
    size = len(nodes)
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _PER_RECORD:
            inner_src = node.args[1].value  # type: ignore[attr-defined]
            sub_expr = compile_expr(inner_src)
            per_record[inner_src] = sub_expr
            record_names |= sub_expr.names | {p.split(".")[0] for p in sub_expr.paths} | sub_expr.record_names
            size += sub_expr.size   # evaluated once per record: at least its own size again
    return Expr(source=source.strip(), tree=tree, names=frozenset(names), paths=frozenset(paths), size=size,
                per_record=per_record, record_names=frozenset(record_names))


@dataclass
class Scope:
    """What an expression can see: bare names (params, metrics) and fact roots (summary, extras).

    `nulls` collects the names and paths that resolved to null during evaluation, so the engine can
    say *which* input was missing when a rule cannot decide.
    """

    names: Mapping[str, Any]
    roots: Mapping[str, Any]
    nulls: list[str] = field(default_factory=list)

    def lookup_name(self, name: str) -> Any:
        """Resolve a bare name (a param or metric); unknown names are errors, not nulls."""
        if name in _CONST_NAMES:
            return _CONST_NAMES[name]
        if name in self.names:
            v = self.names[name]
            if v is None:
                self.nulls.append(name)
            return v
        if name in self.roots:
            return self.roots[name]
        raise ExprError(f"unknown name {name!r}")

    def lookup_path(self, path: str) -> Any:
        """Resolve a dotted path through plain dicts; absent keys and null parents give null."""
        root, *rest = path.split(".")
        if root in self.roots:
            cur: Any = self.roots[root]
        elif root in self.names:
            cur = self.names[root]
        else:
            # An unknown root (e.g. cross_rank without multi-rank facts) is a missing fact.
            self.nulls.append(path)
            return None
        for part in rest:
            if not isinstance(cur, Mapping) or cur.get(part) is None:
                self.nulls.append(path)
                return None
            cur = cur[part]
        return cur


def _truth(v: Any) -> bool | None:
    return None if v is None else bool(v)


def evaluate(expr: Expr, scope: Scope) -> Any:
    """Evaluate a compiled expression in `scope` with null propagation; raise ExprError on bad types."""
    try:
        return _ev(expr.tree.body, scope, expr.per_record)
    except ExprError:
        raise
    except (TypeError, ValueError, OverflowError, IndexError, KeyError) as exc:
        raise ExprError(f"cannot evaluate {expr.source!r}: {exc}") from None


def _check_operands(node: ast.BinOp, a: Any, b: Any) -> None:
    """Refuse an operation whose result would exceed the bounds, before computing it."""
    if isinstance(node.op, ast.Mult) and isinstance(a, int) and isinstance(b, int) and \
            a.bit_length() + b.bit_length() > MAX_INT_BITS + 1:
        raise ExprError(f"integer result of `{ast.unparse(node)}` would exceed {MAX_INT_BITS} bits")
    if isinstance(a, str) and isinstance(b, str) and len(a) + len(b) > MAX_STRING_CHARS:
        raise ExprError(f"string result of `{ast.unparse(node)}` would exceed {MAX_STRING_CHARS} characters")


def _checked_result(node: ast.AST, value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise ExprError(f"integer result of `{ast.unparse(node)}` exceeds {MAX_INT_BITS} bits")
    if isinstance(value, float) and not math.isfinite(value):
        raise ExprError(f"result of `{ast.unparse(node)}` is not a finite number")
    return value


def _sum_over(xs: Any, inner: Expr, s: Scope) -> Any:
    """Σ over records of `inner` evaluated with the record's fields as names (null terms skipped)."""
    if xs is None:
        return None
    total: Any = 0
    for rec in items(xs):
        if not isinstance(rec, Mapping):
            raise ExprError(f"sum_over: expected records, got {type(rec).__name__}")
        names: Mapping[str, Any] = ChainMap(dict(rec), s.names)  # type: ignore[arg-type]
        v = _ev(inner.tree.body, Scope(names=names, roots=s.roots), inner.per_record)
        if v is None:
            continue
        if not _num(v):
            raise ExprError(f"sum_over: {inner.source!r} gave a {type(v).__name__}, not a number")
        total += v
    return total


def _ev(node: ast.AST, s: Scope, pr: Mapping[str, Expr]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return s.lookup_name(node.id)
    if isinstance(node, ast.Attribute):
        d = _dotted(node)
        if d is not None:
            return s.lookup_path(d)
        base = _ev(node.value, s, pr)
        if base is None:
            return None
        if not isinstance(base, Mapping):
            raise ExprError(f"cannot read field {node.attr!r} of a {type(base).__name__}")
        return base.get(node.attr)
    if isinstance(node, ast.Subscript):
        base = _ev(node.value, s, pr)
        key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        if base is None:
            return None
        if isinstance(base, list) and isinstance(key, int) and not isinstance(key, bool):
            return base[key] if -len(base) <= key < len(base) else None
        if isinstance(base, Mapping):
            return base.get(key)
        raise ExprError(f"cannot subscript a {type(base).__name__} with {key!r}")
    if isinstance(node, ast.UnaryOp):
        v = _ev(node.operand, s, pr)
        if isinstance(node.op, ast.Not):
            t = _truth(v)
            return None if t is None else not t
        if v is None:
            return None
        if not _num(v):
            raise ExprError(f"unary minus on a {type(v).__name__}")
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _ev(node.left, s, pr), _ev(node.right, s, pr)
        if a is None or b is None:
            return None
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
            s.nulls.append(f"`{ast.unparse(node)}` (division by zero)")
            return None
        if not (_num(a) and _num(b)) and not (isinstance(node.op, ast.Add) and isinstance(a, str)
                                                and isinstance(b, str)):
            raise ExprError(f"arithmetic on {type(a).__name__} and {type(b).__name__}")
        _check_operands(node, a, b)
        return _checked_result(node, _BINOPS[type(node.op)](a, b))
    if isinstance(node, ast.BoolOp):
        # Kleene logic: a decisive operand wins even if another is unknown.
        is_and = isinstance(node.op, ast.And)
        unknown = False
        for sub in node.values:
            t = _truth(_ev(sub, s, pr))
            if t is None:
                unknown = True
            elif t is not is_and:
                return t
        return None if unknown else is_and
    if isinstance(node, ast.Compare):
        left = _ev(node.left, s, pr)
        result: bool | None = True
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _ev(comp, s, pr)
            if left is None or right is None:
                result = None
            elif result is not None:
                if isinstance(op, (ast.In, ast.NotIn)) and not isinstance(right, (list, tuple, str)):
                    raise ExprError(f"'in' needs a list or string, got {type(right).__name__}")
                if not _CMPOPS[type(op)](left, right):
                    return False
            left = right
        return result
    if isinstance(node, ast.IfExp):
        t = _truth(_ev(node.test, s, pr))
        if t is None:
            return None
        return _ev(node.body if t else node.orelse, s, pr)
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        if node.func.id in _PER_RECORD:
            return _sum_over(_ev(node.args[0], s, pr), pr[node.args[1].value], s)  # type: ignore[attr-defined]
        args = [_ev(a, s, pr) for a in node.args]
        return FUNCTIONS[node.func.id](*args)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_ev(e, s, pr) for e in node.elts]
    raise ExprError(f"{type(node).__name__} is not allowed")  # pragma: no cover - compile_expr rejects it
