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
