"""A deterministic text embedder with planted clusters, for scaling benchmarks of the pipeline.

:func:`make_planted_texts` draws ``n`` texts ``"topic <c>|item <i>"`` with Zipf-distributed
topics; :class:`PlantedEmbedder` maps a text to ``offset + centre(topic) + noise(text)`` where the
centre and the noise are hash-derived Gaussian vectors. Rows depend only on their own text (never
on the batch), so shards computed anywhere agree bit for bit, and the whole computation is
vectorised numpy (``O(n dim)``), so a million texts embed in seconds. The vectors carry no meaning
beyond their planted cluster structure.
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from ucs.embedding.base import sanitize_texts

__all__ = ["PlantedEmbedder", "make_planted_texts", "planted_topics", "planted_texts"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _hash64(strings: Sequence[str], salt: int) -> NDArray[np.uint64]:
    out = np.empty(len(strings), dtype=np.uint64)
    prefix = str(salt).encode() + b"\x00"
    for i, s in enumerate(strings):
        out[i] = int.from_bytes(hashlib.blake2b(prefix + s.encode("utf-8"), digest_size=8).digest(), "little")
    return out


def _gaussians(seeds: NDArray[np.uint64], dim: int) -> NDArray[np.float64]:
    """A standard normal vector of length ``dim`` per seed (Box–Muller on a splitmix64 stream)."""
    half = (dim + 1) // 2
    with np.errstate(over="ignore"):
        ctr = seeds[:, None] + _GOLDEN * np.arange(1, 2 * half + 1, dtype=np.uint64)[None, :]
    u = (_splitmix64(ctr) >> np.uint64(11)).astype(np.float64) * (1.0 / 2**53)
    u1, u2 = u[:, :half], u[:, half:]
    r = np.sqrt(-2.0 * np.log1p(-u1))  # 1 - u1 is in (0, 1]
    z = np.concatenate([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)], axis=1)
    return z[:, :dim]


def make_planted_texts(
    n: int, n_clusters: int = 1000, zipf_a: float = 1.1, random_state: int = 0
) -> Tuple[List[str], NDArray[np.int64]]:
    """``n`` texts ``"topic <c>|item <i>"`` with Zipf(``zipf_a``) topic sizes; returns ``(texts, topics)``."""
    topics = planted_topics(n, n_clusters, zipf_a, random_state)
    return planted_texts(topics), topics


def planted_topics(
    n: int, n_clusters: int = 1000, zipf_a: float = 1.1, random_state: int = 0
) -> NDArray[np.int64]:
    """The topic of each of :func:`make_planted_texts`'s ``n`` texts, without the strings (8 bytes a row),
    shape (n,)."""
    if n < 1 or n_clusters < 1:
        raise ValueError("n and n_clusters must be positive integers")
    rng = np.random.default_rng(random_state)
    w = 1.0 / np.arange(1, n_clusters + 1, dtype=np.float64) ** zipf_a
    return rng.choice(n_clusters, size=n, p=w / w.sum()).astype(np.int64)


def planted_texts(topics: NDArray[np.int64], start: int = 0) -> List[str]:
    """The texts of rows ``start, start + 1, ...`` of :func:`make_planted_texts` given their topics: a pool
    built shard by shard holds only one shard's strings at a time."""
    return [f"topic {c}|item {i}" for i, c in enumerate(topics.tolist(), start)]


class PlantedEmbedder:
    """Embed ``"<topic>|<rest>"`` texts around per-topic centres (see the module docstring).

    Parameters
    ----------
    dim : int, default=128
    noise : float, default=0.6
        Norm scale of the per-text noise relative to the unit-norm centres.
    offset : float, default=2.0
        Norm of a direction shared by every row (like the common component of LLM embeddings).
    seed : int, default=0

    Notes
    -----
    Time ``O(n dim)`` plus hashing the texts; memory ``O(n dim)``.
    """

    def __init__(self, dim: int = 128, noise: float = 0.6, offset: float = 2.0, seed: int = 0) -> None:
        if not isinstance(dim, (int, np.integer)) or dim < 1:
            raise ValueError(f"dim must be a positive integer; got {dim!r}")
        self._dim = int(dim)
        self.noise = float(noise)
        self.offset = float(offset)
        self.seed = int(seed)
        shift = _gaussians(_hash64(["<offset>"], self.seed), self._dim)[0]
        self._shift = self.offset * shift / np.linalg.norm(shift)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def identity(self) -> Dict[str, Any]:
        return {
            "model": "planted-embedder",
            "revision": f"seed={self.seed}",
            "dim": self._dim,
            "noise": self.noise,
            "offset": self.offset,
            "layer": "none",
            "pooling": "none",
            "l2": False,
            "max_length": None,
        }

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Rows ``offset + centre(topic) + noise · g(text) / sqrt(dim)``, shape ``(len(texts), dim)``,
        float32."""
        texts = sanitize_texts(texts)
        topics = [t.split("|", 1)[0] for t in texts]
        uniq, inv = np.unique(np.asarray(topics, dtype=object).astype(str), return_inverse=True)
        centres = _gaussians(_hash64(list(uniq), self.seed), self._dim)
        centres /= np.linalg.norm(centres, axis=1, keepdims=True)
        noise = _gaussians(_hash64(texts, self.seed + 1), self._dim)
        out = self._shift + centres[inv.ravel()] + (self.noise / np.sqrt(self._dim)) * noise
        return np.ascontiguousarray(out, dtype=np.float32)

    def __repr__(self) -> str:
        return f"PlantedEmbedder(dim={self._dim}, noise={self.noise}, offset={self.offset}, seed={self.seed})"
