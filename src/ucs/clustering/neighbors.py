"""k-nearest neighbours under cosine distance, and the DBSCAN ``eps`` heuristic (SPEC §2 step 5).

Rows are ℓ2-normalised first; on unit vectors the cosine distance ``1 - <a, b>`` equals
``0.5 ||a - b||²``, which is how every distance that enters a decision is computed here (in
float64 on the gathered pairs): it is exactly zero for identical rows and free of the
cancellation that ``1 - <a, b>`` suffers for near-duplicates. The neighbour *search* runs in
the rows' dtype: exact by blocked matrix products (faiss ``IndexFlatIP`` when faiss is
installed, numpy otherwise), or approximate with a faiss HNSW graph above a size threshold.
"""

from __future__ import annotations

import warnings
from typing import Optional, Tuple

import numpy as np
from numpy.typing import NDArray

__all__ = ["unit_rows", "pair_distances", "knn", "knn_recall", "eps_from_knn", "have_faiss", "ZERO_DISTANCE"]

#: Cosine distances at or below this count as zero. float32 cannot represent a cosine similarity
#: between ``1 - 6e-8`` and 1, so a smaller distance between float32 unit rows carries no signal:
#: it is the rounding of identical inputs computed in different BLAS blocks or thread splits.
ZERO_DISTANCE = 1e-8


def have_faiss() -> bool:
    """Whether the optional ``faiss`` package (extra ``fast``) can be imported."""
    try:
        import faiss  # noqa: F401
    except Exception:  # pragma: no cover - depends on the environment
        return False
    return True


def unit_rows(X: NDArray[np.floating], eps: float = 1e-12, block: int = 65_536) -> NDArray[np.float32]:
    """``x / (||x|| + eps)`` per row, as C-contiguous float32 (zero rows stay zero).

    Computed in float64 a block of rows at a time, so the extra memory is ``O(block · d)`` rather than a
    float64 copy of the whole matrix (1 GB at 1,000,000 × 128). Time ``O(n d)``.
    """
    X = np.asarray(X)
    out = np.empty(X.shape, dtype=np.float32)
    for s in range(0, X.shape[0], block):
        X64 = np.asarray(X[s : s + block], dtype=np.float64)
        norms = np.sqrt(np.einsum("ij,ij->i", X64, X64))
        out[s : s + block] = X64 / (norms + eps)[:, None]
    return out


def pair_distances(
    U: NDArray[np.float32], rows: NDArray[np.int64], cols: NDArray[np.int64], block: int = 1 << 16
) -> NDArray[np.float64]:
    """Cosine distances ``0.5 ||U[r] - U[c]||²`` of the given pairs, in float64, blockwise.

    Time ``O(m d)`` for ``m`` pairs; memory ``O(block d)``.
    """
    rows = np.asarray(rows).ravel()
    cols = np.asarray(cols).ravel()
    out = np.empty(rows.shape[0], dtype=np.float64)
    for s in range(0, rows.shape[0], block):
        diff = U[rows[s : s + block]].astype(np.float64) - U[cols[s : s + block]]
        out[s : s + block] = 0.5 * np.einsum("ij,ij->i", diff, diff)
    return out


def _drop_self(idx: NDArray[np.int64], k: int) -> NDArray[np.int64]:
    """Remove each row's own index from its candidate list (or its last candidate if absent)."""
    mask = idx == np.arange(idx.shape[0])[:, None]
    order = np.argsort(mask, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1)[:, :k]


def _knn_numpy(U: NDArray[np.float32], k: int, block: int) -> NDArray[np.int64]:
    n = U.shape[0]
    out = np.empty((n, k), dtype=np.int64)
    for s in range(0, n, block):
        S = U[s : s + block] @ U.T
        S[np.arange(S.shape[0]), np.arange(s, s + S.shape[0])] = -np.inf
        out[s : s + block] = np.argpartition(-S, k - 1, axis=1)[:, :k]
    return out


def _faiss_search(index, U: NDArray[np.float32], k: int) -> NDArray[np.int64]:
    _, I = index.search(U, k + 1)
    I = I.astype(np.int64)
    bad = I < 0
    if bad.any():  # faiss pads with -1 when it finds fewer than k+1 results
        I[bad] = np.arange(I.shape[0])[np.nonzero(bad)[0]]
    return _drop_self(I, k)


def knn(
    U: NDArray[np.float32],
    k: int,
    algorithm: str = "auto",
    exact_max: int = 200_000,
    hnsw_m: int = 16,
    hnsw_ef_construction: int = 64,
    hnsw_ef_search: Optional[int] = None,
    block: int = 2048,
) -> Tuple[NDArray[np.int64], NDArray[np.float64], bool]:
    """The ``k`` nearest other rows of every row of ``U`` (unit rows, cosine distance).

    Parameters
    ----------
    U : ndarray of shape (n, d), float32, unit rows
    k : int
        Neighbours per row, self excluded; ``k < n``.
    algorithm : {"auto", "exact", "hnsw"}
        ``auto``: exact for ``n <= exact_max``, HNSW above when faiss is installed.
    hnsw_m, hnsw_ef_construction, hnsw_ef_search :
        faiss HNSW parameters (``ef_search`` defaults to ``max(2 k, 64)``).

    Returns
    -------
    indices : ndarray of shape (n, k), int64, sorted by increasing distance
    distances : ndarray of shape (n, k), float64 cosine distances
    exact : bool
        Whether the search was exact.

    Notes
    -----
    Exact: time ``O(n² d)``, memory ``O(block n)``. HNSW: build ``O(n log n · M d)`` and search
    ``O(n ef d log n)``, memory ``O(n (d + M))``. HNSW graph construction uses all faiss threads
    and is therefore not bit-reproducible run to run; exact search is.
    """
    n = U.shape[0]
    if algorithm == "auto":
        algorithm = "exact" if n <= exact_max or not have_faiss() else "hnsw"
    if algorithm == "hnsw" and not have_faiss():
        warnings.warn(
            "faiss is not installed (extra 'fast'); falling back to exact kNN", RuntimeWarning, stacklevel=2
        )
        algorithm = "exact"
    if algorithm == "exact":
        if have_faiss():
            import faiss

            index = faiss.IndexFlatIP(U.shape[1])
            index.add(U)
            idx = _faiss_search(index, U, k)
        else:
            idx = _knn_numpy(U, k, block)
        exact = True
    elif algorithm == "hnsw":
        import faiss

        index = faiss.IndexHNSWFlat(U.shape[1], hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = hnsw_ef_construction
        index.add(U)
        index.hnsw.efSearch = hnsw_ef_search or max(2 * k, 64)
        idx = _faiss_search(index, U, k)
        exact = False
    else:
        raise ValueError(f"knn_algorithm must be 'auto', 'exact' or 'hnsw'; got {algorithm!r}")
    dist = pair_distances(U, np.repeat(np.arange(n), k), idx.ravel()).reshape(n, k)
    order = np.argsort(dist, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(dist, order, axis=1), exact


def knn_recall(
    U: NDArray[np.float32], indices: NDArray[np.int64], sample: int = 2000, random_state: Optional[int] = 0
) -> float:
    """Recall of an (approximate) kNN list against exact search, on a random sample of rows.

    Counts a returned neighbour as correct when its distance is within the exact k-th
    distance (so ties at the boundary are not penalised). Time ``O(sample · n d)``.
    """
    n, k = indices.shape
    rng = np.random.default_rng(random_state)
    rows = rng.choice(n, size=min(sample, n), replace=False)
    hits = 0
    for s in range(0, rows.size, 512):
        r = rows[s : s + 512]
        S = U[r] @ U.T
        S[np.arange(r.size), r] = -np.inf
        top = np.argpartition(-S, k - 1, axis=1)[:, :k]
        exact_k = pair_distances(U, np.repeat(r, k), top.ravel()).reshape(r.size, k).max(axis=1)
        got = pair_distances(U, np.repeat(r, k), indices[r].ravel()).reshape(r.size, k)
        hits += int((got <= exact_k[:, None] * (1 + 1e-9) + 1e-12).sum())
    return hits / (rows.size * k)


def eps_from_knn(kth_distances: NDArray[np.float64], q: float) -> float:
    """``eps`` = the ``q``-quantile of the k-th-neighbour distances, zero distances dropped.

    A distance at or below :data:`ZERO_DISTANCE` counts as zero: identical inputs can come out of a
    threaded matrix product a few float32 ulps apart (the BLAS splits rows by thread count and
    block position), and such pairs must neither set ``eps`` nor be cut apart by it. The result is
    therefore never below ``ZERO_DISTANCE``; it equals ``ZERO_DISTANCE`` when every k-th-neighbour
    distance is (numerically) zero, i.e. every row has at least k duplicates, and clusters are then
    the groups of duplicate rows.
    """
    d = np.asarray(kth_distances, dtype=np.float64)
    d = d[d > ZERO_DISTANCE]
    if d.size == 0:
        return ZERO_DISTANCE
    return float(np.quantile(d, q))
