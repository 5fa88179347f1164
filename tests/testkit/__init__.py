"""Synthetic profiles with planted behaviour: test fixtures, the bundled example, benchmarks."""
