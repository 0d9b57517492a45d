"""Spherical k-means of a sharded pool: centres on the driver, assignment on the workers.

:func:`kmeans_pool` is the executor path of ``LatentClusterer(method="kmeans")`` (the project default,
SPEC §8):

1. **Fitting rows (driver).** Exactly the rows the local path fits on: all of them when the pool has at most
   :data:`~ucs.clustering.partition.KMEANS_FIT_MAX` rows, else the same seeded sample
   (:func:`~ucs.clustering.partition.kmeans_fit_rows`). Only those rows travel to the driver.
2. **Centres (driver).** The same scikit-learn call on the same ℓ2-normalised rows
   (:func:`~ucs.clustering.partition.fit_centers`), ⌈√N⌉ clusters unless ``n_clusters`` is given.
3. **Assignment (parallel).** Each worker normalises its shard and takes every row's most cosine-similar
   centre (:func:`~ucs.clustering.partition.nearest_center`); the driver numbers the ids by first
   appearance, as the local path does.

The result equals ``LatentClusterer(method="kmeans", **params).fit(E).labels_`` element for element: every
step is a per-row computation on the same float32 rows and centres. The one place where a different split of
rows could round differently is the matrix product of step 3 (BLAS may pick other kernels for other block
shapes); a near tie between two centres could then resolve differently, which the tests and the 1M-row
benchmark check does not happen (benchmarks/clustering/RESULTS_default_scale.md). Methods that need the whole
pool at once — HDBSCAN, the dictionary methods' codes, ``auto`` — are refused with the fix (cluster on one
machine).
"""

from __future__ import annotations

import time
from typing import Any, Dict, Sequence, Union

import numpy as np
from numpy.typing import NDArray

from ucs import defaults as D
from ucs.clustering import partition
from ucs.clustering.neighbors import unit_rows
from ucs.clustering.partition import (
    canonical_partition,
    default_n_clusters,
    fit_centers,
    kmeans_fit_rows,
    nearest_center,
)
from ucs.distributed.cluster import PoolClustering, _prepare, _sources, gather_rows, resolve_params
from ucs.distributed.embed import PoolEmbeddings
from ucs.distributed.executor import Executor
from ucs.distributed.executors import get_executor
from ucs.distributed.sharding import ShardSource, check_shard_size

__all__ = ["kmeans_pool", "DISTRIBUTED_PARTITIONS"]

#: Partitioning methods of :class:`~ucs.clustering.LatentClusterer` that run on an executor.
DISTRIBUTED_PARTITIONS = ("kmeans",)


def _assign_task(source: ShardSource, centers: NDArray[np.float32], dtype: Any) -> NDArray[np.int64]:
    """Shard → index of every row's nearest centre (before renumbering)."""
    return nearest_center(unit_rows(_prepare(source, dtype)), centers)


def _kmeans_params(clusterer: Any, overrides: Dict[str, Any]) -> Dict[str, Any]:
    p = resolve_params(clusterer, {"method": "kmeans", **overrides} if clusterer is None else overrides)
    if p["method"] not in DISTRIBUTED_PARTITIONS:
        raise ValueError(
            f"kmeans_pool runs method 'kmeans' only; got method={p['method']!r}. The paper's DBSCAN methods "
            "run "
            "through cluster_pool; HDBSCAN, dict_kmeans and auto need the whole pool in one process: "
            "cluster it "
            f"with LatentClusterer (Pipeline without an executor)."
        )
    if p["standardize"]:
        raise ValueError(
            "kmeans_pool needs standardize=False (the standardiser is fitted on the whole pool); "
            "cluster with LatentClusterer on one machine to standardise"
        )
    return p


def kmeans_pool(
    embeddings: Union[NDArray[np.floating], PoolEmbeddings, Sequence[ShardSource]],
    clusterer: Any = None,
    executor: Union[None, str, Executor] = None,
    *,
    shard_size: int = D.ROW_SHARD_SIZE,
    **params: Any,
) -> PoolClustering:
    """Cluster a (sharded) pool with spherical k-means on ``executor``; labels equal the local path's.

    Parameters
    ----------
    embeddings : ndarray (n, d), PoolEmbeddings, or list of arrays / ``.npy`` paths
        The pool embeddings (an array is cut into shards of ``shard_size`` rows).
    clusterer : LatentClusterer or dict, optional
        Its parameters (``method="kmeans"``, ``n_clusters``, ``random_state``); ``params`` override them.
    executor : {"local", "ray"} or Executor, optional
        Default local.
    shard_size : int, default=100000
        Rows per shard when ``embeddings`` is one array.

    Returns
    -------
    PoolClustering
        ``labels_``, ``n_clusters_``, ``sample_indices_`` (the fitting rows), ``timings_`` (``sample``,
        ``kmeans_fit``, ``assign``); ``eps_``/``kth_distances_``/``graph_`` are ``None``. The centres, in id
        order, are ``params["cluster_centers"]``.

    Notes
    -----
    Driver: ``O(m d)`` rows gathered and ``O(n_init · iters · m k d)`` to fit, ``m = min(n, 100000)``;
    workers: ``O(n k d)`` in all for the assignment; ``O(n)`` ids travel back.
    """
    shard_size = check_shard_size(shard_size)
    p = _kmeans_params(clusterer, params)
    ex = get_executor(executor)
    timings: Dict[str, float] = {}
    t = time.perf_counter()
    sources, lengths, dtype, _ = _sources(embeddings, ex, shard_size)
    n = int(sum(lengths))
    k = default_n_clusters(n) if p["n_clusters"] is None else int(p["n_clusters"])
    if not 1 <= k <= n:
        raise ValueError(f"n_clusters={k} must lie in [1, {n}] for {n} items; set n_clusters <= {n} or None")
    fit_rows = kmeans_fit_rows(n, partition.KMEANS_FIT_MAX, p["random_state"])  # the local path's rows
    rows = np.arange(n, dtype=np.int64) if fit_rows is None else fit_rows
    Xfit = unit_rows(gather_rows(ex, sources, lengths, rows).astype(dtype, copy=False))
    timings["sample"] = time.perf_counter() - t
    t = time.perf_counter()
    centers, fit_labels = fit_centers(
        Xfit, k, p["random_state"], impl=p.get("kmeans_impl", partition.KMEANS_IMPL)
    )
    timings["kmeans_fit"] = time.perf_counter() - t
    del Xfit
    t = time.perf_counter()
    if fit_rows is None:
        raw = fit_labels
    else:
        c_h = ex.put(centers)
        raw = np.concatenate(ex.get([ex.submit(_assign_task, s, c_h, dtype) for s in sources]))
    timings["assign"] = time.perf_counter() - t
    labels, centers = canonical_partition(raw, centers)
    return PoolClustering(
        labels_=labels,
        n_clusters_=int(labels.max()) + 1,
        eps_=None,
        kth_distances_=None,
        scaler_=None,
        pca_=None,
        dictionary_=None,
        sample_indices_=rows,
        knn_exact_=True,
        graph_=None,
        timings_=timings,
        params={**p, "n_clusters": k, "cluster_centers": centers},
    )
