"""Candidate search for the index: the ``c`` pool rows most cosine-similar to each query.

``exact`` scans a float32 copy of the ℓ2-normalised pool (faiss ``IndexFlatIP`` when installed, else one
matrix product; a quarter of the memory traffic of the selectors' float64 BLAS scan). ``hnsw``
searches a faiss HNSW graph (extra ``fast``): sub-linear, approximate; its recall against ``exact`` is
measured in ``benchmarks/index``. Both return candidates most similar first, exact ties by smaller index,
as :func:`ucs.selectors._retrieval.topk_cosine` does.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ucs.selectors._retrieval import _topk_rows

__all__ = ["SEARCHES", "ExactSearch", "HNSWSearch", "make_search"]

SEARCHES = ("exact", "hnsw")


def _unit32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.ascontiguousarray(x / np.where(norms > 0, norms, 1.0), dtype=np.float32)


class ExactSearch:
    """Exact inner-product search over float32 unit rows (faiss ``IndexFlatIP`` when faiss is installed,
    else a numpy matrix product; both exhaustive).

    Parameters
    ----------
    pool : ndarray (N, d)
        Pool embeddings (normalised here).

    Notes
    -----
    O(Q·N·d) per call (memory-bound: ``4·N·d`` bytes read per query block), plus O(Q·c log c) to order the
    candidates. faiss's SIMD scan reads the pool about twice as fast as a BLAS matrix-vector product.
    """

    kind = "exact"

    def __init__(self, pool: np.ndarray, block: int = 256) -> None:
        self.block = block
        self.pool = _unit32(pool)
        self._flat = None
        try:
            import faiss
        except ImportError:
            return
        self._flat = faiss.IndexFlatIP(self.pool.shape[1])
        self._flat.add(self.pool)

    def add(self, rows: np.ndarray) -> None:
        new = _unit32(rows)
        self.pool = np.ascontiguousarray(np.concatenate([self.pool, new]))
        if self._flat is not None:
            self._flat.add(new)

    def __call__(self, queries: np.ndarray, c: int) -> Tuple[np.ndarray, np.ndarray]:
        q32 = np.ascontiguousarray(queries, dtype=np.float32)
        if self._flat is not None:
            # one more than c, so a tie at the c-th place can be resolved by index like topk_cosine
            kk = min(c + 1, self.pool.shape[0])
            sims, idx = self._flat.search(q32, kk)
            return _order(idx, sims, c)
        idx = np.empty((q32.shape[0], c), dtype=np.int64)
        val = np.empty((q32.shape[0], c))
        for s in range(0, q32.shape[0], self.block):
            sims = q32[s : s + self.block] @ self.pool.T
            idx[s : s + self.block], val[s : s + self.block] = _topk_rows(sims.astype(np.float64), c)
        return idx, val

    def state(self) -> dict:
        return {}


def _order(idx: np.ndarray, sims: np.ndarray, c: int) -> Tuple[np.ndarray, np.ndarray]:
    """Sort each row by similarity descending, ties by smaller index, and keep ``c``."""
    sims = sims.astype(np.float64)
    idx = idx.astype(np.int64)
    order = np.lexsort((idx, -sims), axis=1)[:, :c]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(sims, order, axis=1)


class HNSWSearch:
    """Approximate search with a faiss HNSW graph over float32 unit rows (inner product).

    Parameters
    ----------
    pool : ndarray (N, d)
    m : int
        Graph degree (faiss ``M``).
    ef_construction, ef_search : int
        Beam widths when building and searching; ``ef_search`` is raised to ``c`` at query time.
    serialized : ndarray of uint8, optional
        A graph written by :meth:`state` (loading skips the build).

    Notes
    -----
    The graph is built single-threaded so the same pool always gives the same graph (and the same
    candidates). Build O(N·log N·m·d); query O(ef_search·log N·d).
    """

    kind = "hnsw"

    def __init__(
        self, pool: np.ndarray, m: int = 32, ef_construction: int = 100, ef_search: int = 128,
        serialized: Optional[np.ndarray] = None,
    ) -> None:
        faiss = _faiss()
        self.m, self.ef_construction, self.ef_search = int(m), int(ef_construction), int(ef_search)
        if serialized is not None:
            self.index = faiss.deserialize_index(np.ascontiguousarray(serialized, dtype=np.uint8))
        else:
            self.index = faiss.IndexHNSWFlat(pool.shape[1], self.m, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efConstruction = self.ef_construction
            self.add(pool)

    def add(self, rows: np.ndarray) -> None:
        faiss = _faiss()
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            self.index.add(_unit32(rows))
        finally:
            faiss.omp_set_num_threads(threads)

    def __call__(self, queries: np.ndarray, c: int) -> Tuple[np.ndarray, np.ndarray]:
        self.index.hnsw.efSearch = max(self.ef_search, c)
        sims, idx = self.index.search(np.ascontiguousarray(queries, dtype=np.float32), c)
        return _order(idx, sims, c)

    def state(self) -> dict:
        return {"hnsw_graph": np.asarray(_faiss().serialize_index(self.index), dtype=np.uint8)}


def _faiss():
    try:
        import faiss
    except ImportError as exc:
        raise ValueError("candidate_search='hnsw' needs faiss: pip install 'ucs-icl[fast]' (or faiss-cpu)") from exc
    return faiss


def make_search(kind: str, pool: np.ndarray, params: dict, serialized: Optional[np.ndarray] = None):
    """An :class:`ExactSearch` or :class:`HNSWSearch` over ``pool``."""
    if kind == "exact":
        return ExactSearch(pool)
    if kind == "hnsw":
        return HNSWSearch(pool, serialized=serialized, **params)
    raise ValueError(f"candidate_search must be one of {SEARCHES}; got {kind!r}")
