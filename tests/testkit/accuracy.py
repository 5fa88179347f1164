"""Accuracy benchmark of the built-in rules on planted scenarios (ground truth in `Expected`).

detection@k: the first planted bottleneck type appears among the top k hypotheses. False positives:
hypotheses above "low" impact on scenarios that plant nothing (the healthy control and the other
expected-empty fixtures). Ordering: in a two-cause scenario, the first (larger) planted type must be
ranked above the second. `benchmarks/accuracy.py` prints the table; tests assert the targets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pa.metrics.model import ProfileSummary
from pa.rules.engine import RuleSet, evaluate, load_ruleset

FORMATS = ("nsys", "rocpd")
# (scenario, format) -> its ProfileSummary
Summaries = Callable[[str, str], ProfileSummary]


def generate_profile(scenario: str, fmt: str, out_dir: Path) -> Path:
    """Write one planted scenario as a profile of `fmt` into out_dir (reused when already there)."""
    from testkit import scenarios

    path = Path(out_dir) / f"{scenario}.{fmt}.sqlite"
    if path.exists():
        return path
    scen = scenarios.ALL_SCENARIOS[scenario]()
    if fmt == "nsys":
        from testkit.nsys_writer import write_nsys

        write_nsys(scen, path)
    else:
        from testkit.rocpd_writer import write_rocpd

        # rocprofv3 does not intercept MPI: an MPI scenario is captured the way an AMD user would
        # capture it, with rocprof-sys and its MPI wrappers.
        write_rocpd(scen, path, flavour="rocprof-sys" if scen.mpi_calls else "rocprofv3")
    return path


@dataclass
class ScenarioScore:
    """Result of the rules on one scenario in one format."""

    scenario: str
    fmt: str
    expected: list[str]
    ranked: list[tuple[str, str, str]]  # (rule id, bottleneck type, impact), in rank order
    hit_at_1: bool | None
    hit_at_3: bool | None
    false_positives: int
    order_ok: bool | None


def score(scenario: str, fmt: str, out_dir: Path, ruleset: RuleSet | None = None,
          summaries: Summaries | None = None) -> ScenarioScore:
    """Generate, summarise and evaluate one scenario, and score it against its ground truth.

    `summaries(scenario, fmt)`, when given, supplies the summary instead (the tests' session cache).
    """
    from pa.metrics.summarize import summarize
    from testkit import scenarios

    expected = list(scenarios.ALL_SCENARIOS[scenario]().expected.bottlenecks)
    summary = summaries(scenario, fmt) if summaries else summarize(generate_profile(scenario, fmt, out_dir))
    result = evaluate(summary, ruleset or load_ruleset())
    ranked: list[tuple[str, str, str]] = [(h.rule_id or "", str(h.bottleneck_type), str(h.expected_impact))
                                          for h in result.hypotheses]
    types = [t for _, t, _ in ranked]
    fps = sum(1 for _, _, imp in ranked if imp != "low") if not expected else 0
    order_ok = None
    if len(expected) >= 2:
        a, b = expected[0], expected[1]
        order_ok = a in types and b in types and types.index(a) < types.index(b)
    return ScenarioScore(scenario, fmt, expected, ranked,
                         hit_at_1=types[:1] == expected[:1] if expected else None,
                         hit_at_3=expected[0] in types[:3] if expected else None,
                         false_positives=fps, order_ok=order_ok)


def run(out_dir: Path, names: Iterable[str] | None = None,
        formats: Iterable[str] = FORMATS, summaries: Summaries | None = None) -> list[ScenarioScore]:
    """Score every scenario (or `names`) in every format."""
    from testkit import scenarios

    rs = load_ruleset()
    return [score(n, f, out_dir, rs, summaries) for f in formats for n in (names or sorted(scenarios.ALL_SCENARIOS))
            if f in scenarios.ALL_SCENARIOS[n]().expected.formats]


def rates(scores: list[ScenarioScore]) -> dict[str, float | int | None]:
    """detection@1, detection@3 (fractions over planted scenarios), false positives, ordering failures."""
    planted = [s for s in scores if s.expected]
    n = len(planted)
    return {
        "planted": n,
        "detection_at_1": sum(bool(s.hit_at_1) for s in planted) / n if n else None,
        "detection_at_3": sum(bool(s.hit_at_3) for s in planted) / n if n else None,
        "false_positives_control": sum(s.false_positives for s in scores if s.scenario == "healthy"),
        "false_positives_all_empty": sum(s.false_positives for s in scores if not s.expected),
        "order_failures": sum(1 for s in scores if s.order_ok is False),
    }
