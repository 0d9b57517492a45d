"""The DBSCAN eps-graph of sharded unit rows, built with per-shard k-NN and merged by union-find.

With ``min_samples = 1`` DBSCAN's clusters are the connected components of the eps-graph (every
pair at cosine distance ``<= eps``). The rows live in shards; this module computes those
components without ever holding the full pair structure in one place:

1. **Per-shard k-NN.** Every *database* shard gets its own index (the rows themselves for exact
   search, or a faiss HNSW / IVF index for approximate search). A *query* shard's task searches
   each database shard for its ``k_search`` best candidates, recomputes their distances in
   float64 and keeps the ``graph_k`` nearest other rows. Only the distance to the
   ``dbscan_k``-th neighbour travels to the driver; the neighbour lists stay in the object store.
2. **eps** is the ``q``-quantile of those k-th distances (zero distances dropped), by the local
   clusterer's :func:`~ucs.clustering.neighbors.eps_from_knn`.
3. **Per-shard components.** A second task per query shard keeps the k-NN pairs within ``eps``,
   joins the rows of its own shard with them (local components) and returns the pairs that cross
   shards, plus its *dense* rows — rows whose ``graph_k``-th neighbour lies within ``eps``.
4. **Completion.** A pair within ``eps`` missing from both rows' neighbour lists has both rows
   dense, so adding every pair within ``eps`` among the dense rows (about ``q n`` of them; one
   blocked product in parallel tasks) makes the graph complete up to ``eps``.
5. **Merge.** A vectorised union-find over the per-shard components, along the cross-shard and
   completion pairs, gives the global components, numbered by lowest member.

With exact search the partition equals DBSCAN(``eps``, ``min_samples=1``) on all rows exactly;
with approximate search it is exact whenever every eps-pair is found.

Distances are cosine distances of unit rows computed as ``0.5 ||a - b||²`` in float64 on the
gathered pair, which is exact zero for identical rows and the same number wherever a pair is
evaluated.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from ucs import defaults as D
from ucs.clustering.graph import canonical_labels
from ucs.clustering.neighbors import eps_from_knn
from ucs.distributed.executor import Executor
from ucs.distributed.unionfind import UnionFind

__all__ = ["EpsGraphResult", "sharded_eps_components", "pair_cosine_distances", "KNN_METHODS"]

#: Neighbour-search methods of :func:`sharded_eps_components`.
KNN_METHODS = ("exact", "hnsw", "ivf")
#: slack on float32 similarity products before the exact float64 test
_SLACK = 1e-5


def pair_cosine_distances(A: NDArray[np.float32], B: NDArray[np.float32]) -> NDArray[np.float64]:
    """Row-wise cosine distances ``0.5 ||A[i] - B[i]||²`` of unit rows, in float64. ``O(m d)``.

    The formula of :func:`ucs.clustering.neighbors.pair_distances`, for pairs whose rows live in
    different shards, so a pair gets the same distance here as in the local clusterer.
    """
    diff = A.astype(np.float64) - B
    return 0.5 * np.einsum("ij,ij->i", diff, diff)


# ---------------------------------------------------------------------------------------- tasks
def _have_faiss() -> bool:
    try:
        import faiss  # noqa: F401
    except Exception:  # pragma: no cover - depends on the environment
        return False
    return True


def build_index_task(U: NDArray[np.float32], method: str, params: Dict[str, Any]) -> NDArray[np.uint8]:
    """Serialised faiss index (inner product) over one database shard, for approximate search."""
    import faiss

    U = np.ascontiguousarray(U, dtype=np.float32)
    d = U.shape[1]
    if method == "hnsw":
        index = faiss.IndexHNSWFlat(d, int(params.get("hnsw_m", 32)), faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = int(params.get("hnsw_ef_construction", 64))
        index.add(U)
    elif method == "ivf":
        nlist = int(params.get("ivf_nlist") or max(1, min(U.shape[0] // 39, int(4 * np.sqrt(U.shape[0])))))
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(int(params.get("random_state") or 0))
        train = (
            U if U.shape[0] <= 256 * nlist else U[np.sort(rng.choice(U.shape[0], 256 * nlist, replace=False))]
        )
        index.cp.seed = int(params.get("random_state") or 0)
        index.train(train)
        index.add(U)
    else:  # pragma: no cover - validated by the caller
        raise ValueError(f"unknown approximate method {method!r}")
    return faiss.serialize_index(index)


def _search_shard(
    Uq: NDArray[np.float32], db: Any, k: int, method: str, params: Dict[str, Any]
) -> NDArray[np.int64]:
    """Local ids of the ``k`` best inner-product matches of each query row in one database shard."""
    if method == "exact":
        Udb = np.ascontiguousarray(db, dtype=np.float32)
        k = min(k, Udb.shape[0])
        if _have_faiss():
            import faiss

            index = faiss.IndexFlatIP(Udb.shape[1])
            index.add(Udb)
            _, I = index.search(Uq, k)
            return I.astype(np.int64)
        out = np.empty((Uq.shape[0], k), dtype=np.int64)
        block = int(params.get("block", 2048))
        for s in range(0, Uq.shape[0], block):
            S = Uq[s : s + block] @ Udb.T
            out[s : s + block] = np.argpartition(-S, k - 1, axis=1)[:, :k]
        return out
    import faiss

    index = faiss.deserialize_index(db)
    k = min(k, index.ntotal)
    if method == "hnsw":
        index.hnsw.efSearch = int(params.get("hnsw_ef_search") or max(2 * k, 64))
    else:
        index.nprobe = int(params.get("ivf_nprobe", 16))
    _, I = index.search(Uq, k)
    return I.astype(np.int64)


def _candidate_distances(
    Uq: NDArray[np.float32], Udb: NDArray[np.float32], cand: NDArray[np.int64], block: int = 2048
) -> NDArray[np.float64]:
    """``d(Uq[i], Udb[cand[i, j]])`` for all ``i, j``, blockwise over rows. Memory ``O(block m d)``."""
    n_q, m = cand.shape
    out = np.empty((n_q, m), dtype=np.float64)
    for s in range(0, n_q, block):
        c = cand[s : s + block]
        rows = np.repeat(Uq[s : s + block], m, axis=0)
        out[s : s + block] = pair_cosine_distances(rows, Udb[c.ravel()]).reshape(c.shape)
    return out


def knn_task(
    q_offset: int,
    Uq: NDArray[np.float32],
    db_offsets: NDArray[np.int64],
    method: str,
    params: Dict[str, Any],
    k: int,
    graph_k: int,
    *db: Any,
) -> Tuple[NDArray[np.float64], Tuple[NDArray[np.int64], NDArray[np.float64]]]:
    """k-NN of one query shard against every database shard.

    ``db`` holds the database shards' unit rows ``U_0 .. U_{S-1}`` and, for approximate methods,
    then their serialised indices ``I_0 .. I_{S-1}`` (see :func:`build_index_task`).

    Returns ``(kth, (nbr_idx, nbr_dist))``: the distance to the ``k``-th nearest other row, shape
    ``(n_q,)``, and the ``graph_k`` nearest other rows (global ids, float64 cosine distances,
    sorted by distance then id), shape ``(n_q, graph_k)``.

    Notes
    -----
    Exact: time ``O(n_q n d)``; approximate: ``O(n_q S ef d log(n / S))``. Memory
    ``O(n_q S graph_k)`` candidates plus one database shard's index at a time.
    """
    Uq = np.ascontiguousarray(Uq, dtype=np.float32)
    n_s = len(db_offsets)
    shards = db[:n_s]
    indices = db[n_s:] if method != "exact" else shards
    own = q_offset + np.arange(Uq.shape[0])
    k_search = graph_k + 1
    cand_ids: List[NDArray[np.int64]] = []
    cand_dist: List[NDArray[np.float64]] = []
    for off, Udb, idx in zip(db_offsets, shards, indices):
        Udb = np.asarray(Udb)
        local = _search_shard(Uq, idx, k_search, method, params)
        valid = local >= 0  # faiss pads with -1 when it finds fewer results
        local_c = np.where(valid, local, 0)
        dist = _candidate_distances(Uq, Udb, local_c)
        cand_ids.append(np.where(valid, local_c + int(off), -1))
        cand_dist.append(np.where(valid, dist, np.inf))
    ids = np.concatenate(cand_ids, axis=1)
    dist = np.concatenate(cand_dist, axis=1)
    dist[ids == own[:, None]] = np.inf
    ids = np.where(np.isinf(dist), np.iinfo(np.int64).max, ids)
    order = _sort_by_dist_then_id(dist, ids)[:, :graph_k]
    ids = np.take_along_axis(ids, order, axis=1)
    dist = np.take_along_axis(dist, order, axis=1)
    if not np.all(np.isfinite(dist)):
        raise RuntimeError(
            "the approximate search returned fewer than graph_k neighbours for some rows; "
            "raise hnsw_ef_search / ivf_nprobe or use knn='exact'"
        )
    return dist[:, k - 1].copy(), (ids, dist)


def _sort_by_dist_then_id(dist: NDArray[np.float64], ids: NDArray[np.int64]) -> NDArray[np.int64]:
    o1 = np.argsort(ids, axis=1, kind="stable")
    d1 = np.take_along_axis(dist, o1, axis=1)
    o2 = np.argsort(d1, axis=1, kind="stable")
    return np.take_along_axis(o1, o2, axis=1)


def edges_task(
    q_offset: int, eps: float, knn_pack: Tuple[NDArray[np.int64], NDArray[np.float64]]
) -> Tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Per-shard components of the k-NN pairs within ``eps``.

    Returns ``(local_labels, cross_a, cross_b, dense)``: the component of each of the shard's rows
    among pairs inside the shard (shape ``(n_q,)``, ids ``0..``), the pairs within ``eps`` that
    leave the shard (global ids), and the global ids of the shard's dense rows (``graph_k``-th
    neighbour within ``eps``). Time ``O(n_q graph_k log n_q)``.
    """
    ids, dist = knn_pack
    n_q = ids.shape[0]
    rows = np.repeat(np.arange(n_q, dtype=np.int64) + q_offset, ids.shape[1])
    ids_f = ids.ravel()
    keep = dist.ravel() <= eps
    a, b = rows[keep], ids_f[keep]
    inside = (b >= q_offset) & (b < q_offset + n_q)
    local = UnionFind(n_q).union(a[inside] - q_offset, b[inside] - q_offset).labels()
    dense = q_offset + np.flatnonzero(dist[:, -1] <= eps + _SLACK)
    return local, a[~inside], b[~inside], dense.astype(np.int64)


def _concat_task(*parts: NDArray[np.float32]) -> NDArray[np.float32]:
    return np.ascontiguousarray(np.concatenate(parts))


def take_rows_task(U: NDArray[np.float32], local_rows: NDArray[np.int64]) -> NDArray[np.float32]:
    """``U[local_rows]`` (a copy, so only those rows travel)."""
    return np.ascontiguousarray(np.asarray(U)[local_rows])


def completion_task(
    start: int, stop: int, W: NDArray[np.float32], reps: NDArray[np.int64], eps: float
) -> Tuple[NDArray[np.int64], NDArray[np.int64]]:
    """All pairs within ``eps`` between rows ``start:stop`` of ``W`` and the rows after them.

    ``W`` are the distinct dense unit rows and ``reps`` their global ids. Returns global id
    pairs. Time ``O((stop - start) m d)`` for ``m`` rows; memory ``O((stop - start) m)``.
    """
    S = W[start:stop] @ W.T
    r, c = np.nonzero(S >= 1.0 - eps - _SLACK)
    r = r + start
    keep = c > r
    r, c = r[keep], c[keep]
    if r.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ok = pair_cosine_distances(W[r], W[c]) <= eps
    return reps[r[ok]], reps[c[ok]]


# ---------------------------------------------------------------------------------------- driver
@dataclass
class EpsGraphResult:
    """Output of :func:`sharded_eps_components`.

    Attributes
    ----------
    labels : ndarray of shape (n,), int64
        Component of every row, numbered ``0, 1, ...`` by lowest member.
    eps : float
        The radius used (cosine distance).
    kth_distances : ndarray of shape (n,), float64
        Distance of every row to its ``dbscan_k``-th nearest other row.
    exact : bool
        Whether the neighbour search was exact (then ``labels`` equal DBSCAN's partition).
    n_dense, n_cross_edges, n_completion_edges : int
        Size of the merge work (diagnostics).
    truncated : bool
        The dense-row completion was skipped because it exceeded ``completion_limit``.
    timings : dict
        Seconds per step (``knn`` including index builds, ``edges``, ``completion``, ``merge``).
    """

    labels: NDArray[np.int64]
    eps: float
    kth_distances: NDArray[np.float64]
    exact: bool
    n_dense: int = 0
    n_cross_edges: int = 0
    n_completion_edges: int = 0
    truncated: bool = False
    timings: Dict[str, float] = field(default_factory=dict)

    @property
    def n_clusters(self) -> int:
        return int(self.labels.max()) + 1 if self.labels.size else 0


def _check_knn(knn: str) -> str:
    if knn not in KNN_METHODS:
        raise ValueError(f"knn must be one of {KNN_METHODS}; got {knn!r}")
    if knn != "exact" and not _have_faiss():
        raise ValueError(
            f"knn={knn!r} needs faiss (extra 'fast': pip install -e '.[fast]'); or use knn='exact'"
        )
    return knn


def sharded_eps_components(
    executor: Executor,
    shards: Sequence[Any],
    lengths: Sequence[int],
    dbscan_k: int = D.DBSCAN_K,
    dbscan_q: float = D.DBSCAN_Q,
    graph_k: Optional[int] = None,
    knn: str = D.KNN,
    knn_params: Optional[Dict[str, Any]] = None,
    eps: Optional[float] = None,
    completion_limit: int = 60_000,
    index_shards: Optional[int] = None,
) -> EpsGraphResult:
    """DBSCAN(``min_samples=1``) components of sharded unit rows (see the module docstring).

    Parameters
    ----------
    executor : Executor
    shards : sequence of handles
        Executor handles (or arrays) of the unit-row shards ``U_s`` (float32, shape ``(n_s, d)``),
        in row order.
    lengths : sequence of int
        Rows per shard.
    dbscan_k : int
        ``k`` of the k-th-neighbour distances whose quantile is ``eps``.
    dbscan_q : float in (0, 1)
    graph_k : int, optional
        Neighbours kept per row (default ``max(2 dbscan_k, 32)``, capped at ``n - 1``, as the
        local clusterer).
    knn : {"exact", "hnsw", "ivf"}
        Exact blocked inner products, or a faiss HNSW / IVF-flat index per database shard.
    knn_params : dict, optional
        ``hnsw_m``, ``hnsw_ef_construction``, ``hnsw_ef_search``, ``ivf_nlist``, ``ivf_nprobe``,
        ``random_state``.
    eps : float, optional
        Use this radius instead of the quantile heuristic.
    completion_limit : int
        Most distinct dense rows completed pairwise; beyond it only k-NN pairs are used (warning).
    index_shards : int, optional
        Database partitions searched by every query shard (consecutive shards are concatenated);
        default one per worker. Fewer, larger partitions mean fewer searches per query.

    Returns
    -------
    EpsGraphResult

    Notes
    -----
    Exact search costs ``O(n² d / W)`` time on ``W`` workers and, per task, memory for one query
    shard's candidates plus the database shards it reads; the driver holds ``O(n)`` numbers
    (k-th distances and per-row component ids) and the cross-shard pairs.
    """
    knn = _check_knn(knn)
    params = dict(knn_params or {})
    lengths = [int(x) for x in lengths]
    n = int(sum(lengths))
    if n <= dbscan_k:
        raise ValueError(f"dbscan_k={dbscan_k} needs more than {dbscan_k} rows; got {n}. Lower dbscan_k.")
    gk = graph_k if graph_k is not None else max(2 * dbscan_k, 32)
    gk = int(min(max(gk, dbscan_k), n - 1))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    timings: Dict[str, float] = {}

    t = time.perf_counter()
    n_idx = executor.num_workers if index_shards is None else int(index_shards)
    if n_idx < 1:
        raise ValueError(f"index_shards must be a positive integer or None; got {index_shards!r}")
    groups = [g for g in np.array_split(np.arange(len(shards)), min(n_idx, len(shards))) if g.size]
    db = [
        shards[g[0]] if g.size == 1 else executor.submit(_concat_task, *[shards[i] for i in g])
        for g in groups
    ]
    db_offsets = offsets[[g[0] for g in groups]]
    if knn != "exact":
        db = db + [executor.submit(build_index_task, s, knn, params) for s in db]
    packs = []
    kth_handles = []
    for off, s in zip(offsets, shards):
        kth_h, pack_h = executor.submit(
            knn_task, int(off), s, db_offsets, knn, params, dbscan_k, gk, *db, num_returns=2
        )
        kth_handles.append(kth_h)
        packs.append(pack_h)
    kth = np.concatenate(executor.get(kth_handles))
    timings["knn"] = time.perf_counter() - t
    if eps is None:
        eps = eps_from_knn(kth, dbscan_q)

    t = time.perf_counter()
    outs = executor.get(
        [executor.submit(edges_task, int(off), float(eps), p) for off, p in zip(offsets, packs)]
    )
    del packs
    n_comp = np.array([int(o[0].max()) + 1 if o[0].size else 0 for o in outs], dtype=np.int64)
    comp_off = np.concatenate([[0], np.cumsum(n_comp)[:-1]]).astype(np.int64)
    row_comp = np.concatenate([o[0] + c for o, c in zip(outs, comp_off)])
    cross_a = np.concatenate([o[1] for o in outs])
    cross_b = np.concatenate([o[2] for o in outs])
    dense = [o[3] for o in outs]
    timings["edges"] = time.perf_counter() - t

    t = time.perf_counter()
    comp_a, comp_b, truncated = _completion(executor, shards, offsets, dense, float(eps), completion_limit)
    timings["completion"] = time.perf_counter() - t

    t = time.perf_counter()
    uf = UnionFind(int(n_comp.sum()))
    uf.union(row_comp[cross_a], row_comp[cross_b])
    uf.union(row_comp[comp_a], row_comp[comp_b])
    labels = canonical_labels(uf.find_all()[row_comp])
    timings["merge"] = time.perf_counter() - t
    return EpsGraphResult(
        labels=labels,
        eps=float(eps),
        kth_distances=kth,
        exact=knn == "exact",
        n_dense=int(sum(d.size for d in dense)),
        n_cross_edges=int(cross_a.size),
        n_completion_edges=int(comp_a.size),
        truncated=truncated,
        timings=timings,
    )


def _completion(
    executor: Executor,
    shards: Sequence[Any],
    offsets: NDArray[np.int64],
    dense: Sequence[NDArray[np.int64]],
    eps: float,
    limit: int,
) -> Tuple[NDArray[np.int64], NDArray[np.int64], bool]:
    """All pairs within ``eps`` among the dense rows of every shard (global ids)."""
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), False)
    total = sum(d.size for d in dense)
    if total < 2:
        return empty
    parts = [
        executor.submit(take_rows_task, s, d - off) for s, d, off in zip(shards, dense, offsets) if d.size
    ]
    V = np.concatenate(executor.get(parts))
    ids = np.concatenate([d for d in dense if d.size])
    uniq, first, inv = np.unique(V, axis=0, return_index=True, return_inverse=True)
    inv = inv.ravel()
    reps = ids[first]
    dup = reps[inv] != ids
    us, vs = [ids[dup]], [reps[inv][dup]]
    m = uniq.shape[0]
    if m > limit:
        warnings.warn(
            f"{m} dense rows exceed completion_limit={limit}; the eps-graph uses the k-NN pairs only "
            "(approximate). Raise completion_limit or lower dbscan_q for an exact cut.",
            RuntimeWarning,
            stacklevel=3,
        )
        return np.concatenate(us), np.concatenate(vs), True
    W = np.ascontiguousarray(uniq, dtype=np.float32)
    W_h = executor.put(W)
    reps_h = executor.put(reps)
    block = max(1, min(m, (1 << 25) // max(m, 1)))
    pairs = executor.get(
        [executor.submit(completion_task, s, min(s + block, m), W_h, reps_h, eps) for s in range(0, m, block)]
    )
    us += [p[0] for p in pairs]
    vs += [p[1] for p in pairs]
    return np.concatenate(us), np.concatenate(vs), False
