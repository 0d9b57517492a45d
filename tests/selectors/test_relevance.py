"""The relevance-aware priors (``UCSPrior(relevance="candidates" | "candidates_bonus")``): coverage weighted
by the query's own candidates' clusters."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.selectors import DPPSelector, MDLSelector, TopKSelector, UCSPrior
from ucs.selectors._coverage import candidate_share
from ucs.testing import doubles as dummies

from .selector_data import make_pool


def test_candidate_share_by_hand():
    cl = np.array([[3, 3, 3, 5, 7, 7], [1, 2, 2, 2, 2, 9]])
    w = candidate_share(cl)
    np.testing.assert_allclose(w[0], [1, 1, 1, 1 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(w[1], [1 / 4, 1, 1, 1, 1, 1 / 4])
    members = np.array([[[3, 5], [8, 7]], [[2, 2], [9, 1]]])
    np.testing.assert_allclose(
        candidate_share(cl, members), [[[1, 1 / 3], [0, 2 / 3]], [[1, 1], [1 / 4, 1 / 4]]]
    )


def test_subset_weights_average_over_distinct_clusters():
    ids = np.array([0, 0, 0, 1, 2, 2])
    prior = UCSPrior(ids, relevance="candidates")
    cand = np.array([[0, 1, 2, 3, 4, 5]])  # clusters 0,0,0,1,2,2 → weights 1, 1/3, 2/3
    subsets = np.array([[[0, 1, 3], [3, 4, 5], [0, 4, 5]]])
    got = prior.subset_weights(cand, subsets)
    np.testing.assert_allclose(got, [[(1 + 1 / 3) / 2, (1 / 3 + 2 / 3) / 2, (1 + 2 / 3) / 2]])
    assert UCSPrior(ids).subset_weights(cand, subsets) is None


@pytest.mark.parametrize("relevance", ["candidates", "candidates_bonus"])
@pytest.mark.parametrize(
    "make",
    [
        lambda p: DPPSelector(candidate_num=20, prior=p),
        lambda p: TopKSelector(candidate_num=20, prior=p),
    ],
)
def test_lambda_zero_is_the_base_selector(make, relevance):
    pool, queries, cids, *_ = make_pool(seed=1)
    base = make(None).fit(pool).select(queries, 6).indices
    got = make(UCSPrior(cids, lam=0.0, relevance=relevance)).fit(pool).select(queries, 6).indices
    np.testing.assert_array_equal(got, base)


@pytest.mark.parametrize("relevance", ["candidates", "candidates_bonus"])
def test_relevance_keeps_demonstrations_in_the_queries_own_clusters(relevance):
    """With a large λ the paper's prior spreads over as many clusters as the candidates reach; the
    relevance-aware prior spends its coverage on the clusters most candidates sit in."""
    pool, queries, cids, *_ = make_pool(seed=2, n=300, q=12)
    plain = UCSPrior(cids, estimator="binomial", lam=5.0)
    rel = plain.clone(relevance=relevance)
    sel_plain = TopKSelector(candidate_num=40, prior=plain).fit(pool).select(queries, 8).indices
    sel_rel = TopKSelector(candidate_num=40, prior=rel).fit(pool).select(queries, 8).indices
    cand = TopKSelector().fit(pool).select(queries, 40).indices
    w = candidate_share(cids[cand])
    weight_of = [dict(zip(cand[q], w[q])) for q in range(len(queries))]
    mean_w = lambda sel: np.mean([[weight_of[q][i] for i in sel[q]] for q in range(len(queries))])  # noqa: E731
    assert mean_w(sel_rel) > mean_w(sel_plain)


def test_bonus_form_weighs_increases_only():
    """``candidates_bonus``: a new cluster's gain is scaled by its weight, a repeat's loss counts in full."""
    ids = np.array([0, 0, 0, 1, 2, 2, 3])
    cand = np.array([[0, 1, 2, 3, 4, 5, 6]])  # clusters 0,0,0,1,2,2,3 → weights 1, 1/3, 2/3, 1/3
    w = candidate_share(ids[cand])
    base = UCSPrior(ids, estimator="binomial", lam=1.0)
    for batch in (1, 2):  # the one-query state and the batched state give the same values
        c = np.repeat(cand, batch, axis=0)
        plain, weighted, bonus = (
            base.clone(relevance=r).greedy(c, 4) for r in ("none", "candidates", "candidates_bonus")
        )
        for step in range(3):
            g = plain.gains()
            assert np.any(g > 0)
            np.testing.assert_allclose(weighted.gains(), g * np.repeat(w, batch, axis=0))
            np.testing.assert_allclose(bonus.gains(), np.where(g > 0, g * np.repeat(w, batch, axis=0), g))
            pick = np.full(batch, [0, 1, 4][step])
            for s in (plain, weighted, bonus):
                s.add(pick)
        assert np.any(plain.gains() < 0), "the test must cover a repeat's loss"


def test_mdl_bonus_form_equals_candidates():
    pool, queries, cids, labels, texts, qtexts = make_pool(seed=3)
    kw = dict(scorer=dummies.DummyLM(), candidate_num=20, select_time=4)
    prior = UCSPrior(cids, estimator="binomial", lam=1.0)
    a, b = (
        MDLSelector(prior=prior.clone(relevance=r), **kw)
        .fit(pool, labels=labels, texts=texts)
        .select(queries, 5, query_texts=qtexts)
        for r in ("candidates", "candidates_bonus")
    )
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.extras["subset_phi"], b.extras["subset_phi"])


def test_mdl_relevance_scales_subset_phi():
    pool, queries, cids, labels, texts, qtexts = make_pool(seed=3)
    plain = UCSPrior(cids, estimator="binomial", lam=1.0)
    kw = dict(scorer=dummies.DummyLM(), candidate_num=20, select_time=4)
    a = (
        MDLSelector(prior=plain, **kw)
        .fit(pool, labels=labels, texts=texts)
        .select(queries, 5, query_texts=qtexts)
    )
    b = (
        MDLSelector(prior=plain.clone(relevance="candidates"), **kw)
        .fit(pool, labels=labels, texts=texts)
        .select(queries, 5, query_texts=qtexts)
    )
    sel = MDLSelector(**kw).fit(pool, labels=labels, texts=texts)
    from ucs.selectors.base import l2_normalize

    subsets, cand = sel.candidate_subsets(l2_normalize(queries), 5, return_candidates=True)
    w = plain.clone(relevance="candidates").subset_weights(cand, subsets)
    np.testing.assert_allclose(b.extras["subset_phi"], a.extras["subset_phi"] * w)
    np.testing.assert_array_equal(a.extras["mdl"], b.extras["mdl"])


def test_bad_relevance_is_named():
    with pytest.raises(ValueError, match="relevance must be one of"):
        UCSPrior(np.zeros(5, dtype=int), relevance="query").validate()
