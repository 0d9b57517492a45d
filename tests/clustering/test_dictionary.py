from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.decomposition import sparse_encode

from ucs.clustering.dictionary import learn_dictionary, lasso_codes, omp_codes, ridge_codes

from ._data import planted


def _dict(seed=0, K=12, p=20):
    D = np.random.default_rng(seed).standard_normal((K, p))
    return D / np.linalg.norm(D, axis=1, keepdims=True)


def test_ridge_codes_closed_form():
    rng = np.random.default_rng(0)
    X, D = rng.standard_normal((50, 20)), _dict()
    R = ridge_codes(X, D, 10.0)
    # normal equations of min ||x - r D||^2 + 10 ||r||^2
    np.testing.assert_allclose(R @ (D @ D.T + 10 * np.eye(12)), X @ D.T, atol=1e-9)


def test_omp_matches_sklearn():
    rng = np.random.default_rng(1)
    X, D = rng.standard_normal((40, 20)), _dict(1)
    R = omp_codes(X, D, 4)
    ref = sparse_encode(X, D, algorithm="omp", n_nonzero_coefs=4)
    np.testing.assert_allclose(R, ref, atol=1e-8)


def test_lasso_matches_lars():
    rng = np.random.default_rng(2)
    X, D = rng.standard_normal((30, 20)), _dict(2)
    R = lasso_codes(X, D, 0.5, tol=1e-10, max_iter=5000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sparse_encode(X, D, algorithm="lasso_lars", alpha=0.5)
    np.testing.assert_allclose(R, ref, atol=1e-5)


def test_learn_dictionary_improves_objective_and_is_deterministic():
    E, _ = planted(n=1200, d=32)
    X = (E - E.mean(0)).astype(np.float64)
    a = learn_dictionary(X, 16, batch_size=128, random_state=0)
    b = learn_dictionary(X, 16, batch_size=128, random_state=0)
    np.testing.assert_array_equal(a.components, b.components)
    assert np.all(np.linalg.norm(a.components, axis=1) <= 1 + 1e-9)
    rnd = _dict(3, 16, 32)

    def obj(D):
        R = lasso_codes(X, D, 1.0)
        return 0.5 * ((X - R @ D) ** 2).sum() + np.abs(R).sum()

    assert obj(a.components) < obj(rnd)


@pytest.mark.parametrize("backend", ["fast", "sklearn"])
def test_more_atoms_than_features_is_allowed(backend):
    E, _ = planted(n=200, d=8)
    fit = learn_dictionary(E.astype(np.float64), 12, batch_size=64, random_state=0, backend=backend)
    assert fit.components.shape == (12, 8)
