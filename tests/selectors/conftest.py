"""Fixtures for the selector tests."""

from __future__ import annotations

import pytest
from selector_data import make_pool


@pytest.fixture(params=[0, 1], ids=lambda s: f"seed{s}")
def pool_data(request):
    return make_pool(seed=request.param)
