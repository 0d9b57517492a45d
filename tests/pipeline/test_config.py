import inspect
import json
import warnings

import numpy as np

import pytest

from ucs import defaults as D
from ucs.pipeline import METHODS, DeprecatedSettingWarning, PipelineConfig, parse_method, parse_methods
from ucs.pipeline.config import FLAT_NAMES, SECTIONS
from ucs.pipeline.presets import PRESETS


def test_json_round_trip_is_exact(tmp_path):
    cfg = PipelineConfig(
        dataset="banking77",
        selector={"method": "dpp,dpp+ucs,votek_sgt"},
        lam_by_selector={"votek+ucs": 5},
        dbscan_q_by_selector={"dpp": 0.1},
        test_size=100,
        layer=12,
        mode="generate",
    )
    again = PipelineConfig.from_json(cfg.to_json())
    assert again == cfg
    cfg.to_json(tmp_path / "c.json")
    assert PipelineConfig.from_json(tmp_path / "c.json") == cfg
    d = json.loads(cfg.to_json())
    assert d["selector"]["method"] == ["dpp", "dpp+ucs", "votek+ucs"]
    assert d["mode"] == "greedy"  # the CLI spelling 'generate' is the runner's 'greedy'
    assert d["lam_by_selector"] == {"votek": 5.0}


def test_the_configuration_is_the_default_preset():
    assert PipelineConfig() == PipelineConfig.resolve("default")
    assert PipelineConfig().preset == "default"
    cfg = PipelineConfig()
    assert cfg.clusterer["method"] == D.DEFAULT_COVERAGE["clusterer"]["method"] == D.DEFAULT_CLUSTERING_METHOD
    assert cfg.prior["estimator"] == D.DEFAULT_COVERAGE["prior"]["estimator"] == D.DEFAULT_ESTIMATOR
    assert cfg.cluster_space == D.DEFAULT_COVERAGE["cluster_space"]


def test_the_paper_is_a_preset():
    paper = PipelineConfig.resolve("paper")
    assert paper.preset == "paper"
    assert paper.clusterer["method"] == D.PAPER_CLUSTERING_METHOD == "dict_dbscan"
    assert paper.prior["estimator"] == D.PAPER_ESTIMATOR == "paper"
    assert (paper.cluster_space, paper.clusterer["coding"], paper.mdl_scorer) == ("backbone", "omp", "gpt2")
    # the classes keep the paper's as their own defaults
    from ucs.clustering import LatentClusterer

    assert LatentClusterer().method == D.PAPER_CLUSTERING_METHOD


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_becomes_a_config(name):
    cfg = PipelineConfig.resolve(name)
    assert cfg.preset == name
    assert cfg == PipelineConfig().with_settings({**PRESETS[name].settings, "preset": name})
    assert cfg.run_seeds == (42, 43, 44)


def test_preset_overrides_and_cpu_preset():
    cfg = PipelineConfig.resolve("cpu", overrides={"prior.lam": 0.5, "clusterer": {"dbscan_q": 0.2}})
    assert (
        cfg.prior["lam"] == 0.5
        and cfg.test_size == 100
        and cfg.mode == "likelihood"
        and cfg.backbone == "smollm2"
    )
    assert cfg.clusterer["dbscan_q"] == 0.2 and cfg.clusterer["method"] == "kmeans"  # a section merges
    assert PipelineConfig.resolve("paper").clusterer["coding"] == "omp"
    with pytest.raises(ValueError, match="preset must be one of"):
        PipelineConfig.resolve("gpu")
    with pytest.raises(ValueError, match="not both"):
        PipelineConfig.resolve("cpu", "c.json")


@pytest.mark.parametrize(
    "name,expected",
    [
        ("dpp", ("dpp", False)),
        ("DPP+UCS", ("dpp", True)),
        ("votek_sgt", ("votek", True)),
        ("mdl-ucs", ("mdl", True)),
        ("random", ("random", False)),
        ("cover", ("cover", False)),
        ("topk_ucs", ("topk", True)),
    ],
)
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


@pytest.mark.parametrize(
    "path,value",
    [
        ("budget", -1),
        ("prior.lam", -0.1),
        ("clusterer.dbscan_q", 1.0),
        ("clusterer.dbscan_q", 0),
        ("mode", "sampled"),
        ("n_runs", 0),
        ("engine", "vllm"),
        ("pooling", "max"),
        ("prior.estimator", "nope"),
        ("clusterer.method", "kmedoids"),
        ("layer", "top"),
        ("cluster_space", "pool"),
        ("prior.relevance", "query"),
        ("clusterer.n_clusters", 0),
        ("dbscan_q_by_selector", {"dpp": 2.0}),
        ("lam_by_selector", {"nope": 1.0}),
        ("test_size", 0),
        ("selector.params.mmr.lambda_mult", 1.5),
        ("selector.params.votek.k", 0),
        ("selector.params.dpp.scale_factor", 0),
        ("selector.params.labelaware.mode", "all"),
        ("clusterer.n_atoms", 0),
    ],
)
def test_invalid_settings_name_the_setting_by_its_path(path, value):
    with pytest.raises(ValueError) as info:
        PipelineConfig().with_settings({path: value})
    key = path.split("_by_")[0] if "_by_" in path else path
    assert key in str(info.value) or "method" in str(info.value)


def test_unknown_names_are_refused_with_the_valid_keys():
    with pytest.raises(ValueError, match="unknown configuration key"):
        PipelineConfig.from_dict({"dataset": "sample", "lambda": 1})
    with pytest.raises(
        ValueError, match=r"selector.params.mmr has no setting 'lambda'; valid keys: .*lambda_mult"
    ):
        PipelineConfig().with_settings({"selector.params.mmr.lambda": 0.8})
    with pytest.raises(ValueError, match="clusterer has no setting 'n_atom'; valid keys: .*n_atoms"):
        PipelineConfig(clusterer={"n_atom": 3})
    with pytest.raises(ValueError, match="selector.params has no setting 'knn'"):
        PipelineConfig().with_settings({"selector.params.knn.k": 3})
    with pytest.raises(ValueError, match="single value"):
        PipelineConfig().with_settings({"budget.max": 3})
    with pytest.raises(ValueError, match="valid keys"):  # pipeline-supplied parameters are no settings
        PipelineConfig().with_settings({"selector.params.mdl.scorer": "gpt2"})


def test_per_selector_overrides():
    cfg = PipelineConfig(
        prior={"lam": 0.1},
        clusterer={"dbscan_q": 0.01},
        lam_by_selector={"votek": 5},
        dbscan_q_by_selector={"dpp": 0.1},
    )
    assert cfg.lam_for("votek+ucs") == 5.0 and cfg.lam_for("dpp+ucs") == 0.1
    # a base selector is diagnosed on the same clusters as its UCS form
    assert cfg.dbscan_q_for("dpp") == cfg.dbscan_q_for("dpp+ucs") == 0.1
    assert cfg.dbscan_q_for("votek+ucs") == 0.01


def test_estimator_params_follow_the_estimator():
    assert PipelineConfig(prior={"estimator": "paper", "integer": True}).estimator_params() == {
        "t": 5.0,
        "bin_size": 20,
        "alpha": 1.0,
        "integer": True,
    }
    assert PipelineConfig(prior={"estimator": "binomial", "t": 4}).estimator_params() == {"t": 4.0}


def test_key_dict_leaves_out_paths_and_method_list():
    a = PipelineConfig(data_dir="/a", selector={"method": ("dpp",)})
    b = PipelineConfig(data_dir="/b", selector={"method": ("dpp", "votek")})
    assert a.key_dict() == b.key_dict()
    assert a.key_dict() != PipelineConfig(data_dir="/a", prior={"lam": 0.2}).key_dict()


def test_the_key_keeps_its_flat_names_and_takes_a_new_parameter_only_when_set():
    key = PipelineConfig.resolve("paper").key_dict()
    assert {"votek_k", "dpp_scale_factor", "dict_n_atoms", "dbscan_q", "lam", "clustering"} <= set(key)
    assert not any("." in k for k in key)
    # a class parameter without a flat name: in the key by its path, and only away from the class's default
    block = PipelineConfig().with_settings({"selector.params.mdl.block": 256})
    assert block.key_dict()["selector.params.mdl.block"] == 256
    assert (
        PipelineConfig().with_settings({"selector.params.mdl.block": 1024}).key_dict()
        == PipelineConfig().key_dict()
    )
    # one flat name, several paths: a path that leaves the others gets its own key
    dpp = PipelineConfig().with_settings({"selector.params.dpp.candidate_num": 30})
    assert dpp.key_dict()["candidate_num"] == 50 and dpp.key_dict()["selector.params.dpp.candidate_num"] == 30


def test_dtype_enters_the_key_only_when_set():
    assert "dtype" not in PipelineConfig().key_dict()  # folders made before the setting keep their key
    bf = PipelineConfig(engine="transformers", dtype="bfloat16")
    assert bf.key_dict()["dtype"] == "bfloat16"
    assert bf.key_dict() != PipelineConfig(engine="transformers").key_dict()
    assert PipelineConfig.from_dict(bf.to_dict()) == bf


def test_resolve_reads_presets_without_the_experiments_floor():
    """Presets are data below the configuration: no import runs back up to ucs.experiments."""
    import subprocess
    import sys

    code = (
        "import sys; from ucs.pipeline import PipelineConfig; PipelineConfig.resolve('cpu'); "
        "sys.exit(1 if 'ucs.experiments' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_the_sections_are_the_classes_own_parameters():
    """Every section parameter is a parameter of the class that takes it, under its name: nothing is renamed
    between a class, the configuration and the stages' keyword arguments."""
    from ucs.clustering import LatentClusterer
    from ucs.selectors import UCSPrior
    from ucs.selectors.factory import make_selector, selector_class

    cfg = PipelineConfig(
        clusterer={"n_atoms": 32, "method": "kmeans", "n_clusters": 40},
        selector={"params": {"dpp": {"scale_factor": 0.2}, "votek": {"k": 5}}},
        prior={"estimator": "paper", "lam": 0.3, "t": 4.0},
        seed=7,
    )
    params = cfg.clusterer_params(cfg.seed)
    assert params["n_atoms"] == 32 and params["method"] == "kmeans" and params["random_state"] == 7
    assert set(cfg.clusterer) <= set(inspect.signature(LatentClusterer).parameters)
    LatentClusterer(**params).validate()  # the classes take them as they are
    UCSPrior(np.zeros(4, dtype=int), **cfg.prior_params())
    assert cfg.selector_params("dpp") == {"candidate_num": 50, "scale_factor": 0.2}
    assert cfg.selector_params("votek") == {"k": 5}
    for base, p in cfg.selector["params"].items():
        assert set(p) <= set(selector_class(base)._param_names()), base
        make_selector(base, **({"scorer": object()} if base == "mdl" else {}), **p)
    # the names earlier releases renamed on the way in (mmr_lambda for lambda_mult ...) are left only as flat
    # names that still load: 13 of them, none of them a name of the configuration any more
    renamed = {
        name
        for name, paths in FLAT_NAMES.items()
        for path in paths
        if path.split(".")[0] in SECTIONS and path != "selector.method" and path.rsplit(".", 1)[1] != name
    }
    assert len(renamed) == 13 and not renamed & set(cfg.to_dict())


def test_an_old_flat_configuration_file_loads_with_a_note_and_equals_the_nested_one(tmp_path):
    flat = {
        "dataset": "sample",
        "backbone": "dummy",
        "mmr_lambda": 0.8,
        "votek_k": 5,
        "dbscan_q": 0.1,
        "dict_n_atoms": 32,
        "clustering": "kmeans",
        "lam": 0.3,
        "selectors": ["topk", "mmr", "votek+ucs"],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(flat), encoding="utf-8")
    with pytest.warns(
        DeprecatedSettingWarning, match="mmr_lambda → selector.params.mmr.lambda_mult"
    ) as notes:
        old = PipelineConfig.resolve(file=path)
    assert len(notes) == 1 and "\n" not in str(notes[0].message)  # one line
    # what a flat file left out meant then: the paper's estimator on the backbone's embeddings, retrieval by
    # the backbone, every test query
    nested = PipelineConfig(
        dataset="sample",
        backbone="dummy",
        retrieval_embedder="backbone",
        test_size=None,
        cluster_space="backbone",
        preset=None,
        selector={
            "method": ["topk", "mmr", "votek+ucs"],
            "params": {"mmr": {"lambda_mult": 0.8}, "votek": {"k": 5}},
        },
        clusterer={"dbscan_q": 0.1, "n_atoms": 32, "method": "kmeans"},
        prior={"lam": 0.3, "estimator": "paper"},
    )
    assert old == nested
    assert old.key_dict() == nested.key_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the nested form loads without a note
        assert PipelineConfig.from_json(nested.to_json()) == nested


def test_a_complete_flat_configuration_keeps_its_results_key():
    """Every flat configuration written by an earlier release (complete: every field) gives the key its run
    folder recorded; a flat name set through with_settings still applies (with the note)."""
    for name in sorted(PRESETS):
        cfg = PipelineConfig.resolve(name, overrides={"clusterer.n_clusters": 12, "order": "vote_last"})
        with pytest.warns(DeprecatedSettingWarning):
            again = PipelineConfig.from_dict(cfg.flat_dict())
        assert again == cfg and again.key_dict() == cfg.key_dict()
    with pytest.warns(DeprecatedSettingWarning, match="votek_k"):
        assert PipelineConfig().with_settings({"votek_k": 4}).selector["params"]["votek"]["k"] == 4


def test_replace_merges_a_section_into_this_configurations():
    paper = PipelineConfig.resolve("paper")
    again = paper.replace(clusterer={"dbscan_q": 0.2}, budget=3)
    assert (
        again.clusterer["method"] == "dict_dbscan"
        and again.clusterer["dbscan_q"] == 0.2
        and again.budget == 3
    )
    assert again.replace(clusterer={"dbscan_q": paper.clusterer["dbscan_q"]}, budget=paper.budget) == paper


def test_the_kmeans_revision_enters_the_key_of_runs_that_cluster_with_it():
    from ucs.clustering.partition import LLOYD_REVISION

    assert PipelineConfig(clusterer={"method": "kmeans"}).key_dict()["lloyd_revision"] == LLOYD_REVISION
    # the paper's runs keep theirs
    assert "lloyd_revision" not in PipelineConfig(clusterer={"method": "dict_dbscan"}).key_dict()


def test_from_preset_of_earlier_releases_is_resolve_with_a_note():
    import warnings as _w

    from ucs.pipeline.config import DeprecatedSettingWarning, PipelineConfig

    with _w.catch_warnings(record=True) as got:
        _w.simplefilter("always")
        old = PipelineConfig.from_preset("cpu", dataset="banking77", n_runs=1)
    assert old == PipelineConfig.resolve("cpu", overrides={"dataset": "banking77", "n_runs": 1})
    assert [w.category for w in got] == [DeprecatedSettingWarning]
    assert "PipelineConfig.resolve('cpu'" in str(got[0].message)
