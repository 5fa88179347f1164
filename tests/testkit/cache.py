"""Planted scenarios written and summarised once per test session, shared by the tests that read them.

Why: the rule cases, the accuracy targets and other tests read the same planted scenarios (the
healthy control alone backs some thirty rule cases); writing and summarising each once instead of
once per case is most of the difference between a suite that fits in two minutes and one that does
not. Every caller gets its own deep copy of a summary, so a test that edits one cannot change what
another reads.
"""

from __future__ import annotations

from pathlib import Path

from engine.metrics.model import ProfileSummary
from engine.metrics.summarize import summarize
from testkit.accuracy import generate_profile


class ScenarioProfiles:
    """Planted scenario profiles in one folder, each written and summarised at most once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._summaries: dict[tuple[str, str], ProfileSummary] = {}

    def path(self, scenario: str, fmt: str) -> Path:
        """The profile of `scenario` in `fmt` ("nsys" or "rocpd"), written on first use."""
        return generate_profile(scenario, fmt, self.folder)

    def summary(self, scenario: str, fmt: str) -> ProfileSummary:
        """A private copy of the summary of that profile, summarised on first use."""
        key = (scenario, fmt)
        if key not in self._summaries:
            self._summaries[key] = summarize(self.path(scenario, fmt))
        return self._summaries[key].model_copy(deep=True)
