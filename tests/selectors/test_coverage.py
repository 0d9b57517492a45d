"""Batched coverage equals the estimators' own Φ and incremental gains, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from ucs.estimators import UnseenCoverage
from ucs.selectors._coverage import BatchedCoverage

ESTIMATORS = ["paper", "poisson", "binomial", "efron_thisted", "good_toulmin", "chao1"]
DESIGNS = ["full", "seen_only", "unseen_only", "ratio"]


def _ids(seed, n=300):
    rng = np.random.default_rng(seed)
    return rng.zipf(1.6, size=n) % 40  # skewed sizes, many repeats in small subsets


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("design", DESIGNS)
def test_phi_subsets_equals_recomputation(estimator, design):
    ids = _ids(0)
    cov = UnseenCoverage(estimator=estimator, design=design).fit(ids)
    bc = BatchedCoverage(cov, ids)
    rng = np.random.default_rng(1)
    empty = bc.phi_subsets(np.zeros((3, 0), dtype=np.int64))
    assert np.array_equal(empty, np.full(3, cov.new_state().phi))  # Φ(∅), as the greedy state starts
    for n in (1, 3, 10):
        subsets = np.stack([rng.choice(ids.size, n, replace=False) for _ in range(40)])
        got = bc.phi_subsets(subsets)
        want = np.array([cov.phi(s) for s in subsets])
        assert np.array_equal(got, want), (n, got[:3], want[:3])


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("design", DESIGNS)
def test_batched_greedy_gains_equal_coverage_state(estimator, design):
    ids = _ids(2)
    cov = UnseenCoverage(
        estimator=estimator, design=design, **({"integer": True} if estimator == "paper" else {})
    ).fit(ids)
    rng = np.random.default_rng(3)
    q, c, steps = 6, 25, 8
    cand = np.stack([rng.choice(ids.size, c, replace=False) for _ in range(q)])
    state = BatchedCoverage(cov, ids).greedy(cand, steps)
    refs = [cov.new_state() for _ in range(q)]
    for _ in range(steps):
        g = state.gains()
        for r in range(q):
            assert np.array_equal(g[r], refs[r].gains(cand[r]))
        pos = rng.integers(0, c, size=q)
        state.add(pos)
        for r in range(q):
            refs[r].add(cand[r, pos[r]])
        assert np.array_equal(state.phi, np.array([s.phi for s in refs]))


def test_spectra_of_rows():
    ids = np.array([5, 5, 5, 7, 7, 9])
    cov = UnseenCoverage().fit(ids)
    F = BatchedCoverage(cov, ids).spectra(np.array([[0, 1, 2, 3, 5], [0, 3, 5, 4, 1]]))
    assert F.tolist() == [[0, 2, 0, 1, 0, 0, 0], [0, 1, 2, 0, 0, 0, 0]]


@pytest.mark.parametrize("estimator", ["paper", "binomial", "chao1"])
def test_phi_after_add_with_and_without_gains(estimator):
    ids = _ids(4)
    cov = UnseenCoverage(estimator=estimator).fit(ids)
    rng = np.random.default_rng(5)
    cand = np.stack([rng.choice(ids.size, 20, replace=False) for _ in range(4)])
    state = BatchedCoverage(cov, ids).greedy(cand, 9)
    refs = [cov.new_state() for _ in range(4)]
    for step in range(9):
        if step % 3 == 1:
            state.gains()  # some steps read Φ from the gain table, others recompute it
        pos = rng.integers(0, 20, size=4)
        state.add(pos)
        for r in range(4):
            refs[r].add(cand[r, pos[r]])
        assert np.array_equal(state.phi, np.array([s.phi for s in refs]))
