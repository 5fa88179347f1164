"""The read-only, bounded tools the model may call, as neutral JSON schemas plus a dispatcher.

Tools: `summary_table` (top kernels, gaps, copies, syncs, streams, markers, MPI, phases and ranks
from the ProfileSummary and the per-rank rows, at most `MAX_TABLE_ROWS` rows), `explain_rule` (why
a rule fired, stayed silent, was skipped, disabled or suppressed, from its RuleOutcome),
`table_schema` (the profile's tables, or one table's CREATE statement) and `sql_query` (see
engine.llm.sql_tool). Every result is a JSON-ready dict; every string in it passes the redactor
before it is sent, and placeholders in arguments are restored before use.

Tool results are also the only source, besides the summary, against which the engine checks the
numbers of the final answer, so the dispatcher records each result under its call id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from engine.llm.redact import Redactor
from engine.llm.sql_tool import SqlSandbox

MAX_TABLE_ROWS = 25
TABLES = ("kernels", "gaps", "copies", "syncs", "streams", "markers", "mpi", "phases", "ranks")
# What each RuleOutcome status means, said to the model with the rule's own reason and values.
STATUS_MEANING = {
    "fired": "the rule's condition `when` was true on this profile: it produced a candidate hypothesis",
    "silent": "the rule was checked and its condition `when` was false: healthy for what it tests",
    "skipped": "the rule could not be decided (a required input is missing or null): not checked, "
               "which is not the same as healthy",
    "disabled": "a rule pack or site configuration disabled the rule: not checked",
    "suppressed": "the rule's condition held, but a rule that explains the same time fired and "
                  "suppresses it (its `suppresses:` relation): no separate hypothesis",
}

TOOL_SPECS: list[dict[str, Any]] = [
    {"name": "summary_table",
     "description": "Rows of one table of the profile summary (already computed, cheap). "
                    f"At most {MAX_TABLE_ROWS} rows, largest first.",
     "parameters": {"type": "object", "properties": {
         "table": {"type": "string", "enum": list(TABLES)},
         "limit": {"type": "integer", "minimum": 1, "maximum": MAX_TABLE_ROWS}},
         "required": ["table"]}},
    {"name": "explain_rule",
     "description": "Why one rule fired or did not fire on this profile: its status (fired, silent, "
                    "skipped, disabled, suppressed), what that means, its reason and the values it saw. "
                    "Takes a rule id or a candidate id (H1..); without one, lists every rule's status.",
     "parameters": {"type": "object", "properties": {"rule_id": {"type": "string"}}}},
    {"name": "table_schema",
     "description": "The profile's SQLite tables, or the CREATE statement of one table.",
     "parameters": {"type": "object", "properties": {"table": {"type": "string"}}}},
    {"name": "sql_query",
     "description": "Run one read-only SELECT/WITH statement on the profile database. Time-limited, "
                    "row- and size-capped; the result says when a cap was hit. Aggregate in SQL.",
     "parameters": {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}},
]


def _rows(items: list[Any], limit: int, **drop: Any) -> list[dict[str, Any]]:
    return [i.model_dump(exclude=set(drop)) for i in items[:limit]]


@dataclass
class ToolBox:
    """Runs tool calls against one summary, rule result and (optionally) a SQL sandbox."""

    summary: Any
    rule_result: Any
    redactor: Redactor
    sandbox: SqlSandbox | None = None
    ranks: list[Any] | None = None  # per-rank rows when several profiles are analysed together
    results: dict[str, Any] = field(default_factory=dict)
    calls: int = 0

    def run(self, call_id: str, name: str, raw_args: str | dict[str, Any] | None) -> str:
        """Execute one call; return the redacted JSON text sent back. Never raises."""
        self.calls += 1
        try:
            args = json.loads(raw_args) if isinstance(raw_args, str) else dict(raw_args or {})
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except (ValueError, TypeError) as exc:
            result: Any = {"error": f"malformed arguments for {name}: {exc}"}
        else:
            try:
                result = self._dispatch(name, self.redactor.restore(args))
            except (KeyError, TypeError, ValueError) as exc:
                result = {"error": f"{name}: {exc}"}
        self.results[call_id] = result  # local, unredacted: used to ground numbers
        return json.dumps(self._redact(name, result), default=str)

    def _redact(self, name: str, result: Any) -> Any:
        if not self.redactor.enabled:
            return result
        if name == "sql_query" and isinstance(result, dict) and "rows" in result:
            out = dict(result)
            out["rows"] = [[self.redactor.cell(c) for c in row] for row in result["rows"]]
            out["columns"] = self.redactor.obj(result["columns"])
            return self.redactor.obj(out)
        return self.redactor.obj(result)

    def _dispatch(self, name: str, args: dict[str, Any]) -> Any:
        if name == "summary_table":
            return self.summary_table(str(args["table"]), int(args.get("limit") or MAX_TABLE_ROWS))
        if name == "explain_rule":
            return self.explain_rule(str(args["rule_id"]) if args.get("rule_id") else None)
        if name == "table_schema":
            if self.sandbox is None:
                return {"error": "the profile database is not available to tools in this run"}
            return self.sandbox.schema(args.get("table"))
        if name == "sql_query":
            if self.sandbox is None:
                return {"error": "the profile database is not available to tools in this run"}
            return self.sandbox.query(self.redactor.restore_sql(str(args["sql"])))
        return {"error": f"unknown tool {name!r}; tools: {[t['name'] for t in TOOL_SPECS]}"}

    def summary_table(self, table: str, limit: int) -> Any:
        """Rows of one summary table, capped at MAX_TABLE_ROWS."""
        s = self.summary
        limit = max(1, min(limit, MAX_TABLE_ROWS))
        if table == "kernels":
            rows: Any = _rows(s.kernels, limit)
        elif table == "gaps":
            rows = [g.model_dump() for g in s.idle_gaps]
            for g in rows:
                g["largest"] = g["largest"][:limit]
        elif table == "copies":
            rows = None if s.copies is None else s.copies.model_dump()
        elif table == "syncs":
            rows = None if s.sync is None else s.sync.model_dump()
        elif table == "streams":
            rows = _rows(sorted(s.streams, key=lambda x: -x.busy_ns), limit)
        elif table == "markers":
            rows = None if s.markers is None else {
                "count": s.markers.count, "by_name": _rows(s.markers.by_name, limit),
                "top_level": _rows(s.markers.top_level, limit)}
        elif table == "mpi":
            rows = None if s.mpi is None else s.mpi.model_dump()
        elif table == "phases":
            phases = getattr(s, "phases", None)
            rows = None if not phases else _rows(phases, limit)
        elif table == "ranks":
            rows = None if not self.ranks else [r.model_dump() if hasattr(r, "model_dump") else dict(r)
                                                for r in self.ranks[:limit]]
        else:
            return {"error": f"unknown table {table!r}; tables: {list(TABLES)}"}
        if rows is None:
            reasons = [f"{k.what}: {k.reason}" for k in s.skipped if table.rstrip("s") in k.what]
            note = ("only one profile (rank) was analysed" if table == "ranks"
                    else "not available in this profile")
            return {"table": table, "rows": None, "note": note, "skipped": reasons}
        return {"table": table, "rows": rows}

    def explain_rule(self, rule_id: str | None) -> Any:
        """Why one rule fired or not (by rule id or hypothesis id); without an id, every rule's status."""
        outcomes = list(getattr(self.rule_result, "outcomes", []))
        if rule_id is None:
            return {"rules": [{"rule_id": o.rule_id, "status": str(o.status)} for o in outcomes][:200],
                    "statuses": STATUS_MEANING}
        by_rule: dict[str, list[str]] = {}
        for h in getattr(self.rule_result, "hypotheses", []):
            if h.rule_id:
                by_rule.setdefault(h.rule_id, []).append(h.id)
        hyp = {h.id: h.rule_id for h in getattr(self.rule_result, "hypotheses", [])}
        rule_id = hyp.get(rule_id) or rule_id
        for o in outcomes:
            if o.rule_id == rule_id:
                status = str(o.status)
                return {"rule_id": o.rule_id, "status": status,
                        "meaning": STATUS_MEANING.get(status, "unknown status"), "reason": o.reason,
                        "values": o.values, "hypotheses": by_rule.get(o.rule_id, [])}
        close = [o.rule_id for o in outcomes if rule_id.lower() in o.rule_id.lower()]
        return {"error": f"unknown rule {rule_id!r}", "similar": close[:10],
                "rules": [o.rule_id for o in outcomes][:200]}


def numbers_of(value: Any) -> list[float]:
    """Every number inside a JSON-like value (the facts a tool result or the summary offers)."""
    out: list[float] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out.append(float(v))
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return out
