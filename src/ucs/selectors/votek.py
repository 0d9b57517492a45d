"""VoteK and VoteK+UCS: one representative, diverse prompt for all queries.

VoteK in OpenICL's form of Su et al., 2022; VoteK+UCS adds a corpus-level rarity prior.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from ucs.selectors._retrieval import _topk_rows
from ucs.selectors.base import Selector, _check_int, check_random_state
from ucs.selectors.prior import UCSPrior

__all__ = ["VoteKSelector", "VoteGraph", "build_vote_graph"]


@dataclass(frozen=True)
class VoteGraph:
    """Who votes for whom.

    Attributes
    ----------
    voters, targets : ndarray of shape (E,), int64
        The edges ``voter → target`` in OpenICL's voting order (voter ascending; within a voter, its
        neighbours by increasing similarity).
    votes : ndarray of shape (N,), int64
        Votes received.
    first_vote : ndarray of shape (N,), int64
        Position in the voting order of an item's first vote (``E`` when it has none): the tie-break
        of the ranking.
    """

    voters: np.ndarray
    targets: np.ndarray
    votes: np.ndarray
    first_vote: np.ndarray

    def covering_pairs(self, overlap_threshold: float) -> Tuple[np.ndarray, np.ndarray]:
        """Pairs ``(j, p)``, ``j != p``, with ``|V_j ∩ V_p| >= overlap_threshold · |V_j|``.

        Only items sharing a voter can overlap, so the pairs come from the sparse product ``Aᵀ A`` of the
        voter × target incidence matrix: O(N·k²) time and memory instead of OpenICL's O(R²) set walk.
        """
        n = self.votes.size
        a = sp.csr_matrix(
            (np.ones(self.voters.size, dtype=np.int64), (self.voters, self.targets)), shape=(n, n)
        )
        inter = (a.T @ a).tocoo()
        j, p, cnt = inter.row.astype(np.int64), inter.col.astype(np.int64), inter.data
        keep = (j != p) & (cnt >= overlap_threshold * self.votes[j])
        return j[keep], p[keep]


def build_vote_graph(pool: np.ndarray, k: int = 3, block: int = 512, dtype: str = "float64") -> VoteGraph:
    """Each item votes for its ``k`` nearest neighbours (cosine), as OpenICL's VoteK does.

    OpenICL takes the ``k + 1`` most similar items, drops the most similar (assumed to be the item
    itself) and skips the item itself if it is still among them. This reproduces that rule with blocked
    matrix products.

    Parameters
    ----------
    pool : ndarray of shape (N, d)
        ℓ2-normalised embeddings.
    k : int
        Votes cast per item.
    block : int
        Rows per matrix product (memory ``block × N``).
    dtype : {"float64", "float32"}
        Precision of the similarity products (float32 is about twice as fast; near-ties may resolve
        differently).

    Returns
    -------
    VoteGraph

    Notes
    -----
    O(N²·d) time in BLAS, O(block·N) memory. Exact similarity ties go to the smaller index.
    """
    n = pool.shape[0]
    kk = min(k + 1, n)
    x = np.ascontiguousarray(pool, dtype=np.dtype(dtype))
    nbrs = np.empty((n, max(kk - 1, 0)), dtype=np.int64)
    for s in range(0, n, block):
        e = min(n, s + block)
        cols, _ = _topk_rows(x[s:e] @ x.T, kk)  # most similar first
        nbrs[s:e] = cols[:, :0:-1]  # drop the most similar; increasing similarity, as OpenICL's argsort
    voters = np.repeat(np.arange(n, dtype=np.int64), nbrs.shape[1])
    targets = nbrs.ravel()
    valid = targets != voters
    voters, targets = voters[valid], targets[valid]
    votes = np.bincount(targets, minlength=n).astype(np.int64)
    first_vote = np.full(n, targets.size, dtype=np.int64)
    uniq, first = np.unique(targets, return_index=True)
    first_vote[uniq] = first
    return VoteGraph(voters=voters, targets=targets, votes=votes, first_vote=first_vote)


class VoteKSelector(Selector):
    """Query-independent diverse and representative demonstrations (VoteK); VoteK+UCS with a prior.

    Ranking: only items with at least one vote, by score descending (score = votes, or with a prior
    ``votes + λ · log w_{c(i)}``), ties in the order items first received a vote. Walking the ranking,
    an item is dropped when its voter set overlaps that of any higher-ranked item (kept or dropped) in at
    least ``overlap_threshold · |voters|`` voters. The first ``B`` survivors are taken, and the
    selection is filled up to ``B`` with seeded random items. One row is shared by all queries.

    Parameters
    ----------
    k : int
        Votes per item (OpenICL: 3).
    overlap_threshold : float
        In (0, 1]; OpenICL: 1 (drop an item whose voters are all voters of a higher-ranked item).
    prior : UCSPrior, optional
        Corpus prior: ``log w`` from the prior's ``corpus_prior`` (``good_turing``; rarity controls
        ``inverse_size`` = B1, ``spectrum_rarity`` = B2). ``λ = 0`` is VoteK exactly.
    random_state : int
        Seed of the random fill.
    block, dtype
        Vote graph computation (see :func:`build_vote_graph`).

    Attributes
    ----------
    graph_ : VoteGraph
        Built in ``fit`` (the O(N²·d) part); ``select`` is O(N log N).

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.selectors import VoteKSelector
    >>> rng = np.random.default_rng(0)
    >>> pool = np.repeat(np.eye(3, 8), 4, axis=0) + 0.3 * rng.standard_normal((12, 8))  # 3 intents × 4 rows
    >>> labels = ["card"] * 4 + ["loan"] * 4 + ["fx"] * 4
    >>> query = np.eye(1, 8)  # one query in the "card" direction
    >>> sel = VoteKSelector(k=2).fit(pool).select(np.vstack([query, -query]), 4)
    >>> sel.query_dependent, sel.indices  # one prompt for every query
    (False, array([[3, 2, 5, 4]]))
    """

    name = "votek"
    query_dependent = False
    stored_state = "votek_graph"

    def __init__(
        self,
        k: int = 3,
        overlap_threshold: float = 1.0,
        prior: Optional[UCSPrior] = None,
        random_state: int = 0,
        block: int = 512,
        dtype: str = "float64",
    ) -> None:
        self.k = k
        self.overlap_threshold = overlap_threshold
        self.prior = prior
        self.random_state = random_state
        self.block = block
        self.dtype = dtype

    def _validate_params(self) -> None:
        _check_int(self.k, "k", 1)
        thr = self.overlap_threshold
        if isinstance(thr, bool) or not isinstance(thr, (int, float, np.floating)) or not 0 < thr <= 1:
            raise ValueError(f"overlap_threshold must be in (0, 1]; got {thr!r}")
        check_random_state(self.random_state)
        _check_int(self.block, "block", 1)
        if self.dtype not in ("float64", "float32"):
            raise ValueError(f"dtype must be 'float64' or 'float32'; got {self.dtype!r}")
        if self.prior is not None and not isinstance(self.prior, UCSPrior):
            raise ValueError(f"prior must be a UCSPrior or None; got {type(self.prior).__name__}")

    def _fit(self) -> None:
        stored = self.__dict__.pop("_stored_graph", None)
        if stored is not None and stored.votes.size == self.n_pool_:
            self.graph_ = stored
        else:
            self.graph_ = build_vote_graph(self.pool_, k=self.k, block=self.block, dtype=self.dtype)
        self.pairs_ = self.graph_.covering_pairs(float(self.overlap_threshold))

    def fit_with_graph(self, pool_embeddings: Any, graph: VoteGraph, **kwargs: Any) -> "VoteKSelector":
        """:meth:`fit` with the vote graph already built for this pool, ``k`` and ``dtype`` (e.g. stored with
        a saved index): no O(N²·d) similarity pass. ``kwargs`` are :meth:`fit`'s."""
        if graph.votes.size != np.shape(pool_embeddings)[0]:
            raise ValueError(
                f"graph covers {graph.votes.size} items; the pool has {np.shape(pool_embeddings)[0]}"
            )
        self._stored_graph = graph
        try:
            return self.fit(pool_embeddings, **kwargs)
        finally:
            self.__dict__.pop("_stored_graph", None)

    def fit_with_state(self, pool_embeddings: Any, state: Any, **kwargs: Any) -> "VoteKSelector":
        """:meth:`fit_with_graph` (the stored state is the vote graph)."""
        return self.fit_with_graph(pool_embeddings, state, **kwargs)

    def params_for_pool(self, params: Dict[str, Any], n_pool: int) -> Dict[str, Any]:
        """``k`` capped at ``n_pool - 1`` (at least 1): each item votes for at most the others."""
        if n_pool <= int(params.get("k", self.k)):
            params["k"] = max(int(n_pool) - 1, 1)
        return params

    def item_scores(self) -> np.ndarray:
        """Ranking score of every pool item, shape (N,): votes, plus ``λ · log w_{c(i)}`` with a prior."""
        self._check_fitted()
        votes = self.graph_.votes.astype(np.float64)
        if self.prior is None or float(self.prior.lam) == 0.0:
            return votes
        return votes + float(self.prior.lam) * self.prior.item_log_weights()

    def ranking(self) -> np.ndarray:
        """Voted items in ranking order (score descending, ties by first vote)."""
        score = self.item_scores()
        voted = np.nonzero(self.graph_.votes > 0)[0]
        order = np.lexsort((self.graph_.first_vote[voted], -score[voted]))
        return voted[order]

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        n = self.n_pool_
        score = self.item_scores()
        ranked = self.ranking()
        rank = np.full(n, n, dtype=np.int64)
        rank[ranked] = np.arange(ranked.size)
        j, p = self.pairs_
        dropped = np.zeros(n, dtype=bool)
        dropped[j[rank[p] < rank[j]]] = True
        chosen = ranked[~dropped[ranked]][:budget]
        scores = score[chosen]
        need = budget - chosen.size
        if need > 0:
            rng = np.random.default_rng(self.random_state)
            rest = np.setdiff1d(np.arange(n), chosen, assume_unique=True)
            fill = rng.choice(rest, size=need, replace=False)
            chosen = np.concatenate([chosen, fill])
            scores = np.concatenate([scores, np.full(need, np.nan)])
        return chosen[None, :], scores[None, :], {}
