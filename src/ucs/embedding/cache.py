"""Content-addressed, pickle-free on-disk cache of embedding matrices.

A cache entry is keyed by ``sha256(identity JSON, texts hash)`` where ``identity`` is the embedder's
:attr:`~ucs.embedding.Embedder.identity` (model name, weights hash or revision, layer, pooling, ℓ2,
maximum length). The matrix is stored as ``<key>.npy`` (``allow_pickle=False``) next to a
``<key>.json`` manifest holding the identity, shape, dtype, texts hash and the array's own SHA-256;
both are written atomically, the array first, so a manifest never points at a partial array. On
load the shape, dtype and content hash are verified; a corrupt entry is treated as a miss and
recomputed.

A long pass (more than ``checkpoint_rows`` texts) of an embedder with ``batch_order`` is computed in
parts of whole batches, each checkpointed under ``<key>.parts/`` as it finishes
(:mod:`ucs.embedding.checkpoints`); an interrupted pass resumes from its finished parts, with the same
rows bit for bit, and the parts are removed once the whole matrix is stored.

An embedder with ``unnormalized()`` (an ℓ2-normalising LLM backbone, :class:`~ucs.embedding.Embedder`) is
served from the entry of its unnormalised twin, normalised on the way out: one model pass gives both the
plain and the ℓ2 matrix, and the ℓ2 matrix is not stored a second time.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from ucs.defaults import default_cache_dir
from ucs.embedding.base import Embedder, l2_normalize, sanitize_texts, unnormalized_twin
from ucs.embedding.checkpoints import PassCheckpoints, plan_parts
from ucs.utils.io import atomic_save_npy, atomic_write_json, hash_array, hash_texts, load_verified_npy

__all__ = ["EmbeddingCache", "cached_embed", "default_cache_dir", "cache_key", "CHECKPOINT_ROWS"]

_FORMAT = 1

#: Rows per checkpointed part of a long embedding pass (about a minute of a 135M model on 2 CPU cores).
CHECKPOINT_ROWS = 2048


def cache_key(identity: Dict[str, Any], texts_hash: str) -> str:
    """SHA-256 of the canonical JSON of ``identity`` together with ``texts_hash``."""
    payload = json.dumps(
        {"format": _FORMAT, "identity": identity, "texts": texts_hash},
        sort_keys=True,
        default=str,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """On-disk embedding cache rooted at ``root`` (default :func:`default_cache_dir` ``/ "embeddings"``).

    Parameters
    ----------
    root : str or Path, optional
        Directory holding the entries (created on first write).
    checkpoint_rows : int, default=CHECKPOINT_ROWS
        A pass over more texts than this, by an embedder with ``batch_order``, is checkpointed in parts
        of at least this many rows.

    Attributes
    ----------
    hits, misses : int
        Counters of :meth:`embed` look-ups in this process.

    Notes
    -----
    Look-up hashes the texts (O(total characters)) and, on a hit, reads and hashes the array
    (O(n · d)); nothing is recomputed and the model is never called.
    """

    def __init__(
        self, root: Optional[Union[str, "os.PathLike[str]"]] = None, checkpoint_rows: int = CHECKPOINT_ROWS
    ) -> None:
        if not isinstance(checkpoint_rows, (int, np.integer)) or checkpoint_rows < 1:
            raise ValueError(f"checkpoint_rows must be a positive integer, got {checkpoint_rows!r}")
        self.root = Path(root) if root is not None else default_cache_dir() / "embeddings"
        self.checkpoint_rows = int(checkpoint_rows)
        self.hits = 0
        self.misses = 0

    def _paths(self, key: str) -> "tuple[Path, Path]":
        d = self.root / key[:2]
        return d / f"{key}.npy", d / f"{key}.json"

    def key_for(self, embedder: Embedder, texts: Sequence[str]) -> str:
        return cache_key(dict(embedder.identity), hash_texts(sanitize_texts(texts)))

    def get(self, key: str) -> Optional[np.ndarray]:
        """The verified array stored under ``key``, or ``None`` when absent or corrupt."""
        entry = load_verified_npy(*self._paths(key), fmt=_FORMAT)
        if entry is None:
            return None
        manifest, arr = entry
        if list(arr.shape) != manifest.get("shape") or arr.dtype.str != manifest.get("dtype"):
            return None
        return arr

    def put(self, key: str, array: np.ndarray, identity: Dict[str, Any], texts_hash: str) -> Path:
        """Store ``array`` under ``key`` (array first, then its manifest; both atomic)."""
        arr = np.ascontiguousarray(array)
        npy, man = self._paths(key)
        atomic_save_npy(npy, arr)
        atomic_write_json(
            man,
            {
                "format": _FORMAT,
                "identity": identity,
                "texts_sha256": texts_hash,
                "shape": list(arr.shape),
                "dtype": arr.dtype.str,
                "sha256": hash_array(arr),
            },
        )
        return npy

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """Return ``embedder.embed(texts)``, from disk when this exact request was seen before.

        Returns
        -------
        ndarray of shape (len(texts), d), float32
        """
        texts = sanitize_texts(texts)
        twin = unnormalized_twin(embedder)
        if twin is not None:
            return l2_normalize(self.embed(twin, texts))
        identity = dict(embedder.identity)
        th = hash_texts(texts)
        key = cache_key(identity, th)
        arr = self.get(key)
        if arr is not None:
            self.hits += 1
            return arr
        self.misses += 1
        from ucs.utils.progress import stage

        parts = PassCheckpoints(self._paths(key)[0].with_suffix(".parts"))
        with stage(
            f"embedding {len(texts)} texts ({identity.get('model', type(embedder).__name__)})",
            len(texts),
            kind="embed",
        ):
            arr = self._compute(embedder, texts, parts)
        if arr.shape[0] != len(texts):
            raise ValueError(f"embedder returned {arr.shape[0]} rows for {len(texts)} texts")
        self.put(key, arr, identity, th)
        parts.clear()
        return arr

    def _compute(self, embedder: Embedder, texts: List[str], parts: PassCheckpoints) -> np.ndarray:
        """All rows, in one call or part by part through ``parts`` (finished parts are read, not
        recomputed)."""
        batch_order = getattr(embedder, "batch_order", None)
        if batch_order is None or len(texts) <= self.checkpoint_rows:
            return np.ascontiguousarray(embedder.embed(texts), dtype=np.float32)
        from ucs.utils.progress import advance

        out: Optional[np.ndarray] = None
        for i, idx in enumerate(plan_parts(batch_order(texts), len(texts), self.checkpoint_rows)):
            part = parts.load(i, idx)
            if part is None:
                part = np.ascontiguousarray(embedder.embed([texts[j] for j in idx]), dtype=np.float32)
                if part.ndim != 2 or part.shape[0] != len(idx):
                    raise ValueError(f"embedder returned shape {part.shape} for {len(idx)} texts")
                parts.save(i, idx, part)
            else:
                advance(len(idx), kind="embed", reused=len(idx))
            if out is None:
                out = np.empty((len(texts), part.shape[1]), dtype=np.float32)
            out[idx] = part
        assert out is not None  # len(texts) > checkpoint_rows >= 1
        return out

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
