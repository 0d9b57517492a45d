"""Standardisation and PCA, the first stage of the discretiser (SPEC §2 step 1).

Both transforms are small fitted objects holding plain arrays, so a fitted clusterer can be
saved as ``npz`` + ``json`` and reloaded without pickle.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from .. import defaults as D

__all__ = ["Standardizer", "PCAProjection", "fit_standardizer", "fit_pca"]


class Standardizer:
    """Per-feature standardisation ``(x - mean_) / scale_`` (constant features get scale 1).

    Attributes
    ----------
    mean_, scale_ : ndarray of shape (n_features,)
    """

    def __init__(self, mean_: NDArray[np.floating], scale_: NDArray[np.floating]) -> None:
        self.mean_ = np.asarray(mean_)
        self.scale_ = np.asarray(scale_)

    def transform(self, X: NDArray[np.floating]) -> NDArray[np.floating]:
        """Return the standardised copy of ``X`` (n, d), same dtype."""
        return ((X - self.mean_) / self.scale_).astype(X.dtype, copy=False)

    def state(self) -> "dict[str, NDArray]":
        return {"mean_": self.mean_, "scale_": self.scale_}


def fit_standardizer(X: NDArray[np.floating]) -> Standardizer:
    """Fit a :class:`Standardizer` on ``X`` (n, d). Time ``O(n d)``; memory ``O(d)``."""
    mean = X.mean(axis=0, dtype=np.float64)
    std = X.std(axis=0, dtype=np.float64)
    std[std <= np.finfo(np.float64).eps * np.maximum(1.0, np.abs(mean))] = 1.0
    return Standardizer(mean.astype(X.dtype), std.astype(X.dtype))


class PCAProjection:
    """A fitted PCA: ``transform(X) = (X - mean_) @ components_.T``.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
    components_ : ndarray of shape (n_components, n_features)
        Orthonormal principal axes, by decreasing variance.
    explained_variance_ : ndarray of shape (n_components,)
    """

    def __init__(
        self,
        mean_: NDArray[np.floating],
        components_: NDArray[np.floating],
        explained_variance_: NDArray[np.floating],
    ) -> None:
        self.mean_ = np.asarray(mean_)
        self.components_ = np.asarray(components_)
        self.explained_variance_ = np.asarray(explained_variance_)

    @property
    def n_components(self) -> int:
        return int(self.components_.shape[0])

    def transform(self, X: NDArray[np.floating]) -> NDArray[np.floating]:
        """Project ``X`` (n, d) to (n, n_components), same dtype. Time ``O(n d k)``."""
        out = (X - self.mean_.astype(X.dtype, copy=False)) @ self.components_.astype(X.dtype, copy=False).T
        return np.ascontiguousarray(out)

    def state(self) -> "dict[str, NDArray]":
        return {
            "mean_": self.mean_,
            "components_": self.components_,
            "explained_variance_": self.explained_variance_,
        }


def _svd_flip_rows(Vt: NDArray[np.floating]) -> NDArray[np.floating]:
    """Deterministic signs: the largest-magnitude entry of each axis is positive."""
    idx = np.argmax(np.abs(Vt), axis=1)
    signs = np.sign(Vt[np.arange(Vt.shape[0]), idx])
    signs[signs == 0] = 1.0
    return Vt * signs[:, None]


def _orthonormalize(Y: NDArray[np.floating]) -> NDArray[np.floating]:
    """Orthonormal basis of the columns of ``Y`` (n × m, m small) by two rounds of Cholesky-QR.

    Only matrix products and an ``m × m`` eigendecomposition: LAPACK's Householder QR on a tall
    matrix is an order of magnitude slower on a busy multi-core machine. Directions with
    negligible energy are dropped to zero, which the randomized range finder tolerates.
    """
    # thin products and an m × m eigendecomposition: one BLAS thread is as fast and does not
    # stall when the cores are shared
    with threadpool_limits(1, user_api="blas"):
        Q = Y
        for _ in range(2):
            G = Q.T.astype(np.float64) @ Q.astype(np.float64)
            w, V = np.linalg.eigh(G)
            keep = w > max(float(w.max()), 0.0) * 1e-12
            scale = np.zeros_like(w)
            scale[keep] = 1.0 / np.sqrt(w[keep])
            Q = Q @ (V * scale).astype(Y.dtype)
    return Q


def fit_pca(
    X: NDArray[np.floating],
    n_components: int,
    backend: str = D.BACKEND,
    n_oversamples: int = 16,
    n_power_iter: int = 2,
    random_state: Optional[int] = None,
) -> PCAProjection:
    """Fit PCA with ``n_components`` axes on ``X`` (n, d).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    n_components : int
        ``<= min(n_samples, n_features)``.
    backend : {"fast", "sklearn"}
        ``fast``: randomized range finder (Halko et al. 2011) with ``n_power_iter`` power
        iterations re-orthonormalised by Cholesky-QR, in the input dtype, then an exact SVD of the small
        projected matrix. ``sklearn``: :class:`sklearn.decomposition.PCA` (its ``auto`` solver), kept as
        reference.
    random_state : int or None
        Seed of the random test matrix.

    Notes
    -----
    Time ``O(n d (k + p) (2 q + 2))`` for ``k`` components, ``p`` oversamples, ``q`` power
    iterations; memory one centred copy of ``X`` plus ``O((n + d) (k + p))``.
    """
    n, d = X.shape
    if backend == "sklearn":
        from sklearn.decomposition import PCA

        pca = PCA(n_components=n_components, random_state=random_state).fit(X)
        return PCAProjection(pca.mean_, pca.components_, pca.explained_variance_)
    mean = X.mean(axis=0, dtype=np.float64).astype(X.dtype)
    Xc = X - mean
    rng = np.random.default_rng(random_state)
    size = min(n_components + n_oversamples, n, d)
    if size >= min(n, d) or min(n, d) <= 2 * size:
        # small problem: exact SVD through the smaller Gram matrix is cheaper and exact
        if d <= n:
            G = Xc.T.astype(np.float64) @ Xc.astype(np.float64)
            w, V = np.linalg.eigh(G)
            order = np.argsort(w)[::-1][:n_components]
            Vt = V[:, order].T
            s2 = np.maximum(w[order], 0.0)
        else:
            _, s, Vt = np.linalg.svd(Xc.astype(np.float64), full_matrices=False)
            Vt, s2 = Vt[:n_components], s[:n_components] ** 2
    else:
        Omega = rng.standard_normal((d, size)).astype(X.dtype)
        Q = _orthonormalize(Xc @ Omega)
        for _ in range(n_power_iter):
            Q = _orthonormalize(Xc.T @ Q)
            Q = _orthonormalize(Xc @ Q)
        Bm = (Q.T @ Xc).astype(np.float64)  # (size, d)
        # SVD of the small matrix through its (size × size) Gram matrix
        with threadpool_limits(1, user_api="blas"):
            w, Uw = np.linalg.eigh(Bm @ Bm.T)
        order = np.argsort(w)[::-1][:n_components]
        s2 = np.maximum(w[order], 0.0)
        Vt = (Uw[:, order].T @ Bm) / np.sqrt(np.maximum(s2, np.finfo(np.float64).tiny))[:, None]
    Vt = _svd_flip_rows(Vt)
    return PCAProjection(mean, Vt.astype(X.dtype), (s2 / max(n - 1, 1)).astype(np.float64))
