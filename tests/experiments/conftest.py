"""Fixtures of the experiment tests: the real BANKING77 examples and all-MiniLM-L6-v2 of tests/index."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "index"))

from index_fixtures import banking_examples, embed_cache, minilm  # noqa: E402,F401
