"""Fixtures for the selector tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # test helpers (selector_data) importable by the tests

from selector_data import make_pool  # noqa: E402


@pytest.fixture(params=[0, 1], ids=lambda s: f"seed{s}")
def pool_data(request):
    return make_pool(seed=request.param)
