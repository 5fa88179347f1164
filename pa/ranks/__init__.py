"""Multi-rank runs: discover rank files, Stage 1 per rank in parallel, cross-rank facts.

rs = summarize_ranks([Path("run/")], workers=4)     # RankSet
cr = cross_rank(rs)                                  # CrossRank (report block `cross_rank`)
extra_facts = cr.facts()                             # cross_rank.* names for rules
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Imported now: the function `discover` must shadow the submodule of the same name, which any
# `import pa.ranks.discover` would otherwise leave as this package's attribute (it is light).
from pa.ranks.discover import discover, rank_from_name

if TYPE_CHECKING:
    from pa.ranks.cross import cross_rank
    from pa.ranks.model import CrossRank, RankResult, RankSet
    from pa.ranks.run import summarize_ranks

# Imported on first use: `pa.ranks.discover` (all `pa summary` of one file needs) must not pull in
# the cross-rank statistics and their pydantic models (benchmarks/startup.py).
_LAZY = {"cross_rank": "pa.ranks.cross", "CrossRank": "pa.ranks.model",
         "RankResult": "pa.ranks.model", "RankSet": "pa.ranks.model",
         "summarize_ranks": "pa.ranks.run"}

__all__ = ["CrossRank", "RankResult", "RankSet", "cross_rank", "discover", "rank_from_name",
           "summarize_ranks"]


def __getattr__(name: str) -> Any:
    """Import a public name's module when the name is first used (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pa.ranks' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
