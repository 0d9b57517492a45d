"""The selector battery of ucs.testing on every selector and variant, one test per (case, check) pair."""

from __future__ import annotations

import pytest

from ucs.selectors import (
    BSRSelector,
    DPPSelector,
    LabelAwareSelector,
    MDLSelector,
    MMRSelector,
    RandomSelector,
    TopKSelector,
    UCSPrior,
    VoteKSelector,
)
from ucs.testing.selectors import CHECKS, check_selector, selector_check_pairs

try:
    from ucs.testing import doubles as dummies
except ImportError:  # the model layer's test doubles are not installed
    dummies = None


def _prior(cids, **kw):
    return UCSPrior(cids, **kw)


CASES = {
    "random": lambda c: RandomSelector(random_state=3),
    "random_per_query": lambda c: RandomSelector(random_state=3, per_query=True),
    "topk": lambda c: TopKSelector(),
    "topk_ucs": lambda c: TopKSelector(prior=_prior(c, estimator="binomial", lam=0.5), candidate_num=20),
    "topk_ucs_floor": lambda c: TopKSelector(
        prior=_prior(c, estimator="binomial", lam=0.5), candidate_num=20, floor=2
    ),
    "dpp": lambda c: DPPSelector(candidate_num=20),
    "dpp_ucs_paper": lambda c: DPPSelector(candidate_num=20, prior=_prior(c)),
    "dpp_ucs_paper_int": lambda c: DPPSelector(candidate_num=20, prior=_prior(c, integer=True, lam=0.01)),
    "dpp_ucs_binomial": lambda c: DPPSelector(
        candidate_num=20, prior=_prior(c, estimator="binomial", lam=1.0)
    ),
    "dpp_ucs_chao1": lambda c: DPPSelector(candidate_num=20, prior=_prior(c, estimator="chao1", lam=1.0)),
    "dpp_ucs_seen_only": lambda c: DPPSelector(
        candidate_num=20, prior=_prior(c, design="seen_only", lam=1.0)
    ),
    "dpp_ucs_unseen_only": lambda c: DPPSelector(candidate_num=20, prior=_prior(c, design="unseen_only")),
    "dpp_ucs_ratio": lambda c: DPPSelector(candidate_num=20, prior=_prior(c, design="ratio", lam=1.0)),
    "votek": lambda c: VoteKSelector(random_state=5),
    "mmr": lambda c: MMRSelector(fetch_k=15),
    "bsr": lambda c: BSRSelector(token_embedder=dummies.DummyTokenEmbedder(), coverage=False),
    "set_bsr": lambda c: BSRSelector(token_embedder=dummies.DummyTokenEmbedder()),
    "set_bsr_candidates": lambda c: BSRSelector(
        token_embedder=dummies.DummyTokenEmbedder(), candidate_num=12
    ),
    "mmr_lambda_1": lambda c: MMRSelector(lambda_mult=1.0),
    "labelaware_cap": lambda c: LabelAwareSelector(max_per_label=1, candidate_num=20),
    "labelaware_round_robin": lambda c: LabelAwareSelector(mode="round_robin", candidate_num=20),
    "votek_ucs": lambda c: VoteKSelector(prior=_prior(c, lam=1.0)),
    "votek_b1": lambda c: VoteKSelector(prior=_prior(c, lam=1.0, corpus_prior="inverse_size")),
    "votek_b2": lambda c: VoteKSelector(prior=_prior(c, lam=1.0, corpus_prior="spectrum_rarity")),
    "mdl": lambda c: MDLSelector(scorer=dummies.DummyLM(seed=1), candidate_num=12, select_time=3),
    "mdl_ucs": lambda c: MDLSelector(
        scorer=dummies.DummyLM(seed=1),
        candidate_num=12,
        select_time=3,
        prior=_prior(c, estimator="binomial", lam=0.5),
    ),
    "mdl_ucs_seen_only": lambda c: MDLSelector(
        scorer=dummies.DummyLM(seed=1),
        candidate_num=12,
        select_time=3,
        prior=_prior(c, design="seen_only", lam=0.5),
    ),
    "mdl_ucs_unseen_only": lambda c: MDLSelector(
        scorer=dummies.DummyLM(seed=1),
        candidate_num=12,
        select_time=3,
        prior=_prior(c, design="unseen_only", lam=0.01),
    ),
    "mdl_ucs_ratio": lambda c: MDLSelector(
        scorer=dummies.DummyLM(seed=1),
        candidate_num=12,
        select_time=3,
        prior=_prior(c, design="ratio", lam=0.5),
    ),
}


#: Every (selector case, check) pair of the battery: a new check in ``CHECKS`` becomes a test of every case.
PAIRS = selector_check_pairs(CASES)


def _run(case, pool_data, checks):
    pool, queries, cids, labels, texts, query_texts = pool_data
    if case.startswith("mdl") and dummies is None:
        pytest.skip("ucs.testing.doubles.DummyLM is not available")
    sel = CASES[case](cids)
    if case.startswith("mdl"):
        queries, query_texts = queries[:3], query_texts[:3]
    return check_selector(
        sel,
        pool=pool,
        queries=queries,
        cluster_ids=cids,
        labels=labels,
        texts=texts,
        query_texts=query_texts,
        budget=5,
        checks=checks,
    )


@pytest.mark.parametrize("case,check", PAIRS, ids=[f"{case}-{check}" for case, check in PAIRS])
def test_battery(case, check, pool_data):
    assert _run(case, pool_data, [check]) == [check]


def test_the_battery_runs_every_check_by_default(pool_data):
    assert _run("dpp_ucs_paper", pool_data, None) == list(CHECKS)
