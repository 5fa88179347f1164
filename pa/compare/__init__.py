"""`pa compare`: structural diff of two profiles' summaries, with a noise floor and a narrative.

comp = compare(summary_before, summary_after, noise_floor_pct=DEFAULT_NOISE_FLOOR_PCT)   # Comparison

The noise floor's default is defined here, once: the CLI options and the pipeline read it while
`pa` starts, so this package loads its diff and models (pydantic) only when `compare` or
`Comparison` is first used (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

DEFAULT_NOISE_FLOOR_PCT = 2.0   # changes smaller than this % of the larger value are noise

if TYPE_CHECKING:
    from pa.compare.diff import compare
    from pa.compare.model import Comparison

__all__ = ["DEFAULT_NOISE_FLOOR_PCT", "Comparison", "compare"]


def __getattr__(name: str) -> Any:
    """Load the diff and its model on first use."""
    if name == "compare":
        from pa.compare.diff import compare

        return compare
    if name == "Comparison":
        from pa.compare.model import Comparison

        return Comparison
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
