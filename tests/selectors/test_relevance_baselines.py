"""MMR equals langchain-core's maximal_marginal_relevance on identical inputs; label-aware similarity keeps its
label rules; both reduce to TopK where they should."""

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
