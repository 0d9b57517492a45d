"""Shared pytest configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

#: The benchmark data shipped beside the repository (never copied into it).
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path to ``../shared/data``; tests that need it are skipped where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present beside the repository")
    return SHARED_DATA
