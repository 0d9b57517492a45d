"""MMR: maximal marginal relevance among the query's nearest candidates.

Carbonell & Goldstein, SIGIR 1998.

The selector LangChain ships as ``MaxMarginalRelevanceExampleSelector``: fetch the ``fetch_k`` pool items most
similar to the query, then add one at a time the candidate that maximises
``λ · cos(q, x_j) − (1 − λ) · max_{s ∈ S} cos(x_j, x_s)``, starting from the most similar. With the same
candidates in the same order it picks what ``langchain_core.vectorstores.utils.maximal_marginal_relevance``
picks (a test checks it on identical inputs).
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from ucs import defaults as D
from ucs.selectors.base import Selector, _check_int

__all__ = ["MMRSelector", "check_lambda_mult", "mmr_order"]


def check_lambda_mult(value: Any, name: str = "lambda_mult") -> None:
    """The one check of MMR's relevance weight: a real number in ``[0, 1]``. ``name`` is the setting's name
    in the error (``lambda_mult``, or a configuration's ``selector.params.mmr.lambda_mult``). Cost: O(1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1] (a real number); got {value!r}")


def mmr_order(
    relevance: np.ndarray, gram: np.ndarray, budget: int, lambda_mult: float
) -> Tuple[np.ndarray, np.ndarray]:
    """Greedy MMR over ``c`` candidates.

    Parameters
    ----------
    relevance : ndarray of shape (c,)
        Each candidate's cosine similarity to the query.
    gram : ndarray of shape (c, c)
        Cosine similarities between the candidates.
    budget : int
        Items to choose, ``<= c``.
    lambda_mult : float
        ``λ`` in [0, 1]: 1 is plain similarity, 0 pure diversity.

    Returns
    -------
    order : ndarray of shape (budget,), int64
        Positions into the candidates, in the order chosen (the first is the most similar).
    scores : ndarray of shape (budget,)
        The criterion when each was chosen (the similarity for the first). Ties go to the earlier candidate.

    Notes
    -----
    ``O(budget · c)`` after the Gram matrix.
    """
    c = relevance.shape[0]
    order = np.empty(budget, dtype=np.int64)
    scores = np.empty(budget)
    avail = np.ones(c, dtype=bool)
    redundancy = np.full(c, -np.inf)
    for step in range(budget):
        score = relevance.copy() if step == 0 else lambda_mult * relevance - (1.0 - lambda_mult) * redundancy
        score[~avail] = -np.inf
        j = int(np.argmax(score))
        order[step], scores[step] = j, score[j]
        avail[j] = False
        redundancy = np.maximum(redundancy, gram[:, j])
    return order, scores


class MMRSelector(Selector):
    """Relevance minus redundancy among the query's ``fetch_k`` nearest pool items.

    Parameters
    ----------
    lambda_mult : float, default=0.5
        ``λ`` of the criterion (LangChain's default): 1 gives TopK's choice, 0 ignores relevance after the
        first.
    fetch_k : int, default=20
        Candidates fetched by cosine similarity (LangChain's default); at least the budget are fetched.
    block : int
        Queries per similarity block of the candidate retrieval.

    Notes
    -----
    Retrieval ``O(Q·N·d)``; then ``O(Q·(c²·d + B·c))`` for ``c = max(fetch_k, B)`` candidates. No coverage
    prior: MMR is one of the relevance-keeping baselines that UCS is measured against.

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.selectors import MMRSelector
    >>> rng = np.random.default_rng(0)
    >>> pool = np.repeat(np.eye(3, 8), 4, axis=0) + 0.3 * rng.standard_normal((12, 8))  # 3 intents × 4 rows
    >>> labels = ["card"] * 4 + ["loan"] * 4 + ["fx"] * 4
    >>> query = np.eye(1, 8)  # one query in the "card" direction
    >>> sel = MMRSelector(lambda_mult=0.5).fit(pool).select(query, 4)
    >>> [labels[i] for i in sel.indices[0]]  # the second pick trades relevance for novelty
    ['card', 'fx', 'card', 'card']
    """

    name = "mmr"

    def __init__(
        self, lambda_mult: float = D.MMR_LAMBDA, fetch_k: int = D.MMR_FETCH_K, block: int = 1024
    ) -> None:
        self.lambda_mult = lambda_mult
        self.fetch_k = fetch_k
        self.block = block

    def _validate_params(self) -> None:
        check_lambda_mult(self.lambda_mult)
        _check_int(self.fetch_k, "fetch_k", 1)
        _check_int(self.block, "block", 1)

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        def choose(cand: np.ndarray, sims: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
            emb = self.pool_[cand]
            return mmr_order(sims, emb @ emb.T, budget, float(self.lambda_mult))

        return self._choose_among_candidates(queries, budget, int(self.fetch_k), choose)
