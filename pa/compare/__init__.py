"""`pa compare`: structural diff of two profiles' summaries, with a noise floor and a narrative.

comp = compare(summary_before, summary_after, noise_floor_pct=2.0)   # Comparison
"""

from __future__ import annotations

from pa.compare.diff import DEFAULT_NOISE_FLOOR_PCT, compare
from pa.compare.model import Comparison

__all__ = ["DEFAULT_NOISE_FLOOR_PCT", "Comparison", "compare"]
