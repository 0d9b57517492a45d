"""Random demonstrations (the paper's baseline)."""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ucs.selectors.base import Selector, check_random_state

__all__ = ["RandomSelector"]


class RandomSelector(Selector):
    """``B`` pool items drawn uniformly without replacement.

    Parameters
    ----------
    random_state : int
        Seed. Every ``select`` call starts from this seed, so repeated calls give the same output.
    per_query : bool
        ``False`` (default, the paper's protocol): one draw shared by all queries of a run.
        ``True``: an independent draw for every query (query-dependent output of shape (Q, B)).

    Notes
    -----
    O(N) per shared draw, O(Q·N) for per-query draws (a random key per pool item, then ``argpartition``).

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.selectors import RandomSelector
    >>> rng = np.random.default_rng(0)
    >>> pool = np.repeat(np.eye(3, 8), 4, axis=0) + 0.3 * rng.standard_normal((12, 8))  # 3 intents × 4 rows
    >>> labels = ["card"] * 4 + ["loan"] * 4 + ["fx"] * 4
    >>> query = np.eye(1, 8)  # one query in the "card" direction
    >>> sel = RandomSelector(random_state=0).fit(pool).select(query, 4)
    >>> sel.indices, sel.query_dependent  # one seeded draw for every query
    (array([[3, 5, 7, 6]]), False)
    """

    name = "random"

    def __init__(self, random_state: int = 0, per_query: bool = False) -> None:
        self.random_state = random_state
        self.per_query = per_query

    @property
    def query_dependent(self) -> bool:  # type: ignore[override]
        return bool(self.per_query)

    def _validate_params(self) -> None:
        check_random_state(self.random_state)
        if not isinstance(self.per_query, bool):
            raise ValueError(f"per_query must be a bool; got {self.per_query!r}")

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        self._validate_params()
        rng = np.random.default_rng(self.random_state)
        n = self.n_pool_
        if self.per_query:
            q = queries.shape[0]
            if budget == 0:
                idx = np.zeros((q, 0), dtype=np.int64)
            else:
                keys = rng.random((q, n))
                part = (
                    np.argpartition(keys, budget - 1, axis=1)[:, :budget]
                    if budget < n
                    else np.argsort(keys, axis=1)
                )
                order = np.argsort(np.take_along_axis(keys, part, axis=1), axis=1, kind="stable")
                idx = np.take_along_axis(part, order, axis=1)
        else:
            idx = rng.choice(n, size=budget, replace=False)[None, :]
        return idx, np.full(idx.shape, np.nan), {}
