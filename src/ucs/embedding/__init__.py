"""Text embedders: the :class:`Embedder` contract, an on-disk cache and the retrieval embedders."""

from __future__ import annotations

from ucs.embedding.base import Embedder, l2_normalize, sanitize_text, sanitize_texts
from ucs.embedding.cache import EmbeddingCache, cached_embed, default_cache_dir

__all__ = [
    "Embedder",
    "EmbeddingCache",
    "cached_embed",
    "default_cache_dir",
    "l2_normalize",
    "load_retrieval_embedder",
    "sanitize_text",
    "sanitize_texts",
]


def load_retrieval_embedder(name: str = "all-minilm-l6-v2", **kwargs):
    """Load a sentence-transformers retrieval embedder;
    see :func:`ucs.embedding.sbert.load_retrieval_embedder`."""
    from ucs.embedding.sbert import load_retrieval_embedder as _load

    return _load(name, **kwargs)
