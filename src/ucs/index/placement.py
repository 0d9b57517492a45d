"""Clustering for the index: fit a :class:`~ucs.clustering.LatentClusterer` on a pool of any size, map new
rows into its representation space, and place them into the fitted clusters without refitting.

A new row joins the cluster of its nearest pool row when their cosine distance in the clusterer's
representation space (standardise → PCA → dictionary codes, ℓ2-normalised; the same stages ``fit`` ran) is
within the fitted radius ``eps_``, which is what DBSCAN with ``min_samples = 1`` does to a point that links
to exactly one cluster. Otherwise it becomes a new singleton cluster.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np
from sklearn.base import clone

from ucs.clustering import LatentClusterer
from ucs.clustering.dictionary import encode
from ucs.clustering.estimator import RAW_METHODS
from ucs.clustering.neighbors import ZERO_DISTANCE, unit_rows
from ucs.defaults import DEFAULT_COVERAGE

__all__ = ["make_clusterer", "fit_clusters", "represent", "place_rows"]


def make_clusterer(clusterer: Any, random_state: int) -> Any:
    """An unfitted clusterer: a clone of ``clusterer`` (an estimator instance),
    ``LatentClusterer(**clusterer)`` for a dict, or ``LatentClusterer(method="kmeans")``
    (:data:`ucs.defaults.DEFAULT_COVERAGE`) for ``None``; an unset ``random_state`` is set to
    ``random_state``."""
    if clusterer is None:  # the project's coverage setting: k-means in the embedder's own (retrieval) space
        est = LatentClusterer(method=DEFAULT_COVERAGE["clusterer"]["method"])
    elif isinstance(clusterer, dict):
        est = LatentClusterer(**clusterer)
    elif hasattr(clusterer, "fit") and hasattr(clusterer, "get_params"):
        est = clone(clusterer)
    else:
        raise ValueError(
            "clusterer must be a LatentClusterer, a dict of its parameters or None; got "
            f"{type(clusterer).__name__}"
        )
    if "random_state" in est.get_params(deep=False) and est.get_params(deep=False)["random_state"] is None:
        est.set_params(random_state=int(random_state))
    return est


def _fit_to_size(est: Any, n: int) -> Any:
    """Shrink the size parameters that cannot exceed the pool (``n_atoms``, ``pca_dim``, ``dbscan_k``,
    ``graph_k``) so a few dozen examples cluster with the same settings as thousands."""
    params = est.get_params(deep=False)
    limits = {"n_atoms": n, "pca_dim": n, "dbscan_k": n - 1, "graph_k": n - 1}
    changes = {k: lim for k, lim in limits.items() if isinstance(params.get(k), int) and params[k] > lim}
    return est.set_params(**changes) if changes else est


def fit_clusters(clusterer: Any, E: np.ndarray, random_state: int) -> Tuple[Optional[Any], np.ndarray]:
    """Fit a fresh clusterer on ``E`` (N, d); returns ``(fitted clusterer or None, cluster ids (N,))``.

    Pools of one or two examples are too small to cluster: each example is its own cluster (``None``).
    """
    n = E.shape[0]
    if n < 3:
        return None, np.arange(n, dtype=np.int64)
    est = _fit_to_size(make_clusterer(clusterer, random_state), n)
    est.fit(E)
    return est, np.asarray(est.labels_, dtype=np.int64)


def represent(est: Any, E: np.ndarray) -> np.ndarray:
    """Rows of ``E`` (M, d) in the fitted clusterer's space, ℓ2-normalised, float32 (M, d').

    Applies the fitted standardiser, PCA and dictionary coding when the clusterer has them (O(M·d·d') for
    PCA, O(M·d'·K) for ridge codes). For the pool rows themselves use :func:`pool_representation`.
    """
    X = np.asarray(E)
    X = X if X.dtype == np.float32 else X.astype(np.float64)
    scaler = getattr(est, "scaler_", None)
    if scaler is not None:
        X = scaler.transform(X)
    if getattr(est, "method", None) not in RAW_METHODS:
        pca = getattr(est, "pca_", None)
        if pca is not None:
            X = pca.transform(X)
        D = getattr(est, "dictionary_", None)
        if D is not None:
            X = encode(X, D, est.coding, est.ridge_alpha, est.omp_n_nonzero).astype(X.dtype, copy=False)
    return unit_rows(X)


def pool_representation(est: Any, E: np.ndarray) -> np.ndarray:
    """The fitted pool in representation space: the clusterer's own codes when it kept them (exactly what it
    clustered), else :func:`represent` of ``E``."""
    codes = getattr(est, "codes_", None)
    if codes is not None and codes.shape[0] == E.shape[0]:
        return unit_rows(codes)
    return represent(est, E)


def place_rows(
    est: Optional[Any], rep_pool: np.ndarray, ids: np.ndarray, rep_new: np.ndarray
) -> Tuple[np.ndarray, Dict[str, int]]:
    """Cluster ids for new rows, placed one after another into the existing clustering.

    Parameters
    ----------
    est : fitted clusterer or None
        Gives the radius ``eps_`` (``None`` for a pool too small to cluster: every row is a singleton).
    rep_pool : ndarray (N, d') float32
        Unit rows of the pool in representation space.
    ids : ndarray (N,) int64
        The pool's cluster ids.
    rep_new : ndarray (M, d') float32
        Unit rows of the new examples.

    Returns
    -------
    new_ids : ndarray (M,) int64
    counts : dict
        ``joined`` (rows that joined an existing cluster) and ``singletons``.

    Notes
    -----
    O(M·(N + M)·d'). A new row may join a cluster another new row opened. With ``dict_argmax`` a row joins the
    cluster of its largest-|code| atom when the pool has one; methods without a radius (k-means, HDBSCAN) put
    it in its nearest row's cluster. A row within ``eps_`` of rows of two clusters
    joins the nearest; a refit (DBSCAN) would merge them.
    """
    eps = None if est is None else getattr(est, "eps_", None)
    argmax = est is not None and getattr(est, "method", None) == "dict_argmax"
    reps = np.concatenate([rep_pool, rep_new]) if rep_new.size else rep_pool
    all_ids = np.concatenate([ids, np.empty(rep_new.shape[0], dtype=np.int64)])
    n = rep_pool.shape[0]
    next_id = int(ids.max()) + 1 if ids.size else 0
    joined = 0
    atoms = np.argmax(np.abs(reps), axis=1) if argmax else None
    for i in range(rep_new.shape[0]):
        row = n + i
        cid = -1
        if argmax:
            same = np.nonzero(atoms[:row] == atoms[row])[0]
            cid = int(all_ids[same[0]]) if same.size else -1
        elif est is not None and row > 0:
            sims = reps[:row] @ reps[row]
            j = int(np.argmax(sims))
            dist = max(0.0, 1.0 - float(sims[j]))
            if eps is None or dist <= max(float(eps), ZERO_DISTANCE):
                cid = int(all_ids[j])
        if cid < 0:
            cid, next_id = next_id, next_id + 1
        else:
            joined += 1
        all_ids[row] = cid
    return all_ids[n:], {"joined": joined, "singletons": rep_new.shape[0] - joined}
