"""Orchestration tests of the pipeline with the weight-free DummyBackbone on the shipped sample dataset.

The clusterer and the selectors are the real ones; only the model is a double."""

import json

import numpy as np
import pytest

pytest.importorskip("ucs.clustering")
pytest.importorskip("ucs.selectors")

from ucs.clustering import LatentClusterer  # noqa: E402
from ucs.pipeline import Pipeline, PipelineConfig  # noqa: E402
from ucs.testing import DummyBackbone  # noqa: E402

#: On the paper preset: its clustering and estimator in the backbone's space, with ridge codes, the backbone
#: as retrieval embedder and MDL scorer (the dummy backbone needs no model), and small sizes.
SMALL = {
    "dataset": "sample",
    "backbone": "dummy",
    "mode": "likelihood",
    "test_size": 6,
    "n_runs": 2,
    "budget": 4,
    "retrieval_embedder": "backbone",
    "mdl_scorer": "backbone",
    "clusterer": {"pca_dim": 16, "n_atoms": 8, "dbscan_k": 5, "dbscan_q": 0.1, "coding": "ridge"},
    "selector": {"params": {b: {"candidate_num": 20} for b in ("topk", "labelaware", "dpp", "mdl")}},
}


def config(settings=None):
    """SMALL on the paper preset, then ``settings`` (paths such as ``clusterer.method``)."""
    return PipelineConfig.resolve("paper", overrides={**SMALL, **(settings or {})})


def make(tmp_path, settings=None):
    return Pipeline(config(settings), cache_dir=tmp_path / "cache", out_dir=tmp_path / "out", progress=False)


def test_full_run_records_every_method_run_and_query(tmp_path):
    methods = ("random", "topk", "topk+ucs", "dpp", "dpp+ucs", "votek", "votek+ucs", "mdl", "mdl+ucs")
    pipe = make(tmp_path, {"selector.method": methods})
    res = pipe.run()
    recs = [json.loads(x) for x in (tmp_path / "out" / "records.jsonl").read_text().splitlines()]
    assert len(recs) == len(methods) * 2 * 6
    assert {(r["method"], r["seed"]) for r in recs} == {(m, s) for m in methods for s in (42, 43)}
    assert all(r["n_demos"] == 4 for r in recs)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["key"]["config"]["pipeline"] == pipe.config.key_dict()
    assert PipelineConfig.from_json(tmp_path / "out" / "pipeline" / "config.json") == pipe.config
    cov = json.loads((tmp_path / "out" / "coverage.json").read_text())["coverage"]
    assert set(cov) == set(methods) and all(set(v) == {"42", "43"} for v in cov.values())
    for m in methods:
        assert 1 <= cov[m]["42"]["unique_clusters"] <= 4
        assert res.accuracy(m) is not None
    assert "| dpp+ucs |" in res.to_markdown()


def test_run_reports_how_many_demonstrations_carry_the_query_label(tmp_path):
    pipe = make(tmp_path, {"selector.method": ("topk", "votek")})
    res = pipe.run()
    recs = [json.loads(x) for x in (tmp_path / "out" / "records.jsonl").read_text().splitlines()]
    labels = np.asarray(pipe.dataset.pool.labels)
    for m in ("topk", "votek"):  # recomputed by hand from the records: the share over runs and queries
        mine = [np.mean(labels[r["selected"]] == r["gold_id"]) for r in recs if r["method"] == m]
        assert res.label_agreement[m]["mean"] == pytest.approx(np.mean(mine))
        assert res.label_agreement[m]["n_queries"] == 6
    saved = json.loads((tmp_path / "out" / "coverage.json").read_text())["label_agreement"]
    assert saved["topk"]["mean"] == pytest.approx(res.label_agreement["topk"]["mean"])
    assert "demonstrations with the query's label" in (tmp_path / "out" / "coverage.md").read_text()
    assert "| votek |" in res.to_markdown().split("demonstrations with the query's label")[1]


def test_resume_recomputes_nothing(tmp_path):
    pipe = make(tmp_path, {"selector.method": ("dpp", "dpp+ucs", "votek+ucs")})
    first = pipe.run(limit=3)
    assert first.evaluation.n_new_records == 3 * 2 * 3
    backbone = DummyBackbone()
    again = Pipeline(
        pipe.config, backbone=backbone, cache_dir=tmp_path / "cache", out_dir=tmp_path / "out", progress=False
    )
    full = again.run()
    assert full.evaluation.n_new_records == 3 * 2 * 3  # only the queries the limited run left out
    assert "clustering_fit" not in again.timings  # clusters came from the cache
    third = Pipeline(
        pipe.config,
        backbone=DummyBackbone(),
        cache_dir=tmp_path / "cache",
        out_dir=tmp_path / "out",
        progress=False,
    ).run()
    assert third.evaluation.n_new_records == 0
    assert third.coverage == full.coverage


def test_embeddings_and_clusters_are_cached_on_disk(tmp_path):
    a = make(tmp_path)
    ids = a.cluster_ids(42)
    b = Pipeline(a.config, backbone=DummyBackbone(), cache_dir=tmp_path / "cache", progress=False)
    np.testing.assert_array_equal(b.cluster_ids(42), ids)
    assert b.backbone.n_texts_embedded_ == 0  # pool embeddings read from the cache
    assert "clustering_fit" not in b.timings
    assert b.embedding_cache.hits == 1


def test_clusters_are_refit_per_seed_and_recut_for_another_q(tmp_path):
    pipe = make(tmp_path, {"dbscan_q_by_selector": {"dpp": 0.3}})
    E = pipe.pool_embeddings()
    for seed in (42, 43):
        ref = LatentClusterer(**pipe.clusterer_params(seed)).fit(E)
        np.testing.assert_array_equal(pipe.cluster_ids(seed), ref.labels_)
    fitted = pipe.timings["clustering_fit"]
    recut = pipe.cluster_ids(42, pipe.config.dbscan_q_for("dpp+ucs"))
    assert pipe.timings["clustering_fit"] == fitted  # no refit for another q
    direct = LatentClusterer(**{**pipe.clusterer_params(42), "dbscan_q": 0.3}).fit(E).labels_
    np.testing.assert_array_equal(recut, direct)
    assert len(np.unique(recut)) <= len(np.unique(pipe.cluster_ids(42)))


@pytest.mark.parametrize("base", ["dpp", "votek", "topk", "mdl"])
def test_lambda_zero_reproduces_the_base_selector(tmp_path, base):
    pipe = make(tmp_path, {"prior.lam": 0.0})
    q = list(pipe.dataset.test.texts[:5])
    np.testing.assert_array_equal(pipe.select(f"{base}+ucs", 42, q), pipe.select(base, 42, q))


def test_same_seed_same_selection_other_seed_other_random(tmp_path):
    q = list(
        PipelineConfig(test_size=None)
        .protocol()
        .apply(__import__("ucs.data", fromlist=["x"]).load_dataset("sample"))
        .test.texts[:5]
    )
    a = make(tmp_path)
    b = make(tmp_path / "b")
    for m in ("random", "dpp+ucs", "votek+ucs"):
        np.testing.assert_array_equal(a.select(m, 42, q), b.select(m, 42, q))
    assert not np.array_equal(a.select("random", 42, q), a.select("random", 43, q))
    assert a.select("votek", 42, q).shape == (1, 4)  # one selection shared by all queries
    assert a.select("dpp", 42, q).shape == (5, 4)


def test_resume_with_another_configuration_is_refused(tmp_path):
    make(tmp_path, {"selector.method": ("dpp+ucs",)}).run(limit=2)
    with pytest.raises(ValueError, match="different configuration"):
        make(tmp_path, {"selector.method": ("dpp+ucs",), "prior.lam": 0.7}).run(limit=2)


def test_ucs_changes_coverage_diagnostics(tmp_path):
    pipe = make(tmp_path, {"prior.lam": 1000.0, "prior.estimator": "binomial", "test_size": 10})
    q = list(pipe.config.protocol().apply(pipe.dataset).test.texts)
    base_sel, ucs_sel = pipe.select("dpp", 42, q), pipe.select("dpp+ucs", 42, q)
    assert (base_sel != ucs_sel).any(axis=1).sum() >= 2  # the prior changes what some queries get
    base = pipe.coverage("dpp", 42, base_sel)
    ucs = pipe.coverage("dpp+ucs", 42, ucs_sel)
    # at λ = 1000 coverage dominates: strictly more clusters and a higher Φ on average (1.7 vs 1.3, 3.21 vs
    # 2.03)
    assert ucs["unique_clusters"].mean() > base["unique_clusters"].mean()
    assert ucs["phi"].mean() > base["phi"].mean()


def test_sentence_transformer_retrieval_is_used_when_named(tmp_path):
    from ucs.testing.doubles import DummyEmbedder

    ret = DummyEmbedder(dim=8, seed=3)
    cfg = config({"retrieval_embedder": "all-minilm-l6-v2"})
    pipe = Pipeline(cfg, retrieval=ret, cache_dir=tmp_path / "c", progress=False)
    assert pipe.retrieval_pool().shape == (150, 8)
    np.testing.assert_allclose(np.linalg.norm(pipe.retrieval_pool(), axis=1), 1.0, rtol=1e-5)
    assert pipe.retrieval_queries(["hello"]).shape == (1, 8)
    assert pipe.pool_embeddings().shape == (150, 32)  # clustering still uses the backbone


def test_coverage_of_a_method_resumed_from_a_longer_run(tmp_path):
    """A method fully recorded by an earlier, longer run is skipped by the runner; its coverage comes from the
    runner's cached selection (first rows), equal to computing it directly."""
    make(tmp_path, {"selector.method": ("dpp", "votek+ucs")}).run(limit=5)
    pipe = make(tmp_path, {"selector.method": ("dpp", "votek+ucs")})
    res = pipe.run(limit=3)
    assert res.evaluation.n_new_records == 0
    assert set(res.coverage) == {"dpp", "votek+ucs"}
    fresh = make(tmp_path / "fresh", {"selector.method": ("dpp",)})
    direct = fresh.run(limit=3).coverage["dpp"]["42"]
    assert res.coverage["dpp"]["42"] == pytest.approx(direct)


def test_executor_arguments_are_validated(tmp_path):
    cfg = config()
    for bad in (dict(executor="spark"), dict(shard_size=0), dict(knn="annoy"), dict(select_batch_size=1)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            Pipeline(cfg, **bad)
    assert not Pipeline(cfg, executor="local").distributed and Pipeline(cfg, executor="ray").distributed


def test_sharded_path_on_the_local_executor_equals_the_in_process_path(tmp_path):
    """The executor code path (sharded embedding, cluster_pool, select_queries), run in-process by a
    LocalExecutor subclass so that ``distributed`` is on, gives the in-process cluster ids and selections."""
    from ucs.distributed import LocalExecutor

    class Sharded(LocalExecutor):  # not the plain local executor: takes the executor path
        pass

    cfg = config()
    plain = Pipeline(cfg, backbone=DummyBackbone(), cache_dir=tmp_path / "a", progress=False)
    sharded = Pipeline(
        cfg,
        backbone=DummyBackbone(),
        cache_dir=tmp_path / "b",
        progress=False,
        executor=Sharded(),
        shard_size=40,
        select_batch_size=2,
    )
    assert sharded.distributed
    np.testing.assert_array_equal(sharded.pool_embeddings(), plain.pool_embeddings())
    assert sharded._memo["pool_shards"].n_shards > 1
    np.testing.assert_array_equal(sharded.cluster_ids(42), plain.cluster_ids(42))
    np.testing.assert_array_equal(sharded.cluster_ids(42, 0.3), plain.cluster_ids(42, 0.3))  # refit vs re-cut
    queries = list(sharded.dataset.test.texts[:5])
    for m in ("topk", "dpp+ucs", "votek+ucs"):
        a, b = plain.selection(m, 42, queries), sharded.selection(m, 42, queries)
        np.testing.assert_array_equal(a.indices, b.indices)
        np.testing.assert_allclose(a.scores, b.scores, rtol=1e-9, atol=1e-12)  # BLAS rounding per batch


def test_mdl_ucs_reuses_the_subset_scores_of_mdl(tmp_path):
    pipe = make(tmp_path)
    q = list(pipe.dataset.test.texts[:5])
    base = pipe.select("mdl", 42, q)
    calls = pipe.backbone._lm.n_score_calls_
    assert calls == 5 * pipe.config.selector["params"]["mdl"]["select_time"]
    pipe.select("mdl+ucs", 42, q)  # the same candidate subsets (same run seed), scored by MDL already
    assert pipe.backbone._lm.n_score_calls_ == calls
    fresh = Pipeline(pipe.config, backbone=DummyBackbone(), cache_dir=tmp_path / "cache", progress=False)
    np.testing.assert_array_equal(fresh.select("mdl", 42, q), base)  # from the score store, same selection
    assert fresh.backbone._lm.n_score_calls_ == 0
    uncached = Pipeline(
        pipe.config,
        backbone=DummyBackbone(),
        cache_dir=tmp_path / "other",
        progress=False,
        reuse_answers=False,
    )
    np.testing.assert_array_equal(uncached.select("mdl", 42, q), base)
    uncached.select("mdl+ucs", 42, q)
    assert (
        uncached.backbone._lm.n_score_calls_ == 2 * 5 * pipe.config.selector["params"]["mdl"]["select_time"]
    )


@pytest.mark.parametrize("clustering", ["kmeans", "dict_kmeans", "auto"])
def test_new_clusterings_on_the_executor_path_equal_the_in_process_path(tmp_path, clustering):
    """Methods without a sharded form run in-process on the gathered embeddings: the same labels."""
    from ucs.distributed import LocalExecutor

    class Sharded(LocalExecutor):
        pass

    cfg = config({"clusterer.method": clustering})
    plain = Pipeline(cfg, backbone=DummyBackbone(), cache_dir=tmp_path / "a", progress=False)
    sharded = Pipeline(
        cfg,
        backbone=DummyBackbone(),
        cache_dir=tmp_path / "b",
        progress=False,
        executor=Sharded(),
        shard_size=40,
    )
    np.testing.assert_array_equal(sharded.cluster_ids(42), plain.cluster_ids(42))
    np.testing.assert_array_equal(
        plain.cluster_ids(42, 0.3), plain.cluster_ids(42)
    )  # no eps: q changes nothing


def test_cluster_space_retrieval_clusters_the_retrieval_embeddings(tmp_path):
    from ucs.testing.doubles import DummyEmbedder

    cfg = config(
        {"clusterer.method": "kmeans", "cluster_space": "retrieval", "retrieval_embedder": "dummy-retrieval"}
    )
    pipe = Pipeline(
        cfg,
        backbone=DummyBackbone(),
        retrieval=DummyEmbedder(dim=24, seed=5),
        cache_dir=tmp_path / "c",
        progress=False,
    )
    R = pipe.retrieval_pool()
    np.testing.assert_array_equal(pipe.cluster_embeddings(), R)
    want = LatentClusterer(**pipe.clusterer_params(42)).fit(R).labels_
    np.testing.assert_array_equal(pipe.cluster_ids(42), want)
    backbone_space = Pipeline(
        cfg.replace(cluster_space="backbone"),
        backbone=DummyBackbone(),
        retrieval=DummyEmbedder(dim=24, seed=5),
        cache_dir=tmp_path / "c",
        progress=False,
    )
    assert backbone_space._cluster_dir(42) != pipe._cluster_dir(42)  # separate cache entries


def test_a_clustering_by_an_earlier_revision_of_the_kmeans_is_never_read_back(tmp_path, monkeypatch):
    import importlib

    # the module (the package also exports a `pipeline`)
    pl = importlib.import_module("ucs.pipeline.pipeline")
    from ucs.testing.doubles import DummyEmbedder

    cfg = config(
        {"clusterer.method": "kmeans", "cluster_space": "retrieval", "retrieval_embedder": "dummy-retrieval"}
    )

    def pipe():
        return Pipeline(
            cfg,
            backbone=DummyBackbone(),
            retrieval=DummyEmbedder(dim=24, seed=5),
            cache_dir=tmp_path / "c",
            progress=False,
        )

    now = pipe()
    ids, here = now.cluster_ids(42), now._cluster_dir(42)
    monkeypatch.setattr(pl, "LLOYD_REVISION", pl.LLOYD_REVISION - 1)
    assert pipe()._cluster_dir(42) != here
    monkeypatch.undo()
    again = pipe()
    assert again._cluster_dir(42) == here
    np.testing.assert_array_equal(again.cluster_ids(42), ids)


def test_coverage_page_reports_cluster_health(tmp_path):
    pipe = make(tmp_path, {"selector.method": ("dpp", "dpp+ucs"), "clusterer.method": "kmeans"})
    res = pipe.run()
    assert set(res.health) == {"42", "43"}
    h = res.health["42"]
    assert h.n_items == len(pipe.dataset.pool) and h.ami is not None
    page = (tmp_path / "out" / "coverage.md").read_text()
    assert "Cluster health" in page and "label AMI" in page
    saved = json.loads((tmp_path / "out" / "coverage.json").read_text())["cluster_health"]["42"]
    assert saved["largest_fraction"] == pytest.approx(h.largest_fraction)


@pytest.mark.parametrize("relevance", ["candidates", "candidates_bonus"])
def test_prior_carries_the_relevance_setting(tmp_path, relevance):
    pipe = make(tmp_path, {"prior.relevance": relevance, "clusterer.method": "kmeans"})
    assert pipe.prior("dpp+ucs", 42).relevance == relevance
    assert make(tmp_path).prior("dpp+ucs", 42).relevance == "none"


@pytest.mark.parametrize("space", ["backbone", "retrieval"])
def test_projection_shows_the_space_the_clusters_were_computed_in(tmp_path, space):
    from ucs.pipeline.run_files import projection_2d
    from ucs.testing.doubles import DummyEmbedder

    cfg = config(
        {
            "selector.method": ("topk",),
            "clusterer.method": "kmeans",
            "cluster_space": space,
            "retrieval_embedder": "dummy-retrieval",
        }
    )
    pipe = Pipeline(
        cfg,
        backbone=DummyBackbone(),
        retrieval=DummyEmbedder(dim=24, seed=5),
        cache_dir=tmp_path / "c",
        out_dir=tmp_path / "out",
        progress=False,
    )
    pipe.run()
    got = np.load(tmp_path / "out" / "pipeline" / "projection.npy")
    np.testing.assert_array_equal(got, projection_2d(pipe.cluster_embeddings()))
    other = pipe.pool_embeddings() if space == "retrieval" else pipe.retrieval_pool()
    assert not np.array_equal(got, projection_2d(other))


@pytest.mark.parametrize("order, kept", [("similar_first", "first"), ("similar_last", "last")])
def test_a_cut_prompt_keeps_the_most_similar_demonstrations_in_either_order(tmp_path, order, kept):
    # a context that holds only part of the ten: similar_last drops from the start, so both orders keep the
    # same most similar demonstrations
    cfg = config({"selector.method": ("topk",), "order": order, "budget": 10, "n_runs": 1})
    pipe = Pipeline(
        cfg,
        backbone=DummyBackbone(context_length=160),
        cache_dir=tmp_path / "cache",
        out_dir=tmp_path / "out",
        progress=False,
    )
    pipe.run()
    recs = [json.loads(x) for x in (tmp_path / "out" / "records.jsonl").read_text().splitlines()]
    assert recs and all(0 < r["n_dropped"] < 10 for r in recs)
    for r in recs:
        shown = r["selected"][: r["n_demos"]] if kept == "first" else r["selected"][r["n_dropped"] :]
        nearest = r["selected"] if kept == "first" else r["selected"][::-1]
        assert sorted(shown) == sorted(nearest[: r["n_demos"]])
        assert r.get("dropped_from", "end") == ("end" if kept == "first" else "start")
