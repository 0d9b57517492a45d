"""The one-query greedy MAP (the per-call path of the index) gives the batched path's order and scores bit for
bit."""

import numpy as np
import pytest

from ucs.selectors import UCSPrior
from ucs.selectors.dpp import dpp_kernel, greedy_map_dpp


def _kernels(rng, n_queries, c, d, duplicate):
    x = rng.standard_normal((n_queries, c, d))
    if duplicate:
        x[:, 1] = x[:, 0]  # rank-deficient: a residual reaches 0
    x /= np.linalg.norm(x, axis=2, keepdims=True)
    q = rng.standard_normal((n_queries, d))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return dpp_kernel(q, x, 0.1)[0]


@pytest.mark.parametrize("seed", range(40))
def test_one_query_equals_the_batched_rows(seed):
    rng = np.random.default_rng(seed)
    c, d = int(rng.integers(8, 60)), int(rng.integers(4, 64))
    budget = int(rng.integers(0, min(c, 12) + 1))
    kernels = _kernels(rng, 3, c, d, duplicate=seed % 4 == 0)
    batch_order, batch_scores = greedy_map_dpp(kernels, budget)
    for r in range(3):
        order, scores = greedy_map_dpp(kernels[r : r + 1], budget)
        assert np.array_equal(order[0], batch_order[r])
        assert np.array_equal(scores[0], batch_scores[r])


@pytest.mark.parametrize("seed", range(20))
def test_one_query_with_the_prior_equals_the_batched_rows(seed):
    rng = np.random.default_rng(100 + seed)
    n, c, budget = 300, 40, 8
    prior = UCSPrior(rng.integers(0, 25, size=n))
    cand = np.stack([rng.choice(n, c, replace=False) for _ in range(3)])
    kernels = _kernels(rng, 3, c, 16, duplicate=False)
    batch_order, batch_scores = greedy_map_dpp(
        kernels, budget, gain_fn=prior.greedy(cand, budget), lam=prior.lam
    )
    for r in range(3):
        order, scores = greedy_map_dpp(
            kernels[r : r + 1], budget, gain_fn=prior.greedy(cand[r : r + 1], budget), lam=prior.lam
        )
        assert np.array_equal(order[0], batch_order[r])
        assert np.array_equal(scores[0], batch_scores[r])
