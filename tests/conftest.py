"""Shared fixtures: the real profiles in ../shared/profiles (skipped cleanly when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_PROFILES = Path(os.environ.get("PA_SHARED_PROFILES", ROOT.parent / "shared" / "profiles"))


def real_nsys_profiles() -> list[Path]:
    """Every real Nsight Systems export shipped in ../shared/profiles/nsys (never copied here)."""
    folder = SHARED_PROFILES / "nsys"
    return sorted(folder.glob("*.sqlite")) if folder.is_dir() else []


@pytest.fixture(params=real_nsys_profiles() or [None], ids=lambda p: p.name if p else "no-profiles")
def real_profile(request: pytest.FixtureRequest) -> Path:
    if request.param is None:
        pytest.skip("../shared/profiles/nsys not present")
    return request.param


@pytest.fixture(autouse=True)
def _no_llm_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never reach a real LLM provider, whatever keys the developer's shell holds."""
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY",
                "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PA_CLAUDE_CLI", "")  # nor a `claude` command-line client on the developer's PATH


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests never read the developer's ~/.config/pa/pa.toml or $PA_QUERIES."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.getbasetemp() / "no-user-config"))
    monkeypatch.delenv("PA_QUERIES", raising=False)
