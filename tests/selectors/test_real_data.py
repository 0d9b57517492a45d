"""Selectors on real CLINC150 texts with a real retrieval embedder (and a real scoring LM for MDL
when the backbone layer is installed). Marked slow: loads model weights."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.selectors import DPPSelector, MDLSelector, TopKSelector, UCSPrior, VoteKSelector
from ucs.testing.selectors import check_selector

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clinc(shared_data):
    from ucs.data import load_clinc150

    ds = load_clinc150(shared_data)
    labels = ds.pool.labels
    # 8 utterances per intent (1,200 items) and 40 test queries, both drawn with a fixed seed
    rng = np.random.default_rng(42)
    pool_idx = np.concatenate([rng.permutation(np.nonzero(labels == k)[0])[:8] for k in range(ds.n_labels)])
    test_idx = rng.choice(len(ds.test), 40, replace=False)
    pool = ds.pool.subset(np.sort(pool_idx))
    test = ds.test.subset(test_idx)
    try:
        from ucs.embedding.sbert import load_retrieval_embedder

        emb = load_retrieval_embedder("all-minilm-l6-v2")
        p = np.asarray(emb.embed(list(pool.texts)), dtype=np.float64)
        q = np.asarray(emb.embed(list(test.texts)), dtype=np.float64)
    except Exception as exc:  # pragma: no cover - depends on the installed weights
        pytest.skip(f"retrieval embedder unavailable: {exc}")
    return ds, pool, test, p, q


def test_topk_retrieves_same_intent_on_real_embeddings(clinc):
    ds, pool, test, p, q = clinc
    s = TopKSelector().fit(p).select(q, 5)
    same = (pool.labels[s.indices] == test.labels[:, None]).mean()
    assert same > 0.5  # MiniLM's neighbours mostly share the intent; random would give 1/150


def test_ucs_variants_on_real_embeddings(clinc):
    ds, pool, test, p, q = clinc
    cids = pool.labels  # gold intents as clusters: a real, skewed-free partition
    base = DPPSelector().fit(p, cluster_ids=cids).select(q, 10)
    wide = DPPSelector(prior=UCSPrior(cids, design="seen_only", lam=10.0)).fit(p).select(q, 10)
    assert wide.clusters_covered.mean() > base.clusters_covered.mean()
    sub = slice(0, 240)  # the battery also tries budgets up to the pool size: keep that pool small
    for sel in (
        DPPSelector(prior=UCSPrior(cids[sub], estimator="binomial", lam=0.5)),
        VoteKSelector(prior=UCSPrior(cids[sub], lam=1.0)),
    ):
        check_selector(
            sel,
            pool=p[sub],
            queries=q[:10],
            cluster_ids=cids[sub],
            budget=10,
            checks=["output_valid", "deterministic", "lambda_zero", "relabel_invariance"],
        )


def test_mdl_with_a_real_scoring_lm(clinc):
    registry = pytest.importorskip("ucs.models.registry", reason="the backbone layer is not installed")
    ds, pool, test, p, q = clinc
    try:
        lm = registry.load_backbone("smollm2")
    except Exception as exc:  # pragma: no cover - depends on the installed weights/engine
        pytest.skip(f"smollm2 backbone unavailable: {exc}")
    names = list(ds.label_names)
    texts = list(pool.texts)
    labels = [names[k] for k in pool.labels]
    label_set = sorted({labels[i] for i in range(0, 80, 8)})  # 10 intents keep the test fast
    sel = MDLSelector(
        scorer=lm,
        label_set=label_set,
        candidate_num=8,
        select_time=2,
        prior=UCSPrior(pool.labels, estimator="binomial", lam=0.0),
    )
    s = sel.fit(p, labels=labels, texts=texts).select(q[:2], 3, query_texts=list(test.texts[:2]))
    mdl = s.extras["mdl"]
    assert mdl.shape == (2, 2) and np.all(np.isfinite(mdl)) and np.all(mdl <= 0)
    assert np.all(mdl >= -np.log(len(label_set)) - 1e-9)  # negative entropy is at least -log K
    subsets, _ = sel.candidate_subsets(_norm(q[:2]), 3)
    assert np.array_equal(s.indices, subsets[np.arange(2), np.argmax(mdl, axis=1)])


def _norm(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_mdl_fits_long_prefixes_to_a_real_lms_context(clinc):
    """With the real SmolLM2 at a 96-token context, every scored prefix is the leading demonstrations that fit
    (by the model's own tokenizer), the most that do, and the model never has to cut a prefix itself."""
    registry = pytest.importorskip("ucs.models.registry", reason="the backbone layer is not installed")
    ds, pool, test, p, q = clinc
    try:
        lm = registry.load_backbone("smollm2", context_length=96)
        lm.count_tokens("probe")
    except Exception as exc:  # pragma: no cover - depends on the installed weights/engine
        pytest.skip(f"smollm2 backbone unavailable: {exc}")
    seen = []

    class Recording:
        context_length = lm.context_length
        count_tokens = staticmethod(lm.count_tokens)

        def score_continuations(self, prefix, continuations, reduction="sum"):
            seen.append((prefix, list(continuations)))
            return lm.score_continuations(prefix, continuations, reduction=reduction)

    names = list(ds.label_names)
    texts, labels = list(pool.texts), [names[k] for k in pool.labels]
    label_set = sorted({labels[i] for i in range(0, 40, 8)})
    sel = MDLSelector(scorer=Recording(), label_set=label_set, candidate_num=12, select_time=3)
    s = sel.fit(p, labels=labels, texts=texts).select(q[:2], 10, query_texts=list(test.texts[:2]))
    kept = s.extras["n_scored_demos"]
    assert (kept < 10).all() and (kept >= 1).all()  # ten CLINC150 demonstrations do not fit 96 tokens
    for prefix, conts in seen:
        room = 96 - max(lm.count_tokens(c) for c in conts) - 1
        assert lm.count_tokens(prefix) <= room
    subsets, _ = sel.candidate_subsets(_norm(q[:2]), 10)
    for (prefix, conts), members, k in zip(seen, subsets.reshape(-1, 10), kept.reshape(-1).astype(int)):
        more = "".join(f"{texts[i]} {labels[i]}\n" for i in members[: k + 1])
        assert (
            prefix == more[: len(prefix)]
            and lm.count_tokens(more) > 96 - max(lm.count_tokens(c) for c in conts) - 1
        )
