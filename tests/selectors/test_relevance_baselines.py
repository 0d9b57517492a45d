"""MMR equals langchain-core's maximal_marginal_relevance on identical inputs; label-aware similarity keeps
its label rules; both reduce to TopK where they should."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.selectors import LabelAwareSelector, MMRSelector, TopKSelector
from ucs.selectors.labelaware import cap_order, round_robin_order


@pytest.mark.parametrize("lambda_mult", [0.0, 0.25, 0.5, 0.9])
def test_mmr_picks_what_langchain_core_picks(lambda_mult):
    utils = pytest.importorskip("langchain_core.vectorstores.utils")
    rng = np.random.default_rng(int(lambda_mult * 100))
    pool = rng.normal(size=(300, 24))
    queries = rng.normal(size=(12, 24))
    sel = MMRSelector(lambda_mult=lambda_mult, fetch_k=20).fit(pool)
    ours = sel.select(queries, 6)
    for r, q in enumerate(queries):
        cand, _ = sel._retrieve((q / np.linalg.norm(q))[None, :], 20)  # the same 20 candidates, same order
        theirs = utils.maximal_marginal_relevance(q, pool[cand[0]].tolist(), lambda_mult=lambda_mult, k=6)
        assert ours.indices[r].tolist() == cand[0][theirs].tolist()


def test_mmr_with_lambda_1_is_topk():
    rng = np.random.default_rng(0)
    pool, queries = rng.normal(size=(200, 16)), rng.normal(size=(10, 16))
    a = MMRSelector(lambda_mult=1.0, fetch_k=30).fit(pool).select(queries, 8)
    b = TopKSelector().fit(pool).select(queries, 8)
    np.testing.assert_array_equal(a.indices, b.indices)


def test_cap_and_round_robin_orders():
    labels = np.array([3, 3, 3, 1, 3, 2, 1, 2])
    assert cap_order(labels, 4, 2).tolist() == [0, 1, 3, 5]  # the third 3 (position 2) is skipped
    assert cap_order(np.array([5, 5, 5]), 3, 1).tolist() == [0, 1, 2]  # short: the skipped ones fill up
    assert round_robin_order(labels, 6).tolist() == [0, 3, 5, 1, 6, 7]  # 3, 1, 2 in turn, best first


def test_label_aware_keeps_its_rules_and_needs_labels():
    rng = np.random.default_rng(1)
    pool, queries = rng.normal(size=(120, 12)), rng.normal(size=(6, 12))
    labels = [f"intent_{i % 7}" for i in range(120)]
    s = LabelAwareSelector(max_per_label=2).fit(pool, labels=labels).select(queries, 8)
    for row in s.indices:
        counts = np.bincount([int(labels[i].split("_")[1]) for i in row], minlength=7)
        assert counts.max() <= 2
    loose = LabelAwareSelector(max_per_label=8).fit(pool, labels=labels).select(queries, 8)
    np.testing.assert_array_equal(loose.indices, TopKSelector().fit(pool).select(queries, 8).indices)
    with pytest.raises(ValueError, match="needs the pool's labels"):
        LabelAwareSelector().fit(pool)
    with pytest.raises(ValueError, match="mode must be one of"):
        LabelAwareSelector(mode="zigzag").fit(pool, labels=labels)


def test_set_bsr_greedy_covers_then_starts_a_new_round():
    from ucs.selectors.bsr import set_coverage_greedy

    # three query tokens: candidate 2 is best alone; 0 then raises token 0, 1 token 1, and 3 still token 2
    R = np.array([[0.9, 0.1, 0.1], [0.1, 0.8, 0.1], [0.6, 0.6, 0.1], [0.2, 0.2, 0.2]]) / 3
    order, scores = set_coverage_greedy(R, 4)
    assert order.tolist() == [2, 0, 1, 3]
    np.testing.assert_allclose(scores, np.array([1.3, 1.6, 1.8, 1.9]) / 3)
    same = np.tile(
        [[0.5, 0.5]], (3, 1)
    )  # identical candidates: after the first, none raises coverage → new round
    order, _ = set_coverage_greedy(same, 3)
    assert order.tolist() == [0, 1, 2]


def test_bsr_puts_the_candidate_covering_most_query_tokens_last():
    from ucs.selectors import BSRSelector
    from ucs.testing.doubles import DummyTokenEmbedder

    texts = [
        "my card has not arrived",
        "how do i top up",
        "card payment declined",
        "the card arrived late today",
        "exchange rate question",
    ]
    rng = np.random.default_rng(0)
    pool = rng.normal(size=(len(texts), 8))
    emb = DummyTokenEmbedder()
    bsr = BSRSelector(token_embedder=emb, coverage=False).fit(pool, texts=texts)
    s = bsr.select(rng.normal(size=(1, 8)), 2, query_texts=["card arrived late"])
    assert s.indices[0].tolist()[-1] == 3  # all three query words: the strongest, next to the query
    setb = BSRSelector(token_embedder=emb).fit(pool, texts=texts)
    s2 = setb.select(rng.normal(size=(1, 8)), 2, query_texts=["card arrived late"])
    assert s2.indices[0].tolist()[-1] == 3
    with pytest.raises(ValueError, match="pass query_texts"):
        setb.select(rng.normal(size=(1, 8)), 2)
    with pytest.raises(ValueError, match="needs a token_embedder"):
        BSRSelector().fit(pool, texts=texts)


@pytest.mark.slow
def test_set_bsr_on_real_token_embeddings_covers_the_querys_words(tmp_path):
    pytest.importorskip("sentence_transformers")
    from ucs import SelectorIndex
    from ucs.embedding.sbert import load_retrieval_embedder

    emb = load_retrieval_embedder("all-minilm-l6-v2").load()
    vectors, weights = emb.embed_tokens(["where is my card"])
    assert (
        vectors[0].shape[1] == 384 and weights[0][0] == 0 and weights[0][-1] == 0 and weights[0][1:-1].all()
    )
    examples = [
        {"text": t, "label": y}
        for t, y in [
            ("my card still has not arrived", "card_arrival"),
            ("how long does a card take to arrive", "card_arrival"),
            ("i want to top up by bank transfer", "top_up"),
            ("top up failed", "top_up"),
            ("what is the exchange rate", "exchange_rate"),
            ("my card was declined", "declined"),
            ("can i change my pin", "change_pin"),
            ("the pin is blocked", "pin_blocked"),
        ]
    ]
    index = SelectorIndex(emb, "bsr", output_key="label", cache_dir=tmp_path).fit(examples)
    chosen = index.select("when will my card arrive", k=3)
    assert chosen.examples[-1]["label"] == "card_arrival"  # the best coverage next to the query
    assert {e["label"] for e in chosen.examples} >= {"card_arrival"}


def test_a_relevance_floor_keeps_the_nearest_and_covers_with_the_rest():
    from ucs.selectors import UCSPrior

    rng = np.random.default_rng(3)
    pool, queries = rng.normal(size=(150, 12)), rng.normal(size=(8, 12))
    ids = rng.integers(0, 10, 150)
    prior = UCSPrior(ids, estimator="binomial", lam=5.0)
    topk = TopKSelector().fit(pool, cluster_ids=ids).select(queries, 6)
    plain = TopKSelector(prior=prior).fit(pool, cluster_ids=ids).select(queries, 6)
    full = TopKSelector(prior=prior, floor=6).fit(pool, cluster_ids=ids).select(queries, 6)
    np.testing.assert_array_equal(full.indices, topk.indices)  # a floor of B is TopK
    np.testing.assert_array_equal(
        TopKSelector(prior=prior, floor=0).fit(pool, cluster_ids=ids).select(queries, 6).indices,
        plain.indices,
    )
    two = TopKSelector(prior=prior, floor=2).fit(pool, cluster_ids=ids).select(queries, 6)
    np.testing.assert_array_equal(two.indices[:, :2], topk.indices[:, :2])  # the two nearest, first
    assert not np.array_equal(two.indices, topk.indices)  # the rest chosen with the prior (λ = 5)
