"""A site rule claiming a fixed fraction: the smallest valid rule-pack entry the engine tests build on."""

from __future__ import annotations

from typing import Any


def site_rule(rid: str, frac: str | None, bucket: str = "idle", conf: float = 0.5, claim: str = "recoverable",
              impact: str = "auto", groups: list[str] | None = None) -> dict[str, Any]:
    """A rule `rid` whose runtime_fraction expression is `frac` (None: no fraction), always firing."""
    rule: dict[str, Any] = {
        "id": rid, "title": rid, "description": "a test rule claiming a fixed fraction", "when": "true",
        "bottleneck_type": "other", "bucket": bucket, "runtime_fraction": frac, "confidence": conf,
        "action_category": "algorithm",
        "evidence": [{"text": "span {{ summary.span_ns | dur }}", "cite": ["summary.span_ns"]}],
        "suggestion": "s", "counterfactual": "a test counterfactual that claims a fixed share"}
    if claim != "recoverable":
        rule["claim"] = claim
    if impact != "auto":
        rule["expected_impact"] = impact
    if groups:
        rule["groups"] = groups
    return rule
