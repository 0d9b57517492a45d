"""Shared-prefix bookkeeping for scoring many continuations of one prompt.

Label continuations often share their first tokens (``card_arrival``, ``card_linking`` …). Building a
token trie over them lets a backend evaluate every distinct (prefix-path, token) node exactly once:
77 BANKING77 labels of ≈ 4.5 tokens each need ≈ 40 % fewer forward positions than scoring each label
separately, and all of them go into a few batched forward passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Sequence, Tuple

import numpy as np

__all__ = ["TokenTrie", "build_trie", "move_trailing_spaces", "logsumexp_rows"]


def move_trailing_spaces(prefix: str, continuations: Sequence[str]) -> Tuple[str, List[str]]:
    """Move trailing spaces of ``prefix`` onto each continuation.

    ``"Label: " + "card"`` and ``"Label:" + " card"`` are the same text, but tokenisers almost always
    attach the space to the following word; scoring the continuation ``" card"`` after ``"Label:"``
    measures what the model would actually generate.
    """
    stripped = prefix.rstrip(" ")
    pad = prefix[len(stripped) :]
    return stripped, [pad + c for c in continuations]


@dataclass
class TokenTrie:
    """A token trie in breadth-first order (every parent precedes its children).

    Attributes
    ----------
    tokens : ndarray (m,), int64
        Token of each node.
    parent : ndarray (m,), int64
        Parent node, ``-1`` for children of the (shared) prefix.
    depth : ndarray (m,), int64
        0 for first continuation tokens.
    paths : list of ndarray
        For continuation ``j``, its node indices in order.
    """

    tokens: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    paths: List[np.ndarray]

    @property
    def n_nodes(self) -> int:
        return int(self.tokens.shape[0])

    def members(self) -> List[List[int]]:
        """For each node, the continuations whose path passes through it (sorted)."""
        out: List[List[int]] = [[] for _ in range(self.n_nodes)]
        for j, p in enumerate(self.paths):
            for n in p:
                out[n].append(j)
        return out

    def has_children(self) -> np.ndarray:
        """Boolean mask of nodes that are the parent of some other node."""
        mask = np.zeros(self.n_nodes, dtype=bool)
        par = self.parent[self.parent >= 0]
        mask[par] = True
        return mask


def build_trie(token_lists: Sequence[Sequence[int]]) -> TokenTrie:
    """Build a :class:`TokenTrie` over ``token_lists`` (each non-empty). Time O(total tokens)."""
    index = {}
    raw: List[Tuple[int, int, int]] = []  # (token, parent, depth) in insertion order
    paths_raw: List[List[int]] = []
    for toks in token_lists:
        if len(toks) == 0:
            raise ValueError("every continuation must have at least one token")
        parent = -1
        path = []
        for d, t in enumerate(toks):
            key = (parent, int(t))
            node = index.get(key)
            if node is None:
                node = len(raw)
                index[key] = node
                raw.append((int(t), parent, d))
            path.append(node)
            parent = node
        paths_raw.append(path)
    depth = np.array([r[2] for r in raw], dtype=np.int64)
    order = np.argsort(depth, kind="stable")  # BFS order: parents first
    remap = np.empty_like(order)
    remap[order] = np.arange(order.size)
    tokens = np.array([raw[i][0] for i in order], dtype=np.int64)
    parent = np.array([remap[raw[i][1]] if raw[i][1] >= 0 else -1 for i in order], dtype=np.int64)
    paths = [remap[np.asarray(p, dtype=np.int64)] for p in paths_raw]
    return TokenTrie(tokens=tokens, parent=parent, depth=depth[order], paths=paths)


def logsumexp_rows(logits: np.ndarray, rows_per_step: int = 8) -> np.ndarray:
    """Row-wise log-sum-exp of a ``(r, V)`` array, in float64. Time O(r · V).

    ``exp(x − max)`` is taken in float32 and summed in float64, ``rows_per_step`` rows at a time in one
    reused buffer (which stays in the CPU cache) instead of a temporary the size of ``logits``; the numbers
    do not depend on ``rows_per_step``."""
    x = np.asarray(logits, dtype=np.float32)
    m = x.max(axis=1, keepdims=True)
    out = np.empty(x.shape[0], dtype=np.float64)
    buf = np.empty((min(rows_per_step, x.shape[0]), x.shape[1]), dtype=np.float32)
    for s in range(0, x.shape[0], rows_per_step):
        e = buf[: min(rows_per_step, x.shape[0] - s)]
        np.subtract(x[s : s + rows_per_step], m[s : s + rows_per_step], out=e)
        np.exp(e, out=e)
        out[s : s + e.shape[0]] = e.sum(axis=1, dtype=np.float64)
    return m[:, 0].astype(np.float64) + np.log(out)
