import json

import numpy as np

import pytest

from ucs.experiments.presets import PRESETS
from ucs.pipeline import METHODS, PipelineConfig, parse_method, parse_methods


def test_json_round_trip_is_exact(tmp_path):
    cfg = PipelineConfig(dataset="banking77", selectors="dpp,dpp+ucs,votek_sgt", lam_by_selector={"votek+ucs": 5},
                         dbscan_q_by_selector={"dpp": 0.1}, test_size=100, layer=12, mode="generate")
    again = PipelineConfig.from_json(cfg.to_json())
    assert again == cfg
    cfg.to_json(tmp_path / "c.json")
    assert PipelineConfig.from_json(tmp_path / "c.json") == cfg
    d = json.loads(cfg.to_json())
    assert d["selectors"] == ["dpp", "dpp+ucs", "votek+ucs"]
    assert d["mode"] == "greedy"  # the CLI spelling 'generate' is the runner's 'greedy'
    assert d["lam_by_selector"] == {"votek": 5.0}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_becomes_a_config(name):
    cfg = PipelineConfig.from_preset(name)
    settings = PRESETS[name].settings
    for key in ("budget", "candidate_num", "dbscan_q", "lam", "t", "bin_size", "dict_coding", "pca_dim"):
        assert getattr(cfg, key) == settings[key]
    assert cfg.preset == name
    assert cfg.run_seeds == tuple(settings["seed"] + i for i in range(settings["n_runs"]))


def test_preset_overrides_and_cpu_preset():
    cfg = PipelineConfig.from_preset("cpu", lam=0.5, test_size=None)
    assert cfg.lam == 0.5 and cfg.test_size == 100 and cfg.mode == "likelihood" and cfg.backbone == "smollm2"
    assert PipelineConfig.from_preset("paper").dict_coding == "omp"


@pytest.mark.parametrize("name,expected", [
    ("dpp", ("dpp", False)), ("DPP+UCS", ("dpp", True)), ("votek_sgt", ("votek", True)),
    ("mdl-ucs", ("mdl", True)), ("random", ("random", False)), ("cover", ("cover", False)), ("topk_ucs", ("topk", True)),
])
def test_parse_method(name, expected):
    assert parse_method(name) == expected


@pytest.mark.parametrize("bad", ["", "random+ucs", "cover+ucs", "kmeans", "dpp+foo", None])
def test_parse_method_rejects(bad):
    with pytest.raises(ValueError, match="method"):
        parse_method(bad)


def test_parse_methods_dedupes_in_order():
    assert parse_methods("dpp+ucs, dpp,dpp_sgt,,votek") == ("dpp+ucs", "dpp", "votek")
    assert set(METHODS) == set(parse_methods(METHODS))
    with pytest.raises(ValueError, match="at least one"):
        parse_methods(" , ")


@pytest.mark.parametrize("field,value", [
    ("budget", -1), ("lam", -0.1), ("dbscan_q", 1.0), ("dbscan_q", 0), ("mode", "sampled"), ("n_runs", 0),
    ("engine", "vllm"), ("pooling", "max"), ("estimator", "nope"), ("clustering", "kmedoids"), ("layer", "top"), ("cluster_space", "pool"), ("relevance", "query"), ("n_clusters", 0),
    ("dbscan_q_by_selector", {"dpp": 2.0}), ("lam_by_selector", {"nope": 1.0}), ("test_size", 0),
])
def test_invalid_settings_name_the_field(field, value):
    with pytest.raises(ValueError) as info:
        PipelineConfig(**{field: value})
    key = field.split("_by_")[0] if "_by_" in field else field
    assert key in str(info.value) or "method" in str(info.value)


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="unknown configuration key"):
        PipelineConfig.from_dict({"dataset": "sample", "lambda": 1})


def test_per_selector_overrides():
    cfg = PipelineConfig(lam=0.1, dbscan_q=0.01, lam_by_selector={"votek": 5}, dbscan_q_by_selector={"dpp": 0.1})
    assert cfg.lam_for("votek+ucs") == 5.0 and cfg.lam_for("dpp+ucs") == 0.1
    # a base selector is diagnosed on the same clusters as its UCS form
    assert cfg.dbscan_q_for("dpp") == cfg.dbscan_q_for("dpp+ucs") == 0.1
    assert cfg.dbscan_q_for("votek+ucs") == 0.01


def test_estimator_params_follow_the_estimator():
    assert PipelineConfig(estimator="paper", integer=True).estimator_params() == {
        "t": 5.0, "bin_size": 20, "alpha": 1.0, "integer": True}
    assert PipelineConfig(estimator="binomial", t=4).estimator_params() == {"t": 4.0}


def test_key_dict_leaves_out_paths_and_method_list():
    a = PipelineConfig(data_dir="/a", selectors=("dpp",))
    b = PipelineConfig(data_dir="/b", selectors=("dpp", "votek"))
    assert a.key_dict() == b.key_dict()
    assert a.key_dict() != PipelineConfig(data_dir="/a", lam=0.2).key_dict()


def test_dtype_enters_the_key_only_when_set():
    assert "dtype" not in PipelineConfig().key_dict()  # folders made before the setting keep their key
    bf = PipelineConfig(engine="transformers", dtype="bfloat16")
    assert bf.key_dict()["dtype"] == "bfloat16"
    assert bf.key_dict() != PipelineConfig(engine="transformers").key_dict()
    assert PipelineConfig.from_dict(bf.to_dict()) == bf


def test_from_preset_reads_presets_without_the_experiments_floor():
    """Presets are data below the configuration: no import runs back up to ucs.experiments."""
    import subprocess
    import sys

    code = ("import sys; from ucs.pipeline import PipelineConfig; PipelineConfig.from_preset('cpu'); "
            "sys.exit(1 if 'ucs.experiments' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_stages_use_the_classes_names_and_read_back():
    from ucs.clustering import LatentClusterer
    from ucs.selectors import UCSPrior
    from ucs.selectors.factory import make_selector

    cfg = PipelineConfig(dict_n_atoms=32, clustering="kmeans", n_clusters=40, dpp_scale_factor=0.2, votek_k=5,
                         estimator="paper", lam=0.3, t=4.0, seed=7)
    st = cfg.stages()
    assert st["clusterer"]["n_atoms"] == 32 and st["clusterer"]["method"] == "kmeans"
    assert st["clusterer"]["random_state"] == 7 and st["clusterer"]["n_clusters"] == 40
    assert st["selectors"]["dpp"] == {"candidate_num": 50, "scale_factor": 0.2} and st["selectors"]["votek"] == {"k": 5}
    assert st["prior"]["lam"] == 0.3 and st["prior"]["t"] == 4.0 and "bin_size" in st["prior"]
    LatentClusterer(**st["clusterer"]).validate()  # the classes take them as they are
    UCSPrior(np.zeros(4, dtype=int), **st["prior"])
    make_selector("dpp", **st["selectors"]["dpp"])
    back = PipelineConfig.from_stages(st)
    assert back == cfg
    with pytest.raises(ValueError, match="no parameter 'n_atom'"):
        PipelineConfig.from_stages({"clusterer": {"n_atom": 3}})
    with pytest.raises(ValueError, match="unknown stage"):
        PipelineConfig.from_stages({"retriever": {}})


def test_the_kmeans_revision_enters_the_key_of_runs_that_cluster_with_it():
    from ucs.clustering.partition import LLOYD_REVISION

    assert PipelineConfig(clustering="kmeans").key_dict()["lloyd_revision"] == LLOYD_REVISION
    assert "lloyd_revision" not in PipelineConfig(clustering="dict_dbscan").key_dict()  # the paper's runs keep theirs
