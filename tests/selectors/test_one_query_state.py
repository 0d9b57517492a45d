"""The one-query greedy coverage state (the per-call path) equals the batched state bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.selectors import DPPSelector, TopKSelector, UCSPrior
from ucs.selectors._coverage import BatchedGreedyState, OneQueryGreedyState


@pytest.mark.parametrize(
    "estimator, design",
    [("paper", "full"), ("poisson", "full"), ("chao1", "ratio"), ("binomial", "unseen_only")],
)
def test_one_query_state_matches_batched(estimator, design):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 30, 400)
    prior = UCSPrior(ids, estimator=estimator, design=design)
    batched = prior.batched()
    for trial in range(5):
        cand = rng.choice(400, (1, 40), replace=False)
        one = batched.greedy(cand, 12)
        ref = BatchedGreedyState(batched, np.repeat(cand, 3, axis=0), 12)  # batch of 3 copies: no memo path
        assert isinstance(one, OneQueryGreedyState)
        for step in range(12):
            g1, g3 = one.gains(), ref.gains()
            np.testing.assert_array_equal(g1[0], g3[0])
            pos = int(np.argmax(g1[0] + rng.random(40) * 1e-3))
            one.add(np.array([pos]))
            ref.add(np.full(3, pos))
            np.testing.assert_array_equal(one.phi, ref.phi[:1])


def test_single_queries_select_like_the_batch():
    rng = np.random.default_rng(1)
    pool = rng.standard_normal((300, 16))
    queries = rng.standard_normal((20, 16))
    ids = rng.integers(0, 25, 300)
    for sel in (DPPSelector(prior=UCSPrior(ids, lam=0.5)), TopKSelector(prior=UCSPrior(ids, lam=0.5))):
        sel.fit(pool)
        batch = sel.select(queries, 8)
        for i in range(20):
            one = sel.select(queries[i : i + 1], 8)
            np.testing.assert_array_equal(one.indices[0], batch.indices[i])
            np.testing.assert_array_equal(one.phi, batch.phi[i : i + 1])
