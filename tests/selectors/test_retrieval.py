"""Batched top-k cosine retrieval."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.selectors._retrieval import l2_normalize, topk_cosine


def _brute(q, p, k):
    s = q @ p.T
    order = np.lexsort((np.broadcast_to(np.arange(p.shape[0]), s.shape), -s), axis=1)[:, :k]
    return order


@pytest.mark.parametrize("k", [0, 1, 5, 34, 35])
@pytest.mark.parametrize("block", [1, 3, 100])
def test_topk_matches_brute_force_with_ties(k, block):
    # small integers: every dot product is exact in any BLAS code path, so ties are exact ties
    rng = np.random.default_rng(0)
    base = rng.integers(-2, 3, size=(10, 8)).astype(float)
    pool = np.concatenate([base, base, base[:5], base[:20]])  # exact duplicates → ties
    q = np.concatenate([base[:3], rng.integers(-2, 3, size=(4, 8))]).astype(float)
    idx, sims = topk_cosine(q, pool, k, block=block)
    assert idx.shape == (7, k)
    want = _brute(q, pool, k)
    assert np.array_equal(idx, want)
    np.testing.assert_allclose(sims, np.take_along_axis(q @ pool.T, want, axis=1))


def test_k_above_pool_size_is_rejected():
    x = l2_normalize(np.eye(3))
    with pytest.raises(ValueError, match="k must be"):
        topk_cosine(x, x, 4)


def test_zero_vectors_do_not_produce_nan():
    x = l2_normalize(np.zeros((3, 4)))
    assert np.all(x == 0)


def test_large_pools_are_scanned_in_fewer_queries_per_block_with_the_same_result(monkeypatch):
    import ucs.selectors._retrieval as R

    rng = np.random.default_rng(3)
    pool = l2_normalize(rng.standard_normal((5000, 16)))
    pool[4000] = pool[17]  # an exact tie, resolved by the smaller index in every block shape
    q = l2_normalize(pool[:300] + 0.05 * rng.standard_normal((300, 16)))
    want = topk_cosine(q, pool, 12)
    seen = []
    real = R._topk_rows
    monkeypatch.setattr(R, "_topk_rows", lambda s, k: seen.append(s.shape[0]) or real(s, k))
    monkeypatch.setattr(R, "BLOCK_ELEMENTS", 7 * 5000 + 3)  # at most 7 queries a block
    got = topk_cosine(q, pool, 12)
    assert max(seen) == 7 and sum(seen) == 300
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=1e-12)
