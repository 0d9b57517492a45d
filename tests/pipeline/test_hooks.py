"""The pipeline hooks the experiments use: injected embeddings, joint-dictionary clusters, seeded doubles."""

import numpy as np
import pytest

pytest.importorskip("ucs.clustering")

from ucs.clustering import JointLatentClusterer, LatentClusterer  # noqa: E402
from ucs.pipeline import Pipeline, PipelineConfig, load_backbone_for  # noqa: E402
from ucs.testing import DummyBackbone  # noqa: E402

SMALL = {
    "dataset": "sample",
    "backbone": "dummy",
    "mode": "likelihood",
    "test_size": 4,
    "n_runs": 1,
    "budget": 3,
    "retrieval_embedder": "backbone",
    "mdl_scorer": "backbone",
    "clusterer": {"pca_dim": 16, "n_atoms": 8, "dbscan_k": 5, "dbscan_q": 0.1, "coding": "ridge"},
    "selector": {
        "method": ("dpp", "dpp+ucs"),
        "params": {b: {"candidate_num": 20} for b in ("topk", "labelaware", "dpp", "mdl")},
    },
}


def config(settings=None):
    """SMALL on the paper preset (its clustering in the backbone's space), then ``settings``."""
    return PipelineConfig.resolve("paper", overrides={**SMALL, **(settings or {})})


def test_seeded_dummy_backbones_differ():
    a = load_backbone_for(PipelineConfig(backbone="dummy"))
    b = load_backbone_for(PipelineConfig(backbone="dummy-3"))
    assert isinstance(b, DummyBackbone) and a.identity != b.identity
    assert not np.allclose(a.embed(["x"]), b.embed(["x"]))


def test_injected_embeddings_replace_the_embedding_stage(tmp_path):
    cfg = config()
    full = Pipeline(cfg, cache_dir=tmp_path / "c", progress=False)
    E = full.pool_embeddings()
    ds = full.dataset
    keep = np.arange(0, len(ds.pool), 2)
    sub_ds = type(ds)(
        name="sample-half", task=ds.task, label_names=ds.label_names, pool=ds.pool.subset(keep), test=ds.test
    )
    bb = DummyBackbone()
    sub = Pipeline(
        cfg, dataset=sub_ds, backbone=bb, pool_embeddings=E[keep], cache_dir=tmp_path / "c", progress=False
    )
    np.testing.assert_array_equal(sub.pool_embeddings(), E[keep])
    ids = sub.cluster_ids(42)
    ref = LatentClusterer(**sub.clusterer_params(42)).fit(E[keep]).labels_
    np.testing.assert_array_equal(ids, ref)
    sub.run(tmp_path / "o")
    assert bb.n_texts_embedded_ == cfg.test_size  # only the queries, never the pool
    bad = Pipeline(cfg, dataset=sub_ds, pool_embeddings=E, cache_dir=tmp_path / "c", progress=False)
    with pytest.raises(ValueError, match="rows"):
        bad.pool_embeddings()
    with pytest.raises(ValueError, match="2-D float"):
        Pipeline(cfg, pool_embeddings=np.zeros(3))


def test_joint_backbones_cluster_on_a_joint_dictionary(tmp_path):
    cfg = config({"joint_backbones": ("dummy-1",), "joint_iter": 2})
    pipe = Pipeline(cfg, cache_dir=tmp_path / "c", progress=False)
    ids = pipe.cluster_ids(42)
    E0 = pipe.pool_embeddings()
    E1 = load_backbone_for(PipelineConfig(backbone="dummy-1")).embed(list(pipe.dataset.pool.texts))
    ref = JointLatentClusterer(**pipe.clusterer_params(42), joint_iter=2).fit([E0, E1]).labels_
    np.testing.assert_array_equal(ids, ref)
    single = Pipeline(config(), cache_dir=tmp_path / "c", progress=False)
    assert single._cluster_dir(42) != pipe._cluster_dir(42)  # the joint clusters have their own cache entry
    recut = pipe.cluster_ids(42, 0.3)  # re-cut works on the joint clusterer too
    assert recut.max() <= ids.max()
    # the resume key of a single-source run is unchanged by the joint fields
    assert "joint_backbones" not in config().key_dict()
    assert cfg.key_dict()["joint_backbones"] == ["dummy-1"]
    assert PipelineConfig.from_json(cfg.to_json()) == cfg
    with pytest.raises(ValueError, match="joint_backbones needs a dictionary"):
        config({"clusterer.method": "dbscan", "joint_backbones": ("dummy-1",)})
