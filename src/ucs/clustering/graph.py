"""The eps-graph, its single-linkage hierarchy and cheap re-cuts (SPEC §2 step 5).

With ``min_samples = 1`` every point is a DBSCAN core point, so DBSCAN's clusters are the
connected components of the eps-graph (all pairs at cosine distance ``<= eps``), which are
the clusters of single linkage cut at height ``eps``. A minimum spanning forest (MSF) of a
graph that contains every pair within ``eps_max`` answers every cut ``eps <= eps_max`` with
the components of its edges ``<= eps``: a prefix of the sorted MSF, ``O(n)`` per cut.

Which pairs are needed? Let ``r_i`` be the distance from ``i`` to the last of its ``k_g``
exact nearest neighbours. A pair ``(i, j)`` within ``eps`` that is in neither kNN list has
``d(i, j) >= r_i`` and ``d(i, j) >= r_j``, so both ``r_i <= eps`` and ``r_j <= eps``:
missing pairs occur only among the *dense* rows with ``r <= eps``. Adding all pairs within
``eps`` among those rows (a small blocked product: their number is about ``q n``) makes the
graph complete up to ``eps``, and the partition equals DBSCAN's exactly. With approximate
(HNSW) neighbour lists the same construction is exact whenever every eps-neighbour pair is
found by the search; the benchmark reports agreement against exact on a sample.
"""

from __future__ import annotations

import warnings
from typing import Dict, Tuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

from .neighbors import pair_distances

__all__ = ["LinkageGraph", "canonical_labels", "remap_noise"]

#: weight stored for zero distances: sparse graphs drop explicit zeros in places
_TINY = np.finfo(np.float64).tiny
#: slack for float32 search ranking when deciding which rows are dense
_SLACK = 1e-5


def canonical_labels(labels: NDArray[np.integer]) -> NDArray[np.int64]:
    """Relabel clusters ``0, 1, ...`` in order of their first member's index. ``O(n log n)``."""
    labels = np.asarray(labels)
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inv.ravel()]


def _unique_edges(a: NDArray[np.int64], b: NDArray[np.int64], w: NDArray[np.float64], n: int):
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi
    key = lo[keep] * np.int64(n) + hi[keep]
    key, first = np.unique(key, return_index=True)
    return key // n, key % n, w[keep][first]


class LinkageGraph:
    """Neighbour graph of unit rows with an exact-up-to-``eps_max`` single-linkage forest.

    Parameters
    ----------
    U : ndarray of shape (n, d), float32 unit rows
    nbr_idx : ndarray of shape (n, k_g), int64, each row sorted by distance
    nbr_dist : ndarray of shape (n, k_g), float64 cosine distances
    exact_knn : bool
        Whether the neighbour lists come from exact search.
    completion_limit : int
        Largest number of dense rows whose pairwise completion is computed; beyond it the
        graph stays the kNN graph (approximate, with a warning).

    Attributes
    ----------
    complete_to : float
        The forest is exact for every ``eps <= complete_to``.
    msf_u, msf_v, msf_w : ndarrays of shape (n_edges,)
        Spanning-forest edges sorted by weight.
    """

    def __init__(
        self,
        U: NDArray[np.float32],
        nbr_idx: NDArray[np.int64],
        nbr_dist: NDArray[np.float64],
        exact_knn: bool = True,
        completion_limit: int = 60_000,
    ) -> None:
        self.U = U
        self.nbr_idx = nbr_idx
        self.nbr_dist = nbr_dist
        self.exact_knn = bool(exact_knn)
        self.completion_limit = int(completion_limit)
        self.n = U.shape[0]
        self.radius = nbr_dist[:, -1] if nbr_dist.shape[1] else np.zeros(self.n)
        self.complete_to = -1.0
        self.extra_u = np.zeros(0, dtype=np.int64)
        self.extra_v = np.zeros(0, dtype=np.int64)
        self.extra_w = np.zeros(0, dtype=np.float64)
        self.msf_u = np.zeros(0, dtype=np.int64)
        self.msf_v = np.zeros(0, dtype=np.int64)
        self.msf_w = np.zeros(0, dtype=np.float64)
        self.truncated = False

    # ------------------------------------------------------------------ building
    def _completion(self, eps: float) -> Tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
        """All pairs within ``eps`` among the dense rows (``radius <= eps``)."""
        dense = np.flatnonzero(self.radius <= eps + _SLACK)
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        if dense.size < 2:
            return empty
        V = self.U[dense]
        # exact duplicates collapse onto one representative first
        uniq, rep_first, inv = np.unique(V, axis=0, return_index=True, return_inverse=True)
        inv = inv.ravel()
        reps = dense[rep_first]
        dup = reps[inv] != dense
        us, vs, ws = [dense[dup]], [reps[inv][dup]], [np.zeros(int(dup.sum()))]
        m = uniq.shape[0]
        if m > self.completion_limit:
            self.truncated = True
            warnings.warn(
                f"{m} dense rows exceed completion_limit={self.completion_limit}; the eps-graph uses the kNN "
                "edges only (approximate). Raise completion_limit or lower the quantile for an exact cut.",
                RuntimeWarning,
                stacklevel=3,
            )
            return empty
        W = np.ascontiguousarray(uniq, dtype=np.float32)
        block = max(1, min(m, (1 << 25) // max(m, 1)))
        thr = 1.0 - eps - _SLACK  # similarity threshold with slack for float32 products
        for s in range(0, m, block):
            S = W[s : s + block] @ W.T
            r, c = np.nonzero(S >= thr)
            r = r + s
            keep = c > r
            r, c = r[keep], c[keep]
            if r.size:
                d = pair_distances(W, r, c)
                ok = d <= eps
                us.append(reps[r[ok]])
                vs.append(reps[c[ok]])
                ws.append(d[ok])
        return np.concatenate(us), np.concatenate(vs), np.concatenate(ws)

    def ensure(self, eps: float) -> None:
        """Make the spanning forest exact for cuts up to ``eps`` (no-op when it already is)."""
        if eps <= self.complete_to:
            return
        self.extra_u, self.extra_v, self.extra_w = self._completion(eps)
        n, k = self.nbr_idx.shape
        if self.complete_to < 0:
            base_u = np.repeat(np.arange(n, dtype=np.int64), k)
            base_v, base_w = self.nbr_idx.ravel(), self.nbr_dist.ravel()
        else:
            # MSF(G ∪ E') = MSF(MSF(G) ∪ E'): extending needs only the forest and the new pairs
            base_u, base_v, base_w = self.msf_u, self.msf_v, self.msf_w
        a = np.concatenate([base_u, self.extra_u])
        b = np.concatenate([base_v, self.extra_v])
        w = np.concatenate([base_w, self.extra_w])
        a, b, w = _unique_edges(a, b, w, n)
        G = sparse.csr_matrix((np.maximum(w, _TINY), (a, b)), shape=(n, n))
        T = minimum_spanning_tree(G).tocoo()
        order = np.argsort(T.data, kind="stable")
        self.msf_u = T.row[order].astype(np.int64)
        self.msf_v = T.col[order].astype(np.int64)
        self.msf_w = T.data[order].astype(np.float64)
        self.msf_w[self.msf_w <= _TINY] = 0.0
        self.complete_to = float(eps)

    # ------------------------------------------------------------------ queries
    def components(self, eps: float) -> NDArray[np.int64]:
        """DBSCAN(min_samples=1) labels at ``eps``: components of the forest's edges ``<= eps``.

        Time ``O(n log n)`` (``O(n)`` graph work plus canonical relabelling).
        """
        self.ensure(eps)
        m = int(np.searchsorted(self.msf_w, eps, side="right"))
        G = sparse.csr_matrix(
            (np.ones(m, dtype=np.int8), (self.msf_u[:m], self.msf_v[:m])), shape=(self.n, self.n)
        )
        _, lab = connected_components(G, directed=False)
        return canonical_labels(lab)

    def eps_graph(self, eps: float) -> sparse.csr_matrix:
        """Symmetric sparse matrix of all pairs within ``eps`` (zero distances stored as a tiny
        positive value), for DBSCAN with ``metric="precomputed"``. Memory ``O(edges)``."""
        self.ensure(eps)
        n, k = self.nbr_idx.shape
        a = np.concatenate([np.repeat(np.arange(n, dtype=np.int64), k), self.extra_u])
        b = np.concatenate([self.nbr_idx.ravel(), self.extra_v])
        w = np.concatenate([self.nbr_dist.ravel(), self.extra_w])
        keep = w <= eps
        a, b, w = _unique_edges(a[keep], b[keep], w[keep], n)
        w = np.maximum(w, _TINY)
        return sparse.csr_matrix(
            (np.concatenate([w, w]), (np.concatenate([a, b]), np.concatenate([b, a]))), shape=(n, n)
        )

    # ------------------------------------------------------------------ persistence
    def state(self) -> Dict[str, NDArray]:
        return {
            "graph_U": self.U,
            "graph_nbr_idx": self.nbr_idx,
            "graph_nbr_dist": self.nbr_dist,
            "graph_extra_u": self.extra_u,
            "graph_extra_v": self.extra_v,
            "graph_extra_w": self.extra_w,
            "graph_msf_u": self.msf_u,
            "graph_msf_v": self.msf_v,
            "graph_msf_w": self.msf_w,
            "graph_meta": np.array(
                [self.complete_to, float(self.exact_knn), float(self.truncated), self.completion_limit]
            ),
        }

    @classmethod
    def from_state(cls, st: Dict[str, NDArray]) -> "LinkageGraph":
        meta = st["graph_meta"]
        g = cls(st["graph_U"], st["graph_nbr_idx"], st["graph_nbr_dist"], bool(meta[1]), int(meta[3]))
        g.extra_u, g.extra_v, g.extra_w = st["graph_extra_u"], st["graph_extra_v"], st["graph_extra_w"]
        g.msf_u, g.msf_v, g.msf_w = st["graph_msf_u"], st["graph_msf_v"], st["graph_msf_w"]
        g.complete_to, g.truncated = float(meta[0]), bool(meta[2])
        return g


def remap_noise(labels: ArrayLike) -> NDArray[np.int64]:
    """Give every noise point (``-1``) its own fresh id after the largest id, in index order."""
    lab = np.asarray(labels, dtype=np.int64).copy()
    noise = lab < 0
    if noise.any():
        start = int(lab.max()) + 1 if (~noise).any() else 0
        lab[noise] = start + np.arange(int(noise.sum()))
    return lab
