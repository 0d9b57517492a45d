"""Label-aware similarity: nearest neighbours, the prompt's labels spread.

The query's nearest neighbours, with the prompt's labels spread on purpose.

Two forms of the idea asked for by users of labelling tools (refuel-ai/autolabel #424, whose PR #438 reports
label diversity with similarity ahead of similarity alone) and studied as "label coverage" of demonstrations:

* ``mode="cap"``: walk the ``candidate_num`` nearest pool items by similarity and take each unless
  ``max_per_label`` of its label are already in; if that leaves the prompt short, the skipped items fill it,
  most similar first.
* ``mode="round_robin"``: the labels of the candidates, in the order their best item appears, take turns: each
  label's most similar item first, then each label's second, and so on — the intents the query is confusable
  with, side by side.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from ucs import defaults as D
from ucs.selectors.base import Selector, _check_int

__all__ = ["LabelAwareSelector", "MODES", "cap_order", "round_robin_order"]

MODES = ("cap", "round_robin")


def cap_order(labels: np.ndarray, budget: int, max_per_label: int) -> np.ndarray:
    """Positions (into candidates sorted by similarity) of at most ``max_per_label`` per label, filled up with
    the skipped ones when short; shape (budget,). ``O(c)``."""
    counts: Dict[int, int] = {}
    take, skipped = [], []
    for j, y in enumerate(labels.tolist()):
        if counts.get(y, 0) < max_per_label:
            counts[y] = counts.get(y, 0) + 1
            take.append(j)
            if len(take) == budget:
                break
        else:
            skipped.append(j)
    if len(take) < budget:
        take += skipped[: budget - len(take)]
    return np.asarray(take, dtype=np.int64)


def round_robin_order(labels: np.ndarray, budget: int) -> np.ndarray:
    """Positions (into candidates sorted by similarity) taken a label at a time: every label's best, then
    every label's second best, ...; labels in the order their best candidate appears. Shape (budget,).
    ``O(c log c)``."""
    c = labels.shape[0]
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank_in_label = np.empty(c, dtype=np.int64)
    seen: Dict[int, int] = {}
    for j, y in enumerate(inverse.tolist()):
        rank_in_label[j] = seen.get(y, 0)
        seen[y] = rank_in_label[j] + 1
    label_rank = first[inverse]  # a label's place: the position of its best candidate
    return np.lexsort((label_rank, rank_in_label))[:budget].astype(np.int64)


class LabelAwareSelector(Selector):
    """Nearest neighbours of the query with the labels of the prompt spread (see the module docstring).

    Parameters
    ----------
    mode : {"cap", "round_robin"}
    max_per_label : int, default=2
        Most demonstrations of one label (``mode="cap"``).
    candidate_num : int, default=50
        Nearest pool items considered (at least the budget).
    block : int
        Queries per similarity block of the candidate retrieval.

    Notes
    -----
    Needs the pool's labels (``fit(..., labels=...)``). Retrieval ``O(Q·N·d)``, then ``O(Q·c log c)``. Scores
    are the chosen items' cosine similarities. No coverage prior: a relevance-keeping baseline.

    Examples
    --------
    >>> import numpy as np
    >>> from ucs.selectors import LabelAwareSelector
    >>> rng = np.random.default_rng(0)
    >>> pool = np.repeat(np.eye(3, 8), 4, axis=0) + 0.3 * rng.standard_normal((12, 8))  # 3 intents × 4 rows
    >>> labels = ["card"] * 4 + ["loan"] * 4 + ["fx"] * 4
    >>> query = np.eye(1, 8)  # one query in the "card" direction
    >>> sel = LabelAwareSelector(max_per_label=2).fit(pool, labels=labels).select(query, 4)
    >>> [labels[i] for i in sel.indices[0]]  # at most two "card" neighbours, then the next labels
    ['card', 'card', 'loan', 'fx']
    """

    name = "labelaware"

    def __init__(
        self,
        mode: str = D.LABEL_MODE,
        max_per_label: int = D.LABEL_CAP,
        candidate_num: int = 50,
        block: int = 1024,
    ) -> None:
        self.mode = mode
        self.max_per_label = max_per_label
        self.candidate_num = candidate_num
        self.block = block

    def _validate_params(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}; got {self.mode!r}")
        _check_int(self.max_per_label, "max_per_label", 1)
        _check_int(self.candidate_num, "candidate_num", 1)
        _check_int(self.block, "block", 1)

    def _fit(self) -> None:
        if self.labels_ is None:
            raise ValueError("LabelAwareSelector needs the pool's labels: fit(pool, labels=...)")
        _, self.label_codes_ = np.unique(np.asarray([str(y) for y in self.labels_]), return_inverse=True)

    def _select(
        self, queries: np.ndarray, budget: int, query_texts: Optional[Sequence[str]]
    ) -> Tuple[np.ndarray, np.ndarray, Dict[str, np.ndarray]]:
        def choose(cand: np.ndarray, sims: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
            labels = self.label_codes_[cand]
            pos = (
                cap_order(labels, budget, int(self.max_per_label))
                if self.mode == "cap"
                else round_robin_order(labels, budget)
            )
            return pos, sims[pos]

        return self._choose_among_candidates(queries, budget, int(self.candidate_num), choose)
