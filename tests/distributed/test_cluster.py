"""cluster_pool equals LatentClusterer on pools small enough to fit both ways (labels exactly, distances to
float32 rounding: threaded BLAS rounds a shard's rows differently from the whole pool's)."""

import numpy as np
import pytest

from sklearn.metrics import adjusted_rand_score

from ucs.clustering import LatentClusterer
from ucs.clustering.synthetic import make_planted_embeddings
from ucs.distributed import LocalExecutor, cluster_pool, embed_pool
from ucs.utils.io import atomic_save_npy

#: a small but complete dict_dbscan configuration (fast enough for CI)
SMALL = dict(pca_dim=24, n_atoms=12, dict_max_iter=4, dbscan_k=10)


@pytest.fixture(scope="module")
def pool():
    E, y = make_planted_embeddings(1200, 64, 30, random_state=5)
    return E, y


@pytest.mark.parametrize(
    "extra",
    [
        dict(),
        dict(dbscan_q=0.3),
        dict(coding="omp"),
        dict(method="dbscan"),
        dict(method="dict_argmax"),
        dict(standardize=True),
    ],
)
def test_labels_equal_the_local_clusterer(pool, extra):
    E, _ = pool
    est = LatentClusterer(random_state=3, **SMALL, **extra)
    local = est.fit(E)
    dist = cluster_pool(E, LatentClusterer(random_state=3, **SMALL, **extra), shard_size=350)
    np.testing.assert_array_equal(dist.labels_, local.labels_)
    assert adjusted_rand_score(local.labels_, dist.labels_) == 1.0
    assert dist.n_clusters_ == local.n_clusters_
    # Coding shard by shard rounds differently from coding the whole pool once the BLAS splits rows
    # across more than a couple of threads, so distances agree to float32 rounding, not bit for bit.
    assert (dist.eps_ is None) == (local.eps_ is None)
    if local.eps_ is not None:
        np.testing.assert_allclose(dist.eps_, local.eps_, rtol=1e-5)
    if local.dictionary_ is not None:
        np.testing.assert_array_equal(dist.dictionary_, local.dictionary_)
    if local.kth_distances_ is not None:
        np.testing.assert_allclose(dist.kth_distances_, local.kth_distances_, rtol=1e-5, atol=1e-9)


def test_shard_files_and_pool_embeddings_are_accepted(pool, tmp_path):
    E, _ = pool
    paths = []
    for i, s in enumerate(range(0, len(E), 500)):
        paths.append(str(atomic_save_npy(tmp_path / f"shard{i}.npy", E[s : s + 500])))
    ref = cluster_pool(E, random_state=1, **SMALL).labels_
    np.testing.assert_array_equal(cluster_pool(paths, random_state=1, **SMALL).labels_, ref)


def test_end_to_end_from_texts(tmp_path):
    import functools

    from ucs.testing.doubles import DummyEmbedder

    texts = [f"item {i % 150}" for i in range(600)]  # repeated texts: clusters of exact duplicates
    pe = embed_pool(functools.partial(DummyEmbedder, dim=32), texts, LocalExecutor(), 200, tmp_path)
    res = cluster_pool(pe, pca_dim=16, n_atoms=8, dict_max_iter=3, dbscan_k=3, random_state=0)
    assert res.n_clusters_ == 150
    assert np.array_equal(res.labels_[:150], np.arange(150))


def test_sampled_fit_is_seeded_and_close_to_the_full_fit(pool):
    E, y = pool
    a = cluster_pool(E, fit_sample_size=600, random_state=2, dbscan_q=0.5, **SMALL)
    b = cluster_pool(E, fit_sample_size=600, random_state=2, dbscan_q=0.5, shard_size=100, **SMALL)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.sample_indices_.size == 600 and np.all(np.diff(a.sample_indices_) > 0)
    # a model fitted on half the pool recovers the planted clusters about as well as the full fit
    full = LatentClusterer(random_state=2, dbscan_q=0.5, **SMALL).fit(E)
    assert adjusted_rand_score(y, a.labels_) > adjusted_rand_score(y, full.labels_) - 0.1
    assert adjusted_rand_score(full.labels_, a.labels_) > 0.8
    assert a.eps_for(0.5) >= a.eps_


def test_bad_parameters(pool):
    E, _ = pool
    with pytest.raises(ValueError, match="min_samples=1"):
        cluster_pool(E, min_samples=3)
    with pytest.raises(ValueError, match="clusterer must be"):
        cluster_pool(E, clusterer="dict_dbscan")
    with pytest.raises(ValueError, match="fit_sample_size"):
        cluster_pool(E, fit_sample_size=0)
    with pytest.raises(ValueError, match="embeddings must be"):
        cluster_pool("E")
    with pytest.raises(ValueError, match="n_atoms"):
        cluster_pool(E, n_atoms=0)
