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
    balanced : bool
        ``False`` (default): uniform over the pool. ``True``: balanced over the pool's labels (fit with
        ``labels=``): the draw takes one item of each label in turn, labels in a random order, so ``B``
        demonstrations show ``min(B, L)`` of the ``L`` labels and no label twice more often than another.

    Notes
    -----
    O(N) per shared draw, O(Q·N) for per-query draws (a random key per pool item, then ``argpartition``);
    balanced draws sort the pool once per draw, O(N log N).

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
    >>> sel = RandomSelector(random_state=0, balanced=True).fit(pool, labels=labels).select(query, 4)
    >>> sorted(labels[i] for i in sel.indices[0])  # every label once before any label twice
    ['card', 'fx', 'loan', 'loan']
    """

    name = "random"

    def __init__(self, random_state: int = 0, per_query: bool = False, balanced: bool = False) -> None:
        self.random_state = random_state
        self.per_query = per_query
        self.balanced = balanced

    @property
    def query_dependent(self) -> bool:  # type: ignore[override]
        return bool(self.per_query)

    def _validate_params(self) -> None:
        check_random_state(self.random_state)
        for name in ("per_query", "balanced"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool; got {getattr(self, name)!r}")

    def _fit(self) -> None:
        if not self.balanced:
            return
        if self.labels_ is None:
            raise ValueError("RandomSelector(balanced=True) draws across labels: fit(pool, labels=...)")
        _, self.label_codes_ = np.unique(np.asarray([str(y) for y in self.labels_]), return_inverse=True)

    def _balanced_draw(self, rng: np.random.Generator, budget: int) -> np.ndarray:
        """``budget`` pool indices, shape (budget,): items in a random order within their label; round
        ``r`` takes every label's ``r``-th item, labels in a random order."""
        codes = self.label_codes_
        items = rng.permutation(self.n_pool_)
        items = items[np.argsort(codes[items], kind="stable")]  # grouped by label, random within
        starts = np.searchsorted(codes[items], codes[items], side="left")
        turn = rng.permutation(int(codes.max()) + 1)[codes[items]]
        key = (np.arange(items.size) - starts) * (turn.max() + 1) + turn
        return items[np.argsort(key, kind="stable")[:budget]]

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        self._validate_params()
        rng = np.random.default_rng(self.random_state)
        n = self.n_pool_
        if self.balanced:
            draws = queries.shape[0] if self.per_query else 1
            idx = np.stack([self._balanced_draw(rng, budget) for _ in range(draws)]).astype(np.int64)
        elif self.per_query:
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
