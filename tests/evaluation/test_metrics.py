from __future__ import annotations

import numpy as np
import pytest

from ucs.evaluation import bootstrap_ci, mean_std


def test_mean_std_is_population_std():
    m, s = mean_std([0.5, 0.6, 0.7])
    assert m == pytest.approx(0.6) and s == pytest.approx(np.std([0.5, 0.6, 0.7]))
    assert s < np.std([0.5, 0.6, 0.7], ddof=1)
    with pytest.raises(ValueError):
        mean_std([])


@pytest.mark.parametrize("seed", [0, 1, 99])
def test_bootstrap_ci_contains_the_mean_and_is_deterministic(seed):
    rng = np.random.default_rng(seed)
    correct = rng.random((3, 400)) < 0.7
    lo, hi = bootstrap_ci(correct, n_boot=500, seed=seed)
    assert lo < correct.mean() < hi and 0 < hi - lo < 0.2
    assert (lo, hi) == bootstrap_ci(correct, n_boot=500, seed=seed)
    # more queries -> narrower interval
    lo2, hi2 = bootstrap_ci(np.tile(correct, 4), n_boot=500, seed=seed)
    assert hi2 - lo2 < hi - lo


def test_bootstrap_degenerate_and_errors():
    assert bootstrap_ci(np.ones(10), n_boot=50) == (1.0, 1.0)
    with pytest.raises(ValueError, match="n_queries"):
        bootstrap_ci(np.ones((2, 0)))
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(np.ones(3), confidence=1.5)


@pytest.mark.parametrize("seed", [0, 7])
def test_paired_ci_is_narrower_than_the_unpaired_view_for_correlated_methods(seed):
    from ucs.evaluation.metrics import paired_bootstrap_ci

    rng = np.random.default_rng(seed)
    a = rng.random((3, 300)) < 0.7
    b = a.copy()
    flip = rng.random(300) < 0.05  # b loses 5 % of the queries a answers, in every run
    b[:, flip] = False
    lo, hi = paired_bootstrap_ci(a, b, n_boot=1000, seed=seed)
    d = a.mean() - b.mean()
    assert lo <= d <= hi and lo > 0  # a consistent per-query advantage is detected ...
    alo, ahi = bootstrap_ci(a, n_boot=1000, seed=seed)
    blo, bhi = bootstrap_ci(b, n_boot=1000, seed=seed)
    assert alo < bhi  # ... although the two single-method intervals overlap
    assert paired_bootstrap_ci(a, a, n_boot=100) == (0.0, 0.0)
    assert (lo, hi) == paired_bootstrap_ci(a, b, n_boot=1000, seed=seed)
    with pytest.raises(ValueError, match="same queries"):
        paired_bootstrap_ci(a, b[:, :10])


def test_paired_delta_aligns_queries_by_index():
    from ucs.evaluation.summary import paired_delta, summarize

    recs = []
    for q in range(40):
        for seed in (42, 43):
            recs.append({"method": "base", "seed": seed, "query": q, "correct": q % 2 == 0})
            if q < 30:  # the UCS form answered fewer queries so far
                recs.append({"method": "ucs", "seed": seed, "query": q, "correct": q % 2 == 0 or q % 3 == 0})
    summ = summarize(recs)["methods"]
    d = paired_delta(summ["ucs"], summ["base"])
    assert d["n_queries"] == 30
    assert d["delta"] == pytest.approx(5 / 30)  # odd multiples of 3 below 30: 3, 9, 15, 21, 27
    assert d["ci"][0] > 0
    assert paired_delta(summ["ucs"], {"mean": 0.5}) is None  # summaries without per-query data
