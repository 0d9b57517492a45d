"""Synthetic embeddings with planted latent clusters, for tests and benchmarks.

Real LLM embeddings are anisotropic: a large shared offset, a few dominant directions, a
heavy-tailed distribution of topic sizes and per-item norm variation. The generator plants
``n_clusters`` centres in a low-dimensional latent space, draws Zipf-distributed cluster
sizes, adds isotropic noise and maps everything into ``n_features`` dimensions through a
random linear map, so the clustering pipeline meets the same kind of geometry.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
from numpy.typing import NDArray

__all__ = ["make_planted_embeddings"]


def make_planted_embeddings(
    n_samples: int = 2000,
    n_features: int = 256,
    n_clusters: int = 50,
    latent_dim: int = 48,
    zipf_a: float = 1.1,
    noise: float = 0.35,
    offset: float = 4.0,
    norm_jitter: float = 0.15,
    dtype: "np.dtype | type" = np.float32,
    random_state: Optional[int] = 0,
) -> Tuple[NDArray[np.floating], NDArray[np.int64]]:
    """Draw embeddings with planted clusters.

    Parameters
    ----------
    n_samples, n_features : int
        Shape of the output matrix.
    n_clusters : int
        Number of planted clusters; sizes follow a Zipf law with exponent ``zipf_a``
        (every cluster gets at least one point when ``n_samples >= n_clusters``).
    latent_dim : int
        Dimension of the latent space the centres live in (``<= n_features``).
    noise : float
        Standard deviation of isotropic latent noise relative to unit-norm centres.
    offset : float
        Norm of a shared offset vector added to every row (the "common direction" of LLM
        embeddings).
    norm_jitter : float
        Log-normal spread of per-row scale factors.
    dtype : numpy dtype
        Output dtype (float32 by default, like cached LLM embeddings).
    random_state : int or None
        Seed; the same seed gives bit-identical output.

    Returns
    -------
    E : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        The planted cluster of each row.

    Notes
    -----
    Time ``O(n_samples * latent_dim * n_features)``; memory one output matrix.
    """
    if n_samples < 1 or n_features < 1 or n_clusters < 1:
        raise ValueError("n_samples, n_features and n_clusters must be positive")
    latent_dim = min(latent_dim, n_features)
    rng = np.random.default_rng(random_state)
    weights = 1.0 / np.arange(1, n_clusters + 1, dtype=np.float64) ** zipf_a
    weights /= weights.sum()
    base = min(n_samples, n_clusters)
    sizes = np.zeros(n_clusters, dtype=np.int64)
    sizes[:base] = 1
    sizes += rng.multinomial(n_samples - base, weights)
    y = np.repeat(np.arange(n_clusters), sizes)
    rng.shuffle(y)
    centres = rng.standard_normal((n_clusters, latent_dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    latent = centres[y] + noise * rng.standard_normal((n_samples, latent_dim)) / np.sqrt(latent_dim)
    mixing = rng.standard_normal((latent_dim, n_features)) / np.sqrt(latent_dim)
    # a few dominant directions, as in real embeddings
    mixing *= np.linspace(3.0, 0.5, latent_dim)[:, None]
    shift = rng.standard_normal(n_features)
    shift *= offset / np.linalg.norm(shift)
    scale = np.exp(norm_jitter * rng.standard_normal(n_samples))[:, None]
    E = (latent @ mixing + shift) * scale
    return E.astype(dtype, copy=False), y.astype(np.int64)
