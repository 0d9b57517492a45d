from __future__ import annotations

import numpy as np
from sklearn.decomposition import PCA

from ucs.clustering.preprocessing import fit_pca, fit_standardizer

from ._data import planted


def test_fast_pca_spans_the_sklearn_subspace():
    E, _ = planted(n=600, d=200)
    ours = fit_pca(E.astype(np.float64), 10, random_state=0)
    ref = PCA(10, svd_solver="full").fit(E.astype(np.float64))
    s = np.linalg.svd(ours.components_ @ ref.components_.T, compute_uv=False)
    assert s.min() > 0.999
    np.testing.assert_allclose(ours.explained_variance_, ref.explained_variance_, rtol=1e-3)
    Z = ours.transform(E)
    assert Z.shape == (600, 10) and Z.dtype == E.dtype


def test_standardizer_handles_constant_features():
    X = np.c_[np.ones(10), np.arange(10.0)]
    s = fit_standardizer(X)
    Z = s.transform(X)
    assert np.all(np.isfinite(Z)) and np.allclose(Z[:, 0], 0) and np.isclose(Z[:, 1].std(), 1)
