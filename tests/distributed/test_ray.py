"""The distributed stages on a real local Ray cluster give exactly the local results."""

import functools
import importlib.util
import operator

import numpy as np
import pytest

from ucs.distributed import LocalExecutor, embed_pool, sharded_eps_components
from ucs.testing.doubles import DummyEmbedder

pytest.importorskip("ray")
# bounded time where pytest-timeout (extra ``dev``) is installed
pytestmark = [pytest.mark.timeout(600)] if importlib.util.find_spec("pytest_timeout") else []


# tasks use importable callables only: workers cannot import this test module


def test_primitives(ray_executor):
    ex = ray_executor
    assert ex.num_workers == 2
    assert ex.get(ex.submit(operator.add, 1, 2)) == 3
    a, b = ex.submit(divmod, np.arange(5), 2, num_returns=2)
    np.testing.assert_array_equal(ex.get(b), np.arange(5) % 2)
    big = ex.put(np.ones(1000))
    assert ex.map(operator.add, [1.0, 2.0], big)[1].sum() == 3000.0
    assert ex.map_actors(functools.partial(functools.partial, operator.add, 100), [1, 2, 3]) == [
        101,
        102,
        103,
    ]
    records = [{"i": 0, "t": ["a", "bb"]}, {"i": 1, "t": ["ccc"]}, {"i": 2, "t": ["d"]}]
    assert ex.map_records(functools.partial(functools.partial, dict), records) == records


def test_embed_pool_on_ray_equals_local(ray_executor, tmp_path):
    texts = [f"ray pool text {i}" for i in range(700)]
    fac = functools.partial(DummyEmbedder, dim=8, seed=3)
    on_ray = embed_pool(fac, texts, ray_executor, shard_size=150, out_dir=tmp_path / "ray")
    local = embed_pool(fac, texts, LocalExecutor(), shard_size=150, out_dir=tmp_path / "local")
    assert on_ray.keys == local.keys and on_ray.n_embedded == 5
    np.testing.assert_array_equal(on_ray.load(), local.load())
    np.testing.assert_array_equal(on_ray.load(), DummyEmbedder(dim=8, seed=3).embed(texts))
    again = embed_pool(fac, texts, ray_executor, shard_size=150, out_dir=tmp_path / "ray")
    assert (again.n_embedded, again.n_skipped) == (0, 5)


@pytest.mark.parametrize("knn", ["exact", "hnsw"])
def test_eps_components_on_ray_equal_local(ray_executor, knn):
    if knn != "exact":
        pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((25, 16))[rng.integers(0, 25, 1200)] + 0.3 * rng.standard_normal((1200, 16))
    U = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    parts = [U[s : s + 300] for s in range(0, 1200, 300)]
    lengths = [len(p) for p in parts]
    # the same index partitions on both executors, so that approximate search sees the same indices
    local = sharded_eps_components(
        LocalExecutor(), parts, lengths, dbscan_k=20, dbscan_q=0.2, knn=knn, index_shards=2
    )
    handles = [ray_executor.put(p) for p in parts]
    dist = sharded_eps_components(
        ray_executor, handles, lengths, dbscan_k=20, dbscan_q=0.2, knn=knn, index_shards=2
    )
    assert dist.eps == local.eps
    np.testing.assert_array_equal(dist.kth_distances, local.kth_distances)
    np.testing.assert_array_equal(dist.labels, local.labels)


def test_cluster_pool_on_ray_equals_latent_clusterer(ray_executor, tmp_path):
    from ucs.clustering import LatentClusterer
    from ucs.clustering.synthetic import make_planted_embeddings
    from ucs.distributed import cluster_pool

    small = dict(pca_dim=24, n_atoms=12, dict_max_iter=4, dbscan_k=10, dbscan_q=0.2, random_state=7)
    E, _ = make_planted_embeddings(1000, 64, 25, random_state=2)
    local = LatentClusterer(**small).fit(E)
    on_ray = cluster_pool(E, small, ray_executor, shard_size=260)
    np.testing.assert_array_equal(on_ray.labels_, local.labels_)
    np.testing.assert_allclose(on_ray.eps_, local.eps_, rtol=1e-5)  # float32 rounding of shard-wise coding
    assert on_ray.graph_.n_cross_edges > 0


def test_select_queries_on_ray_equals_one_call(ray_executor):
    from ucs.distributed import select_queries
    from ucs.selectors import DPPSelector, UCSPrior, VoteKSelector

    rng = np.random.default_rng(5)
    pool = rng.standard_normal((300, 16))
    lab = rng.integers(0, 20, 300)
    queries = rng.standard_normal((45, 16))
    for sel in (
        DPPSelector(candidate_num=15, prior=UCSPrior(lab, estimator="binomial", lam=0.5)),
        VoteKSelector(prior=UCSPrior(lab, lam=0.5)),
    ):
        sel.fit(pool, cluster_ids=lab)
        ref = sel.select(queries, 5)
        got = select_queries(sel, queries, ray_executor, batch_size=10, budget=5)
        np.testing.assert_array_equal(got.indices, ref.indices)
        np.testing.assert_allclose(got.scores, ref.scores, rtol=1e-9, atol=1e-12)  # BLAS rounding per batch
        assert got.n_queries == ref.n_queries


def test_pipeline_on_ray_equals_the_local_pipeline(ray_executor, tmp_path):
    """A whole pipeline run (sharded embedding, clustering, selection on Ray; evaluation on the driver)
    writes the same records as the in-process pipeline."""
    import json

    from ucs.pipeline import Pipeline, PipelineConfig
    from ucs.testing import DummyBackbone

    # one run and one method per selection path (worker batches, driver-side shared row), so that actor
    # start-up stays a small part of the test on a 2-core machine
    cfg = PipelineConfig.resolve(
        "paper",
        overrides={
            "dataset": "sample",
            "backbone": "dummy",
            "mode": "likelihood",
            "test_size": 6,
            "n_runs": 1,
            "budget": 4,
            "retrieval_embedder": "backbone",
            "mdl_scorer": "backbone",
            "clusterer": {"pca_dim": 16, "n_atoms": 8, "dbscan_k": 5, "dbscan_q": 0.1, "coding": "ridge"},
            "selector": {
                "method": ("dpp+ucs", "votek+ucs"),
                "params": {b: {"candidate_num": 20} for b in ("topk", "labelaware", "dpp", "mdl")},
            },
        },
    )
    runs = {}
    for name, ex in (("local", None), ("ray", ray_executor)):
        pipe = Pipeline(
            cfg,
            backbone=DummyBackbone(),
            cache_dir=tmp_path / name / "cache",
            progress=False,
            executor=ex,
            shard_size=50,
        )
        res = pipe.run(tmp_path / name / "out")
        lines = (tmp_path / name / "out" / "records.jsonl").read_text().splitlines()
        runs[name] = (res, [json.loads(x) for x in lines])
        assert pipe.distributed == (ex is not None)
    (a, ra), (b, rb) = runs["local"], runs["ray"]
    key = ("method", "seed", "query", "selected", "prompt_sha256", "parsed")
    assert [[r[k] for k in key] for r in ra] == [[r[k] for k in key] for r in rb]
    assert a.coverage == b.coverage


def test_kmeans_pool_on_ray_equals_latent_clusterer(ray_executor, monkeypatch):
    """The default clustering through Ray: centres on the driver, assignment on workers, the local labels."""
    from ucs.clustering import LatentClusterer, partition
    from ucs.clustering.synthetic import make_planted_embeddings
    from ucs.distributed import kmeans_pool

    monkeypatch.setattr(partition, "KMEANS_FIT_MAX", 600)  # a sampled fit, as for pools over 100,000 rows
    E, _ = make_planted_embeddings(2000, 32, 30, random_state=8)
    local = LatentClusterer(method="kmeans", random_state=5).fit(E)
    on_ray = kmeans_pool(E, {"method": "kmeans", "random_state": 5}, ray_executor, shard_size=450)
    np.testing.assert_array_equal(on_ray.labels_, local.labels_)
    np.testing.assert_array_equal(on_ray.params["cluster_centers"], local.cluster_centers_)


def test_pipeline_clusters_with_the_default_kmeans_on_ray(ray_executor, tmp_path):
    from ucs.distributed import PoolClustering
    from ucs.pipeline import Pipeline, PipelineConfig
    from ucs.testing import DummyBackbone

    cfg = PipelineConfig.resolve(
        "paper",
        overrides={
            "dataset": "sample",
            "backbone": "dummy",
            "mode": "likelihood",
            "clusterer.method": "kmeans",
            "n_runs": 1,
            "retrieval_embedder": "backbone",
            "mdl_scorer": "backbone",
            "test_size": None,
            "clusterer.coding": "ridge",
        },
    )
    ids = {}
    for name, ex in (("local", None), ("ray", ray_executor)):
        pipe = Pipeline(
            cfg,
            backbone=DummyBackbone(),
            cache_dir=tmp_path / name,
            progress=False,
            executor=ex,
            shard_size=40,
        )
        ids[name] = pipe.cluster_ids(42)
        assert isinstance(pipe.clusterer(42), PoolClustering) == (ex is not None)  # the sharded path ran
    np.testing.assert_array_equal(ids["ray"], ids["local"])
