"""The read-only, bounded tools the model may call, as neutral JSON schemas plus a dispatcher.

Summary tools (cheap, from the ProfileSummary): `summary_table` (kernels, gaps, copies, syncs,
streams, markers, MPI, phases, ranks; at most `MAX_TABLE_ROWS` rows), `explain_rule` (why a rule
fired, stayed silent, was skipped, disabled or suppressed). SQL tools (pa.llm.sql_tool):
`table_schema`, `sql_query`. Scoped and canned analyses that the model would otherwise write SQL
for, each returning compact facts with their units in the field names:

- `window`: kernels, API calls, markers and idle gaps inside a time window or a phase;
- `copy_compute_overlap`: per device, copy time, the part of it that kernels overlap, and the
  exposed rest (interval unions, not sums), over the run, a window or a phase;
- `host_during_gap`: what the host was doing during one of the largest idle gaps (API calls,
  sync calls, open markers, the summary's host-cover shares);
- `rank_compare`: per-rank span, busy and MPI time against the median of the ranks.

Times in tool arguments and results are offsets from the start of the span in ns (as phases and
gaps are), except in `sql_query`, which sees the profile's own clock.

Every result is a JSON-ready dict; every string in it passes the redactor before it is sent
(strings read from the profile with `datum`, pa's prose with `text`), every profile string is cut
at `max_string_chars`, and the whole result at `tool_max_bytes` (largest lists halved until it
fits, saying so). Placeholders in arguments are restored before use.

Tool results are also the only source, besides the summary, against which the engine checks the
numbers of the final answer, so the dispatcher records each result (unredacted) under its call id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from statistics import median
from typing import Any

import numpy as np

from pa.controls import escape_json_controls
from pa.llm.grounding import Fact, facts_of
from pa.llm.redact import Redactor, cap
from pa.llm.sql_tool import SqlSandbox
from pa.rules.evaluate import RuleResult

MAX_TABLE_ROWS = 25
WINDOW_TOP = 8
MAX_INTERVALS = 2_000_000  # rows an overlap tool fetches at most (else: narrow the window)
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
_SCOPE = {"phase": {"type": "string", "description": "phase label or index (summary_table phases)"},
          "start_offset_ns": {"type": "integer", "minimum": 0, "description": "window start, ns after the span start"},
          "end_offset_ns": {"type": "integer", "minimum": 0, "description": "window end, ns after the span start"}}

TOOL_DEFS: list[dict[str, Any]] = [
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
    {"name": "window",
     "description": "What happened inside a phase or a time window (offsets from the span start, ns): "
                    "kernels (count, time, top by time), API calls and markers (top by time inside the "
                    "window) and the largest idle gaps that overlap it.",
     "parameters": {"type": "object", "properties": dict(_SCOPE)}},
    {"name": "copy_compute_overlap",
     "description": "Per device: copy time (union), the part of it that kernels overlap, and the exposed "
                    "rest, over the whole run, a phase or a window (offsets from the span start, ns).",
     "parameters": {"type": "object", "properties": dict(_SCOPE)}},
    {"name": "host_during_gap",
     "description": "What the host did during one of the largest GPU idle gaps (summary_table gaps): API "
                    "calls, sync calls and markers overlapping it, with the time each covers.",
     "parameters": {"type": "object", "properties": {
         "device": {"type": "integer"},
         "rank": {"type": "integer", "minimum": 1, "description": "1 = the largest gap of that device"}}}},
    {"name": "rank_compare",
     "description": "Multi-rank runs: each rank's span, GPU busy and MPI time against the median of the ranks.",
     "parameters": {"type": "object", "properties": {}}},
    {"name": "table_schema",
     "description": "The SQL views (pa_kernels, pa_copies, pa_api_calls, pa_markers, ...) and engine tables "
                    "(pa_gaps, pa_phases) sql_query can read, or the columns of one with their meaning.",
     "parameters": {"type": "object", "properties": {"table": {"type": "string"}}}},
    {"name": "sql_query",
     "description": "Run one read-only SELECT/WITH statement over pa's relation views (pa_kernels, pa_copies, "
                    "pa_api_calls, pa_markers, ...; see table_schema). Times are integer ns on the profile's "
                    "clock. Time-limited, row- and size-capped; the result says when a cap was hit. Aggregate "
                    "in SQL, and name result columns with their unit (total_ns, share_pct, bytes, calls_count)",
     "llm_note": ": pa checks the numbers you cite against them. A number the query computes from its own "
                 "literals (SELECT 95.0) is not evidence.",
     "parameters": {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}},
]
# One definition of each tool, two audiences: the LLM stage gets the description with its `llm_note`
# (what pa's grounding check does with the model's answer); a coding agent (pa.agent_tools, `pa mcp`)
# gets the description alone, under its own tool names, through `agent_spec`.
TOOL_SPECS: list[dict[str, Any]] = [{"name": t["name"], "description": t["description"] + t.get("llm_note", ""),
               "parameters": t["parameters"]} for t in TOOL_DEFS]
TOOL_NAMES = [t["name"] for t in TOOL_SPECS]


def agent_spec(name: str, renamed: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """(description, parameters JSON Schema) of one LLM-stage tool as a coding agent sees it.

    `renamed` maps the LLM stage's tool names to the agent's (sql_query -> query, ...), so a
    description that points to another tool names the one the agent has. The parameters are a copy:
    the caller adds its own (the profile path) without touching the LLM stage's schema.
    """
    spec = next(t for t in TOOL_DEFS if t["name"] == name)
    text = spec["description"] + ("." if "llm_note" in spec else "")
    params = json.loads(json.dumps(spec["parameters"]))
    for old, new in renamed.items():
        text = text.replace(old, new)
        for prop in params.get("properties", {}).values():
            if "description" in prop:
                prop["description"] = prop["description"].replace(old, new)
    return text, params
ENGINE_TOOLS = frozenset({"summary_table", "explain_rule", "window", "copy_compute_overlap", "host_during_gap",
                          "rank_compare"})


def _rows(items: list[Any], limit: int) -> list[dict[str, Any]]:
    return [i.model_dump() for i in items[:limit]]


def shrink(result: Any, max_bytes: int) -> Any:
    """Halve the longest lists of `result` until its JSON fits in `max_bytes`, saying so."""
    size = len(json.dumps(result, default=str))
    if size <= max_bytes or not isinstance(result, dict):
        return result
    out = json.loads(json.dumps(result, default=str))
    cut: list[str] = []
    for _ in range(40):
        lists: list[tuple[int, list[Any], str]] = []
        stack: list[tuple[str, Any]] = [("", out)]
        while stack:
            path, v = stack.pop()
            if isinstance(v, dict):
                stack.extend((f"{path}.{k}" if path else k, x) for k, x in v.items())
            elif isinstance(v, list):
                if len(v) > 1:
                    lists.append((len(json.dumps(v, default=str)), v, path))
                stack.extend((path, x) for x in v if isinstance(x, (dict, list)))
        if not lists:
            break
        _, longest, path = max(lists, key=lambda t: t[0])
        del longest[max(1, len(longest) // 2):]
        if path not in cut:
            cut.append(path)
        if len(json.dumps(out, default=str)) <= max_bytes:
            break
    out["truncated_by_pa"] = (f"tool result cap of {max_bytes:,} bytes: lists {', '.join(cut)} were cut; "
                              "ask for fewer rows or a narrower scope")
    return out


def _cap_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return cap(value, limit)
    if isinstance(value, dict):
        return {k: _cap_strings(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cap_strings(v, limit) for v in value]
    return value


def encode(value: Any) -> str:
    """JSON for a data block of the prompt: `<` and `>` escaped, so no profile string can close it.

    C1 controls, bidi and invisible format characters (zero-width space, BOM, tag characters that spell
    hidden ASCII) are written as JSON u-escapes too (pa.controls): the model reads them as visible data.
    """
    text = json.dumps(value, default=str, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    return escape_json_controls(text)


def engine_tables(summary: Any, redactor: Redactor) -> dict[str, tuple[list[str], list[tuple]]]:
    """pa_gaps and pa_phases for the SQL workspace (profile clock, like the relation views; labels redacted)."""
    base = summary.span_start_ns or 0
    gaps = [(g.device, base + g.start_ns, base + g.start_ns + g.duration_ns, g.duration_ns, g.host_activity)
            for dg in summary.idle_gaps for g in dg.largest]
    phases = [(p.index, redactor.datum(p.label, "MARKER"), p.source, base + p.start_ns, base + p.end_ns,
               p.duration_ns, p.kernel_count, p.kernel_time_ns, p.busy_ns, p.utilization_pct)
              for p in (getattr(summary, "phases", None) or [])]
    return {"pa_gaps": (["device", "start", "end", "duration_ns", "host_activity"], gaps),
            "pa_phases": (["phase_index", "label", "source", "start", "end", "duration_ns", "kernel_count",
                           "kernel_time_ns", "busy_ns", "utilization_pct"], phases)}


@dataclass
class ToolBox:
    """Runs tool calls against one summary, rule result and (optionally) a SQL sandbox."""

    summary: Any
    rule_result: RuleResult
    redactor: Redactor
    sandbox: SqlSandbox | None = None
    ranks: list[Any] | None = None  # per-rank rows when several profiles are analysed together
    max_string_chars: int = 200
    max_bytes: int = 12_000
    results: dict[str, Any] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    calls: int = 0
    unavailable: str | None = None  # why the SQL workspace could not be opened, if it could not

    def run(self, call_id: str, name: str, raw_args: str | dict[str, Any] | None) -> str:
        """Execute one call; return the redacted, capped JSON text sent back. Never raises."""
        return encode(self.result(call_id, name, raw_args))

    def result(self, call_id: str, name: str, raw_args: str | dict[str, Any] | None) -> Any:
        """Execute one call; return the redacted, capped JSON-ready result (an error is a result). Never raises.

        `run` sends it to the model as text; `pa mcp` (pa.agent_tools) returns it as structured content.
        """
        self.calls += 1
        try:
            args = json.loads(raw_args) if isinstance(raw_args, str) else dict(raw_args or {})
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except (ValueError, TypeError) as exc:
            result: Any = {"error": f"malformed arguments for {name}: {exc}"}
        else:
            try:
                result = self._dispatch(call_id, name, self.redactor.restore(args))
            except Exception as exc:  # a tool must never end the conversation
                # the whole message: it is redacted first and cut after (a name cut in half escapes the
                # whole-name matcher), and names restored from placeholders are redacted back
                result = {"error": f"{name}: {type(exc).__name__}: {str(exc)[:20_000]}"}
        self.results[call_id] = result  # local, unredacted: used to ground numbers
        self.names[call_id] = name
        return shrink(_cap_strings(self._redact(name, result), self.max_string_chars), self.max_bytes)

    def _redact(self, name: str, result: Any) -> Any:
        red = self.redactor
        if not red.enabled or not isinstance(result, dict):
            return red.obj(result)
        if name == "sql_query":
            out = {k: red.obj(v) for k, v in result.items() if k != "rows"}  # columns, notes, errors: prose
            if "rows" in result:  # cells come redacted from the views; anything else is data
                out["rows"] = [[red.datum(c) for c in row] for row in result["rows"]]
            return out
        if name in ("summary_table", "window", "host_during_gap", "rank_compare", "copy_compute_overlap"):
            prose = {"note", "error", "skipped", "truncated", "scope", "table"}
            return {k: (red.obj(v) if k in prose else red.data(v)) for k, v in result.items()}
        if name == "explain_rule":
            return {k: (red.data(v) if k == "values" else red.obj(v)) for k, v in result.items()}
        return red.obj(result)

    def facts(self, call_id: str) -> list[Fact]:
        """The facts a call's result offers to the grounding check (sql_query: measurement columns only)."""
        result = self.results.get(call_id)
        if not isinstance(result, dict) or "error" in result:
            return []
        if self.names.get(call_id) == "sql_query":
            if self.sandbox is None or call_id not in self.sandbox.records:
                return []
            keep = self.sandbox.evidence_columns(call_id)
            cols = [c for c, k in zip(result["columns"], keep, strict=False) if k]
            rows = [[x for x, k in zip(r, keep, strict=False) if k] for r in result["rows"]]
            return facts_of({"columns": cols, "rows": rows})
        if self.names.get(call_id) in ENGINE_TOOLS:
            return facts_of(result)
        return []

    def _dispatch(self, call_id: str, name: str, args: dict[str, Any]) -> Any:
        if name == "summary_table":
            return self.summary_table(str(args["table"]), int(args.get("limit") or MAX_TABLE_ROWS))
        if name == "explain_rule":
            return self.explain_rule(str(args["rule_id"]) if args.get("rule_id") else None)
        if name == "rank_compare":
            return self.rank_compare()
        if name in ("table_schema", "sql_query", "window", "copy_compute_overlap", "host_during_gap"):
            if self.sandbox is None:
                why = f" ({self.unavailable})" if self.unavailable else ""
                return {"error": f"the profile database is not available to tools in this run{why}"}
            if name == "table_schema":
                return self.sandbox.schema(args.get("table"))
            if name == "sql_query":
                return self.sandbox.query(str(args["sql"]), call_id)
            if name == "host_during_gap":
                return self.host_during_gap(args.get("device"), int(args.get("rank") or 1))
            lo, hi, label = self._scope(args)
            if name == "window":
                return self.window(lo, hi, label)
            return self.copy_compute_overlap(lo, hi, label)
        return {"error": f"unknown tool {name!r}; tools: {TOOL_NAMES}"}

    # ---- summary tools

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
        outcomes = list(self.rule_result.outcomes)
        if rule_id is None:
            return {"rules": [{"rule_id": o.rule_id, "status": str(o.status)} for o in outcomes][:200],
                    "statuses": STATUS_MEANING}
        by_rule: dict[str, list[str]] = {}
        for h in self.rule_result.hypotheses:
            if h.rule_id:
                by_rule.setdefault(h.rule_id, []).append(h.id)
        hyp = {h.id: h.rule_id for h in self.rule_result.hypotheses}
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

    def rank_compare(self) -> Any:
        """Per-rank span, busy and MPI time against the median of the ranks."""
        rows = [r.model_dump() if hasattr(r, "model_dump") else dict(r) for r in (self.ranks or [])]
        if len(rows) < 2:
            return {"note": "only one profile (rank) was analysed", "ranks": None}
        out = []
        keys = [k for k in ("span_ns", "busy_ns", "kernel_time_ns", "idle_ns", "mpi_ns", "collective_wait_ns")
                if any(isinstance(r.get(k), (int, float)) for r in rows)]
        medians = {k: median([float(r[k]) for r in rows if isinstance(r.get(k), (int, float))]) for k in keys}
        for r in rows:
            row: dict[str, Any] = {"rank": r.get("rank"), "file_name": r.get("file_name")}
            for k in keys:
                v = r.get(k)
                row[k] = v
                m = medians[k]
                if isinstance(v, (int, float)) and m:
                    row[f"{k.removesuffix('_ns')}_vs_median_pct"] = round((v - m) / m * 100, 1)
            out.append(row)
        by_span = max(out, key=lambda r: r.get("span_ns") or 0)
        return {"ranks": out[:MAX_TABLE_ROWS], "median": medians, "rank_count": len(out),
                "longest_span_rank": by_span["rank"]}

    # ---- scoped analyses (through the sandbox's views)

    def _scope(self, args: dict[str, Any]) -> tuple[int, int, str]:
        """(lo, hi) on the profile clock, and a label, from a phase or offsets; the whole span by default."""
        s = self.summary
        base = s.span_start_ns or 0
        phase = args.get("phase")
        if phase not in (None, ""):
            phases = getattr(s, "phases", None) or []
            key = str(phase)
            for p in phases:
                if key in (p.label, str(p.index)):
                    return base + p.start_ns, base + p.end_ns, f"phase {p.label}"
            raise ValueError(f"no phase {key!r}; phases: {[p.label for p in phases][:20]}")
        lo = int(args.get("start_offset_ns") or 0)
        hi = int(args.get("end_offset_ns") or s.span_ns)
        if hi <= lo:
            raise ValueError("end_offset_ns must be greater than start_offset_ns")
        return base + lo, base + min(hi, s.span_ns), "window"

    def _offset(self, t: int) -> int:
        return int(t - (self.summary.span_start_ns or 0))

    def _top(self, view: str, lo: int, hi: int, label_cols: str, n: int = WINDOW_TOP) -> list[dict[str, Any]]:
        assert self.sandbox is not None
        if view not in self.sandbox.views:
            return []
        sql = (f'SELECT {label_cols}, count(*) AS calls_count, '
               f'sum(min("end", {hi}) - max(start, {lo})) AS time_in_window_ns FROM {view} '
               f'WHERE start < {hi} AND "end" > {lo} AND "end" >= start GROUP BY {label_cols} '
               f'ORDER BY time_in_window_ns DESC LIMIT {n}')
        res = self.sandbox.internal(sql)
        return [dict(zip(res["columns"], r, strict=True)) for r in res["rows"]]

    def window(self, lo: int, hi: int, label: str) -> Any:
        """Kernels, API calls, markers and idle gaps inside [lo, hi)."""
        assert self.sandbox is not None
        out: dict[str, Any] = {"scope": label, "start_offset_ns": self._offset(lo), "end_offset_ns": self._offset(hi),
                               "duration_ns": hi - lo}
        if "pa_kernels" in self.sandbox.views:
            tot = self.sandbox.internal(
                f'SELECT count(*), coalesce(sum(min("end", {hi}) - max(start, {lo})), 0) FROM pa_kernels '
                f'WHERE start < {hi} AND "end" > {lo} AND "end" >= start')["rows"][0]
            out["kernels"] = {"kernel_count": tot[0], "kernel_time_in_window_ns": tot[1],
                              "top": self._top("pa_kernels", lo, hi, "name")}
        out["api_calls"] = self._top("pa_api_calls", lo, hi, "name, kind")
        out["markers"] = self._top("pa_markers", lo, hi, "name")
        out["idle_gaps"] = self._gaps_in(lo, hi)
        return out

    def _gaps_in(self, lo: int, hi: int) -> list[dict[str, Any]]:
        base = self.summary.span_start_ns or 0
        gaps = []
        for dg in self.summary.idle_gaps:
            for g in dg.largest:
                s0 = base + g.start_ns
                if s0 < hi and s0 + g.duration_ns > lo:
                    gaps.append({"device": g.device, "start_offset_ns": g.start_ns, "duration_ns": g.duration_ns,
                                 "host_activity": g.host_activity})
        return sorted(gaps, key=lambda g: -g["duration_ns"])[:WINDOW_TOP]

    def copy_compute_overlap(self, lo: int, hi: int, label: str) -> Any:
        """Per device: copy time (union), the part kernels overlap, the exposed rest."""
        from pa.metrics import intervals as iv

        assert self.sandbox is not None
        if "pa_copies" not in self.sandbox.views:
            return {"scope": label, "note": "copies are not available in this profile",
                    "skipped": [self.sandbox.skipped.get("copies", "")]}
        devices: dict[int, dict[str, Any]] = {}
        for view in ("pa_copies", "pa_kernels"):
            if view not in self.sandbox.views:
                continue
            arr = self.sandbox.intervals(view, lo, hi, MAX_INTERVALS)
            if arr is None:
                return {"scope": label, "error": f"more than {MAX_INTERVALS:,} records in scope: narrow it "
                                                 "(a phase or a window)"}
            for dev in np.unique(arr[:, 0]):
                sel = arr[arr[:, 0] == dev]
                s, e = iv.clip(sel[:, 1], sel[:, 2], lo, hi)
                devices.setdefault(int(dev), {})[view] = iv.merge(s, e)
        rows = []
        for dev, sets in sorted(devices.items()):
            copies = sets.get("pa_copies", iv.EMPTY)
            kernels = sets.get("pa_kernels", iv.EMPTY)
            copy_ns = iv.length(copies)
            if copy_ns == 0:
                continue
            overlapped = iv.intersect_length(copies, kernels)
            rows.append({"device": dev, "copy_time_ns": copy_ns, "overlapped_by_kernels_ns": overlapped,
                         "exposed_copy_ns": copy_ns - overlapped,
                         "overlapped_pct_of_copy": round(overlapped / copy_ns * 100, 1),
                         "kernel_busy_ns": iv.length(kernels)})
        return {"scope": label, "start_offset_ns": self._offset(lo), "end_offset_ns": self._offset(hi),
                "devices": rows}

    def host_during_gap(self, device: Any, rank: int) -> Any:
        """What the host did during one of the largest idle gaps."""
        assert self.sandbox is not None
        groups = [g for g in self.summary.idle_gaps if device is None or g.device == int(device)]
        if not groups or not any(g.largest for g in groups):
            return {"note": "no idle gaps recorded" + (f" for device {device}" if device is not None else "")}
        gaps = sorted((x for g in groups for x in g.largest), key=lambda x: -x.duration_ns)
        if not 1 <= rank <= len(gaps):
            return {"error": f"rank must be 1..{len(gaps)}"}
        gap = gaps[rank - 1]
        lo = (self.summary.span_start_ns or 0) + gap.start_ns
        hi = lo + gap.duration_ns
        return {"gap": {"device": gap.device, "start_offset_ns": gap.start_ns, "duration_ns": gap.duration_ns,
                        "host_activity": gap.host_activity, "host_cover_pct": gap.host_cover_pct},
                "api_calls": self._top("pa_api_calls", lo, hi, "name, kind"),
                "syncs": self._top("pa_syncs", lo, hi, "sync_type"),
                "markers": self._top("pa_markers", lo, hi, "name")}
