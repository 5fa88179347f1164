"""A battery of true and planted-false numbers for the grounding check (pa.llm.grounding).

Scopes come from real engine output: planted scenarios are written, summarised and run through
the built-in rules; each hypothesis is one scope (its evidence values, runtime fraction and
Amdahl bounds, as `pa.llm.output.hypothesis_facts` gives them to the checker) together with
the run's tool results (the kernels summary table, and SQL results from the sandbox).

The battery knows the kind of every number it renders from the field it took it from (listed in
`_KINDS` here, independently of the checker's name inference). True claims render each fact the
way a model copies it (rounded, converted to ms/µs/s, MB/GiB, ×, "% of the run"). False claims are
planted in six families, each checked against every true fact of the same kind and quantity
(`_is_really_false`), so a coincidental truth is never counted:

- unit: a duration or count written as a percentage, a percentage written as a duration;
- quantity: a share of GPU time written as a share of the run;
- near: a true value moved past its written precision (±0.3–3 points, ±2–10 %);
- speedup: any other number written as a speedup (×) or as "% faster";
- random: random percentages of the run and random durations;
- laundered: a number a SQL query made from its own literals (SELECT 73.2; SELECT 732 / 10.0 FROM
  pa_kernels; …), cited as a percentage of the run;
- scope: another finding's runtime fraction cited in this finding's refinement.

`run_battery(workdir)` returns the claims; `rates(claims, check)` the false-accept and true-pass
rates of a checker `check(claim) -> list of ungrounded numbers`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit import scenarios
from testkit.nsys_writer import write_nsys

from pa.llm.grounding import Fact, facts_of
from pa.llm.output import hypothesis_facts
from pa.llm.redact import Redactor
from pa.llm.sql_tool import SqlSandbox
from pa.llm.tools import ToolBox
from pa.metrics.summarize import summarize
from pa.rules.engine import evaluate, load_ruleset

SCENARIOS = ("example", "pageable_htod", "dominant_kernel", "sync_after_launch", "launch_bound",
             "copies_not_overlapped")
LAUNDERING = ("SELECT {v} AS pct", "SELECT {v} AS pct FROM pa_kernels LIMIT 1",
              "SELECT {v10} / 10.0 AS pct, count(*) AS n FROM pa_kernels",
              "SELECT count(*) * 0 + {v} AS pct FROM pa_kernels",
              "SELECT max(start) * 0 + {v} AS share_pct FROM pa_kernels")


@dataclass(frozen=True)
class Known:
    """A true number and what the battery knows it is (kind, quantity class)."""

    value: float
    kind: str   # pct, ns, bytes, count, speedup
    cls: str = ""


@dataclass(frozen=True)
class Claim:
    """One sentence, the facts in its scope, and whether it is true."""

    text: str
    facts: tuple[Fact, ...]
    true: bool
    family: str
    raw: tuple[float, ...] = ()  # every number in scope, tool results unfiltered (for the old 1 % check)


def _known_of(h: Any, kernels: list[dict[str, Any]]) -> list[Known]:
    """The battery's own typing of a scope's numbers (independent of the checker's inference)."""
    out: list[Known] = []
    if h.runtime_fraction_pct is not None:
        out.append(Known(h.runtime_fraction_pct, "pct", "span"))
    for b in (h.estimated_speedup_pct_lower, h.estimated_speedup_pct_upper):
        if b is not None:
            out += [Known(b, "pct", "speedup"), Known(1 + b / 100, "speedup")]
    for e in h.evidence:
        for v in e.values:
            if not isinstance(v.value, (int, float)) or isinstance(v.value, bool):
                continue
            if v.unit == "ns" or v.name.endswith("_ns"):
                out.append(Known(float(v.value), "ns"))
            elif v.unit == "bytes" or "bytes" in v.name:
                out.append(Known(float(v.value), "bytes"))
            elif v.unit == "count" or "count" in v.name:
                out.append(Known(float(v.value), "count"))
            elif v.unit == "fraction" and v.name.endswith("_frac"):
                out.append(Known(float(v.value) * 100, "pct", "span"))
    for k in kernels:
        out += [Known(k["total_ns"], "ns"), Known(k["std_ns"], "ns"), Known(k["mean_ns"], "ns"),
                Known(k["count"], "count")]
        if k["share_of_gpu_time_pct"] is not None:
            out.append(Known(k["share_of_gpu_time_pct"], "pct", "gpu_time"))
    return out


def _is_really_false(value: float, decimals: int, kind: str, cls: str, known: list[Known],
                     scale: float = 1.0) -> bool:
    half = 0.5 * 10.0 ** -decimals + 1e-9
    for k in known:
        if k.kind != kind:
            continue
        if kind == "pct" and cls != "any" and k.cls != cls and not (cls != "speedup" and k.cls == ""):
            continue
        if abs(abs(k.value) / scale - value) <= half:
            return False
    return True


def _true_claims(known: list[Known]) -> list[tuple[str, str]]:
    out = []
    for k in known:
        v = k.value
        if k.kind == "pct" and k.cls == "span":
            out += [(f"{v:.1f} % of the run", "pct"), (f"{v:.0f} % of the total run time", "pct")]
        elif k.kind == "pct" and k.cls == "gpu_time":
            out += [(f"{v:.1f} % of GPU time", "pct"), (f"{v:.2f}%", "pct")]
        elif k.kind == "pct" and k.cls == "speedup":
            out.append((f"a speedup of at most {v:.1f} %", "pct"))
        elif k.kind == "speedup":
            out.append((f"up to {v:.2f}× faster", "speedup"))
        elif k.kind == "ns" and v >= 1e5:
            out += [(f"{v / 1e6:.2f} ms", "ns"), (f"{v / 1e9:.3f} s", "ns")]
        elif k.kind == "ns" and v >= 1e3:
            out.append((f"{v / 1e3:.1f} µs", "ns"))
        elif k.kind == "bytes" and v >= 1e6:
            out += [(f"{v / 1e6:.1f} MB", "bytes"), (f"{v / 2**30:.2f} GiB", "bytes")]
        elif k.kind == "count" and v > 16:
            out.append((f"{v:,.0f} calls", "count"))
    return out


def _false_claims(known: list[Known], others: list[Known], rng: random.Random) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []

    def add(text: str, family: str, value: float, decimals: int, kind: str, cls: str, scale: float = 1.0) -> None:
        if _is_really_false(value, decimals, kind, cls, known, scale):
            out.append((text, family))

    for k in known:
        v = k.value
        if k.kind == "ns" and v < 100:  # a nanosecond figure (a std, a mean) cited as a share of the run
            add(f"{v:.1f} % of runtime", "unit", round(v, 1), 1, "pct", "span")
        if k.kind == "count" and v < 100:
            add(f"{v:.0f} % of the run", "unit", round(v), 0, "pct", "span")
        if k.kind == "pct" and k.cls != "speedup":
            add(f"{v:.1f} ms", "unit", round(v, 1), 1, "ns", "", 1e6)
            add(f"{v:.1f}× speedup", "speedup", round(v, 1), 1, "speedup", "")
            add(f"{v:.1f} % faster", "speedup", round(v, 1), 1, "pct", "speedup")
        if k.kind == "pct" and k.cls == "gpu_time":
            add(f"{v:.1f} % of the run", "quantity", round(v, 1), 1, "pct", "span")
        if k.kind == "pct" and k.cls in ("span", "gpu_time"):
            for delta in (rng.uniform(0.3, 3.0), -rng.uniform(0.3, 3.0)):
                w = round(v + delta, 1)
                if w > 0:
                    label = "of the run" if k.cls == "span" else "of GPU time"
                    add(f"{w:.1f} % {label}", "near", w, 1, "pct", k.cls)
        if k.kind == "ns" and v >= 1e5:
            for f in (rng.uniform(1.02, 1.10), rng.uniform(0.90, 0.98)):
                w = round(v * f / 1e6, 2)
                add(f"{w:.2f} ms", "near", w, 2, "ns", "", 1e6)
        if k.kind == "count" and v > 50:
            w = round(v * rng.uniform(1.02, 1.05))
            add(f"{w:,} calls", "near", w, 0, "count", "")
    for _ in range(12):
        w = round(rng.uniform(0.1, 99.9), 1)
        add(f"{w:.1f} % of the run", "random", w, 1, "pct", "span")
        d = round(rng.uniform(0.5, 900.0), 2)
        add(f"{d:.2f} ms", "random", d, 2, "ns", "", 1e6)
    for o in others:
        if o.kind == "pct" and o.cls == "span":
            add(f"{o.value:.1f} % of the run", "scope", round(o.value, 1), 1, "pct", "span")
    return out


def run_battery(workdir: Path, seed: int = 7) -> list[Claim]:
    """True and planted-false claims over real engine scopes (module docs)."""
    rng = random.Random(seed)
    claims: list[Claim] = []
    for name in SCENARIOS:
        path = write_nsys(getattr(scenarios, name)(), workdir / f"{name}.sqlite")
        summary = summarize(path)
        result = evaluate(summary, load_ruleset())
        with SqlSandbox(path) as sandbox:
            box = ToolBox(summary, result, Redactor(False), sandbox)
            box.run("k1", "summary_table", {"table": "kernels", "limit": 5})
            laundered: list[tuple[str, float]] = []
            for i, template in enumerate(LAUNDERING):
                w = round(rng.uniform(10.0, 95.0), 1)
                box.run(f"q{i}", "sql_query", {"sql": template.format(v=w, v10=round(w * 10))})
                laundered.append((f"q{i}", w))
            tool_facts = [f for cid in box.results for f in box.facts(cid)]
            tool_raw = [f.value for r in box.results.values() for f in facts_of(r)]
            kernels = box.results["k1"]["rows"]
            hyps = list(result.hypotheses)
            for h in hyps:
                facts = tuple(hypothesis_facts(h) + tool_facts)
                raw = tuple([f.value for f in hypothesis_facts(h)] + tool_raw)
                known = _known_of(h, kernels)
                others = [k for o in hyps if o.id != h.id for k in _known_of(o, [])]
                claims += [Claim(t, facts, True, fam, raw) for t, fam in _true_claims(known)]
                claims += [Claim(t, facts, False, fam, raw) for t, fam in _false_claims(known, others, rng)]
                for _cid, w in laundered:
                    if _is_really_false(w, 1, "pct", "span", known):
                        claims.append(Claim(f"{w:.1f} % of the run", facts, False, "laundered", raw))
    return claims


def rates(claims: list[Claim], check: Callable[[Claim], list[str]]) -> dict[str, Any]:
    """False-accept rate (planted false claims that pass), true-pass rate, and per family."""
    false = [c for c in claims if not c.true]
    true = [c for c in claims if c.true]
    accepted_false = [c for c in false if not check(c)]
    passed_true = [c for c in true if not check(c)]
    families: dict[str, tuple[int, int]] = {}
    for c in false:
        acc, n = families.get(c.family, (0, 0))
        families[c.family] = (acc + (c in accepted_false), n + 1)
    return {"false_claims": len(false), "false_accept_rate": len(accepted_false) / max(1, len(false)),
            "true_claims": len(true), "true_pass_rate": len(passed_true) / max(1, len(true)),
            "by_family": {f: acc / n for f, (acc, n) in sorted(families.items())},
            "accepted_false": [c.text for c in accepted_false][:20],
            "rejected_true": [c.text for c in true if c not in passed_true][:20]}
