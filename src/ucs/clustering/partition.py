"""Discretisations that cannot chain (SPEC §8): spherical k-means and HDBSCAN on unit rows.

The paper's DBSCAN with ``min_samples = 1`` is single linkage cut at ``eps``: one chain of close pairs
joins two dense regions, so a pool collapses into a few label-mixed giants plus singletons. A
partitioning method (k-means) cannot chain, and HDBSCAN's mutual-reachability distance demands real
density before two points join.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

import numpy as np
from numpy.typing import NDArray

from .graph import canonical_labels, remap_noise
from .lloyd import assign, lloyd_kmeans

__all__ = [
    "default_n_clusters",
    "spherical_kmeans",
    "hdbscan_labels",
    "KMEANS_FIT_MAX",
    "KMEANS_IMPL",
    "KMEANS_SETTINGS",
    "LLOYD_MULTI_START_WORK",
    "LLOYD_REVISION",
    "lloyd_settings",
    "kmeans_fit_rows",
    "fit_centers",
    "check_kmeans_impl",
    "nearest_center",
    "canonical_partition",
]

#: Above this many rows k-means is fitted on a seeded sample of this size and every row is then
#: assigned to its nearest centre (one matrix product); below it, on all rows.
KMEANS_FIT_MAX = 100_000
#: The default k-means implementation (see :func:`spherical_kmeans`). The name is part of a clustering's
#: parameters (``LatentClusterer(kmeans_impl=...)``), so a cache keyed by them tells the two apart.
KMEANS_IMPL = "lloyd"
#: Starts and iterations of each implementation (``n_init=None``: :func:`lloyd_settings`). Chosen by
#: measurement for ``lloyd`` (benchmarks/clustering/RESULTS_default_scale.md). ``sklearn`` keeps the settings
#: it always had.
KMEANS_SETTINGS = {"lloyd": {"n_init": None, "max_iter": None}, "sklearn": {"n_init": 3, "max_iter": 100}}
#: ``lloyd`` works like scikit-learn's ``KMeans`` while the fitting rows times the clusters is at most this
#: (pools up to ~70,000 rows at ⌈√N⌉ clusters, seconds): 10 starts, k-means++ over every row, iterations until
#: no row moves (≤ 100). Above it: 1 start seeded on a sample of ``16 k`` rows, ≤ 15 iterations, stop once ≤
#: 0.1 % of the rows move — on a 100,000-row fitting sample that matches scikit-learn's best of 3 at a tenth
#: of the work, while on ~10,000-row pools the sampled seeding lost 0.01 AMI (planted clusters) and the early
#: stop 0.002.
LLOYD_MULTI_START_WORK = 20_000_000
#: Revision of the ``lloyd`` algorithm, part of the cache key of every clustering it makes (a clustering by an
#: earlier revision is never read back as this one's). 2: Lloyd's means instead of normalised sums, every row
#: seeded from and iterations to convergence on small pools. 3: ten starts on small pools (three left HWU64's
#: AMI against its intents 0.003 below scikit-learn's; ten reach it on all three real pools).
LLOYD_REVISION = 3


def lloyd_settings(m: int, k: int) -> Dict[str, Any]:
    """Keyword settings of :func:`ucs.clustering.lloyd.lloyd_kmeans` for ``m`` fitting rows and ``k`` clusters
    (``n_init``, ``max_iter``, ``tol``, ``init_rows``): the small-pool regime while ``m · k`` is at most
    :data:`LLOYD_MULTI_START_WORK`, the large one above it."""
    if m * k <= LLOYD_MULTI_START_WORK:
        return {"n_init": 10, "max_iter": 100, "tol": 0.0, "init_rows": m}
    return {"n_init": 1, "max_iter": 15, "tol": 1e-3, "init_rows": None}


def default_n_clusters(n: int) -> int:
    """The number of k-means clusters when none is given: ``⌈√n⌉`` (at least 2, at most ``n``).

    ``√n`` is the classic rule of thumb (Mardia et al., 1979): the mean cluster size grows like the
    number of clusters, so a budget-10 prompt drawn from a pool of ``n`` sees repeated *and* unseen
    clusters at every pool size — the regime in which a species estimator has a spectrum to read. It
    uses no labels; on BANKING77 / CLINC150 / HWU64 it gives 101 / 123 / 95 clusters for 77 / 150 / 64
    intents.
    """
    if n < 2:
        raise ValueError(f"k-means needs at least 2 items; got {n}")
    return int(min(n, max(2, math.ceil(math.sqrt(n)))))


def spherical_kmeans(
    U: NDArray[np.floating],
    n_clusters: int,
    random_state: Optional[int] = None,
    n_init: Optional[int] = None,
    max_iter: Optional[int] = None,
    fit_max: Optional[int] = None,
    impl: str = KMEANS_IMPL,
) -> "tuple[NDArray[np.int64], NDArray[np.float32]]":
    """k-means on unit rows (cosine geometry), labels numbered by first appearance.

    Parameters
    ----------
    U : ndarray of shape (n, d)
        ℓ2-normalised rows (float64 is cast to float32).
    n_clusters : int
        ``k``, at most ``n``.
    random_state : int, optional
        Seeds the initialisation and the fitting sample; the same seed gives bit-identical labels.
    n_init, max_iter : int, optional
        Starts (best objective kept) and iterations per start; ``None`` takes the implementation's defaults
        (:data:`KMEANS_SETTINGS`).
    fit_max : int, optional
        Rows above which the centres are fitted on a seeded sample of ``fit_max`` rows (default
        :data:`KMEANS_FIT_MAX`, read when called).
    impl : {"lloyd", "sklearn"}
        ``lloyd`` (default): Lloyd on the unit rows in float32 GEMMs, normalised centres
        (:mod:`ucs.clustering.lloyd`). ``sklearn``: scikit-learn's Euclidean ``KMeans`` on the unit rows,
        centres normalised afterwards (the project's k-means before 2026-11; kept as the reference).

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Canonical ids ``0..k'-1`` (``k' <= k``: a centre nobody is nearest to leaves no id).
    centers : ndarray of shape (k', d), float32
        Unit-normalised centres, row ``j`` for id ``j``.

    Notes
    -----
    Time ``O(n_init · iters · m k d)`` with ``m = min(n, fit_max)``, plus ``O(n k d)`` for assigning
    every row; memory ``O(n d + k d)`` plus blocks of ``O(block · k)`` similarities.
    """
    n = U.shape[0]
    k = int(n_clusters)
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters must lie in [1, {n}] for {n} items; got {n_clusters}")
    X = np.ascontiguousarray(U, dtype=np.float32)
    fit_rows = kmeans_fit_rows(n, KMEANS_FIT_MAX if fit_max is None else fit_max, random_state)
    centers, fit_labels = fit_centers(
        X if fit_rows is None else X[fit_rows], k, random_state, n_init, max_iter, impl
    )
    raw = fit_labels if fit_rows is None else nearest_center(X, centers)
    return canonical_partition(raw, centers)


def kmeans_fit_rows(n: int, fit_max: int, random_state: Optional[int] = None) -> Optional[NDArray[np.int64]]:
    """The rows k-means centres are fitted on: ``None`` (all of them) when ``n <= fit_max``, else a sorted
    sample of ``fit_max`` rows drawn with ``numpy.random.default_rng(random_state)``. ``O(n)``."""
    if n <= fit_max:
        return None
    return np.sort(np.random.default_rng(random_state).choice(n, size=fit_max, replace=False))


def check_kmeans_impl(impl: str) -> str:
    """``impl`` if it names a k-means implementation, else ``ValueError`` naming the choices."""
    if impl not in KMEANS_SETTINGS:
        raise ValueError(f"kmeans_impl must be one of {', '.join(map(repr, KMEANS_SETTINGS))}; got {impl!r}")
    return impl


def fit_centers(
    Xfit: NDArray[np.floating],
    k: int,
    random_state: Optional[int] = None,
    n_init: Optional[int] = None,
    max_iter: Optional[int] = None,
    impl: str = KMEANS_IMPL,
) -> "tuple[NDArray[np.float32], NDArray[np.int64]]":
    """k-means centres of the fitting rows ``Xfit`` (m, d) unit rows: unit-normalised centres (k, d) float32
    and the fitting rows' labels (m,) under them. ``impl``, ``n_init`` and ``max_iter`` as
    in :func:`spherical_kmeans`. Time ``O(n_init · iters · m k d)``."""
    settings = KMEANS_SETTINGS[check_kmeans_impl(impl)]
    X = np.ascontiguousarray(Xfit, dtype=np.float32)
    if impl == "lloyd":
        kw = lloyd_settings(X.shape[0], int(k))
        kw.update({key: int(v) for key, v in (("n_init", n_init), ("max_iter", max_iter)) if v is not None})
        centers, labels, _ = lloyd_kmeans(X, int(k), random_state, **kw)
        return centers, labels
    n_init = settings["n_init"] if n_init is None else int(n_init)
    max_iter = settings["max_iter"] if max_iter is None else int(max_iter)
    from sklearn.cluster import KMeans

    seed = None if random_state is None else int(random_state)
    km = KMeans(n_clusters=int(k), n_init=n_init, max_iter=max_iter, random_state=seed).fit(X)
    centers = km.cluster_centers_.astype(np.float32)
    centers /= np.maximum(np.linalg.norm(centers, axis=1, keepdims=True), 1e-12)
    return centers, km.labels_.astype(np.int64)


def canonical_partition(
    raw: NDArray[np.int64], centers: NDArray[np.float32]
) -> "tuple[NDArray[np.int64], NDArray[np.float32]]":
    """Centre indices of every row → ids numbered by first appearance, and the centres reordered to match
    (a centre nobody is nearest to is dropped). ``O(n log n)``."""
    labels = canonical_labels(raw)
    first = np.unique(raw, return_index=True)
    order = first[0][np.argsort(first[1], kind="stable")]
    return labels, np.ascontiguousarray(centers[order])


def nearest_center(X: NDArray[np.floating], centers: NDArray[np.floating]) -> NDArray[np.int64]:
    """Index of the most cosine-similar centre of every row (ties: the lowest index), in row blocks spread
    over the usable CPUs (:func:`ucs.clustering.lloyd.assign`). Time ``O(n k d)``; memory ``O(block · k)``
    per thread."""
    return assign(X, np.asarray(centers, dtype=np.float32))[0]


def hdbscan_labels(
    U: NDArray[np.floating], min_cluster_size: int = 5, min_samples: Optional[int] = None
) -> "tuple[NDArray[np.int64], int]":
    """scikit-learn's HDBSCAN on unit rows (Euclidean, monotone in cosine); noise → fresh singletons.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        Canonical ids with every noise point its own cluster.
    n_noise : int
        Points HDBSCAN left as noise.

    Notes
    -----
    Time about ``O(n log n)`` with a space tree in low dimension, up to ``O(n²)`` in high dimension;
    memory ``O(n · min_samples)``. Use on dictionary codes (``n_atoms`` features), not raw embeddings.
    """
    from sklearn.cluster import HDBSCAN

    if min_cluster_size < 2:
        raise ValueError(f"hdbscan_min_cluster_size must be >= 2; got {min_cluster_size}")
    if U.shape[0] < min_cluster_size:
        raise ValueError(
            f"hdbscan_min_cluster_size={min_cluster_size} exceeds the {U.shape[0]} items; lower it"
        )
    lab = HDBSCAN(min_cluster_size=int(min_cluster_size), min_samples=min_samples, copy=True).fit_predict(
        np.asarray(U, dtype=np.float64)
    )
    n_noise = int((lab < 0).sum())
    return canonical_labels(remap_noise(lab)), n_noise
