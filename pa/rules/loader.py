"""Load, validate and layer rule packs into one RuleSet.

Built-in packs (`rules/*.yaml`, in file-name order) and site packs (`--rules site.yaml`, in the order
given) go through the same path: validate against `schemas/rulepack.schema.json`, compile every
expression and template, then merge. A site pack may override params (`override_params`), disable
rules by id or group (`disable`), add metrics and hypotheses, and replace an existing metric or
hypothesis only when it says `replace: true` (why: silent shadowing of a built-in rule by a typo'd
copy is worse than an error). Every problem is a UserError naming the file, the rule id and the field.

A site pack is data from outside pa and is bounded before it is trusted with any work: a regular
UTF-8 file of at most MAX_PACK_BYTES, YAML whose aliases expand to at most MAX_YAML_NODES nodes
(no "billion laughs"), no recursive alias, nesting at most MAX_YAML_DEPTH deep, finite numbers
only (a NaN threshold compares false with everything and would silently disable rules), and a
layered rule set whose evaluation cost (syntax nodes evaluated, phase-scoped rules once per phase)
stays under MAX_EVALUATION_NODES.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import re
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from pydantic import BaseModel

from pa.errors import UserError, closest
from pa.inputs import read_text_file
from pa.metrics.marker_names import DEFAULT_NAMING, MarkerNaming
from pa.metrics.model import ProfileSummary
from pa.metrics.thresholds import THRESHOLD_NAMES, Thresholds
from pa.metrics.thresholds import problem as threshold_problem
from pa.paths import data_dir
from pa.rules.expr import Expr, ExprError, compile_expr
from pa.rules.templates import check_template

# Roots of facts injected by later stages through `evaluate(..., extra_facts=...)` (multi-rank
# analysis); a path under them is null, and the rule skipped, when the stage did not run.
EXTERNAL_ROOTS = frozenset({"cross_rank", "phase", "facts"})
# Roots a template may use besides params and metrics.
TEMPLATE_ROOTS = frozenset({"summary", "vendor", "rule"}) | EXTERNAL_ROOTS

MAX_PACK_BYTES = 1 << 20
MAX_YAML_NODES = 200_000
MAX_YAML_DEPTH = 64
# Expression syntax nodes one evaluation of the whole rule set may visit (about a second of work):
# every metric is recomputed once per phase for each phase-scoped rule.
MAX_EVALUATION_NODES = 2_000_000
PHASES_BOUND = 64   # the most phases a profile can have (--max-phases is at most 64)


@dataclass(frozen=True)
class PackRef:
    """Provenance of one applied pack."""

    name: str
    path: str  # 'rules/<file>.yaml' for built-ins, the file name only for site packs (unless keep_paths)
    sha256: str
    order: int
    builtin: bool
    version: str | None = None  # the pack's own revision label (`version:`), as written


@dataclass
class Param:
    """A named threshold: value, unit, one-line meaning and where the number comes from."""

    name: str
    value: Any
    unit: str | None
    description: str
    source: str | None
    pack: str
    overridden_by: str | None = None


@dataclass
class Metric:
    """A derived value: an expression over facts, params and other metrics."""

    name: str
    expr: Expr
    unit: str | None
    description: str
    pack: str


@dataclass(frozen=True)
class EvidenceSpec:
    """One evidence sentence template and the values it cites (summary paths, metrics or params)."""

    text: str
    cite: tuple[str, ...]


@dataclass(frozen=True)
class Suppression:
    """`suppresses:` relation: when this rule fires (and `when` holds), the target is suppressed."""

    target: str
    when: Expr | None


@dataclass
class Rule:
    """One hypothesis rule, compiled."""

    id: str
    title: str
    description: str
    groups: tuple[str, ...]
    when: Expr
    requires: tuple[str, ...]
    bottleneck_type: str
    bucket: str
    phase: str | None
    runtime_fraction: Expr | None
    confidence: float
    expected_impact: str
    max_impact: str
    action_category: str
    evidence: tuple[EvidenceSpec, ...]
    suggestion: str
    next_capture: str | None
    references: tuple[str, ...]
    suppresses: tuple[Suppression, ...]
    pack: str
    # 'run'; 'phase': evaluated once per phase with `phase.*` bound to it; 'ranks': evaluated like
    # 'run', its claim a loss every rank waits for, capped by the span and not the primary's bucket
    scope: str = "run"
    claim: str = "recoverable"  # 'recoverable' (bounded by the trace), 'speculative' or 'none' (capture)
    counterfactual: str | None = None
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass
class ProgrammingModel:
    """A programming model the profile's names reveal, and the advice that fits it (issue 25, item 9).

    OpenACC cannot capture CUDA Graphs from directives, OpenMP offload keeps data with `target data`,
    PyTorch has torch.compile and its caching allocator: the same finding needs different words. The
    knowledge lives in rule-pack data (rules/models.yaml), so a site adds its own framework's advice.
    """

    key: str
    name: str
    kernel_prefixes: tuple[str, ...] = ()
    marker_prefixes: tuple[str, ...] = ()
    api_prefixes: tuple[str, ...] = ()
    suggestions: dict[str, str] = field(default_factory=dict)


@dataclass
class RuleSet:
    """Everything the evaluator needs, after layering every pack in order."""

    params: dict[str, Param]
    metrics: dict[str, Metric]  # in dependency order
    rules: dict[str, Rule]
    disabled: dict[str, str]  # rule id -> display path of the pack that disabled it
    vendors: dict[str, dict[str, str]]
    packs: list[PackRef]
    models: dict[str, ProgrammingModel] = field(default_factory=dict)   # in pack order
    marker_naming: MarkerNaming = DEFAULT_NAMING

    @property
    def thresholds(self) -> Thresholds:
        """The summary's tunable thresholds (rules/thresholds.yaml params, after every override)."""
        return Thresholds.from_params({name: p.value for name, p in self.params.items()})


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads((data_dir("schemas") / "rulepack.schema.json").read_text())


def builtin_pack_paths() -> list[Path]:
    """Built-in packs in load order (file name order)."""
    return sorted(data_dir("rules").glob("*.yaml"))


def _err(where: str, rule: str | None, fld: str, msg: str) -> UserError:
    who = f"rule {rule}: " if rule else ""
    return UserError(f"{where}: {who}field {fld}: {msg}")


def _json_path(parts: Sequence[Any]) -> str:
    return ".".join(str(p) for p in parts) or "(top level)"


# libyaml's loader when PyYAML was built with it (ten times faster), else the pure-Python one.
_SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(text: str, display: str) -> Any:
    """safe_load with bounded alias expansion and nesting (module docs)."""
    loader = _SAFE_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_size(node, display)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise UserError(f"{display}: not valid YAML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise UserError(f"{display}: YAML nested too deeply (more than {MAX_YAML_DEPTH} levels)") from None
    finally:
        loader.dispose()


def _check_yaml_size(root: yaml.Node, display: str) -> None:
    """Refuse YAML whose aliases expand past MAX_YAML_NODES, refer to themselves, or nest too deep.

    Aliases make the composed document a graph; its expanded size is computed bottom-up once per
    node (memoised), so a billion-laughs pack is measured in microseconds, not expanded.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in children)
            depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
            if size[key] > MAX_YAML_NODES:
                raise UserError(f"{display}: YAML expands to more than {MAX_YAML_NODES} nodes (aliases "
                                "repeated into a huge document?)")
            if depth[key] > MAX_YAML_DEPTH:
                raise UserError(f"{display}: YAML nested more than {MAX_YAML_DEPTH} levels deep")
            continue
        if key in size:
            continue
        if key in on_path:
            raise UserError(f"{display}: YAML alias refers to itself (a recursive structure)")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)


def _non_finite(value: Any, where: str = "") -> str | None:
    """The path of the first NaN or infinite number inside a YAML value, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "(value)"
    if isinstance(value, dict):
        for k, v in value.items():
            found = _non_finite(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _non_finite(v, f"{where}.{i}" if where else str(i))
            if found:
                return found
    return None


@lru_cache(maxsize=32)
def _read_builtin_pack(path: Path, display: str, stamp: tuple[int, int]) -> dict[str, Any]:
    """A built-in pack parsed and validated once per process (stamp: its mtime and size)."""
    del stamp
    return read_pack(path, display)


def _version_ok(v: Any) -> bool:
    """A pack's `version:` as the schema allows it: an integer ≥ 1 or a short label such as "1.0"."""
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return v >= 1
    return isinstance(v, str) and re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z._+-]{0,39}", v) is not None


def read_pack(path: Path, display: str) -> dict[str, Any]:
    """Parse and schema-validate one pack file; errors name the file, the rule id and the field."""
    try:
        text = read_text_file(path, MAX_PACK_BYTES, "rule pack")
    except UserError as exc:
        raise UserError(str(exc).replace(str(path), display, 1)) from None
    data = _load_yaml(text, display)
    if not isinstance(data, dict):
        raise UserError(f"{display}: a rule pack must be a mapping with 'pack' and 'description'")
    bad = _non_finite(data)
    if bad:
        raise UserError(f"{display}: field {bad}: NaN or infinite numbers are not allowed (a NaN threshold "
                        "compares false with everything and would silently disable rules)")
    version = data.get("version")
    if isinstance(version, float):
        # YAML reads an unquoted 1.0 as a float; accepting it would turn 1.10 into "1.1".
        raise UserError(f"{display}: field version: {version!r} is read by YAML as a decimal number; write an "
                        f"integer (version: 1) or quote the label (version: \"{version}\")")
    if version is not None and not _version_ok(version):
        raise UserError(f"{display}: field version: {str(version)[:40]!r} is not a pack version; expected an "
                        "integer of at least 1 (version: 1) or a short quoted label of letters, digits and "
                        "._+- (version: \"1.0\")")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        e = errors[0]
        parts = list(e.absolute_path)
        rule = None
        if len(parts) >= 2 and parts[0] == "hypotheses" and isinstance(parts[1], int):
            hyps = data.get("hypotheses") or []
            rule = hyps[parts[1]].get("id") if isinstance(hyps[parts[1]], dict) else None
            rule = rule or f"#{parts[1]}"
            parts = parts[2:]
        elif len(parts) >= 2 and parts[0] in ("metrics", "params"):
            rule = f"{parts[0][:-1]} {parts[1]}"
            parts = parts[2:]
        raise _err(display, rule, _json_path(parts), e.message)
    return data


# ---- checking summary paths against the ProfileSummary model ---------------------------------------

def _unwrap(tp: Any) -> Any:
    """Strip Optional[...] and return the inner annotation."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def summary_path_error(path: str) -> str | None:
    """Why `summary.a.b` does not name a ProfileSummary field (None if it does or cannot be checked)."""
    parts = path.split(".")[1:]
    model: Any = ProfileSummary
    for i, part in enumerate(parts):
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None  # inside a list/dict/scalar: keys are data, not checked
        fields = model.model_fields
        if part not in fields:
            return (f"'{'.'.join(['summary', *parts[: i + 1]])}' is not a summary field; "
                    f"{model.__name__} has: {', '.join(sorted(fields))}")
        model = _unwrap(fields[part].annotation)
    return None


# ---- compiling ------------------------------------------------------------------------------------

def _compile(src: Any, display: str, rule: str | None, fld: str) -> Expr:
    try:
        return compile_expr(src)
    except ExprError as exc:
        raise _err(display, rule, fld, str(exc)) from None


def _template(text: str, display: str, rule: str, fld: str) -> frozenset[str]:
    try:
        return check_template(text)
    except ValueError as exc:
        raise _err(display, rule, fld, str(exc)) from None


def _compile_rule(h: dict[str, Any], display: str) -> Rule:
    rid = h["id"]
    ev = tuple(EvidenceSpec(text=e["text"] if isinstance(e, dict) else e,
                            cite=tuple(e.get("cite", ())) if isinstance(e, dict) else ())
               for e in h["evidence"])
    sup = []
    for i, s in enumerate(h.get("suppresses", ())):
        if isinstance(s, str):
            sup.append(Suppression(s, None))
        else:
            w = _compile(s["when"], display, rid, f"suppresses.{i}.when") if "when" in s else None
            sup.append(Suppression(s["id"], w))
    rf = h.get("runtime_fraction")
    claim = h.get("claim", "recoverable")
    if claim == "recoverable":
        if rf is None:
            raise _err(display, rid, "runtime_fraction", "a recoverable claim needs a runtime_fraction expression "
                       "(or say claim: speculative / claim: none for a finding without a bound)")
        if not h.get("counterfactual"):
            raise _err(display, rid, "counterfactual", "a recoverable claim must state its counterfactual: what the "
                       "fix changes and why the trace proves that time can be recovered")
    else:
        if rf is not None:
            raise _err(display, rid, "runtime_fraction", f"claim: {claim} claims no time; set runtime_fraction: null")
        if h.get("expected_impact", "auto") == "auto":
            raise _err(display, rid, "expected_impact", f"claim: {claim} has no fraction to derive an impact from; "
                       "give expected_impact: high, medium or low")
    return Rule(
        id=rid, title=h["title"], description=h["description"], groups=tuple(h.get("groups", ())),
        when=_compile(h["when"], display, rid, "when"), requires=tuple(h.get("requires", ())),
        bottleneck_type=h["bottleneck_type"], bucket=h["bucket"], phase=h.get("phase"),
        runtime_fraction=None if rf is None else _compile(rf, display, rid, "runtime_fraction"),
        confidence=float(h["confidence"]), expected_impact=h.get("expected_impact", "auto"),
        max_impact=h.get("max_impact", "high"), action_category=h["action_category"], evidence=ev,
        suggestion=h["suggestion"], next_capture=h.get("next_capture"),
        references=tuple(h.get("references", ())), suppresses=tuple(sup), pack=display,
        scope=h.get("scope", "run"), claim=claim, counterfactual=h.get("counterfactual"), raw=h)


def _apply_pack(rs: RuleSet, data: dict[str, Any], display: str, builtin: bool) -> None:
    for name, p in (data.get("params") or {}).items():
        if name in rs.params:
            raise _err(display, f"param {name}", "params",
                       f"already defined by {rs.params[name].pack}; use override_params to change it")
        rs.params[name] = Param(name, p["value"], p.get("unit"), p["description"], p.get("source"), display)
    for name, value in (data.get("override_params") or {}).items():
        if name not in rs.params:
            raise _err(display, None, f"override_params.{name}",
                       f"unknown param; {closest(name, rs.params, 'docs/rules.md lists them')}")
        old = rs.params[name].value
        if isinstance(old, (int, float)) != isinstance(value, (int, float)):
            raise _err(display, None, f"override_params.{name}",
                       f"type {type(value).__name__} does not match the default {old!r}")
        rs.params[name].value = value
        rs.params[name].overridden_by = display
    for name, m in (data.get("metrics") or {}).items():
        if name in rs.params:
            raise _err(display, f"metric {name}", "metrics", "name already used by a param")
        if name in rs.metrics and not m.get("replace"):
            raise _err(display, f"metric {name}", "replace",
                       f"already defined by {rs.metrics[name].pack}; set replace: true to replace it")
        rs.metrics[name] = Metric(name, _compile(m["expr"], display, f"metric {name}", "expr"),
                                  m.get("unit"), m["description"], display)
    for vendor, words in (data.get("vendors") or {}).items():
        rs.vendors.setdefault(vendor, {}).update(words)
    for key, given in (data.get("programming_models") or {}).items():
        old = rs.models.get(key) or ProgrammingModel(key=key, name=given.get("name", key))
        rs.models[key] = dataclasses.replace(
            old, name=given.get("name", old.name),
            kernel_prefixes=tuple(given.get("kernel_prefixes", old.kernel_prefixes)),
            marker_prefixes=tuple(given.get("marker_prefixes", old.marker_prefixes)),
            api_prefixes=tuple(given.get("api_prefixes", old.api_prefixes)),
            suggestions={**old.suggestions, **(given.get("suggestions") or {})})
    if "marker_names" in data:
        given = data["marker_names"] or {}
        for key in ("strip_after", "device_reads", "compile_ranges"):
            if key in given:
                given = {**given, key: tuple(given[key])}
        rs.marker_naming = dataclasses.replace(rs.marker_naming, **given)
    for h in data.get("hypotheses") or []:
        rid = h["id"]
        if rid in rs.rules and not h.get("replace"):
            raise _err(display, rid, "replace",
                       f"already defined by {rs.rules[rid].pack}; set replace: true to replace it")
        if h.get("replace") and rid not in rs.rules:
            raise _err(display, rid, "replace", "replace: true but no earlier pack defines this id")
        rs.rules[rid] = _compile_rule(h, display)
        rs.disabled.pop(rid, None)
    for sel in data.get("disable") or []:
        hits = [r.id for r in rs.rules.values() if r.id == sel or sel in r.groups]
        if not hits:
            names = [*rs.rules, *{g for r in rs.rules.values() for g in r.groups}]
            raise _err(display, None, "disable", f"{sel!r} matches no rule id or group; "
                       f"{closest(sel, names, '`pa rules list` lists the ids and groups')}")
        for rid in hits:
            rs.disabled[rid] = display
    del builtin


def _order_metrics(rs: RuleSet) -> None:
    """Topologically sort metrics so each one sees the metrics it uses; a cycle is an error."""
    done: dict[str, Metric] = {}
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        m = rs.metrics[name]
        if name in visiting:
            raise _err(m.pack, f"metric {name}", "expr", "metrics refer to each other in a cycle")
        visiting.add(name)
        for dep in sorted(m.expr.names | m.expr.record_names | {p.split(".")[0] for p in m.expr.paths}):
            if dep in rs.metrics:
                visit(dep)
        visiting.discard(name)
        done[name] = m

    for name in rs.metrics:
        visit(name)
    rs.metrics = done


def _check_refs(rs: RuleSet) -> None:
    """Every bare name must be a param or metric; every summary path must exist; templates too."""
    known = set(rs.params) | set(rs.metrics)

    def check_expr(e: Expr, pack: str, who: str, fld: str) -> None:
        for n in sorted(e.names):
            if n not in known:
                raise _err(pack, who, fld, f"unknown name {n!r} (not a param or metric)")
        for p in sorted(e.paths):
            root = p.split(".")[0]
            if root not in known and root != "summary" and root not in EXTERNAL_ROOTS:
                raise _err(pack, who, fld, f"unknown root {root!r} in {p!r} (not summary, a param, a "
                           f"metric, or one of {', '.join(sorted(EXTERNAL_ROOTS))})")
            if p.startswith("summary."):
                msg = summary_path_error(p)
                if msg:
                    raise _err(pack, who, fld, msg)

    for m in rs.metrics.values():
        check_expr(m.expr, m.pack, f"metric {m.name}", "expr")
    for r in rs.rules.values():
        check_expr(r.when, r.pack, r.id, "when")
        if r.runtime_fraction is not None:
            check_expr(r.runtime_fraction, r.pack, r.id, "runtime_fraction")
        for i, s in enumerate(r.suppresses):
            if s.target not in rs.rules:
                raise _err(r.pack, r.id, f"suppresses.{i}",
                           f"unknown rule id {s.target!r}; {closest(s.target, rs.rules, '`pa rules list` lists them')}")
            if s.when is not None:
                check_expr(s.when, r.pack, r.id, f"suppresses.{i}.when")
        for i, req in enumerate(r.requires):
            _check_ref(req, known, r.pack, r.id, f"requires.{i}")
        texts = [(f"evidence.{i}.text", e.text) for i, e in enumerate(r.evidence)]
        texts += [("suggestion", r.suggestion), ("title", r.title)]
        if r.next_capture:
            texts.append(("next_capture", r.next_capture))
        if r.phase:
            texts.append(("phase", r.phase))
        for fld, text in texts:
            for n in sorted(_template(text, r.pack, r.id, fld)):
                if n not in known and n not in TEMPLATE_ROOTS:
                    raise _err(r.pack, r.id, fld, f"template uses unknown name {n!r}")
        for i, e in enumerate(r.evidence):
            for j, c in enumerate(e.cite):
                _check_ref(c, known, r.pack, r.id, f"evidence.{i}.cite.{j}")
    # A programming model's advice replaces a rule's suggestion: the same checks as the rule's own.
    for model in rs.models.values():
        where = f"programming model {model.key}"
        for rid, text in model.suggestions.items():
            if rid not in rs.rules and rid not in rs.disabled:
                raise _err("programming_models", where, f"suggestions.{rid}",
                           f"unknown rule id {rid!r}; {closest(rid, rs.rules, '`pa rules list` lists them')}")
            for n in sorted(_template(text, "programming_models", where, f"suggestions.{rid}")):
                if n not in known and n not in TEMPLATE_ROOTS:
                    raise _err("programming_models", where, f"suggestions.{rid}", f"template uses unknown name {n!r}")


def _check_ref(ref: str, known: set[str], pack: str, rid: str, fld: str) -> None:
    if ref.startswith("summary."):
        msg = summary_path_error(ref)
        if msg:
            raise _err(pack, rid, fld, msg)
    elif "." not in ref and ref not in known:
        raise _err(pack, rid, fld, f"unknown name {ref!r} (not a summary path, param or metric)")


def load_ruleset(site_packs: Sequence[Path] = (), keep_paths: bool = False) -> RuleSet:
    """Load the built-in packs, then each site pack in order, into one validated RuleSet.

    Raises UserError naming the file, the rule id and the field of the first problem found.
    """
    rs = RuleSet(params={}, metrics={}, rules={}, disabled={}, vendors={}, packs=[])
    sources: list[tuple[Path, str, bool]] = [(p, f"rules/{p.name}", True) for p in builtin_pack_paths()]
    for p in site_packs:
        p = Path(p)
        sources.append((p, str(p.resolve()) if keep_paths else p.name, False))
    for order, (path, display, builtin) in enumerate(sources):
        if builtin:
            st = path.stat()
            data = copy.deepcopy(_read_builtin_pack(path, display, (st.st_mtime_ns, st.st_size)))
        else:
            data = read_pack(path, display)
        _apply_pack(rs, data, display, builtin)
        rs.packs.append(PackRef(name=data["pack"], path=display,
                                sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                                order=order, builtin=builtin,
                                version=None if data.get("version") is None else str(data["version"])))
    _order_metrics(rs)
    _check_refs(rs)
    _check_cost(rs)
    _check_thresholds(rs)
    return rs


def _check_thresholds(rs: RuleSet) -> None:
    """An analysis threshold out of its range is the overriding pack's error, before any analysis."""
    for name in rs.params:
        if name in THRESHOLD_NAMES:
            p = rs.params[name]
            error = threshold_problem(name, p.value)
            if error:
                raise _err(p.overridden_by or p.pack, None, f"override_params.{name}" if p.overridden_by
                           else f"params.{name}", error)


def _check_cost(rs: RuleSet) -> None:
    """Refuse a layered rule set whose evaluation would visit more than MAX_EVALUATION_NODES nodes."""
    metric_nodes = sum(m.expr.size for m in rs.metrics.values())
    rule_nodes = sum(r.when.size + (r.runtime_fraction.size if r.runtime_fraction is not None else 0)
                     + sum(s.when.size for s in r.suppresses if s.when is not None) for r in rs.rules.values())
    phase_rules = sum(1 for r in rs.rules.values() if r.scope == "phase")
    cost = metric_nodes * (1 + phase_rules * PHASES_BOUND) + rule_nodes * PHASES_BOUND
    if cost > MAX_EVALUATION_NODES:
        site = [p.path for p in rs.packs if not p.builtin]
        who = ", ".join(site) if site else "built-in packs"
        raise UserError(f"{who}: the rule set would evaluate up to {cost:,} expression nodes per profile "
                        f"({len(rs.metrics)} metrics, {len(rs.rules)} rules, {phase_rules} evaluated once per "
                        f"phase); the limit is {MAX_EVALUATION_NODES:,}: use fewer metrics or phase-scoped rules")
