"""Shared fixtures: the real profiles in ../shared/profiles (skipped cleanly when absent)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from testkit.cache import ScenarioProfiles, Summaries

ROOT = Path(__file__).resolve().parent.parent
# The one way tests find the real profiles: ../shared/profiles beside the checkout, or $PA_SHARED_PROFILES.
SHARED_PROFILES = Path(os.environ.get("PA_SHARED_PROFILES", ROOT.parent / "shared" / "profiles"))
NSYS_PROFILES = SHARED_PROFILES / "nsys"


def real_nsys_profiles() -> list[Path]:
    """Every real Nsight Systems export shipped in ../shared/profiles/nsys (never copied here)."""
    return sorted(NSYS_PROFILES.glob("*.sqlite")) if NSYS_PROFILES.is_dir() else []


def real_rocpd_profiles() -> list[Path]:
    """Every real rocpd database shipped in ../shared/profiles/rocpd (never copied here)."""
    folder = SHARED_PROFILES / "rocpd"
    return sorted(folder.glob("*.db")) if folder.is_dir() else []


def real_nsys_profile(name: str) -> Path:
    """The path of one named real export (it may be absent: guard its tests with `needs_real_profile`)."""
    return NSYS_PROFILES / name


def missing_reason(path: Path) -> str:
    """The skip reason shown (pytest -ra) when a real profile or the profile folder is absent."""
    return f"real profile {path} not present (set PA_SHARED_PROFILES to the folder holding nsys/)"


def needs_real_profile(*paths: Path) -> pytest.MarkDecorator:
    """Skip the marked tests, saying which file is missing, unless every named real profile exists."""
    missing = [p for p in paths if not p.is_file()]
    return pytest.mark.skipif(bool(missing), reason=missing_reason(missing[0]) if missing else "")


@pytest.fixture(params=real_nsys_profiles() or [None], ids=lambda p: p.name if p else "no-profiles")
def real_profile(request: pytest.FixtureRequest) -> Path:
    """Each real Nsight Systems export in turn (one skipped test, with the reason, when there are none)."""
    if request.param is None:
        pytest.skip(missing_reason(NSYS_PROFILES))
    return request.param


@pytest.fixture(scope="session")
def scenario_profiles(tmp_path_factory: pytest.TempPathFactory) -> ScenarioProfiles:
    """The planted scenarios, written and summarised once per session (tests/testkit/cache.py)."""
    return ScenarioProfiles(tmp_path_factory.mktemp("scenarios"))


@pytest.fixture(scope="session")
def summary_of() -> Summaries:
    """summary_of(path): the summary of a profile that is never modified (the real ones), once per session."""
    return Summaries()


@pytest.fixture(scope="session")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path, str], str]:
    """real_report(profile, fmt): `pa analyze PROFILE --no-llm -f FMT -o FILE` run once per session.

    Returns the text written to FILE; the run must exit 0. The every-format test and the golden
    verdicts read the same reports instead of analysing each real profile twice.
    """
    from click.testing import CliRunner

    from pa.cli import main

    folder = tmp_path_factory.mktemp("real_reports")
    done: dict[tuple[Path, str], str] = {}

    def get(profile: Path, fmt: str) -> str:
        if (profile, fmt) not in done:
            out = folder / f"{profile.stem}.{fmt}"
            result = CliRunner().invoke(main, ["analyze", str(profile), "--no-llm", "--format", fmt, "-o", str(out)],
                                        catch_exceptions=False)
            assert result.exit_code == 0, result.output
            done[(profile, fmt)] = out.read_text(encoding="utf-8")
        return done[(profile, fmt)]

    return get


@pytest.fixture(autouse=True)
def _no_llm_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real LLM provider, whatever keys the developer's shell holds."""
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY",
                "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PA_CLAUDE_CLI", "")  # nor a `claude` command-line client on the developer's PATH


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read the developer's ~/.config/pa/pa.toml (nor its trust decisions), $PA_CONFIG or $PA_QUERIES."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("no-user-config")))
    monkeypatch.delenv("PA_QUERIES", raising=False)
    monkeypatch.delenv("PA_CONFIG", raising=False)
