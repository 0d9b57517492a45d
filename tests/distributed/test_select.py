"""select_queries gives the single-call selection for every batch size: the same demonstrations, and scores
equal to float rounding (a threaded BLAS may round a query's similarity row differently in a smaller
product)."""

import functools

import numpy as np
import pytest

from ucs.distributed import LocalExecutor, select_queries
from ucs.distributed.select import concat_selections, is_batch_invariant
from ucs.selectors import (
    DPPSelector,
    RandomSelector,
    TopKSelector,
    UCSPrior,
    VoteKSelector,
)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((12, 24))
    lab = rng.integers(0, 12, 400)
    pool = centres[lab] + 0.5 * rng.standard_normal((400, 24))
    queries = centres[rng.integers(0, 12, 37)] + 0.5 * rng.standard_normal((37, 24))
    return pool, lab, queries


def make_selectors(cluster_ids):
    prior = UCSPrior(cluster_ids, estimator="binomial", lam=0.5)
    return [
        TopKSelector(),
        TopKSelector(prior=UCSPrior(cluster_ids, lam=0.1)),
        DPPSelector(candidate_num=20),
        DPPSelector(candidate_num=20, prior=prior),
        VoteKSelector(k=3, prior=prior),
        RandomSelector(random_state=4),
    ]


def _assert_same(a, b):
    assert a.method == b.method and a.n_queries == b.n_queries and a.query_dependent == b.query_dependent
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-9, atol=1e-12)
    for name in ("clusters_covered", "phi"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None)
        if x is not None:
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("batch_size", [2, 3, 9, 36, 100])
def test_batched_selection_equals_one_call(data, batch_size):
    pool, lab, queries = data
    for sel in make_selectors(lab):
        sel.fit(pool, cluster_ids=lab)
        ref = sel.select(queries, 6)
        got = select_queries(sel, queries, LocalExecutor(), batch_size, budget=6)
        _assert_same(got, ref)


def _fitted_topk(pool, lab):
    return TopKSelector(prior=UCSPrior(lab, lam=0.2)).fit(pool, cluster_ids=lab)


def test_batches_never_have_one_query():
    from ucs.distributed.select import _batch_ranges

    np.testing.assert_array_equal(_batch_ranges(7, 3), [[0, 3], [3, 7]])
    np.testing.assert_array_equal(_batch_ranges(6, 3), [[0, 3], [3, 6]])
    np.testing.assert_array_equal(_batch_ranges(1, 3), [[0, 1]])


def test_factory_is_built_per_worker(data):
    pool, lab, queries = data
    fac = functools.partial(_fitted_topk, pool, lab)
    _assert_same(select_queries(fac, queries, batch_size=10, budget=4), fac().select(queries, 4))


def test_query_independent_without_queries(data):
    pool, lab, queries = data
    sel = VoteKSelector(k=3).fit(pool)
    texts = [f"q{i}" for i in range(5)]
    _assert_same(
        select_queries(sel, None, budget=4, query_texts=texts), sel.select(None, 4, query_texts=texts)
    )


def test_batch_dependent_selectors_warn(data):
    pool, lab, queries = data
    sel = RandomSelector(per_query=True).fit(pool)
    assert not is_batch_invariant(sel) and is_batch_invariant(TopKSelector())
    with pytest.warns(UserWarning, match="batch_size"):
        select_queries(sel, queries, batch_size=10, budget=3)


def test_bad_input(data):
    pool, lab, queries = data
    sel = TopKSelector().fit(pool)
    with pytest.raises(ValueError, match="2-D"):
        select_queries(sel, queries[0])
    with pytest.raises(ValueError, match="query_texts"):
        select_queries(sel, queries, query_texts=["a"])
    for bad in (0, 1):
        with pytest.raises(ValueError, match="batch_size"):
            select_queries(sel, queries, batch_size=bad)
    with pytest.raises(ValueError, match="fitted selector"):
        select_queries(3, queries)
    with pytest.raises(ValueError, match="no selections"):
        concat_selections([])
