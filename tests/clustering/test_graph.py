"""The spanning-forest cut must equal DBSCAN exactly (same labels, not just ARI)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.cluster import DBSCAN
from sklearn.metrics import adjusted_rand_score

from ucs.clustering import LatentClusterer
from ucs.clustering.graph import LinkageGraph, canonical_labels
from ucs.clustering.neighbors import knn, unit_rows

from ._data import planted, small_params


def _dbscan(U, eps, min_samples=1):
    return DBSCAN(eps=eps, min_samples=min_samples, metric="cosine").fit_predict(U)


@pytest.mark.parametrize("seed", [0, 1])
def test_recut_equals_fresh_dbscan(seed):
    E, _ = planted(n=800, seed=seed)
    c = LatentClusterer(**small_params(dbscan_q=0.01, random_state=seed)).fit(E)
    U = unit_rows(c.codes_)
    for q in (0.01, 0.05, 0.2, 0.5, 0.9, 0.3):
        lab = c.recut(q)
        ref = _dbscan(U, c.eps_for(q))
        assert adjusted_rand_score(lab, ref) == 1.0
        np.testing.assert_array_equal(lab, canonical_labels(ref))
    np.testing.assert_array_equal(c.recut(0.01), c.labels_)


def test_min_samples_above_one_equals_sklearn_dbscan():
    E, _ = planted(n=500, seed=2)
    c = LatentClusterer(**small_params(min_samples=4, dbscan_q=0.2)).fit(E)
    U = unit_rows(c.codes_)
    for q in (0.2, 0.6):
        ref = _dbscan(U, c.eps_for(q), 4)
        assert adjusted_rand_score(c.recut(q), ref if (ref >= 0).all() else _remap(ref)) == 1.0


def _remap(lab):
    from ucs.clustering import remap_noise

    return remap_noise(lab)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(8, 60),
    d=st.integers(2, 6),
    k=st.integers(1, 6),
    n_dup=st.integers(0, 10),
    eps_q=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**16),
)
def test_components_equal_dbscan_property(n, d, k, n_dup, eps_q, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if n_dup:
        X = np.vstack([X, X[rng.integers(0, n, n_dup)]])  # exact duplicates
    U = unit_rows(X)
    k = min(k, U.shape[0] - 1)
    idx, dist, _ = knn(U, k, algorithm="exact")
    g = LinkageGraph(U, idx, dist)
    pair = 0.5 * ((U[:, None, :].astype(np.float64) - U[None, :, :]) ** 2).sum(-1)
    vals = np.unique(pair[np.triu_indices(U.shape[0], 1)])
    eps = float(np.quantile(vals, eps_q)) if vals.size else 0.0
    lab = g.components(eps)
    # reference: components of the full eps-graph computed densely
    from scipy.sparse.csgraph import connected_components

    _, ref = connected_components((pair <= eps).astype(np.int8), directed=False)
    np.testing.assert_array_equal(lab, canonical_labels(ref))


def test_numpy_and_faiss_knn_agree():
    pytest.importorskip("faiss")
    import ucs.clustering.neighbors as nb

    E, _ = planted(n=300, seed=3)
    U = unit_rows(E)
    i1, d1, _ = knn(U, 7, algorithm="exact")
    orig = nb.have_faiss
    nb.have_faiss = lambda: False
    try:
        i2, d2, _ = knn(U, 7, algorithm="exact")
    finally:
        nb.have_faiss = orig
    np.testing.assert_allclose(d1, d2, atol=1e-7)
    assert not np.any(i1 == np.arange(300)[:, None]) and not np.any(i2 == np.arange(300)[:, None])
