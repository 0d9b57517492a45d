"""kmeans_pool (the executor path of the default clustering) equals LatentClusterer(method="kmeans"), on pools
below the fitting-sample size (centres fitted on every row) and above it (a seeded sample, then assignment
shard by shard)."""

import numpy as np
import pytest

from ucs.clustering import LatentClusterer, partition
from ucs.clustering.synthetic import make_planted_embeddings
from ucs.distributed import LocalExecutor, kmeans_pool


@pytest.fixture(scope="module")
def pool():
    E, y = make_planted_embeddings(2400, 48, 40, random_state=4)
    return E, y


@pytest.fixture
def small_fit_sample(monkeypatch):
    """Make 2,400 rows 'a large pool': centres are fitted on a sample of 700 rows, both paths."""
    monkeypatch.setattr(partition, "KMEANS_FIT_MAX", 700)


def _check_equal(dist, local):
    np.testing.assert_array_equal(dist.labels_, local.labels_)
    assert dist.n_clusters_ == local.n_clusters_
    np.testing.assert_array_equal(dist.params["cluster_centers"], local.cluster_centers_)


@pytest.mark.parametrize("n_clusters", [None, 17])
def test_whole_pool_fit_equals_the_local_clusterer(pool, n_clusters):
    E, _ = pool
    local = LatentClusterer(method="kmeans", n_clusters=n_clusters, random_state=3).fit(E)
    dist = kmeans_pool(E, {"method": "kmeans", "n_clusters": n_clusters, "random_state": 3}, shard_size=500)
    _check_equal(dist, local)
    assert local.n_clusters_ == (49 if n_clusters is None else 17)  # ⌈√2400⌉


def test_sampled_fit_equals_the_local_clusterer(pool, small_fit_sample):
    E, _ = pool
    local = LatentClusterer(method="kmeans", random_state=11).fit(E)
    dist = kmeans_pool(E, LatentClusterer(method="kmeans", random_state=11), LocalExecutor(), shard_size=333)
    _check_equal(dist, local)
    assert dist.sample_indices_.size == 700 and set(dist.timings_) == {"sample", "kmeans_fit", "assign"}


def test_shard_files_are_accepted(pool, small_fit_sample, tmp_path):
    from ucs.utils.io import atomic_save_npy

    E, _ = pool
    paths = []
    for i, (a, b) in enumerate([(0, 900), (900, 1700), (1700, 2400)]):
        paths.append(str(atomic_save_npy(tmp_path / f"s{i}.npy", E[a:b].astype(np.float32))))
    local = LatentClusterer(method="kmeans", random_state=2).fit(E.astype(np.float32))
    _check_equal(kmeans_pool(paths, {"method": "kmeans", "random_state": 2}), local)


@pytest.mark.parametrize(
    "params,match",
    [
        ({"method": "dict_hdbscan"}, "need the whole pool in one process"),
        ({"method": "dict_dbscan"}, "run through cluster_pool"),
        ({"method": "kmeans", "standardize": True}, "standardize=False"),
        ({"method": "kmeans", "n_clusters": 5000}, "n_clusters=5000"),
    ],
)
def test_what_it_cannot_do_is_refused_with_the_fix(pool, params, match):
    E, _ = pool
    with pytest.raises(ValueError, match=match):
        kmeans_pool(E, params)
