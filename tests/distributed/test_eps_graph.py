import numpy as np
import pytest
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from sklearn.metrics import adjusted_rand_score

from ucs.distributed import LocalExecutor, sharded_eps_components
from ucs.clustering.graph import canonical_labels
from ucs.clustering.neighbors import eps_from_knn
from ucs.distributed.eps_graph import pair_cosine_distances


def unit_blobs(n, d=16, n_centres=30, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    C = rng.standard_normal((n_centres, d))
    X = C[rng.integers(0, n_centres, n)] + noise * rng.standard_normal((n, d))
    X[5] = X[7]  # exact duplicates must stay together and not break the k-th distance
    X[100:110] = X[100]
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


def brute_force(U, k, q):
    """All-pairs eps-graph components: the definition, O(n²)."""
    n = len(U)
    r, c = np.triu_indices(n, 1)
    d = pair_cosine_distances(U[r], U[c])
    D = np.zeros((n, n))
    D[r, c] = d
    D[c, r] = d
    np.fill_diagonal(D, np.inf)
    kth = np.sort(D, axis=1)[:, k - 1]
    eps = eps_from_knn(kth, q)
    _, lab = connected_components(sparse.csr_matrix(D <= eps), directed=False)
    return canonical_labels(lab), eps, kth


def shards_of(U, size):
    parts = [U[s : s + size] for s in range(0, len(U), size)]
    return parts, [len(p) for p in parts]


@pytest.mark.parametrize("q", [0.01, 0.2, 0.6])
@pytest.mark.parametrize("shard_size, index_shards", [(1500, None), (400, None), (333, 2), (333, 5)])
def test_sharded_components_equal_the_definition(q, shard_size, index_shards):
    U = unit_blobs(1500, seed=int(q * 100) + shard_size)
    ref, eps, kth = brute_force(U, 20, q)
    parts, lengths = shards_of(U, shard_size)
    res = sharded_eps_components(
        LocalExecutor(), parts, lengths, dbscan_k=20, dbscan_q=q, index_shards=index_shards
    )
    assert res.eps == eps
    np.testing.assert_array_equal(res.kth_distances, kth)
    np.testing.assert_array_equal(res.labels, ref)
    assert res.exact and not res.truncated
    if q >= 0.2:
        assert res.n_dense > 0  # the completion step was exercised
    if len(parts) > 1:
        assert res.n_cross_edges > 0


def test_matches_sklearn_dbscan():
    from sklearn.cluster import DBSCAN

    U = unit_blobs(800, seed=4)
    parts, lengths = shards_of(U, 250)
    res = sharded_eps_components(LocalExecutor(), parts, lengths, dbscan_k=10, dbscan_q=0.1)
    sk = DBSCAN(eps=res.eps, min_samples=1, metric="cosine").fit_predict(U)
    assert adjusted_rand_score(sk, res.labels) == 1.0


@pytest.mark.parametrize("knn", ["hnsw", "ivf"])
def test_approximate_search_agrees_on_clustered_data(knn):
    pytest.importorskip("faiss")
    U = unit_blobs(2000, seed=1)
    ref, eps, _ = brute_force(U, 20, 0.05)
    parts, lengths = shards_of(U, 700)
    res = sharded_eps_components(
        LocalExecutor(),
        parts,
        lengths,
        dbscan_k=20,
        dbscan_q=0.05,
        knn=knn,
        index_shards=2,
        knn_params={"random_state": 0},
    )
    assert not res.exact
    assert adjusted_rand_score(ref, res.labels) > 0.99
    assert res.eps == pytest.approx(eps, rel=0.05)


def test_explicit_eps_and_zero_eps():
    U = unit_blobs(300, seed=2)
    parts, lengths = shards_of(U, 100)
    res = sharded_eps_components(LocalExecutor(), parts, lengths, dbscan_k=5, eps=0.0)
    # only exact duplicates join at eps = 0
    assert res.labels[5] == res.labels[7]
    assert len(set(res.labels[100:110])) == 1
    assert res.n_clusters == 300 - 1 - 9


def test_completion_limit_warns():
    U = unit_blobs(400, seed=3)
    parts, lengths = shards_of(U, 100)
    with pytest.warns(RuntimeWarning, match="completion_limit"):
        res = sharded_eps_components(
            LocalExecutor(), parts, lengths, dbscan_k=5, dbscan_q=0.9, graph_k=5, completion_limit=10
        )
    assert res.truncated


def test_bad_parameters():
    U = unit_blobs(200)[:50]
    with pytest.raises(ValueError, match="knn must be"):
        sharded_eps_components(LocalExecutor(), [U], [50], knn="annoy")
    with pytest.raises(ValueError, match="dbscan_k=60"):
        sharded_eps_components(LocalExecutor(), [U], [50], dbscan_k=60)
