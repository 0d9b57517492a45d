"""Text embedders: the :class:`Embedder` contract, an on-disk cache and the retrieval embedders."""

from __future__ import annotations

from ucs.embedding.base import Embedder, l2_normalize, sanitize_text, sanitize_texts

__all__ = ["Embedder", "l2_normalize", "sanitize_text", "sanitize_texts"]
