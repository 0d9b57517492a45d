"""Latent clustering of a sharded pool: fit on a sample, code shards in parallel, merge the eps-graph.

:func:`cluster_pool` runs the :class:`~ucs.clustering.LatentClusterer` pipeline (SPEC §2) over
a pool too large for one process:

1. **Fit on a sample (driver).** Standardiser, PCA and dictionary are fitted with the clusterer's
   own routines on a seeded sample of ``fit_sample_size`` rows. When the pool is no larger than
   the sample, the sample is the whole pool in order, so the fitted model is the local one.
2. **Code shards (parallel).** Each shard is projected, coded (ridge or OMP) and ℓ2-normalised on
   a worker; the unit codes stay on the workers (the object store) for the next step.
3. **eps-graph (parallel) and merge (driver).** Per-shard k-NN, the eps quantile, per-shard
   components, dense-row completion and a union-find merge: see
   :mod:`ucs.distributed.eps_graph`.

With exact k-NN and a pool no larger than the sample, ``labels_`` equal
``LatentClusterer(**params).fit(E).labels_`` element for element (same numbering).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import NDArray

from ucs import defaults as D
from ucs.clustering.graph import canonical_labels
from ucs.clustering.neighbors import eps_from_knn
from ucs.distributed.embed import PoolEmbeddings
from ucs.distributed.eps_graph import EpsGraphResult, sharded_eps_components
from ucs.distributed.executor import Executor
from ucs.distributed.executors import get_executor
from ucs.distributed.sharding import ShardSource, check_shard_size, load_shard, shard_ranges

__all__ = ["PoolClustering", "cluster_pool"]

#: LatentClusterer parameters that cluster_pool understands.
_SUPPORTED_METHODS = ("dict_dbscan", "dbscan", "dict_argmax")


@dataclass
class PoolClustering:
    """Result of :func:`cluster_pool` (attribute names follow :class:`~ucs.clustering.LatentClusterer`).

    Attributes
    ----------
    labels_ : ndarray of shape (n,), int64
        Cluster id of every pool item, ``0 .. n_clusters_ - 1`` numbered by first member.
    n_clusters_ : int
    eps_ : float or None
        DBSCAN radius (cosine distance); ``None`` for ``dict_argmax``.
    kth_distances_ : ndarray of shape (n,) or None
    scaler_, pca_, dictionary_ :
        The fitted standardiser, PCA projection and dictionary ``(n_atoms, pca_dim)`` (or ``None``).
    sample_indices_ : ndarray
        Pool rows the representation was fitted on.
    knn_exact_ : bool
    graph_ : EpsGraphResult or None
        Merge diagnostics (dense rows, cross-shard pairs).
    timings_ : dict
        Seconds per stage: ``sample``, ``pca``, ``dictionary_fit``, ``dictionary_transform``,
        ``knn``, ``edges``, ``completion``, ``merge``.
    params : dict
        The clusterer parameters used.
    """

    labels_: NDArray[np.int64]
    n_clusters_: int
    eps_: Optional[float]
    kth_distances_: Optional[NDArray[np.float64]]
    scaler_: Any
    pca_: Any
    dictionary_: Optional[NDArray[np.floating]]
    sample_indices_: NDArray[np.int64]
    knn_exact_: bool
    graph_: Optional[EpsGraphResult]
    timings_: Dict[str, float] = field(default_factory=dict)
    params: Dict[str, Any] = field(default_factory=dict)

    def eps_for(self, q: float) -> float:
        """The eps the quantile heuristic gives for ``q`` on the fitted k-th distances."""
        if self.kth_distances_ is None:
            raise ValueError("method 'dict_argmax' has no DBSCAN stage, so there is no eps")
        if not 0 < q < 1:
            raise ValueError(f"q must be in (0, 1); got {q!r}")
        return eps_from_knn(self.kth_distances_, q)


# ---------------------------------------------------------------------------------------- tasks
def _rows_task(source: ShardSource, local_rows: NDArray[np.int64]) -> NDArray[np.floating]:
    return np.ascontiguousarray(load_shard(source, mmap=True)[local_rows])


def _prepare(source: ShardSource, dtype: Any) -> NDArray[np.floating]:
    from ucs.clustering._validation import check_embeddings

    X = check_embeddings(load_shard(source), "embeddings shard", min_samples=1)
    return X if X.dtype == dtype else X.astype(dtype)


def _unit_codes_task(source: ShardSource, rep: Any, dtype: Any) -> NDArray[np.float32]:
    """Shard → ℓ2-normalised representation rows (float32), what the eps-graph is built on."""
    from ucs.clustering.neighbors import unit_rows

    return unit_rows(rep.represent(_prepare(source, dtype)))


def gather_rows(
    ex: Executor, sources: Sequence[Any], lengths: Sequence[int], rows: NDArray[np.int64]
) -> NDArray[np.floating]:
    """Pool rows ``rows`` (sorted global indices) read from the shards that hold them, in that order.

    One task per shard that holds any of them; ``O(len(rows) · d)`` data travels to the driver.
    """
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    owner = np.searchsorted(offsets, rows, side="right") - 1
    parts = [
        ex.submit(_rows_task, s, rows[owner == i] - offsets[i])
        for i, s in enumerate(sources)
        if np.any(owner == i)
    ]
    return np.concatenate(ex.get(parts))


def _n_rows_task(U: NDArray[np.floating]) -> int:
    return int(U.shape[0])


def _argmax_task(source: ShardSource, rep: Any, dtype: Any) -> NDArray[np.int64]:
    return np.argmax(np.abs(rep.represent(_prepare(source, dtype))), axis=1).astype(np.int64)


# ---------------------------------------------------------------------------------------- driver
def resolve_params(clusterer: Any, overrides: Dict[str, Any]) -> Dict[str, Any]:
    """A :class:`~ucs.clustering.LatentClusterer`'s validated parameters from an instance, a dict of them or
    ``None`` (its defaults), with ``overrides`` on top; raises ``ValueError`` naming a bad one."""
    from ucs.clustering import LatentClusterer

    if clusterer is None:
        est = LatentClusterer(**overrides)
    elif isinstance(clusterer, dict):
        est = LatentClusterer(**{**clusterer, **overrides})
    elif isinstance(clusterer, LatentClusterer):
        est = LatentClusterer(**{**clusterer.get_params(), **overrides})
    else:
        raise ValueError(
            "clusterer must be a LatentClusterer, a dict of its parameters or None; got "
            f"{type(clusterer).__name__}"
        )
    return est.validate().get_params()


def _clusterer_params(clusterer: Any, overrides: Dict[str, Any]) -> Dict[str, Any]:
    params = resolve_params(clusterer, overrides)
    if params["method"] != "dict_argmax" and params["min_samples"] != 1:
        raise ValueError(
            f"cluster_pool builds DBSCAN as connected components, which needs min_samples=1; got "
            f"min_samples={params['min_samples']}. Use LatentClusterer on one machine for min_samples > 1."
        )
    return params


def _sources(embeddings: Any, executor: Executor, shard_size: int) -> Tuple[List[Any], List[int], Any, int]:
    """Shard handles, their lengths, the working dtype and the width."""
    if isinstance(embeddings, PoolEmbeddings):
        paths = [str(p) for p in embeddings.shard_paths()]
        return paths, embeddings.lengths, np.float32, embeddings.dim
    if isinstance(embeddings, np.ndarray):
        from ucs.clustering._validation import check_embeddings

        E = check_embeddings(embeddings, "E", min_samples=2)
        parts = [E[a:b] for a, b in shard_ranges(E.shape[0], shard_size)]
        return [executor.put(p) for p in parts], [p.shape[0] for p in parts], E.dtype, E.shape[1]
    if isinstance(embeddings, (list, tuple)) and embeddings:
        heads = [load_shard(s, mmap=True) for s in embeddings]
        widths = {h.shape[1] for h in heads if h.ndim == 2}
        if any(h.ndim != 2 for h in heads) or len(widths) != 1:
            raise ValueError("every shard must be a 2-D array (or .npy file) of the same width")
        dtype = np.float32 if all(h.dtype == np.float32 for h in heads) else np.float64
        srcs = [
            s if isinstance(s, (str,)) or hasattr(s, "__fspath__") else executor.put(np.asarray(s))
            for s in embeddings
        ]
        srcs = [str(s) if hasattr(s, "__fspath__") else s for s in srcs]
        return srcs, [int(h.shape[0]) for h in heads], dtype, widths.pop()
    raise ValueError(
        "embeddings must be an (n, d) array, a PoolEmbeddings from embed_pool, or a non-empty list of shard "
        f"arrays / .npy paths; got {type(embeddings).__name__}"
    )


def _fit_representation(params: Dict[str, Any], X: NDArray[np.floating], timings: Dict[str, float]) -> Any:
    """A :class:`~ucs.clustering.LatentClusterer` whose representation stages are fitted on the sample ``X``
    (its :meth:`~ucs.clustering.LatentClusterer.represent` codes any shard as the local path codes its rows);
    small and picklable, so it is shipped once to every worker."""
    from ucs.clustering import LatentClusterer

    return LatentClusterer(**params).fit_representation(X, timings)


def cluster_pool(
    embeddings: Union[NDArray[np.floating], PoolEmbeddings, Sequence[ShardSource]],
    clusterer: Any = None,
    executor: Union[None, str, Executor] = None,
    *,
    shard_size: int = D.ROW_SHARD_SIZE,
    fit_sample_size: int = D.FIT_SAMPLE_SIZE,
    knn: str = D.KNN,
    knn_params: Optional[Dict[str, Any]] = None,
    completion_limit: int = 60_000,
    index_shards: Optional[int] = None,
    **params: Any,
) -> PoolClustering:
    """Cluster a (sharded) pool with the ``LatentClusterer`` pipeline on ``executor``.

    Parameters
    ----------
    embeddings : ndarray (n, d), PoolEmbeddings, or list of arrays / ``.npy`` paths
        The pool embeddings. An array is cut into shards of ``shard_size`` rows; a
        :class:`PoolEmbeddings` or a list keeps its shards (paths must be readable by workers).
    clusterer : LatentClusterer or dict, optional
        Parameters of the pipeline (``method``, ``pca_dim``, ``n_atoms``, ``coding``,
        ``ridge_alpha``, ``dbscan_k``, ``dbscan_q``, ``random_state`` ...); keyword arguments in
        ``params`` override them. Default: the paper's defaults.
    executor : {"local", "ray"} or Executor, optional
        Default local.
    shard_size : int, default=100000
        Rows per shard when ``embeddings`` is one array.
    fit_sample_size : int, default=100000
        Rows the standardiser, PCA and dictionary are fitted on (seeded by ``random_state``);
        the whole pool in order when it is not larger.
    knn : {"exact", "hnsw", "ivf"}, default="exact"
        Neighbour search per shard; approximate methods need faiss (extra ``fast``).
    knn_params : dict, optional
        See :func:`~ucs.distributed.eps_graph.sharded_eps_components`.
    completion_limit : int
        Most dense rows completed pairwise (see the eps-graph module).
    index_shards : int, optional
        Neighbour-index partitions (default one per worker); see
        :func:`~ucs.distributed.eps_graph.sharded_eps_components`.

    Returns
    -------
    PoolClustering

    Notes
    -----
    Driver: the sample fit (``O(s d d')`` PCA, ``O(epochs s K (d' + K))`` dictionary for a sample of
    ``s`` rows) and ``O(n)`` numbers for the merge. Workers: coding ``O(n d d')`` and exact k-NN
    ``O(n² K)`` (``O(n log n)``-ish for HNSW) split across workers. ``min_samples`` must be 1.
    """
    shard_size = check_shard_size(shard_size)
    fit_sample_size = check_shard_size(fit_sample_size, "fit_sample_size")
    p = _clusterer_params(clusterer, params)
    ex = get_executor(executor)
    timings: Dict[str, float] = {}

    t = time.perf_counter()
    sources, lengths, dtype, d = _sources(embeddings, ex, shard_size)
    n = int(sum(lengths))
    if p["method"] != "dict_argmax" and n <= p["dbscan_k"]:
        raise ValueError(
            f"dbscan_k={p['dbscan_k']} needs more than {p['dbscan_k']} samples; got {n}. Lower dbscan_k."
        )
    if n <= fit_sample_size:
        sample_idx = np.arange(n, dtype=np.int64)
    else:
        sample_idx = np.sort(
            np.random.default_rng(p["random_state"]).choice(n, fit_sample_size, replace=False)
        )
    from ucs.clustering._validation import check_embeddings

    X = check_embeddings(gather_rows(ex, sources, lengths, sample_idx), "E", min_samples=2).astype(
        dtype, copy=False
    )
    timings["sample"] = time.perf_counter() - t
    rep = _fit_representation(p, X, timings)
    del X

    t = time.perf_counter()
    rep_h = ex.put(rep)
    if p["method"] == "dict_argmax":
        lab = np.concatenate(ex.get([ex.submit(_argmax_task, s, rep_h, dtype) for s in sources]))
        timings["dictionary_transform"] = time.perf_counter() - t
        labels = canonical_labels(lab)
        graph = None
    else:
        units = [ex.submit(_unit_codes_task, s, rep_h, dtype) for s in sources]
        # wait for the codes (only their row counts travel) so each stage is timed on its own
        if ex.get([ex.submit(_n_rows_task, u) for u in units]) != lengths:
            raise RuntimeError("coded shards do not have the rows of the input shards")
        timings["dictionary_transform"] = time.perf_counter() - t
        graph = sharded_eps_components(
            ex,
            units,
            lengths,
            dbscan_k=p["dbscan_k"],
            dbscan_q=p["dbscan_q"],
            graph_k=p["graph_k"],
            knn=knn,
            knn_params={"random_state": p["random_state"], **(knn_params or {})},
            completion_limit=completion_limit,
            index_shards=index_shards,
        )
        timings.update(graph.timings)
        labels = graph.labels
    return PoolClustering(
        labels_=labels,
        n_clusters_=int(labels.max()) + 1 if labels.size else 0,
        eps_=None if graph is None else graph.eps,
        kth_distances_=None if graph is None else graph.kth_distances,
        scaler_=rep.scaler_,
        pca_=rep.pca_,
        dictionary_=rep.dictionary_,
        sample_indices_=sample_idx,
        knn_exact_=graph is None or graph.exact,
        graph_=graph,
        timings_=timings,
        params=p,
    )
