"""Coverage Φ for many subsets / many greedy queries at once.

Everything goes through :meth:`ucs.estimators.UnseenCoverage.phi_from_spectra`, the one function
the estimators use for recomputation and incremental gains alike, so values here are bit-identical
to :meth:`UnseenCoverage.phi` and :meth:`CoverageState.gains` — only batched over queries.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["BatchedCoverage", "BatchedGreedyState", "OneQueryGreedyState", "candidate_share"]

#: Batches of at most this many spectra go through the per-spectrum memo of :meth:`BatchedCoverage.phi_rows`.
_MEMO_MAX_ROWS = 64
_MEMO_MAX_ENTRIES = 1 << 16


def _weigh(gains: np.ndarray, weights: "np.ndarray | None", weigh_losses: bool) -> np.ndarray:
    """``gains · weights`` (every change of Φ), or with ``weigh_losses=False`` only the increases."""
    if weights is None:
        return gains
    if weigh_losses:
        return gains * weights
    return np.where(gains > 0, gains * weights, gains)


def candidate_share(cluster_of: np.ndarray, members: "np.ndarray | None" = None) -> np.ndarray:
    """Relevance of clusters to each query: the share of the query's candidates they hold.

    ``w_q(u) = |{j ∈ C_q : c(j) = u}| / max_v |{j ∈ C_q : c(j) = v}|`` — 1 for the cluster most of the
    query's own candidates fall in, small for a cluster only one stray candidate reaches.

    Parameters
    ----------
    cluster_of : ndarray of shape (Q, C)
        Cluster id of every candidate of every query.
    members : ndarray of shape (Q, ...), optional
        Cluster ids to weigh (default: the candidates themselves).

    Returns
    -------
    ndarray of shape ``members.shape`` (or (Q, C)), float64 in (0, 1] for clusters among the candidates.

    Notes
    -----
    O(Q·C·m) time and memory for ``m`` members per query (C = 50, m <= 50: tiny).
    """
    cl = np.asarray(cluster_of)
    q = cl.shape[0]
    own = (cl[:, :, None] == cl[:, None, :]).sum(axis=2)  # (Q, C) count of each candidate's cluster
    top = np.maximum(own.max(axis=1), 1).astype(np.float64) if cl.shape[1] else np.ones(q)
    if members is None:
        return own / top[:, None]
    m = np.asarray(members)
    flat = m.reshape(q, -1)
    counts = (flat[:, :, None] == cl[:, None, :]).sum(axis=2)
    return (counts / top[:, None]).reshape(m.shape)


class BatchedCoverage:
    """Vectorised Φ evaluation over rows of pool indices.

    Parameters
    ----------
    coverage : ucs.estimators.UnseenCoverage
        Fitted on the pool's cluster ids.
    cluster_ids : ndarray of shape (N,)
        The same ids (kept for diagnostics).
    """

    def __init__(self, coverage: Any, cluster_ids: np.ndarray) -> None:
        self.coverage = coverage
        self.cluster_ids = cluster_ids
        self.cid = coverage.cluster_index_
        self._memo: dict = {}

    def phi_rows(self, F: np.ndarray, n: int) -> np.ndarray:
        """``coverage.phi_from_spectra(F, n)`` (shape (r,)), memoised per distinct spectrum when ``r`` is
        small.

        One query at a time, greedy selection evaluates the same few spectra again and again (every subset of
        distinct clusters has the same one), and the estimator's fixed cost dominates; each row's value is
        computed once by the same function, so results are unchanged. Large batches go straight through.
        """
        r = F.shape[0]
        if r > _MEMO_MAX_ROWS:
            return np.asarray(self.coverage.phi_from_spectra(F, n), dtype=np.float64)
        memo = self._memo
        keys = [(n, row.tobytes()) for row in F]
        missing = [i for i, key in enumerate(keys) if key not in memo]
        if missing:
            if len(memo) > _MEMO_MAX_ENTRIES:
                memo.clear()
            vals = np.asarray(self.coverage.phi_from_spectra(F[missing], n), dtype=np.float64)
            for i, v in zip(missing, vals.tolist()):
                memo[keys[i]] = v
        return np.array([memo[key] for key in keys], dtype=np.float64)

    def spectra(self, subsets: np.ndarray) -> np.ndarray:
        """Spectra of each row of ``subsets`` (shape (P, n)) as an int64 array of shape (P, n + 2).

        O(P·n²) (pairwise comparison inside each row; n is a prompt budget, so tiny).
        """
        subsets = np.asarray(subsets, dtype=np.int64)
        p, n = subsets.shape
        F = np.zeros((p, n + 2), dtype=np.int64)
        if n == 0 or p == 0:
            return F
        c = self.cid[subsets]
        mult = (c[:, :, None] == c[:, None, :]).sum(axis=2)  # multiplicity of each member's cluster
        flat = (np.arange(p)[:, None] * (n + 2) + mult).ravel()
        counts = np.bincount(flat, minlength=p * (n + 2)).reshape(p, n + 2)
        s = np.arange(n + 2)
        F[:, 1:] = counts[:, 1:] // s[1:]
        return F

    def phi_after_add(self, F: np.ndarray, n: int) -> np.ndarray:
        """Φ after adding an item whose cluster has multiplicity ``m`` in the subset, for every row of ``F``
        (spectra of subsets of size ``n``, shape (Q, n + 2)) and every ``m`` in ``0..n``: shape (Q, n + 1).

        One estimator call on the ``Q·(n+1)`` next spectra; for a few rows (one query per call) the whole
        answer is memoised per spectrum, as the same spectra recur from query to query.
        """
        q = F.shape[0]
        if q > _MEMO_MAX_ROWS:
            return self._phi_after_add(F, n)
        memo = self._memo
        keys = [("next", n, row.tobytes()) for row in F]
        missing = [i for i, key in enumerate(keys) if key not in memo]
        if missing:
            if len(memo) > _MEMO_MAX_ENTRIES:
                memo.clear()
            vals = self._phi_after_add(F[missing], n)
            for i, row in zip(missing, vals):
                memo[keys[i]] = row
        return np.stack([memo[key] for key in keys])

    def _phi_after_add(self, F: np.ndarray, n: int) -> np.ndarray:
        q, width = F.shape[0], n + 2
        m = np.arange(n + 1)
        nxt = np.repeat(F[:, None, :width], m.size, axis=1)  # (Q, n+1, width)
        nxt[:, m[1:], m[1:]] -= 1
        nxt[:, m, m + 1] += 1
        return self.phi_rows(nxt.reshape(-1, width), n + 1).reshape(q, m.size)

    def phi_subsets(self, subsets: np.ndarray) -> np.ndarray:
        """Φ of every row of ``subsets`` (P, n) → shape (P,), float64."""
        subsets = np.asarray(subsets, dtype=np.int64)
        if subsets.ndim != 2:
            raise ValueError(f"subsets must be 2-D (P, n); got shape {subsets.shape}")
        if subsets.shape[0] == 0:
            return np.zeros(0)
        F = self.spectra(subsets)
        return self.phi_rows(F, subsets.shape[1])

    def greedy(
        self,
        candidates: np.ndarray,
        max_steps: int,
        weights: "np.ndarray | None" = None,
        weigh_losses: bool = True,
    ) -> "BatchedGreedyState":
        """A greedy state over ``Q`` queries, each choosing among its own candidate row (Q, C).

        ``weights`` (Q, C), optional, multiply every candidate's gain (the relevance-aware prior); with
        ``weigh_losses=False`` they multiply only increases of Φ, and a decrease (repeating a cluster) counts
        in full. One query gets the lighter :class:`OneQueryGreedyState` (same values)."""
        cand = np.asarray(candidates, dtype=np.int64)
        if cand.ndim == 2 and cand.shape[0] == 1:
            return OneQueryGreedyState(self, cand, weights, weigh_losses)
        return BatchedGreedyState(self, cand, max_steps, weights, weigh_losses)

    def cluster_of(self, indices: np.ndarray) -> np.ndarray:
        """Compact cluster index of pool ``indices`` (any shape)."""
        return self.cid[np.asarray(indices, dtype=np.int64)]

    def phi_after_add_one(self, F: tuple, n: int) -> np.ndarray:
        """:meth:`phi_after_add` of one spectrum given as a tuple (length ``n + 2``), memoised:
        shape (n + 1,)."""
        key = ("next1", F)
        row = self._memo.get(key)
        if row is None:
            if len(self._memo) > _MEMO_MAX_ENTRIES:
                self._memo.clear()
            row = self._phi_after_add(np.array([F], dtype=np.int64), n)[0]
            self._memo[key] = row
        return row


class BatchedGreedyState:
    """``Q`` growing subsets, one per query, built from per-query candidate lists.

    ``gains()`` returns the exact ``Φ(S_q ∪ {j}) − Φ(S_q)`` for every candidate ``j`` of every query
    (shape (Q, C)); ``add(pos)`` adds candidate ``pos[q]`` to ``S_q``. Both are O(Q·C) plus one
    estimator call on ``Q · (n + 1)`` spectra (one per query and possible multiplicity), n = |S_q|.
    """

    def __init__(
        self,
        batched: BatchedCoverage,
        candidates: np.ndarray,
        max_steps: int,
        weights: "np.ndarray | None" = None,
        weigh_losses: bool = True,
    ) -> None:
        cand = np.asarray(candidates, dtype=np.int64)
        if weights is not None and np.shape(weights) != cand.shape:
            raise ValueError(f"weights must have the candidates' shape {cand.shape}; got {np.shape(weights)}")
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        self.weigh_losses = weigh_losses
        self.coverage = batched.coverage
        self.cl = batched.cid[cand]  # (Q, C) compact cluster of each candidate
        q = cand.shape[0]
        self.mult = np.zeros(cand.shape, dtype=np.int64)  # multiplicity in S_q of each candidate's cluster
        self.F = np.zeros((q, max_steps + 3), dtype=np.int64)
        self.n = 0
        self._batched = batched
        self.phi = batched.phi_rows(self.F[:, :2], 0)
        self._rows = np.arange(q)
        self._next = None

    def gains(self) -> np.ndarray:
        q, c = self.mult.shape
        if q == 0 or c == 0:
            return np.zeros((q, c))
        phi_new = self._batched.phi_after_add(self.F[:, : self.n + 2], self.n)
        self._next = (self.n, phi_new)  # lets add() read Φ(S ∪ {j}) instead of recomputing it
        gains = (phi_new - self.phi[:, None])[self._rows[:, None], self.mult]
        return _weigh(gains, self.weights, self.weigh_losses)

    def add(self, pos: np.ndarray) -> None:
        pos = np.asarray(pos, dtype=np.int64)
        rows = self._rows
        chosen_cl = self.cl[rows, pos]
        m = self.mult[rows, pos].copy()
        nz = m > 0
        self.F[rows[nz], m[nz]] -= 1
        self.F[rows, m + 1] += 1
        self.mult += self.cl == chosen_cl[:, None]
        nxt = self._next
        self._next = None
        self.n += 1
        if nxt is not None and nxt[0] == self.n - 1:
            self.phi = nxt[1][rows, m]  # the same phi_from_spectra value, computed in gains()
        else:
            self.phi = self._batched.phi_rows(self.F[:, : self.n + 2], self.n)


class OneQueryGreedyState:
    """:class:`BatchedGreedyState` for a single query (``Q = 1``), the per-call case.

    The same values (Φ after each possible addition comes from the same memoised estimator calls), with the
    spectrum kept as a Python tuple, so a greedy step costs a few numpy calls instead of a few dozen.
    """

    def __init__(
        self,
        batched: BatchedCoverage,
        candidates: np.ndarray,
        weights: "np.ndarray | None" = None,
        weigh_losses: bool = True,
    ) -> None:
        if weights is not None and np.shape(weights) != np.shape(candidates):
            raise ValueError(
                f"weights must have the candidates' shape {np.shape(candidates)}; got {np.shape(weights)}"
            )
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)[0]
        self.weigh_losses = weigh_losses
        self._batched = batched
        self.coverage = batched.coverage
        self.cl = batched.cid[candidates[0]]  # (C,) compact cluster of each candidate
        self.mult = np.zeros(self.cl.shape[0], dtype=np.int64)
        self.F = (0, 0)  # spectrum of the empty subset, length n + 2
        self.n = 0
        self.phi = np.asarray(batched.phi_rows(np.zeros((1, 2), dtype=np.int64), 0), dtype=np.float64)
        self._next: "np.ndarray | None" = None

    def gains(self) -> np.ndarray:
        """Exact ``Φ(S ∪ {j}) − Φ(S)`` for every candidate, shape (1, C)."""
        if self.cl.shape[0] == 0:
            return np.zeros((1, 0))
        phi_new = self._batched.phi_after_add_one(self.F, self.n)
        self._next = phi_new
        gains = (phi_new - self.phi[0])[self.mult]
        return _weigh(gains, self.weights, self.weigh_losses)[None, :]

    def add(self, pos: np.ndarray) -> None:
        p = int(np.asarray(pos).reshape(-1)[0])
        m = int(self.mult[p])
        F = list(self.F) + [0]  # one more slot: the spectrum of a subset of size n + 1 has length n + 3
        if m > 0:
            F[m] -= 1
        F[m + 1] += 1
        self.mult += self.cl == self.cl[p]
        nxt = self._next
        self._next = None
        self.n += 1
        self.F = tuple(F)
        if nxt is not None:
            self.phi = nxt[m : m + 1].copy()  # the same phi_from_spectra value, computed in gains()
        else:
            self.phi = np.asarray(
                self._batched.phi_rows(np.array([self.F], dtype=np.int64), self.n), dtype=np.float64
            )
