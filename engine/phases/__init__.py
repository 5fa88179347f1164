"""Phase detection: segment a profile's timeline into non-overlapping phases with per-phase metrics.

`detect_phases(rel, span_start, span_end, max_phases)` is the entry point; `segment` holds the
pure numpy algorithm (windowed kernel mix, Jensen-Shannon divergence, DP segmentation) and `model`
the PhaseSummary shape stored in `ProfileSummary.phases`.
"""

from __future__ import annotations

from engine.phases.detect import DEFAULT_MAX_PHASES, detect_phases
from engine.phases.model import PhaseKernel, PhaseSummary

__all__ = ["DEFAULT_MAX_PHASES", "PhaseKernel", "PhaseSummary", "detect_phases"]
