"""Synthetic data for the selector tests: a small clustered pool with texts and labels."""

from __future__ import annotations

import numpy as np


def make_pool(seed: int = 0, n: int = 120, d: int = 16, n_centres: int = 12, q: int = 7):
    """A pool drawn around a few centres (so neighbours and clusters mean something) plus queries."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_centres, d))
    member = rng.integers(0, n_centres, size=n)
    pool = centres[member] + 0.6 * rng.normal(size=(n, d))
    queries = centres[rng.integers(0, n_centres, size=q)] + 0.6 * rng.normal(size=(q, d))
    # cluster ids: the centre, with a few centres split so sizes vary, and some singletons
    cids = member.copy()
    cids[rng.random(n) < 0.15] = n_centres + np.arange(int((rng.random(n) < 0.15).sum()) or 1)[0]
    singles = rng.random(n) < 0.1
    cids[singles] = 1000 + np.arange(int(singles.sum()))
    labels = [f"label_{m % 5}" for m in member]
    texts = [f"pool text {i} about topic {m}" for i, m in enumerate(member)]
    query_texts = [f"query {j}" for j in range(q)]
    return pool, queries, cids, labels, texts, query_texts
