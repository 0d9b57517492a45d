"""Content-addressed, pickle-free on-disk cache of embedding matrices.

A cache entry is keyed by ``sha256(identity JSON, texts hash)`` where ``identity`` is the embedder's
:attr:`~ucs.embedding.Embedder.identity` (model name, weights hash or revision, layer, pooling, ℓ2,
maximum length). The matrix is stored as ``<key>.npy`` (``allow_pickle=False``) next to a
``<key>.json`` manifest holding the identity, shape, dtype, texts hash and the array's own SHA-256;
both are written atomically, the array first, so a manifest never points at a partial array. On
load the shape, dtype and content hash are verified; a corrupt entry is treated as a miss and
recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from ucs.defaults import default_cache_dir
from ucs.embedding.base import Embedder, sanitize_texts
from ucs.utils.io import atomic_save_npy, atomic_write_json, hash_array, hash_texts, load_npy

__all__ = ["EmbeddingCache", "cached_embed", "default_cache_dir", "cache_key"]

_FORMAT = 1


def cache_key(identity: Dict[str, Any], texts_hash: str) -> str:
    """SHA-256 of the canonical JSON of ``identity`` together with ``texts_hash``."""
    payload = json.dumps({"format": _FORMAT, "identity": identity, "texts": texts_hash},
                         sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """On-disk embedding cache rooted at ``root`` (default :func:`default_cache_dir` ``/ "embeddings"``).

    Parameters
    ----------
    root : str or Path, optional
        Directory holding the entries (created on first write).

    Attributes
    ----------
    hits, misses : int
        Counters of :meth:`embed` look-ups in this process.

    Notes
    -----
    Look-up hashes the texts (O(total characters)) and, on a hit, reads and hashes the array
    (O(n · d)); nothing is recomputed and the model is never called.
    """

    def __init__(self, root: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir() / "embeddings"
        self.hits = 0
        self.misses = 0

    def _paths(self, key: str) -> "tuple[Path, Path]":
        d = self.root / key[:2]
        return d / f"{key}.npy", d / f"{key}.json"

    def key_for(self, embedder: Embedder, texts: Sequence[str]) -> str:
        return cache_key(dict(embedder.identity), hash_texts(sanitize_texts(texts)))

    def get(self, key: str) -> Optional[np.ndarray]:
        """The verified array stored under ``key``, or ``None`` when absent or corrupt."""
        npy, man = self._paths(key)
        if not (npy.is_file() and man.is_file()):
            return None
        try:
            manifest = json.loads(man.read_text(encoding="utf-8"))
            arr = load_npy(npy)
        except (OSError, ValueError):
            return None
        if (
            manifest.get("format") != _FORMAT
            or list(arr.shape) != manifest.get("shape")
            or arr.dtype.str != manifest.get("dtype")
            or hash_array(arr) != manifest.get("sha256")
        ):
            return None
        return arr

    def put(self, key: str, array: np.ndarray, identity: Dict[str, Any], texts_hash: str) -> Path:
        """Store ``array`` under ``key`` (array first, then its manifest; both atomic)."""
        arr = np.ascontiguousarray(array)
        npy, man = self._paths(key)
        atomic_save_npy(npy, arr)
        atomic_write_json(man, {
            "format": _FORMAT, "identity": identity, "texts_sha256": texts_hash,
            "shape": list(arr.shape), "dtype": arr.dtype.str, "sha256": hash_array(arr),
        })
        return npy

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """Return ``embedder.embed(texts)``, from disk when this exact request was seen before.

        Returns
        -------
        ndarray of shape (len(texts), d), float32
        """
        texts = sanitize_texts(texts)
        identity = dict(embedder.identity)
        th = hash_texts(texts)
        key = cache_key(identity, th)
        arr = self.get(key)
        if arr is not None:
            self.hits += 1
            return arr
        self.misses += 1
        from ucs.utils.progress import stage

        with stage(f"embedding {len(texts)} texts ({identity.get('model', type(embedder).__name__)})", len(texts),
                   kind="embed"):
            arr = np.ascontiguousarray(embedder.embed(texts), dtype=np.float32)
        if arr.shape[0] != len(texts):
            raise ValueError(f"embedder returned {arr.shape[0]} rows for {len(texts)} texts")
        self.put(key, arr, identity, th)
        return arr

    def __repr__(self) -> str:
        return f"EmbeddingCache(root={str(self.root)!r})"


def cached_embed(
    embedder: Embedder,
    texts: Sequence[str],
    cache_dir: Optional[Union[str, "os.PathLike[str]", EmbeddingCache]] = None,
) -> np.ndarray:
    """Embed ``texts`` through an :class:`EmbeddingCache` at ``cache_dir`` (default location if ``None``)."""
    cache = cache_dir if isinstance(cache_dir, EmbeddingCache) else EmbeddingCache(cache_dir)
    return cache.embed(embedder, texts)
