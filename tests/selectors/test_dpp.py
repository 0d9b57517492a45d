"""DPP and DPP+UCS: the published greedy recurrence, brute-force determinants, OpenICL parity."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ucs.selectors import DPPSelector, UCSPrior, dpp_kernel, greedy_map_dpp
from ucs.selectors._retrieval import l2_normalize

from selector_data import make_pool


def _random_kernel(rng, c=12, d=6):
    x = rng.normal(size=(c, d))
    return x @ x.T + 0.05 * np.eye(c)


def _chen_fast_map(kernel, max_length):
    """Chen, Zhang & Zhou (2018), Algorithm 1, transcribed as published (one kernel, no batching)."""
    item_size = kernel.shape[0]
    cis = np.zeros((max_length, item_size))
    di2s = np.copy(np.diag(kernel))
    selected = [int(np.argmax(di2s))]
    while len(selected) < max_length:
        k = len(selected) - 1
        j = selected[-1]
        ci_optimal = cis[:k, j]
        di_optimal = math.sqrt(di2s[j])
        elements = kernel[j, :]
        eis = (elements - ci_optimal @ cis[:k, :]) / di_optimal
        cis[k, :] = eis
        di2s -= np.square(eis)
        di2s[j] = -np.inf
        selected.append(int(np.argmax(di2s)))
    return selected


@pytest.mark.parametrize("seed", range(5))
def test_greedy_matches_published_recurrence(seed):
    rng = np.random.default_rng(seed)
    kernels = np.stack([_random_kernel(rng) for _ in range(4)])
    order, _ = greedy_map_dpp(kernels, 6)
    for q in range(4):
        assert order[q].tolist() == _chen_fast_map(kernels[q], 6)


@pytest.mark.parametrize("seed", range(5))
def test_greedy_steps_are_brute_force_determinant_gains(seed):
    rng = np.random.default_rng(100 + seed)
    kernel = _random_kernel(rng, c=9)
    order, scores = greedy_map_dpp(kernel[None], 5)
    chosen: list = []
    for step in range(5):
        base = np.linalg.det(kernel[np.ix_(chosen, chosen)]) if chosen else 1.0
        gains = np.array(
            [
                -np.inf if j in chosen else np.linalg.det(kernel[np.ix_(chosen + [j], chosen + [j])]) / base
                for j in range(9)
            ]
        )
        j = int(np.argmax(gains))
        assert order[0, step] == j
        assert scores[0, step] == pytest.approx(gains[j], rel=1e-8)
        chosen.append(j)


def test_k1_greedy_is_exact_map():
    rng = np.random.default_rng(7)
    for _ in range(10):
        kernel = _random_kernel(rng, c=8)
        order, _ = greedy_map_dpp(kernel[None], 1)
        best = max(range(8), key=lambda j: np.linalg.det(kernel[np.ix_([j], [j])]))
        assert order[0, 0] == best


def test_greedy_fixed_example():
    kernel = np.array([[1.0, 0.9, 0.0], [0.9, 1.0, 0.0], [0.0, 0.0, 0.5]])
    order, scores = greedy_map_dpp(kernel[None], 3)
    assert order.tolist() == [[0, 2, 1]]
    np.testing.assert_allclose(scores, [[1.0, 0.5, 0.19]])


def test_rank_exhausted_kernel_keeps_unique_items():
    x = np.ones((5, 1))
    order, _ = greedy_map_dpp((x @ x.T)[None], 5)  # rank 1: residuals hit zero after one pick
    assert sorted(order[0].tolist()) == list(range(5))


def _openicl_dpp_reference(pool, query, candidate_num, budget, scale_factor=0.1):
    """OpenICL's DPPRetriever for one query, written out with plain loops."""
    pool_n = l2_normalize(pool)
    q = query / np.linalg.norm(query)
    sims = pool_n @ q
    near_ids = np.argsort(-sims, kind="stable")[:candidate_num]
    near_reps = pool_n[near_ids]
    rel = (near_reps @ q + 1) / 2
    rel -= rel.max()
    rel = np.exp(rel / (2 * scale_factor))
    sim = (near_reps @ near_reps.T + 1) / 2
    kernel = rel[None] * sim * rel[:, None]
    ids = np.array(_chen_fast_map(kernel, budget))
    ids = ids[np.argsort(-rel[ids], kind="stable")]
    return near_ids[ids].tolist()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dpp_selector_matches_openicl(seed):
    pool, queries, *_ = make_pool(seed=seed, n=200, d=24, q=9)
    got = DPPSelector(candidate_num=30).fit(pool).select(queries, 8).indices
    for q in range(len(queries)):
        assert got[q].tolist() == _openicl_dpp_reference(pool, queries[q], 30, 8)


def test_dpp_kernel_shape_and_relevance():
    pool, queries, *_ = make_pool(seed=3, n=50)
    p, qn = l2_normalize(pool), l2_normalize(queries)
    cand = np.tile(np.arange(10), (len(qn), 1))
    kernel, rel = dpp_kernel(qn, p[cand], 0.1)
    assert kernel.shape == (len(qn), 10, 10)
    assert np.allclose(rel.max(axis=1), 1.0)
    np.testing.assert_allclose(kernel, kernel.transpose(0, 2, 1))


def test_dpp_ucs_with_large_lambda_covers_more_clusters():
    pool, queries, cids, *_ = make_pool(seed=4, n=300, q=20)
    base = DPPSelector(candidate_num=40).fit(pool, cluster_ids=cids).select(queries, 8)
    ucs = (
        DPPSelector(candidate_num=40, prior=UCSPrior(cids, design="seen_only", lam=100.0))
        .fit(pool)
        .select(queries, 8)
    )
    # every pick maximises the new-cluster bonus first: no repeat while a candidate from a new cluster exists,
    # so each query covers exactly min(budget, distinct clusters among its 40 candidates)
    p, qn = l2_normalize(pool), l2_normalize(queries)
    cand = np.argsort(-(qn @ p.T), axis=1, kind="stable")[:, :40]
    reachable = np.array([np.unique(cids[c]).size for c in cand])
    np.testing.assert_array_equal(ucs.clusters_covered, np.minimum(8, reachable))
    assert np.all(ucs.clusters_covered >= base.clusters_covered)  # the most any selection of 8 can reach
    assert ucs.clusters_covered.sum() > base.clusters_covered.sum()
    assert not np.array_equal(ucs.indices, base.indices)


def test_dpp_ucs_first_pick_is_most_relevant():
    pool, queries, cids, *_ = make_pool(seed=5, n=150)
    top = DPPSelector(candidate_num=1).fit(pool).select(queries, 1).indices
    ucs = DPPSelector(prior=UCSPrior(cids, lam=5.0)).fit(pool).select(queries, 1).indices
    assert np.array_equal(top, ucs)


def test_budget_above_candidate_num_widens_candidates():
    pool, queries, *_ = make_pool(seed=6, n=40)
    s = DPPSelector(candidate_num=5).fit(pool).select(queries, 12)
    assert s.indices.shape == (len(queries), 12)


def test_log_floor_must_be_positive():
    pool, *_ = make_pool()
    with pytest.raises(ValueError, match="log_floor"):
        DPPSelector(log_floor=0).fit(pool)
    with pytest.raises(ValueError, match="candidate_num"):
        DPPSelector(candidate_num=0).fit(pool)
    with pytest.raises(ValueError, match="scale_factor"):
        DPPSelector(scale_factor=-1.0).fit(pool)
    with pytest.raises(ValueError, match="prior"):
        DPPSelector(prior="paper").fit(pool)


def test_all_subsets_brute_force_small_map_contains_greedy_for_k1():
    # sanity on the brute-force helper: MAP over all 1-subsets equals the largest diagonal
    rng = np.random.default_rng(11)
    kernel = _random_kernel(rng, c=6)
    best = max(itertools.combinations(range(6), 1), key=lambda s: np.linalg.det(kernel[np.ix_(s, s)]))
    assert best[0] == int(np.argmax(np.diag(kernel)))
