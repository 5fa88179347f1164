"""Multi-rank runs: discover rank files, Stage 1 per rank in parallel, cross-rank facts.

rs = summarize_ranks([Path("run/")], workers=4)     # RankSet
cr = cross_rank(rs)                                  # CrossRank (report block `cross_rank`)
extra_facts = cr.facts()                             # cross_rank.* names for rules
"""

from __future__ import annotations

from engine.ranks.cross import cross_rank
from engine.ranks.discover import discover, rank_from_name
from engine.ranks.model import CrossRank, RankResult, RankSet
from engine.ranks.run import summarize_ranks

__all__ = ["CrossRank", "RankResult", "RankSet", "cross_rank", "discover", "rank_from_name",
           "summarize_ranks"]
