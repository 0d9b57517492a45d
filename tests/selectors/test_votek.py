"""VoteK and VoteK+UCS: OpenICL parity, blocked vote graph, Good–Turing weights by hand."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from selector_data import make_pool
from sklearn.metrics.pairwise import cosine_similarity

from ucs.selectors import UCSPrior, VoteKSelector, build_vote_graph
from ucs.selectors._retrieval import l2_normalize


def _openicl_votek(embeddings, select_num, k=3, overlap_threshold=1.0):
    """OpenICL's ``votek_select`` written out (its random fill left out: it uses the global RNG)."""
    n = len(embeddings)
    vote_stat = defaultdict(list)
    for i in range(n):
        cur_emb = embeddings[i].reshape(1, -1)
        cur_scores = np.sum(cosine_similarity(embeddings, cur_emb), axis=1)
        sorted_indices = np.argsort(cur_scores).tolist()[-k - 1 : -1]
        for idx in sorted_indices:
            if idx != i:
                vote_stat[idx].append(i)
    votes = sorted(vote_stat.items(), key=lambda x: len(x[1]), reverse=True)
    j = 0
    selected = []
    while len(selected) < select_num and j < len(votes):
        candidate_set = set(votes[j][1])
        flag = True
        for pre in range(j):
            cur_set = set(votes[pre][1])
            if len(candidate_set.intersection(cur_set)) >= overlap_threshold * len(candidate_set):
                flag = False
                break
        if flag:
            selected.append(int(votes[j][0]))
        j += 1
    return selected, votes


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_votek_matches_openicl(seed, k):
    pool, *_ = make_pool(seed=seed, n=150, d=12)
    ref, votes = _openicl_votek(pool, 10**6, k=k)
    sel = VoteKSelector(k=k).fit(pool)
    b = min(len(ref), 15)
    got = sel.select(None, b).indices[0]
    assert got.tolist() == ref[:b]
    ranked = sel.ranking().tolist()
    assert ranked == [int(v[0]) for v in votes]


def test_votek_threshold_below_one_matches_openicl():
    pool, *_ = make_pool(seed=9, n=120, d=10)
    ref, _ = _openicl_votek(pool, 10**6, k=4, overlap_threshold=0.5)
    got = VoteKSelector(k=4, overlap_threshold=0.5).fit(pool).select(None, len(ref)).indices[0]
    assert got.tolist() == ref


@pytest.mark.parametrize("block", [1, 7, 1000])
def test_vote_graph_independent_of_block(block):
    pool, *_ = make_pool(seed=2, n=90)
    p = l2_normalize(pool)
    a = build_vote_graph(p, k=3, block=block)
    b = build_vote_graph(p, k=3, block=90)
    for f in ("voters", "targets", "votes", "first_vote"):
        assert np.array_equal(getattr(a, f), getattr(b, f))
    assert a.votes.sum() == 90 * 3


def test_float32_vote_graph_agrees_on_separated_data():
    pool, *_ = make_pool(seed=3, n=100)
    p = l2_normalize(pool)
    assert np.array_equal(build_vote_graph(p, dtype="float32").votes, build_vote_graph(p).votes)


def test_fill_is_seeded_and_valid():
    pool, *_ = make_pool(seed=1, n=60)
    a = VoteKSelector(random_state=1).fit(pool).select(None, 60)
    b = VoteKSelector(random_state=1).fit(pool).select(None, 60)
    c = VoteKSelector(random_state=2).fit(pool).select(None, 60)
    assert sorted(a.indices[0].tolist()) == list(range(60))
    assert np.array_equal(a.indices, b.indices)
    assert not np.array_equal(a.indices, c.indices)
    assert np.isnan(a.scores[0, -1])


def test_good_turing_weights_by_hand():
    # cluster sizes 1,1,1,2,2,3 → g1 = 3, g2 = 2, g3 = 1, N = 10 (raw spectrum, no smoothing)
    cids = np.array([0, 1, 2, 3, 3, 4, 4, 5, 5, 5])
    eps = 1e-6
    s_star = {1: 2 * 2 / 3, 2: 3 * 1 / 2, 3: 3.0}  # (s+1) g_{s+1} / g_s; g_4 = 0 → s* = s
    w = {s: 1 / (v / 10 + eps) for s, v in s_star.items()}
    mean = (3 * w[1] + 2 * w[2] + w[3]) / 6
    size = {0: 1, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3}
    expected = np.array([np.log(w[size[c]] / mean) for c in cids])
    prior = UCSPrior(cids, lam=2.0, corpus_smoothing=None, epsilon=eps)
    np.testing.assert_allclose(prior.item_log_weights(), expected, rtol=1e-12)
    rng = np.random.default_rng(0)
    pool = rng.normal(size=(10, 5))
    sel = VoteKSelector(prior=prior).fit(pool)
    np.testing.assert_allclose(sel.item_scores(), sel.graph_.votes + 2.0 * expected, rtol=1e-12)


def test_rarity_controls_by_hand():
    cids = np.array([0, 1, 2, 3, 3, 4, 4, 5, 5, 5])
    inv = UCSPrior(cids, corpus_prior="inverse_size").item_log_weights()
    w = np.array([1, 1, 1, 0.5, 0.5, 1 / 3])
    np.testing.assert_allclose(inv, np.log((w / w.mean())[cids]), rtol=1e-12)
    b2 = UCSPrior(
        cids, corpus_prior="spectrum_rarity", corpus_smoothing=None, epsilon=1e-6
    ).item_log_weights()
    g = {1: 3, 2: 2, 3: 1}
    wu = np.array([1 / (g[s] + 1e-6) for s in (1, 1, 1, 2, 2, 3)])
    np.testing.assert_allclose(b2, np.log((wu / wu.mean())[cids]), rtol=1e-12)


def test_large_lambda_prefers_rare_clusters():
    pool, _, cids, *_ = make_pool(seed=4, n=200)
    sizes = np.bincount(np.unique(cids, return_inverse=True)[1])
    size_of = sizes[np.unique(cids, return_inverse=True)[1]]
    base = VoteKSelector().fit(pool).select(None, 10).indices[0]
    ucs = (
        VoteKSelector(prior=UCSPrior(cids, lam=50.0, corpus_prior="inverse_size"))
        .fit(pool)
        .select(None, 10)
        .indices[0]
    )
    assert size_of[ucs].mean() < size_of[base].mean()


def test_votek_bad_parameters():
    pool, *_ = make_pool()
    for kw, match in [
        ({"k": 0}, "k must"),
        ({"overlap_threshold": 0}, "overlap_threshold"),
        ({"overlap_threshold": 1.5}, "overlap_threshold"),
        ({"dtype": "float16"}, "dtype"),
        ({"random_state": -1}, "random_state"),
    ]:
        with pytest.raises(ValueError, match=match):
            VoteKSelector(**kw).fit(pool)


def test_query_independent_row_and_queries_checked():
    pool, queries, *_ = make_pool()
    sel = VoteKSelector().fit(pool)
    s = sel.select(queries, 4)
    assert s.indices.shape == (1, 4) and s.n_queries == len(queries)
    assert s.per_query().shape == (len(queries), 4)
    with pytest.raises(ValueError, match="dimension"):
        sel.select(queries[:, :3], 4)
