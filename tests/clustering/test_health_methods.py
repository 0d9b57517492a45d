"""Cluster health (SPEC §8) and the discretisations that cannot chain: k-means, HDBSCAN, auto."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_mutual_info_score, adjusted_rand_score

from ucs.clustering import LatentClusterer, cluster_health, load_clusterer
from ucs.clustering.auto import auto_candidates, choose_partition
from ucs.clustering.partition import default_n_clusters, spherical_kmeans

from ._data import planted, small_params

NEW_METHODS = ("dict_kmeans", "kmeans", "dict_hdbscan", "auto")


# ---------------------------------------------------------------- health
def test_health_of_known_partitions():
    one = cluster_health(np.zeros(10, dtype=int))
    assert (one.n_clusters, one.largest_fraction, one.singleton_fraction) == (1, 1.0, 0.0)
    assert one.effective_clusters == pytest.approx(1.0) and one.has_giant and one.warning()
    singles = cluster_health(np.arange(8))
    assert singles.effective_clusters == pytest.approx(8.0) and singles.singleton_fraction == 1.0
    assert not singles.has_giant and singles.warning() is None
    h = cluster_health(np.array([0, 0, 0, 1, 1, 2]))
    p = np.array([3, 2, 1]) / 6
    assert h.effective_clusters == pytest.approx(np.exp(-(p * np.log(p)).sum()))
    assert (h.largest_size, h.n_singletons) == (3, 1)


def test_health_against_labels_matches_sklearn():
    rng = np.random.default_rng(0)
    lab = rng.integers(0, 7, 300)
    y = np.array(["a", "b", "c"])[rng.integers(0, 3, 300)]
    h = cluster_health(lab, y)
    codes = np.unique(y, return_inverse=True)[1]
    assert h.ami == pytest.approx(adjusted_mutual_info_score(codes, lab))
    maj = sum(np.bincount(codes[lab == c]).max() for c in np.unique(lab))
    assert h.purity == pytest.approx(maj / 300)
    perfect = cluster_health(codes, y)
    assert perfect.ami == pytest.approx(1.0) and perfect.purity == 1.0
    assert "AMI 1.000" in perfect.line()


@pytest.mark.parametrize("bad", [np.array([]), np.array([[0, 1]]), np.array([0, -1]), np.array([0.5, 1.0])])
def test_health_rejects_bad_labels(bad):
    with pytest.raises(ValueError, match="labels"):
        cluster_health(bad)


def test_health_rejects_wrong_length_gold_labels():
    with pytest.raises(ValueError, match="y must have one gold label per item"):
        cluster_health(np.zeros(4, dtype=int), ["a"] * 3)


# ---------------------------------------------------------------- methods
def test_default_n_clusters_is_ceil_sqrt():
    assert [default_n_clusters(n) for n in (2, 150, 10003, 15000, 10**6)] == [2, 13, 101, 123, 1000]
    with pytest.raises(ValueError):
        default_n_clusters(1)


@pytest.mark.parametrize("method", NEW_METHODS)
def test_new_methods_fit_contract_and_determinism(method):
    E, y = planted(n=400, seed=1)
    a = LatentClusterer(method=method, **small_params(random_state=5)).fit(E)
    b = LatentClusterer(method=method, **small_params(random_state=5)).fit(E)
    lab = a.labels_
    assert lab.shape == (400,) and lab.dtype == np.int64 and lab.min() == 0
    assert set(np.unique(lab)) == set(range(a.n_clusters_))
    np.testing.assert_array_equal(lab, b.labels_)
    assert a.chosen_method_ in ("dict_dbscan", "dict_kmeans", "dict_hdbscan", "kmeans")
    if method != "auto":
        assert a.chosen_method_ == method and a.auto_choice_ is None
    if a.chosen_method_ in ("dict_kmeans", "kmeans"):
        assert a.n_clusters_ <= (2 if method == "auto" else 1) * default_n_clusters(400) and a.eps_ is None
        assert a.cluster_centers_.shape[0] == a.n_clusters_
        np.testing.assert_allclose(np.linalg.norm(a.cluster_centers_, axis=1), 1.0, rtol=1e-5)
    # planted clusters are recovered far better than chance by every method
    assert adjusted_mutual_info_score(y, lab) > 0.5


def test_kmeans_does_not_chain_where_single_linkage_does():
    """Two dense blobs joined by a thin chain of points: single linkage (the paper's min_samples = 1
    DBSCAN) merges them into one giant, k-means cannot."""
    rng = np.random.default_rng(0)
    theta = np.concatenate(
        [rng.normal(0, 0.02, 150), rng.normal(np.pi / 2, 0.02, 150), np.linspace(0, np.pi / 2, 60)]
    )
    E = np.column_stack([np.cos(theta), np.sin(theta), rng.normal(0, 1e-3, theta.size)])
    paper = LatentClusterer(method="dbscan", dbscan_k=5, dbscan_q=0.9).fit(E)
    km = LatentClusterer(method="kmeans", n_clusters=4, random_state=0).fit(E)
    assert cluster_health(paper.labels_).largest_fraction > 0.9
    assert cluster_health(km.labels_).largest_fraction < 0.5


def test_kmeans_on_a_sample_assigns_every_row_to_its_nearest_centre():
    E, _ = planted(n=600, seed=2)
    U = E / np.linalg.norm(E, axis=1, keepdims=True)
    lab, centers = spherical_kmeans(U, 10, random_state=0, fit_max=200)
    sims = U.astype(np.float32) @ centers.T
    np.testing.assert_array_equal(lab, np.argmax(sims, axis=1))


def test_recut_is_refused_without_an_eps_stage():
    E, _ = planted(n=200)
    c = LatentClusterer(method="dict_kmeans", **small_params()).fit(E)
    with pytest.raises(ValueError, match="dict_kmeans.*no DBSCAN stage"):
        c.recut(0.1)


@pytest.mark.parametrize(
    "param,value,match",
    [
        ("n_clusters", 0, "n_clusters"),
        ("n_clusters", 1000, "n_clusters=1000 exceeds"),
        ("hdbscan_min_cluster_size", 1, "hdbscan_min_cluster_size"),
        ("method", "kmedoids", "method"),
    ],
)
def test_bad_new_params_name_themselves(param, value, match):
    E, _ = planted(n=200)
    kw = {"method": "dict_kmeans", **small_params(), param: value}
    with pytest.raises(ValueError, match=match):
        LatentClusterer(**kw).fit(E)


@pytest.mark.parametrize("method", NEW_METHODS)
def test_new_methods_persist(tmp_path, method):
    E, _ = planted(n=300, seed=4)
    c = LatentClusterer(method=method, **small_params()).fit(E)
    c.save(tmp_path / "c")
    d = load_clusterer(tmp_path / "c", E=E)
    np.testing.assert_array_equal(d.labels_, c.labels_)
    assert d.chosen_method_ == c.chosen_method_
    if c.cluster_centers_ is not None:
        np.testing.assert_array_equal(d.cluster_centers_, c.cluster_centers_)
    if method == "auto":
        assert d.auto_choice_.chosen == c.auto_choice_.chosen


# ---------------------------------------------------------------- auto
def test_auto_rule_drops_inadmissible_and_prefers_separation():
    E, _ = planted(n=500, seed=0, n_clusters=8)
    c = LatentClusterer(method="auto", **small_params()).fit(E)
    rows = c.auto_choice_.candidates
    assert len(rows) == len(auto_candidates(500))
    chosen = next(r for r in rows if all(r.get(k) == v for k, v in c.auto_choice_.chosen.items()))
    admissible = [r for r in rows if r["admissible"]]
    if admissible:
        assert chosen["admissible"] and chosen["silhouette"] == max(r["silhouette"] for r in admissible)
    for r in rows:
        assert r["admissible"] == (r["largest_fraction"] <= 0.05 and r["singleton_fraction"] <= 0.5)


def test_auto_falls_back_to_the_smallest_giant():
    U = np.eye(3)[np.arange(30) % 3].astype(np.float32)
    parts = [np.zeros(30, dtype=np.int64), np.arange(30) % 3]
    choice, lab = choose_partition(U, [{"method": "a"}, {"method": "b"}], lambda p: parts[p["method"] == "b"])
    assert choice.chosen == {
        "method": "b"
    }  # neither admissible (largest 1.0 and 0.33): the smaller giant wins
    np.testing.assert_array_equal(lab, parts[1])


def test_auto_never_reads_labels():
    E, y = planted(n=300, seed=6)
    a = LatentClusterer(method="auto", **small_params()).fit(E)
    b = LatentClusterer(method="auto", **small_params()).fit(E, y=np.zeros(300))
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert adjusted_rand_score(a.labels_, b.labels_) == 1.0
