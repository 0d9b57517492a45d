"""The experiment registry and the planning of cells."""

import json

import pytest

from ucs.experiments.registry import (
    ORDER,
    experiment_names,
    experiments,
    get_experiment,
    load_experiment_file,
    resolve_names,
)
from ucs.experiments.spec import Experiment

EXPECTED = {
    "main_table",
    "bbeh_table",
    "coverage_exposure",
    "cluster_sizes",
    "joint_dictionary",
    "sensitivity_tm",
    "sensitivity_budget",
    "ablation_embedding",
    "ablation_clustering",
    "ablation_design",
    "ablation_rarity",
    "runtime",
    "estimator_study",
    "coverage_health",
    "healthy_ucs",
    "beyond_topk",
}
#: Experiments with a protocol of their own (not the paper's sampled generation): the beat-TopK page is
#: likelihood mode at 500 test queries, one deterministic run, both backbones, in either size preset.
OWN_PROTOCOL = {"beyond_topk"}


def test_every_issue_item_is_a_registered_experiment_in_paper_order():
    assert set(experiment_names()) == EXPECTED
    assert experiment_names() == [n for n in ORDER if n in EXPECTED]
    for e in experiments().values():
        assert e.config_file == f"{e.name}.json" and e.paper_ref and e.title
        assert set(e.presets) >= {"paper", "cpu"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_presets_plan_valid_cells(name):
    e = get_experiment(name)
    paper, cpu = e.plan("paper"), e.plan("cpu")
    assert paper and cpu
    assert all(c.config.mode == "likelihood" for c in cpu)
    assert {c.backbone for c in paper} == {"smollm2", "gemma3"}
    if name in OWN_PROTOCOL:
        assert all(c.config.mode == "likelihood" and c.config.test_size == 500 for c in paper + cpu)
        assert {c.backbone for c in cpu} == {"smollm2", "gemma3"}
    else:
        assert {c.backbone for c in cpu} == {"smollm2"}
        assert all(c.config.mode == "paper" and c.config.n_runs == 3 for c in paper)
        assert all(c.config.test_size is None for c in paper)  # 500 intent / 40 BBEH queries, the paper's
    ids = [c.id for c in paper]
    assert len(ids) == len(set(ids))


def test_variants_and_overrides_layer_in_order():
    cells = get_experiment("sensitivity_tm").plan(
        "cpu", datasets=["sample"], overrides={"prior.t": 3.0, "prior.lam": 0.7}
    )
    base = [c for c in cells if c.variant.name == "base"]
    assert (
        len(base) == 1 and base[0].methods == ("dpp",) and base[0].config.prior["t"] == 3.0
    )  # override reaches it
    grid = {(c.config.prior["t"], c.config.prior["bin_size"]) for c in cells if c.variant.name != "base"}
    assert grid == {
        (t, m) for t in (2.0, 4.0, 8.0) for m in (5, 10, 20)
    }  # the variant wins over the override
    assert all(
        c.config.prior["lam"] == 0.7 and c.methods == ("dpp+ucs",) for c in cells if c.variant.name != "base"
    )
    budget = [c.config.budget for c in get_experiment("sensitivity_budget").plan("paper")][:5]
    assert budget == [0, 1, 5, 10, 20]


def test_selectors_narrow_a_variants_own_list_too():
    e = get_experiment("healthy_ucs")
    full = {c.variant.name: c.methods for c in e.plan("cpu", datasets=["sample"])}
    assert full["default_relevance"] == ("topk+ucs", "dpp+ucs", "mdl+ucs")
    assert full["paper_binomial"] == ("mdl+ucs",)
    binomial = {c.variant.name: c.config for c in e.plan("cpu", datasets=["sample"])}
    paper, sound = binomial["paper"], binomial["paper_binomial"]
    assert (sound.clusterer["method"], sound.cluster_space, sound.prior["estimator"]) == (
        paper.clusterer["method"],
        paper.cluster_space,
        "binomial",
    )
    assert paper.prior["estimator"] == "paper"
    narrow = {
        c.variant.name: c.methods
        for c in e.plan("cpu", datasets=["sample"], selectors=["votek", "votek+ucs"])
    }
    assert narrow == {
        "base": ("votek",),
        "paper": ("votek+ucs",),
        "default": ("votek+ucs",),
    }  # no relevance cell
    dpp = {
        c.variant.name: c.methods for c in e.plan("cpu", datasets=["sample"], selectors=["dpp+ucs", "dpp"])
    }
    assert dpp == {
        "base": ("dpp",),
        "paper": ("dpp+ucs",),
        "default": ("dpp+ucs",),
        "default_relevance": ("dpp+ucs",),
    }


def test_variants_run_a_part_of_an_experiment():
    e = get_experiment("healthy_ucs")
    cells = e.plan("cpu", datasets=["sample"], variants=["default", "base"])
    assert [c.variant.name for c in cells] == ["base", "default"]  # the experiment's order, not the option's
    full = {c.id: c.config for c in e.plan("cpu", datasets=["sample"])}
    assert all(full[c.id] == c.config for c in cells)  # the same cells, so a later full run reuses them
    with pytest.raises(ValueError, match="variants must name some of"):
        e.plan("cpu", datasets=["sample"], variants=["defualt"])


def test_joint_dictionary_uses_the_other_backbones():
    cells = get_experiment("joint_dictionary").plan("cpu", datasets=["sample"])
    joint = [c for c in cells if c.variant.name == "joint"]
    assert [c.config.joint_backbones for c in joint] == [("gemma3",)]
    cells = get_experiment("joint_dictionary").plan(
        "cpu", datasets=["sample"], backbones=["dummy", "dummy-1"]
    )
    assert {c.backbone: c.config.joint_backbones for c in cells if c.variant.name == "joint"} == {
        "dummy": ("dummy-1",),
        "dummy-1": ("dummy",),
    }
    with pytest.raises(ValueError, match="needs another backbone"):
        get_experiment("joint_dictionary").plan("cpu", datasets=["sample"], backbones=["dummy"])


def test_bad_names_and_files(tmp_path):
    with pytest.raises(ValueError, match="valid names: main_table"):
        resolve_names("main_table,nope")
    assert resolve_names("runtime, main_table") == ["runtime", "main_table"]
    with pytest.raises(ValueError, match="unknown experiment"):
        get_experiment("table_99")
    good = get_experiment("main_table").to_dict()
    assert (
        Experiment.from_dict(good).plan("cpu")[0].config == get_experiment("main_table").plan("cpu")[0].config
    )
    for bad, msg in (
        ({**good, "colour": 1}, "unknown experiment key"),
        ({**good, "kind": "poll"}, "kind must be"),
        ({**good, "presets": {"paper": good["presets"]["paper"]}}, "size presets"),
        ({**good, "settings": {"prior.lam": -1}}, "prior.lam must be"),
        ({**good, "settings": {"prior.lamda": 1}}, "prior has no setting 'lamda'"),
    ):
        p = tmp_path / "x.json"
        p.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=msg):
            load_experiment_file(p)
