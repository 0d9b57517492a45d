"""Generic estimator battery (in the spirit of scikit-learn's check_estimator) plus bad input."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import adjusted_rand_score

from ucs.clustering import LatentClusterer
from ucs.clustering.neighbors import ZERO_DISTANCE, eps_from_knn

from ._data import planted, small_params

METHOD_BACKENDS = [(m, b) for m in ("dict_dbscan", "dbscan", "dict_argmax") for b in ("fast", "sklearn")]


def test_init_only_stores_params():
    c = LatentClusterer(**small_params())
    assert c.get_params()["n_atoms"] == 16
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(c))
    assert clone(c).get_params() == c.get_params()


def test_defaults_are_the_paper_reference():
    p = LatentClusterer().get_params()
    assert (p["method"], p["pca_dim"], p["n_atoms"], p["coding"], p["ridge_alpha"]) == (
        "dict_dbscan",
        128,
        64,
        "ridge",
        10.0,
    )
    assert (p["dbscan_k"], p["dbscan_q"], p["min_samples"], p["standardize"]) == (20, 0.01, 1, False)
    assert (p["dict_batch_size"], p["dict_max_iter"], p["omp_n_nonzero"]) == (512, 50, 4)


@pytest.mark.parametrize("method,backend", METHOD_BACKENDS)
def test_fit_contract(method, backend):
    E, _ = planted()
    c = LatentClusterer(method=method, backend=backend, **small_params())
    assert c.fit(E) is c
    lab = c.labels_
    assert lab.shape == (E.shape[0],) and lab.dtype == np.int64
    assert lab.min() == 0 and set(np.unique(lab)) == set(range(c.n_clusters_))
    assert c.n_clusters_ == len(np.unique(lab))
    assert isinstance(c.input_hash_, str) and len(c.input_hash_) == 64
    assert set(c.timings_) >= {"standardize"}
    if method == "dict_argmax":
        assert c.n_clusters_ <= 16 and c.eps_ is None
    else:
        assert c.eps_ > 0 and c.kth_distances_.shape == (E.shape[0],)
    if method == "dbscan":
        assert c.dictionary_ is None and c.pca_ is None
    else:
        assert c.dictionary_.shape == (16, 32) and c.codes_.shape == (E.shape[0], 16)
        assert np.all(np.linalg.norm(c.dictionary_, axis=1) <= 1 + 1e-5)
    np.testing.assert_array_equal(c.fit_predict(E), lab)


@pytest.mark.parametrize("method", ["dict_dbscan", "dbscan", "dict_argmax"])
def test_same_seed_bit_identical(method):
    E, _ = planted(seed=3)
    a = LatentClusterer(method=method, **small_params(random_state=7)).fit(E)
    b = LatentClusterer(method=method, **small_params(random_state=7)).fit(E)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    if a.codes_ is not None:
        np.testing.assert_array_equal(a.codes_, b.codes_)


@pytest.mark.parametrize("coding", ["ridge", "omp"])
@pytest.mark.parametrize("standardize", [False, True])
def test_codings_and_standardize(coding, standardize):
    E, _ = planted(seed=1)
    c = LatentClusterer(coding=coding, standardize=standardize, **small_params()).fit(E)
    if coding == "omp":
        assert np.all((c.codes_ != 0).sum(axis=1) <= 4)
    assert (c.scaler_ is not None) == standardize


def test_float32_and_float64_agree():
    E, _ = planted(seed=2)
    a = LatentClusterer(**small_params()).fit(E.astype(np.float32))
    b = LatentClusterer(**small_params()).fit(E.astype(np.float64))
    assert adjusted_rand_score(a.labels_, b.labels_) > 0.9


def test_fast_and_sklearn_backends_agree_on_clear_clusters():
    E, y = planted(n=600, seed=4, noise=0.05, n_clusters=8)
    fast = LatentClusterer(**small_params(dbscan_q=0.9)).fit(E)
    ref = LatentClusterer(backend="sklearn", **small_params(dbscan_q=0.9)).fit(E)
    assert adjusted_rand_score(fast.labels_, ref.labels_) > 0.95
    assert adjusted_rand_score(fast.labels_, y) > 0.9 and adjusted_rand_score(ref.labels_, y) > 0.9


def test_dbscan_variant_is_permutation_equivariant():
    E, _ = planted(seed=5)
    perm = np.random.default_rng(0).permutation(E.shape[0])
    a = LatentClusterer(method="dbscan", **small_params()).fit(E).labels_
    b = LatentClusterer(method="dbscan", **small_params()).fit(E[perm]).labels_
    assert adjusted_rand_score(a[perm], b) == 1.0


def test_pca_skipped_when_not_smaller():
    E, _ = planted(d=24)
    c = LatentClusterer(**small_params(pca_dim=32)).fit(E)
    assert c.pca_ is None and c.dictionary_.shape == (16, 24)
    c = LatentClusterer(**small_params(pca_dim=None)).fit(E)
    assert c.pca_ is None


def test_min_samples_noise_becomes_singletons():
    E, _ = planted(seed=6)
    c = LatentClusterer(**small_params(min_samples=5, dbscan_q=0.05)).fit(E)
    assert c.n_noise_ > 0
    sizes = np.bincount(c.labels_)
    assert (sizes == 1).sum() >= c.n_noise_


@pytest.mark.parametrize(
    "param,value",
    [
        ("method", "kmedoids"),
        ("coding", "lasso"),
        ("backend", "gpu"),
        ("pca_dim", 0),
        ("n_atoms", 0),
        ("n_atoms", 2.5),
        ("ridge_alpha", 0.0),
        ("ridge_alpha", float("nan")),
        ("dbscan_k", 0),
        ("dbscan_q", 0.0),
        ("dbscan_q", 1.0),
        ("dbscan_q", -0.1),
        ("dbscan_q", True),
        ("min_samples", 0),
        ("standardize", "yes"),
        ("knn_algorithm", "annoy"),
        ("random_state", -1),
    ],
)
def test_bad_params_raise_naming_the_parameter(param, value):
    E, _ = planted(n=60)
    with pytest.raises(ValueError, match=param):
        LatentClusterer(**{**small_params(), param: value}).fit(E)


def test_bad_inputs_raise_clear_errors():
    E, _ = planted(n=60)
    with pytest.raises(ValueError, match="2-D"):
        LatentClusterer(**small_params()).fit(E[:, 0])
    bad = E.copy()
    bad[[3, 7], 0] = np.nan
    bad[9, 1] = np.inf
    with pytest.raises(ValueError, match=r"NaN or inf in 3 row\(s\), e.g. rows \[3, 7, 9\]"):
        LatentClusterer(**small_params()).fit(bad)
    with pytest.raises(ValueError, match="dbscan_k"):
        LatentClusterer(**small_params(dbscan_k=20)).fit(E[:15])
    with pytest.raises(ValueError, match="pca_dim"):
        LatentClusterer(**small_params(pca_dim=50, n_atoms=4)).fit(E[:40])
    with pytest.raises(ValueError, match="n_atoms"):
        LatentClusterer(**small_params(n_atoms=50)).fit(E[:40])
    with pytest.raises(ValueError, match="numeric"):
        LatentClusterer(**small_params()).fit(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="at least 2"):
        LatentClusterer(**small_params()).fit(E[:1])


@pytest.mark.parametrize("method", ["dict_dbscan", "dbscan", "dict_argmax"])
def test_all_identical_embeddings_form_one_cluster(method):
    E = np.ones((50, 20), dtype=np.float32)
    c = LatentClusterer(method=method, **small_params(pca_dim=8, n_atoms=4)).fit(E)
    assert c.n_clusters_ == 1 and np.all(c.labels_ == 0)


def test_exact_duplicates_share_a_cluster():
    E, _ = planted(n=200, seed=8)
    E = np.vstack([E, E[:30]])
    c = LatentClusterer(**small_params()).fit(E)
    np.testing.assert_array_equal(c.labels_[:30], c.labels_[200:])


def test_duplicates_a_few_ulps_apart_share_a_cluster():
    # identical inputs rounded differently (as threaded BLAS does to rows in different blocks) are
    # one cluster: distances at or below ZERO_DISTANCE count as zero for eps and for the cut
    rng = np.random.default_rng(2)
    base = rng.standard_normal((150, 32)).astype(np.float32)
    E = np.tile(base, (4, 1))
    E[150:] = np.nextafter(
        E[150:], np.float32(np.inf) * rng.choice([-1, 1], E[150:].shape).astype(np.float32)
    )
    assert not np.array_equal(E[:150], E[150:300])
    c = LatentClusterer(**small_params(pca_dim=16, n_atoms=8, dbscan_k=3)).fit(E)
    assert c.n_clusters_ == 150 and c.eps_ == ZERO_DISTANCE
    np.testing.assert_array_equal(c.labels_, np.tile(np.arange(150), 4))
    assert eps_from_knn(np.array([0.0, 1e-12, 3e-9]), 0.5) == ZERO_DISTANCE
    assert eps_from_knn(np.array([0.0, 1e-12, 0.2, 0.4]), 0.5) == pytest.approx(0.3)


def test_unfitted_and_variant_errors():
    with pytest.raises(NotFittedError):
        LatentClusterer().recut(0.1)
    E, _ = planted(n=80)
    c = LatentClusterer(method="dict_argmax", **small_params()).fit(E)
    with pytest.raises(ValueError, match="no DBSCAN stage"):
        c.recut(0.1)
    c = LatentClusterer(**small_params()).fit(E)
    with pytest.raises(ValueError, match="q"):
        c.recut(1.5)


def test_report_is_consistent():
    E, y = planted(seed=9)
    c = LatentClusterer(**small_params()).fit(E)
    r = c.report(y=y)
    assert r.n_items == E.shape[0] and r.n_clusters == c.n_clusters_
    assert sum(s * k for s, k in r.size_spectrum.items()) == E.shape[0]


def test_represent_after_fit_representation_equals_fit_codes():
    """The public representation stages: what ucs.distributed ships to workers codes rows as fit does."""
    from ucs.clustering import LatentClusterer
    from ucs.clustering.synthetic import make_planted_embeddings

    E, _ = make_planted_embeddings(300, 32, 6, random_state=1)
    full = LatentClusterer(pca_dim=8, n_atoms=6, dbscan_k=5, random_state=0).fit(E)
    rep = LatentClusterer(pca_dim=8, n_atoms=6, dbscan_k=5, random_state=0).fit_representation(E)
    np.testing.assert_array_equal(rep.dictionary_, full.dictionary_)
    np.testing.assert_array_equal(rep.represent(E), full.codes_)
    assert rep.represent(E[:7]).shape == (7, 6) and rep.codes_ is None
    with pytest.raises(Exception, match="fit_representation"):
        LatentClusterer().represent(E)
