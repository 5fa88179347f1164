"""pa: a performance advisor for GPU applications in HPC.

Data flows one way: profile → canonical relations → ProfileSummary → hypotheses → report → rendering
(pa/pipeline.py; the layers are drawn in docs/architecture.md).

For notebooks: `summarize`, `summarize_ranks`, `analyze`, `render` and `compare_captures` (pa/api.py;
not `compare`, the name of the pa.compare package) are
attributes of this package, loaded on first use so that `pa --help` imports nothing heavy.
"""

from typing import Any

from pa.version import __version__

API = ("summarize", "summarize_ranks", "analyze", "render", "compare_captures")
__all__ = ["__version__", *API]


def __getattr__(name: str) -> Any:
    """Load the notebook API on first use (PEP 562)."""
    if name in API:
        from pa import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
