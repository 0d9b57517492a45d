"""Input rules shared by every path: texts to embed are non-empty strings, λ is finite and bounded, an empty
cluster spectrum is refused at fit — each a ValueError that names what is wrong."""

from __future__ import annotations

import numpy as np
import pytest

from ucs import SelectorIndex, UCSPrior, UnseenCoverage
from ucs.testing.doubles import DummyEmbedder

EXAMPLES = [{"text": f"example {i}", "label": "ab"[i % 2]} for i in range(12)]


def test_an_empty_cluster_spectrum_is_refused_at_fit():
    with pytest.raises(ValueError, match="cluster_ids is empty"):
        UnseenCoverage().fit([])
    with pytest.raises(ValueError, match="cluster_ids is empty"):
        UCSPrior([]).validate()


@pytest.mark.parametrize("lam", [1e308, float("inf"), float("nan"), -1.0])
def test_lambda_must_be_finite_and_bounded(lam):
    with pytest.raises(ValueError, match="lam must be"):
        UCSPrior(np.arange(5), lam=lam).validate()


def test_the_largest_lambda_still_gives_finite_scores():
    from ucs.selectors.prior import LAM_MAX

    index = SelectorIndex(
        DummyEmbedder(dim=8), "topk+ucs", output_key="label", prior={"lam": LAM_MAX}, clusterer=None
    ).fit(EXAMPLES)
    chosen = index.select("example 3", k=3)
    assert len(chosen.indices) == 3 and np.isfinite(chosen.scores).all() and np.isfinite(chosen.phi)


@pytest.mark.parametrize(
    "bad,what", [(None, "NoneType"), ("", "empty"), ("   \n", "only whitespace"), (3, "int")]
)
def test_texts_to_embed_must_be_non_empty_strings_on_fit_and_add(bad, what):
    with pytest.raises(ValueError, match=f"example 2, field 'text' is.*{what}"):
        SelectorIndex(DummyEmbedder(dim=8), "topk", output_key="label").fit(
            EXAMPLES[:2] + [{"text": bad, "label": "a"}] + EXAMPLES[2:]
        )
    index = SelectorIndex(DummyEmbedder(dim=8), "topk", output_key="label").fit(EXAMPLES)
    with pytest.raises(ValueError, match=f"example 0, field 'text' is.*{what}"):
        index.add_examples([{"text": bad, "label": "a"}])
    assert index.n_examples_ == len(EXAMPLES)  # nothing was added


@pytest.mark.parametrize("method", ["topk", "dpp", "topk+ucs", "dpp+ucs"])
def test_an_evaluation_never_offers_a_query_its_own_text(method):
    from ucs.selectors.factory import make_selector

    rng = np.random.default_rng(0)
    pool = rng.normal(size=(40, 8))
    texts = [f"pool text {i}" for i in range(40)]
    texts[7] = texts[19] = "where is my card"  # the query's own text, twice in the pool
    ids = np.arange(40) % 6
    prior = UCSPrior(ids) if method.endswith("+ucs") else None
    sel = make_selector(method, prior=prior, random_state=0).fit(pool, texts=texts, cluster_ids=ids)
    queries = np.stack([pool[7], pool[3]])
    plain = sel.select(queries, 5, query_texts=["where is my card", "another query"])
    assert 7 in plain.indices[0]  # without the rule its own copy is the nearest
    fair = sel.select(queries, 5, query_texts=["where is my card", "another query"], exclude_query_texts=True)
    assert not {7, 19} & set(fair.indices[0].tolist())
    np.testing.assert_array_equal(fair.indices[1], plain.indices[1])  # a query without a copy is unchanged
    assert "_exclude" not in vars(sel)


@pytest.mark.parametrize("method", ["topk", "dpp", "mmr", "labelaware"])
def test_order_puts_the_most_similar_demonstration_first_or_last(method):
    from ucs.selectors.factory import make_selector

    rng = np.random.default_rng(2)
    pool, queries = rng.normal(size=(80, 10)), rng.normal(size=(5, 10))
    labels = [str(i % 6) for i in range(80)]
    sel = make_selector(method, random_state=0).fit(pool, labels=labels)
    base = sel.select(queries, 6)
    qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    for order in ("similar_first", "similar_last"):
        s = sel.select(queries, 6, order=order)
        assert [sorted(r) for r in s.indices.tolist()] == [
            sorted(r) for r in base.indices.tolist()
        ]  # same sets
        sims = np.einsum("qbd,qd->qb", sel.pool_[s.indices], qn)
        steps = np.diff(sims, axis=1)
        assert (steps <= 1e-12).all() if order == "similar_first" else (steps >= -1e-12).all()
    with pytest.raises(ValueError, match="order must be one of"):
        sel.select(queries, 6, order="random")


@pytest.mark.parametrize("method", ["topk", "dpp", "mmr", "labelaware"])
def test_vote_last_groups_by_label_with_the_most_frequent_label_next_to_the_query(method):
    from ucs.selectors.factory import make_selector

    rng = np.random.default_rng(3)
    pool, queries = rng.normal(size=(90, 10)), rng.normal(size=(6, 10))
    labels = [f"intent_{i % 4}" for i in range(90)]
    sel = make_selector(method, random_state=0).fit(pool, labels=labels)
    base = sel.select(queries, 7)
    s = sel.select(queries, 7, order="vote_last")
    assert [sorted(r) for r in s.indices.tolist()] == [sorted(r) for r in base.indices.tolist()]  # same sets
    qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    for row in s.indices:
        labs = [labels[i] for i in row]
        runs = [labs[0]] + [b for a, b in zip(labs, labs[1:]) if a != b]
        assert len(runs) == len(set(runs))  # each label's demonstrations stand together
        counts = [labs.count(lab) for lab in runs]
        assert counts == sorted(counts)  # the most frequent label last
    for q, row in enumerate(s.indices):
        sims = sel.pool_[row] @ qn[q]
        labs = np.array([labels[i] for i in row])
        for lab in set(labs.tolist()):
            assert (np.diff(sims[labs == lab]) >= -1e-12).all()
    np.testing.assert_array_equal(
        s.indices, sel.select(queries, 7, order="vote_last").indices
    )  # deterministic


def test_vote_last_needs_labels_and_breaks_count_ties_by_similarity():
    from ucs.selectors.base import vote_last_order
    from ucs.selectors.factory import make_selector

    # two labels with two demonstrations each: the pair with the larger summed similarity goes last
    perm = vote_last_order(["a", "b", "a", "b", "c"], np.array([0.9, 0.8, 0.1, 0.7, 0.95]))
    assert perm.tolist() == [
        4,
        2,
        0,
        3,
        1,
    ]  # c (one), then a (0.1 + 0.9 = 1.0), then b (1.5); most similar last
    sel = make_selector("topk").fit(np.eye(4))
    with pytest.raises(ValueError, match="labels="):
        sel.select(np.eye(4)[:1], 2, order="vote_last")
