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
