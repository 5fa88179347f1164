"""Public API of the rule engine: load packs into a RuleSet, evaluate it on a ProfileSummary.

    ruleset = load_ruleset([Path("site.yaml")])
    result = evaluate(summary, ruleset)       # RuleResult: ranked hypotheses, skipped, provenance

The implementation is split by concern: `expr` (sandboxed expressions), `templates` (sandboxed
Jinja), `loader` (schema validation, layering of packs), `evaluate` (metrics, rules, buckets, ranking).
"""

from __future__ import annotations

from pa.rules.evaluate import RuleOutcome, RuleResult, compute_buckets, evaluate
from pa.rules.hypothesis import BUCKETS
from pa.rules.loader import PackRef, Rule, RuleSet, builtin_pack_paths, load_ruleset

__all__ = ["BUCKETS", "PackRef", "Rule", "RuleOutcome", "RuleResult", "RuleSet", "builtin_pack_paths",
           "compute_buckets", "evaluate", "load_ruleset"]
