"""MDL and MDL+UCS with the package's deterministic fake LM."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import entropy
from selector_data import make_pool

from ucs.selectors import MDLSelector, TopKSelector, UCSPrior, negative_entropy
from ucs.selectors.mdl import format_prompt

dummies = pytest.importorskip("ucs.testing.doubles", reason="DummyLM (model layer) not available")


def test_negative_entropy_matches_scipy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 6))
    p = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(negative_entropy(x), -entropy(p, axis=1), rtol=1e-12)
    assert negative_entropy(np.zeros(5)) == pytest.approx(-np.log(5))


def _setup(seed=0, q=3):
    pool, queries, cids, labels, texts, qtexts = make_pool(seed=seed, q=q)
    return pool, queries, cids, labels, texts, qtexts


def test_mdl_picks_the_best_recomputed_subset():
    pool, queries, cids, labels, texts, qtexts = _setup()
    lm = dummies.DummyLM(seed=3)
    sel = MDLSelector(scorer=lm, candidate_num=15, select_time=4).fit(pool, labels=labels, texts=texts)
    s = sel.select(queries, 4, query_texts=qtexts)
    subsets, _ = sel.candidate_subsets(l2(queries), 4)
    label_set = list(dict.fromkeys(labels))
    for q in range(len(queries)):
        scores = []
        for t in range(4):
            prefix = "".join(f"{texts[i]} {labels[i]}\n" for i in subsets[q, t])
            ll = lm.score_continuations(prefix, [f"{qtexts[q]} {y}" for y in label_set], reduction="mean")
            scores.append(negative_entropy(ll))
        np.testing.assert_allclose(s.extras["mdl"][q], scores, rtol=0, atol=0)
        assert s.indices[q].tolist() == subsets[q, int(np.argmax(scores))].tolist()


def l2(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_first_subset_is_topk_and_random_subsets_are_candidates():
    pool, queries, cids, labels, texts, qtexts = _setup(1)
    sel = MDLSelector(scorer=dummies.DummyLM(), candidate_num=10, select_time=5).fit(
        pool, labels=labels, texts=texts
    )
    subsets, _ = sel.candidate_subsets(l2(queries), 4)
    top = TopKSelector().fit(pool).select(queries, 10).indices
    assert np.array_equal(subsets[:, 0], top[:, :4])
    for q in range(len(queries)):
        for t in range(1, 5):
            assert set(subsets[q, t]) <= set(top[q]) and len(set(subsets[q, t])) == 4


def test_mdl_ucs_large_lambda_picks_max_phi_subset():
    pool, queries, cids, labels, texts, qtexts = _setup(2)
    prior = UCSPrior(cids, design="seen_only", lam=1e6)
    s = (
        MDLSelector(scorer=dummies.DummyLM(), candidate_num=20, select_time=5, prior=prior)
        .fit(pool, labels=labels, texts=texts)
        .select(queries, 5, query_texts=qtexts)
    )
    phi = s.extras["subset_phi"]
    assert np.array_equal(s.phi, phi.max(axis=1))
    chosen = s.extras["chosen_subset"].astype(int)
    mdl = np.where(phi == phi.max(axis=1, keepdims=True), s.extras["mdl"], -np.inf)
    assert np.array_equal(chosen, np.argmax(mdl, axis=1))  # ties in Φ are broken by MDL


def test_label_set_and_templates():
    pool, queries, cids, labels, texts, qtexts = _setup()
    lm = dummies.DummyLM()
    sel = MDLSelector(
        scorer=lm,
        label_set=["a", "b"],
        demo_template="Text: {text}\nLabel: {label}",
        query_template="Text: {text}\nLabel: {label}",
        separator="\n\n",
    ).fit(pool, labels=labels, texts=texts)
    assert sel.label_set_ == ["a", "b"]
    assert format_prompt(["x"], ["y"], "Text: {text}\nLabel: {label}", "\n\n") == "Text: x\nLabel: y\n\n"
    before = lm.n_score_calls_
    sel.select(queries, 2, query_texts=qtexts)
    assert lm.n_score_calls_ - before == len(queries) * 5


def test_mdl_needs_texts_labels_scorer_and_query_texts():
    pool, queries, cids, labels, texts, qtexts = _setup()
    with pytest.raises(ValueError, match="scorer"):
        MDLSelector().fit(pool, labels=labels, texts=texts)
    with pytest.raises(ValueError, match="labels= and texts="):
        MDLSelector(scorer=dummies.DummyLM()).fit(pool)
    sel = MDLSelector(scorer=dummies.DummyLM()).fit(pool, labels=labels, texts=texts)
    with pytest.raises(ValueError, match="query_texts"):
        sel.select(queries, 3)
    with pytest.raises(ValueError, match="select_time"):
        MDLSelector(scorer=dummies.DummyLM(), select_time=0).fit(pool, labels=labels, texts=texts)
    with pytest.raises(ValueError, match="label_set"):
        MDLSelector(scorer=dummies.DummyLM(), label_set=[]).fit(pool, labels=labels, texts=texts)


def test_zero_shot_makes_no_lm_calls():
    pool, queries, cids, labels, texts, qtexts = _setup()
    lm = dummies.DummyLM()
    s = MDLSelector(scorer=lm).fit(pool, labels=labels, texts=texts).select(queries, 0, query_texts=qtexts)
    assert s.indices.shape == (len(queries), 0) and lm.n_score_calls_ == 0


def test_mdl_reports_queries_answered_from_a_score_cache_as_reused():
    """Scoring the same queries again through a CachedScorer runs no model call; progress counts them
    reused."""
    from ucs.lm.cache import CachedScorer
    from ucs.utils import progress as P

    pool, queries, cids, labels, texts, qtexts = _setup(q=4)
    scorer = CachedScorer(dummies.DummyLM(seed=3))
    sel = MDLSelector(scorer=scorer, candidate_num=15, select_time=3).fit(pool, labels=labels, texts=texts)
    with P.progress_enabled(False), P.stage("MDL scoring", 8, kind="mdl") as st:
        first = sel.select(queries, 4, query_texts=qtexts)
        assert (st.done, st.reused) == (4, 0)
        again = sel.select(queries, 4, query_texts=qtexts)
        assert (st.done, st.reused) == (8, 4)
    np.testing.assert_array_equal(first.indices, again.indices)


class _RecordingLM(dummies.DummyLM):
    """DummyLM that remembers every prefix it scores."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.prefixes = []

    def score_continuations_detailed(self, prefix, continuations):
        self.prefixes.append(prefix)
        return super().score_continuations_detailed(prefix, continuations)


def _long_texts(texts):
    return [t + " " + " ".join(f"w{j}" for j in range(30)) for t in texts]  # about 35 tokens each


@pytest.mark.parametrize("context", [150, 4096])
def test_mdl_scores_the_leading_demonstrations_that_fit_the_context(context):
    """A subset too long for the scorer's context loses trailing demonstrations (as the prompt will), never
    its leading ones; a subset that fits is scored whole."""
    pool, queries, cids, labels, texts, qtexts = _setup(q=3)
    texts = _long_texts(texts)
    lm = _RecordingLM(seed=3, context_length=context)
    sel = MDLSelector(scorer=lm, candidate_num=15, select_time=4).fit(pool, labels=labels, texts=texts)
    s = sel.select(queries, 6, query_texts=qtexts)
    subsets, _ = sel.candidate_subsets(l2(queries), 6)
    kept = s.extras["n_scored_demos"].astype(int)
    label_set = list(dict.fromkeys(labels))
    it = iter(lm.prefixes)
    for q in range(len(queries)):
        limit = context - max(lm.count_tokens(f"{qtexts[q]} {y}") for y in label_set) - 1
        for t in range(4):
            members = subsets[q, t]
            k = kept[q, t]
            assert next(it) == format_prompt(
                [texts[i] for i in members[:k]], [labels[i] for i in members[:k]]
            )
            assert (
                lm.count_tokens(
                    format_prompt([texts[i] for i in members[:k]], [labels[i] for i in members[:k]])
                )
                <= limit
            )
            if k < 6:  # maximal: one more demonstration would not fit
                more = members[: k + 1]
                assert (
                    lm.count_tokens(format_prompt([texts[i] for i in more], [labels[i] for i in more]))
                    > limit
                )
    assert (kept < 6).any() if context == 150 else (kept == 6).all()


def test_mdl_without_fit_context_sends_whole_prefixes():
    pool, queries, cids, labels, texts, qtexts = _setup(q=2)
    texts = _long_texts(texts)
    lm = _RecordingLM(seed=3, context_length=150)
    sel = MDLSelector(scorer=lm, candidate_num=15, select_time=3, fit_context=False)
    s = sel.fit(pool, labels=labels, texts=texts).select(queries, 6, query_texts=qtexts)
    subsets, _ = sel.candidate_subsets(l2(queries), 6)
    whole = [format_prompt([texts[i] for i in m], [labels[i] for i in m]) for m in subsets.reshape(-1, 6)]
    assert lm.prefixes == whole and (s.extras["n_scored_demos"] == 6).all()
