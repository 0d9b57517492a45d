"""TopK: each query's most cosine-similar pool items.

With a UCS prior, the candidates are re-ranked greedily by similarity plus the coverage gain.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ucs import defaults as D
from ucs.selectors.base import Selector, _check_int
from ucs.selectors.prior import UCSPrior
from ucs.utils.arrays import take_rows

__all__ = ["TopKSelector"]


class TopKSelector(Selector):
    """The ``B`` pool items most cosine-similar to each query, most similar first.

    Parameters
    ----------
    prior : UCSPrior, optional
        With a prior (a project extension, not in the paper), items are chosen greedily among the
        ``candidate_num`` most similar by ``cos(q, x_j) + λ · ΔΦ_j``; with ``λ = 0`` this is TopK exactly.
    candidate_num : int
        Candidate pool size for the prior's greedy re-ranking (ignored without a prior).
    floor : int, default=0
        A relevance floor for the UCS form: the ``floor`` most similar candidates are always kept (first, in
        similarity order) and only the remaining ``B − floor`` are chosen with the prior, which counts the
        floor's clusters as already covered. ``floor >= B`` is TopK; ``0`` is the plain UCS form.
    block : int
        Queries per similarity block (memory ``block × N`` floats).

    Notes
    -----
    One batched matrix product (O(Q·N·d)) and ``argpartition`` (O(Q·N)); the prior adds O(Q·C·B).
    Exact ties in similarity go to the smaller pool index.

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.selectors import TopKSelector
    >>> rng = np.random.default_rng(0)
    >>> pool = np.repeat(np.eye(3, 8), 4, axis=0) + 0.3 * rng.standard_normal((12, 8))  # 3 intents × 4 rows
    >>> labels = ["card"] * 4 + ["loan"] * 4 + ["fx"] * 4
    >>> query = np.eye(1, 8)  # one query in the "card" direction
    >>> sel = TopKSelector().fit(pool, labels=labels).select(query, 4)
    >>> sel.indices, sel.scores.round(2)  # most similar first
    (array([[3, 0, 2, 1]]), array([[0.93, 0.88, 0.82, 0.65]]))
    >>> sel = TopKSelector().fit(pool, labels=labels).select(query, 4, order="vote_last")
    >>> sel.indices  # grouped by label, the most-voted label last; inside a label, most similar last
    array([[1, 2, 0, 3]])
    """

    name = "topk"

    def __init__(
        self,
        prior: Optional[UCSPrior] = None,
        candidate_num: int = 50,
        block: int = 1024,
        floor: int = D.TOPK_FLOOR,
    ) -> None:
        self.prior = prior
        self.candidate_num = candidate_num
        self.block = block
        self.floor = floor

    def _validate_params(self) -> None:
        _check_int(self.candidate_num, "candidate_num", 1)
        _check_int(self.block, "block", 1)
        _check_int(self.floor, "floor", 0)
        if self.prior is not None and not isinstance(self.prior, UCSPrior):
            raise ValueError(f"prior must be a UCSPrior or None; got {type(self.prior).__name__}")

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        if self.prior is None:
            idx, sims = self._retrieve(queries, budget)
            return idx, sims, {}
        c = min(self.n_pool_, max(self.candidate_num, budget))
        cand, sims = self._retrieve(queries, c)
        q = cand.shape[0]
        lam = float(self.prior.lam)
        state = self.prior.greedy(cand, budget)
        rows = np.arange(q)
        avail = np.ones(cand.shape, dtype=bool)
        pos_out = np.empty((q, budget), dtype=np.int64)
        score_out = np.empty((q, budget))
        kept = min(int(self.floor), budget)
        for step in range(budget):
            if step < kept:  # the relevance floor: the step-th most similar candidate, whatever its coverage
                pos = np.full(q, step, dtype=np.int64)
                pos_out[:, step], score_out[:, step] = pos, sims[:, step]
                avail[rows, pos] = False
                state.add(pos)
                continue
            score = sims + lam * state.gains() if lam != 0 else sims.copy()
            score[~avail] = -np.inf
            pos = np.argmax(score, axis=1)  # candidates are sorted by similarity: ties → more similar
            pos_out[:, step] = pos
            score_out[:, step] = score[rows, pos]
            avail[rows, pos] = False
            state.add(pos)
        return take_rows(cand, pos_out), score_out, {}
