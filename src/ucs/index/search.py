"""Candidate search for the index: the ``c`` pool rows most cosine-similar to each query.

``exact`` is exhaustive and certified exact: a float16 scan (faiss) whose candidates are re-scored in float32,
with a bound that guarantees the true top ``c`` are among them (else a full float32 scan), or one numpy
matrix product without faiss. ``hnsw``
searches a faiss HNSW graph (extra ``fast``): sub-linear, approximate; its recall against ``exact`` is
measured in ``benchmarks/index``. Both return candidates most similar first, exact ties by smaller index,
as :func:`ucs.selectors._retrieval.topk_cosine` does.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ucs.selectors._retrieval import _topk_rows
from ucs.utils.arrays import take_rows

__all__ = ["SEARCHES", "ExactSearch", "HNSWSearch", "RestrictedSearch", "make_search"]

SEARCHES = ("exact", "hnsw")


def _unit32(x: np.ndarray) -> np.ndarray:
    """ℓ2-normalised float32 rows (norms accumulated in float64; zero rows stay zero)."""
    x = np.asarray(x)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64))
    scale = (1.0 / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32) * scale[:, None])


class ExactSearch:
    """Exhaustive inner-product search over float32 unit rows, certified exact.

    With faiss, every query scans a float16 copy of the pool (faiss ``IndexScalarQuantizer``, half the memory
    traffic of ``IndexFlatIP``), then re-scores in float32 every row that could belong to the top ``c``: a
    float16 row differs from its float32 row by at most ``2^-11`` relative per coordinate, so an approximate
    score is within ``BOUND`` of the float32 one (unit rows and queries, Cauchy–Schwarz), and every row of the
    true top ``c`` scores at least ``s_c - 2 BOUND`` in the scan (``s_c``: the ``c``-th approximate score).
    When the scan's list does not reach below that threshold, the query falls back to the full float32 scan.
    Without faiss it is one numpy matrix product.

    Parameters
    ----------
    pool : ndarray (N, d)
        Pool embeddings (normalised here).

    Notes
    -----
    O(Q·N·d) per call, memory-bound: ``2·N·d`` bytes read per query (``4·N·d`` without faiss), plus an O(m·d)
    re-score of ``m = 2c + 16`` rows.
    """

    kind = "exact"

    def __init__(self, pool: np.ndarray, block: int = 256) -> None:
        self.block = block
        self.pool = _unit32(pool)
        self._half = None
        self.n_fallbacks = 0
        try:
            import faiss
        except ImportError:
            return
        d = self.pool.shape[1]
        self._half = faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
        self._half.add(self.pool)
        # float16 rounding (2^-11 relative) plus float32 accumulation of d products in either scan
        self.bound = 2.0**-11 + 4.0 * d * 2.0**-24

    @property
    def row_invariant(self) -> bool:
        """Whether each query's candidates are the same searched alone or with others: true with faiss (a scan
        per query), false for the numpy product, whose rounding depends on how many queries it multiplies."""
        return self._half is not None

    def add(self, rows: np.ndarray) -> None:
        new = _unit32(rows)
        self.pool = np.ascontiguousarray(np.concatenate([self.pool, new]))
        if self._half is not None:
            self._half.add(new)

    def copy(self) -> "ExactSearch":
        """A search over the same rows whose :meth:`add` leaves this one as it is (the float32 pool is shared:
        ``add`` replaces it rather than writing into it; the float16 copy is cloned, O(N·d))."""
        other = object.__new__(ExactSearch)
        other.__dict__.update(self.__dict__)
        other.n_fallbacks = 0
        if self._half is not None:
            other._half = _faiss().clone_index(self._half)
        return other

    def __call__(
        self, queries: np.ndarray, c: int, allowed: Optional["Allowed"] = None
    ) -> Tuple[np.ndarray, np.ndarray]:
        """The ``c`` most similar rows of each query; with ``allowed``, only among those rows (faiss masks the
        others during the scan; ``c`` must not exceed their number)."""
        q32 = _unit32(queries) if queries.shape[0] else np.ascontiguousarray(queries, dtype=np.float32)
        if c == 0 or q32.shape[0] == 0:
            return np.empty((q32.shape[0], c), dtype=np.int64), np.empty((q32.shape[0], c))
        if self._half is None:
            return self._numpy(q32, c, allowed)
        n = self.pool.shape[0] if allowed is None else allowed.rows.size
        m = min(n, 2 * c + 16)
        params = None if allowed is None else allowed.params()
        approx, cand = self._half.search(q32, m, params=params)
        idx = np.empty((q32.shape[0], c), dtype=np.int64)
        val = np.empty((q32.shape[0], c))
        for r in range(q32.shape[0]):
            keep = approx[r] >= approx[r, c - 1] - 2.0 * self.bound
            if m < n and keep[-1]:  # the threshold reaches past the scanned list: scan exactly
                self.n_fallbacks += 1
                idx[r : r + 1], val[r : r + 1] = self._numpy(q32[r : r + 1], c, allowed)
                continue
            rows = cand[r][keep]
            sims = self.pool[rows] @ q32[r]
            idx[r], val[r] = (a[0] for a in _order(rows[None, :], sims[None, :], c))
        return idx, val

    def _numpy(
        self, q32: np.ndarray, c: int, allowed: Optional["Allowed"] = None
    ) -> Tuple[np.ndarray, np.ndarray]:
        idx = np.empty((q32.shape[0], c), dtype=np.int64)
        val = np.empty((q32.shape[0], c))
        pool = self.pool if allowed is None else self.pool[allowed.rows]
        for s in range(0, q32.shape[0], self.block):
            sims = q32[s : s + self.block] @ pool.T
            idx[s : s + self.block], val[s : s + self.block] = _topk_rows(sims.astype(np.float64), c)
        if allowed is not None:
            idx = allowed.rows[idx]
        return idx, val

    def state(self) -> dict:
        return {}


def _order(idx: np.ndarray, sims: np.ndarray, c: int) -> Tuple[np.ndarray, np.ndarray]:
    """Sort each row by similarity descending, ties by smaller index, and keep ``c``."""
    sims = sims.astype(np.float64)
    idx = idx.astype(np.int64)
    order = np.lexsort((idx, -sims), axis=1)[:, :c]
    return take_rows(idx, order), take_rows(sims, order)


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
        self,
        pool: np.ndarray,
        m: int = 32,
        ef_construction: int = 100,
        ef_search: int = 128,
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
        self.n_fallbacks = 0

    #: Each query walks the graph on its own: its candidates do not depend on the other queries of a call.
    row_invariant = True

    def copy(self) -> "HNSWSearch":
        """A search over the same graph whose :meth:`add` leaves this one as it is (the graph is cloned)."""
        other = object.__new__(HNSWSearch)
        other.__dict__.update(self.__dict__)
        other.n_fallbacks = 0
        other.index = _faiss().clone_index(self.index)
        return other

    def add(self, rows: np.ndarray) -> None:
        faiss = _faiss()
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            self.index.add(_unit32(rows))
        finally:
            faiss.omp_set_num_threads(threads)

    def __call__(
        self, queries: np.ndarray, c: int, allowed: Optional["Allowed"] = None
    ) -> Tuple[np.ndarray, np.ndarray]:
        """The ``c`` nearest rows of each query; with ``allowed``, a filtered graph search (faiss
        ``SearchParametersHNSW(sel=IDSelectorBitmap)``) that visits only those rows' results; a query for
        which the beam finds fewer than ``c`` of them is answered exactly over the allowed rows instead."""
        q32 = np.ascontiguousarray(queries, dtype=np.float32)
        if allowed is None:
            self.index.hnsw.efSearch = max(self.ef_search, c)
            sims, idx = self.index.search(q32, c)
            return _order(idx, sims, c)
        params = allowed.params(hnsw=True)
        params.efSearch = max(self.ef_search, c)
        sims, idx = self.index.search(q32, c, params=params)
        short = np.flatnonzero((idx < 0).any(axis=1))
        if short.size:
            self.n_fallbacks += int(short.size)
            rows = allowed.rows
            pool = _unit32(self.index.reconstruct_batch(rows))
            exact = _unit32(q32[short]) @ pool.T
            sub, val = _topk_rows(exact.astype(np.float64), c)
            idx, sims = idx.astype(np.int64), sims.astype(np.float64)
            idx[short], sims[short] = rows[sub], val
        return _order(idx, sims, c)

    def state(self) -> dict:
        return {"hnsw_graph": np.asarray(_faiss().serialize_index(self.index), dtype=np.uint8)}


class Allowed:
    """The rows a filtered search may return: sorted int64 positions and, with faiss, the
    ``IDSelectorBitmap`` over them (built once, kept with the bitmap it points into)."""

    def __init__(self, rows: np.ndarray, n: int) -> None:
        self.rows = np.ascontiguousarray(rows, dtype=np.int64)
        self.n = int(n)
        self._selector = None

    def params(self, hnsw: bool = False):
        """faiss search parameters that keep only these rows."""
        faiss = _faiss()
        if self._selector is None:
            self._bitmap = np.zeros((self.n + 7) // 8, dtype=np.uint8)
            np.bitwise_or.at(self._bitmap, self.rows >> 3, (1 << (self.rows & 7)).astype(np.uint8))
            self._selector = faiss.IDSelectorBitmap(self.n, faiss.swig_ptr(self._bitmap))
        return (
            faiss.SearchParametersHNSW(sel=self._selector)
            if hnsw
            else faiss.SearchParameters(sel=self._selector)
        )


class RestrictedSearch:
    """A candidate search over a subset of the pool, in the subset's own positions: what a selector fitted on
    ``pool[rows]`` is given by :meth:`ucs.selectors.base.Selector.set_candidate_search`.

    Parameters
    ----------
    search : ExactSearch or HNSWSearch
        The index's search over the whole pool.
    rows : ndarray of int64
        Sorted pool positions of the subset.
    """

    def __init__(self, search, rows: np.ndarray) -> None:
        self.search = search
        self.allowed = Allowed(rows, _pool_size(search))

    def __call__(self, queries: np.ndarray, c: int) -> Tuple[np.ndarray, np.ndarray]:
        idx, sims = self.search(queries, c, allowed=self.allowed)
        return np.searchsorted(self.allowed.rows, idx), sims


def _pool_size(search) -> int:
    return int(search.pool.shape[0]) if search.kind == "exact" else int(search.index.ntotal)


def _faiss():
    try:
        import faiss
    except ImportError as exc:
        raise ValueError(
            "candidate_search='hnsw' needs faiss: pip install -e '.[fast]' in the ucs repository (or pip "
            "install faiss-cpu)"
        ) from exc
    return faiss


def make_search(kind: str, pool: np.ndarray, params: dict, serialized: Optional[np.ndarray] = None):
    """An :class:`ExactSearch` or :class:`HNSWSearch` over ``pool``."""
    if kind == "exact":
        return ExactSearch(pool)
    if kind == "hnsw":
        return HNSWSearch(pool, serialized=serialized, **params)
    raise ValueError(f"candidate_search must be one of {SEARCHES}; got {kind!r}")
