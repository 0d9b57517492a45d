"""Fixtures of the integration tests (shared with tests/index)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "index"))

from index_fixtures import banking_examples, embed_cache, minilm  # noqa: E402,F401
