"""The most likely of many continuations without scoring them all: branch and bound over their token trie.

A continuation's log-probability is the sum of its tokens' log-probabilities, each ≤ 0, so the sum over the
first tokens of a path bounds every continuation through that path from above. :func:`best_continuation`
evaluates trie nodes (each evaluation gives the next-token distribution after a node) best bound first until a
complete continuation is scored, then evaluates only the nodes whose bound is not below the best complete
score so far; a subtree whose bound is below it cannot hold the answer. The answer is exactly the argmax (the
first continuation on ties) of the log-probabilities the engine computes for the nodes it evaluates; only the
continuations that cannot win are left unscored.

Notation: a trie of ``m`` nodes over ``k`` continuations (:class:`~ucs.lm.prefix_tree.TokenTrie`), a
vocabulary of ``V`` tokens; ``b(n)`` the sum of log-probabilities along the path to node ``n`` (inclusive). On
a BANKING77 prompt (77 labels, 371 nodes) a reader that is sure of its label evaluates a few dozen nodes
instead of 294. Cost: the evaluations (engine calls of at most ``m`` nodes in all) plus O(m · log m) here.
"""

from __future__ import annotations

from typing import Callable, List, Sequence, Tuple

import numpy as np

from ucs.lm.prefix_tree import TokenTrie

__all__ = ["best_continuation"]

#: Nodes evaluated per engine call before any continuation is complete (a call of a few tokens costs about
#: what one costs: the weights are read once either way).
DIVE_WIDTH = 8


def best_continuation(
    trie: TokenTrie, first_logp: np.ndarray, evaluate: Callable[[Sequence[int]], np.ndarray]
) -> Tuple[int, float, int]:
    """``(index of the most likely continuation, its log-probability, nodes evaluated)``.

    Parameters
    ----------
    trie : TokenTrie
        The continuations' token trie.
    first_logp : ndarray (V,)
        Log-probabilities of the first token after the prefix.
    evaluate : callable
        ``evaluate(nodes) -> (len(nodes), V)`` next-token log-probabilities after each node (its path given);
        called only with nodes whose parent was evaluated before.
    """
    m = trie.n_nodes
    bound = np.full(m, -np.inf)
    first = trie.parent < 0
    bound[first] = first_logp[trie.tokens[first]]
    children: List[List[int]] = [[] for _ in range(m)]
    for n in np.nonzero(~first)[0]:
        children[int(trie.parent[n])].append(int(n))
    ends: List[List[int]] = [[] for _ in range(m)]
    for j, path in enumerate(trie.paths):
        ends[int(path[-1])].append(j)
    open_ = {n for n in range(m) if children[n]}
    best, best_j, used = -np.inf, -1, 0
    best, best_j = _settle(np.nonzero(first)[0], bound, ends, best, best_j)
    while True:
        frontier = sorted(
            (n for n in open_ if np.isfinite(bound[n]) and bound[n] >= best), key=lambda n: (-bound[n], n)
        )
        if not frontier:
            return best_j, float(best), used
        picked = frontier if best_j >= 0 else frontier[:DIVE_WIDTH]
        rows = np.asarray(evaluate(picked), dtype=np.float64)
        used += len(picked)
        new = []
        for r, n in enumerate(picked):
            open_.discard(n)
            for c in children[n]:
                bound[c] = bound[n] + rows[r, trie.tokens[c]]
                new.append(c)
        best, best_j = _settle(new, bound, ends, best, best_j)


def _settle(
    nodes: Sequence[int], bound: np.ndarray, ends: List[List[int]], best: float, best_j: int
) -> Tuple[float, int]:
    """The best complete continuation after the scores of ``nodes`` became known (ties: the first index)."""
    for n in nodes:
        for j in ends[int(n)]:
            s = bound[int(n)]
            if s > best or (s == best and (best_j < 0 or j < best_j)):
                best, best_j = s, j
    return best, best_j
