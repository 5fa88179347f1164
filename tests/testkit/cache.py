"""Profiles summarised once per test session, shared by the tests that read them.

Why: the rule cases, the accuracy targets and other tests read the same planted scenarios (the
healthy control alone backs some thirty rule cases), and many tests read the same real profiles;
writing and summarising each once instead of once per test is most of the difference between a
suite that fits in two minutes and one that does not. Every caller gets its own deep copy of a
summary, so a test that edits one cannot change what another reads.
"""

from __future__ import annotations

from pathlib import Path

from pa.metrics.model import ProfileSummary
from pa.metrics.summarize import summarize
from testkit.accuracy import generate_profile


class Summaries:
    """Summaries of profile files by path, each summarised at most once; callers get private copies."""

    def __init__(self) -> None:
        self._by_path: dict[Path, ProfileSummary] = {}

    def __call__(self, path: Path) -> ProfileSummary:
        """A private copy of the summary of `path`, summarised on first use."""
        if path not in self._by_path:
            self._by_path[path] = summarize(path)
        return self._by_path[path].model_copy(deep=True)


class ScenarioProfiles:
    """Planted scenario profiles in one folder, each written and summarised at most once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._summaries = Summaries()

    def path(self, scenario: str, fmt: str) -> Path:
        """The profile of `scenario` in `fmt` ("nsys" or "rocpd"), written on first use."""
        return generate_profile(scenario, fmt, self.folder)

    def summary(self, scenario: str, fmt: str) -> ProfileSummary:
        """A private copy of the summary of that profile, summarised on first use."""
        return self._summaries(self.path(scenario, fmt))
