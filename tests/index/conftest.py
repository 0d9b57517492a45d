"""Fixtures of the index tests (defined in index_fixtures.py, shared with tests/integrations)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from index_fixtures import banking_examples, embed_cache, minilm, table_embedder  # noqa: E402,F401
