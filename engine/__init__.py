"""pa: a performance advisor for GPU applications in HPC.

Data flows one way: profile → canonical relations → ProfileSummary → hypotheses → report → rendering.
"""

__version__ = "0.1.0"
