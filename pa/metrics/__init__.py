"""Metrics: interval algebra and per-aspect statistics over canonical relations."""
