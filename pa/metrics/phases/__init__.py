"""Phase detection: segment a profile's timeline into non-overlapping phases with per-phase metrics.

`detect.detect_phases(rel, span_start, span_end, max_phases)` is the entry point; `segment` holds
the pure numpy algorithm (windowed kernel mix, Jensen-Shannon divergence, DP segmentation) and
`model` the PhaseSummary shape stored in `ProfileSummary.phases`. This file imports nothing: the
metrics model imports `phases.model` while `phases.detect` imports the metrics, so an eager import
here made `import pa.metrics.summarize` fail on a fresh interpreter. DEFAULT_MAX_PHASES lives here,
not in `detect`, so the CLI can show it as a default without importing numpy and the metrics.
"""

DEFAULT_MAX_PHASES = 8
