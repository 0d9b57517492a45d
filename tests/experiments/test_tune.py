"""Tuning q and λ on a validation split of the pool, with weight-free backbones on the sample dataset."""

import json

import numpy as np
import pytest

pytest.importorskip("ucs.clustering")
pytest.importorskip("ucs.selectors")

from ucs.data import load_dataset  # noqa: E402
from ucs.experiments.tune import _choose, default_grids, tune, validation_split  # noqa: E402
from ucs.pipeline import PipelineConfig  # noqa: E402
from ucs.testing import DummyBackbone  # noqa: E402

#: On the paper preset (its clustering and estimator in the backbone's space), with ridge codes and small
#: sizes.
CFG = {
    "dataset": "sample",
    "backbone": "dummy",
    "mode": "likelihood",
    "n_runs": 1,
    "budget": 3,
    "retrieval_embedder": "backbone",
    "mdl_scorer": "backbone",
    "test_size": None,
    "clusterer": {"pca_dim": 16, "n_atoms": 8, "dbscan_k": 5, "dbscan_q": 0.1, "coding": "ridge"},
    "selector": {
        "method": ("dpp", "dpp+ucs", "votek+ucs"),
        "params": {b: {"candidate_num": 20} for b in ("topk", "labelaware", "dpp", "mdl")},
    },
    "prior": {"lam": 0.1},
}


def config(settings=None):
    return PipelineConfig.resolve("paper", overrides={**CFG, **(settings or {})})


class Recording(DummyBackbone):
    """Records every text it embeds and every prompt it scores."""

    def __init__(self):
        super().__init__()
        self.embedded, self.prompts = [], []

    def embed(self, texts):
        self.embedded += list(texts)
        return super().embed(texts)

    def score_continuations_detailed(self, prefix, continuations):
        self.prompts.append(prefix)
        return super().score_continuations_detailed(prefix, continuations)


def test_default_grids_are_the_paper_tables():
    q, lam = default_grids()
    assert q == (0.01, 0.1, 0.15, 0.5)
    assert lam == (0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 5.0)


def test_validation_split_is_a_seeded_partition_of_the_pool():
    ds = load_dataset("sample")
    tuned, keep, val = validation_split(ds, 0.2, seed=3)
    assert len(np.intersect1d(keep, val)) == 0 and len(keep) + len(val) == len(ds.pool)
    assert tuned.test.texts == tuple(ds.pool.texts[i] for i in val)
    assert tuned.pool.texts == tuple(ds.pool.texts[i] for i in keep)
    again = validation_split(ds, 0.2, seed=3)[2]
    np.testing.assert_array_equal(val, again)
    with pytest.raises(ValueError, match="val_fraction"):
        validation_split(ds, 1.0)


def test_tune_picks_from_the_grid_and_never_reads_the_test_split(tmp_path):
    ds = load_dataset("sample")
    bb = Recording()
    cfg = config()
    q_grid, lam_grid = (0.05, 0.1, 0.3), (0.0, 0.1, 2.0)
    res = tune(
        cfg,
        tmp_path / "t",
        q_grid=q_grid,
        lam_grid=lam_grid,
        val_fraction=0.2,
        val_seed=1,
        cache_dir=tmp_path / "c",
        dataset=ds,
        backbone=bb,
    )
    assert set(res.chosen["lam_by_selector"]) == {"dpp", "votek"}
    for base in ("dpp", "votek"):
        assert res.chosen["lam_by_selector"][base] in lam_grid
        assert res.chosen["dbscan_q_by_selector"][base] in q_grid
    # λ = 0 once per selector, then every (q, λ > 0)
    assert len(res.grid) == 2 * (1 + 3 * 2)
    best = max(r["accuracy"] for r in res.grid if r["selector"] == "dpp+ucs")
    chosen = [
        r
        for r in res.grid
        if r["selector"] == "dpp+ucs"
        and r["lam"] == res.chosen["lam_by_selector"]["dpp"]
        and (r["lam"] == 0 or r["q"] == res.chosen["dbscan_q_by_selector"]["dpp"])
    ]
    assert chosen[0]["accuracy"] == best
    # the test split is never touched: no test-only text embedded or prompted
    _, keep, val = validation_split(ds, 0.2, seed=1)
    test_only = set(ds.test.texts) - set(ds.pool.texts)
    assert test_only and not test_only & set(bb.embedded)
    assert bb.prompts and not any(t in p for p in bb.prompts for t in test_only)
    val_texts = {ds.pool.texts[i] for i in val}
    queries = {p.rsplit("Text: ", 1)[1].split("\n", 1)[0] for p in bb.prompts}
    assert queries <= val_texts  # every query is a held-out pool item
    # outputs: a configuration ucs evaluate --config consumes
    tuned = PipelineConfig.from_json(tmp_path / "t" / "tuned_config.json")
    assert tuned.lam_by_selector == res.chosen["lam_by_selector"]
    assert json.loads((tmp_path / "t" / "chosen.json").read_text()) == res.chosen
    assert "| q \\ λ |" in (tmp_path / "t" / "tune.md").read_text()
    # resumable and cheap the second time: no model call at all
    bb2 = Recording()
    again = tune(
        cfg,
        tmp_path / "t",
        q_grid=q_grid,
        lam_grid=lam_grid,
        val_fraction=0.2,
        val_seed=1,
        cache_dir=tmp_path / "c",
        dataset=ds,
        backbone=bb2,
    )
    assert again.chosen == res.chosen and not bb2.prompts and not bb2.embedded


def test_ties_go_to_the_default_and_bad_grids_raise(tmp_path):
    rows = [{"q": q, "lam": lam, "accuracy": 0.5} for q in (0.01, 0.1) for lam in (0.0, 0.1, 1.0)]
    assert _choose(rows, 0.01, 0.1) == (0.01, 0.1)
    rows.append({"q": 0.1, "lam": 1.0, "accuracy": 0.6})
    assert _choose(rows, 0.01, 0.1) == (0.1, 1.0)
    assert _choose(
        [{"q": 0.15, "lam": 0.5, "accuracy": 0.5}, {"q": 0.5, "lam": 5.0, "accuracy": 0.5}], 0.01, 0.1
    ) == (0.15, 0.5)
    cfg = config()
    for kw, msg in (
        ({"q_grid": (1.5,)}, "q_grid"),
        ({"lam_grid": (-1.0,)}, "lam_grid"),
        ({"selectors": ["dpp"]}, "UCS methods"),
    ):
        with pytest.raises(ValueError, match=msg):
            tune(cfg, tmp_path / "x", cache_dir=tmp_path / "c", **kw)


def test_tune_variants_chooses_a_whole_setting_on_validation_queries_only(tmp_path):
    from ucs.experiments.tune import parse_variants, tune_variants

    ds = load_dataset("sample")
    bb = Recording()
    cfg = config()
    variants = parse_variants(
        "paper:clusterer.method=dict_dbscan,prior.estimator=paper;km:clusterer.method=kmeans,"
        "prior.estimator=binomial,prior.relevance=candidates,clusterer.n_clusters=6"
    )
    assert variants["km"] == {
        "clusterer.method": "kmeans",
        "prior.estimator": "binomial",
        "prior.relevance": "candidates",
        "clusterer.n_clusters": 6,
    }
    res = tune_variants(
        cfg,
        tmp_path / "v",
        variants,
        val_fraction=0.2,
        val_seed=1,
        cache_dir=tmp_path / "c",
        dataset=ds,
        backbone=bb,
    )
    assert {(r["variant"], r["selector"]) for r in res.grid} == {
        (v, m) for v in ("paper", "km") for m in ("dpp+ucs", "votek+ucs")
    }
    gains = {v: np.mean([r["gain"] for r in res.grid if r["variant"] == v]) for v in ("paper", "km")}
    best = max(gains, key=lambda v: (gains[v], v == "paper"))  # ties go to the earlier variant
    assert (
        res.chosen["variant"] == best and res.config.clusterer["method"] == variants[best]["clusterer.method"]
    )
    for r in res.grid:
        assert r["gain"] == pytest.approx(r["accuracy"] - r["base_accuracy"])
        lo, hi = r["gain_ci"]
        assert lo <= r["gain"] + 1e-12 and r["gain"] - 1e-12 <= hi
    test_only = set(ds.test.texts) - set(ds.pool.texts)
    assert not any(t in p for p in bb.prompts for t in test_only)
    assert PipelineConfig.from_json(tmp_path / "v" / "tuned_config.json") == res.config
    page = (tmp_path / "v" / "variants.md").read_text()
    assert "| **" + best + "** |" in page
    for (
        r
    ) in res.grid:  # the prompts' relevance beside the accuracy, its change paired with the base selector's
        assert 0.0 <= r["same_label"] <= 1.0
        lo, hi = r["same_label_ci"]
        assert lo - 1e-12 <= r["same_label_delta"] <= hi + 1e-12
    assert "relevance of the same prompts" in page and "| km | " in page


def test_tune_variants_against_topk_compares_every_selector_and_names_each_ones_best(tmp_path):
    from ucs.experiments.tune import parse_variants, tune_variants

    ds = load_dataset("sample")
    bb = Recording()
    cfg = config({"selector.method": ("topk", "mmr", "labelaware")})
    variants = parse_variants(
        "base:order=selected;mmr9:selector.params.mmr.lambda_mult=0.9;"
        "cap1:selector.params.labelaware.max_per_label=1,order=similar_last"
    )
    res = tune_variants(
        cfg,
        tmp_path / "v",
        variants,
        val_fraction=0.2,
        val_seed=1,
        cache_dir=tmp_path / "c",
        dataset=ds,
        backbone=bb,
        against="topk",
    )
    assert {(r["variant"], r["selector"]) for r in res.grid} == {
        (v, m) for v in variants for m in ("mmr", "labelaware", "topk")
    }
    for v in variants:  # every variant's criterion is the mean over the same rows (the first's TopK: gain 0)
        gains = [r["gain"] for r in res.grid if r["variant"] == v]
        assert len(gains) == 3 and res.info["mean_gain"][v] == pytest.approx(sum(gains) / 3)
    assert next(r for r in res.grid if r["variant"] == "base" and r["selector"] == "topk")["gain"] == 0.0
    top = {r["base_accuracy"] for r in res.grid}
    assert len(top) == 1  # the reference is TopK as the first variant has it, for every row
    for r in res.grid:
        assert r["gain"] == pytest.approx(r["accuracy"] - r["base_accuracy"])
    assert next(r for r in res.grid if r["variant"] == "mmr9" and r["selector"] == "topk")["gain"] == 0.0
    for m in ("mmr", "labelaware"):
        rows = {r["variant"]: r["gain"] for r in res.grid if r["selector"] == m}
        assert rows[res.chosen["by_method"][m]] == max(rows.values())
    # a setting of one selector leaves the other's prompts alone: same selections, same accuracy
    la = {r["variant"]: r["accuracy"] for r in res.grid if r["selector"] == "labelaware"}
    assert la["base"] == la["mmr9"]
    sel = json.loads((tmp_path / "v" / "variants" / "cap1" / "pipeline" / "config.json").read_text())
    assert sel["selector"]["params"]["labelaware"]["max_per_label"] == 1 and sel["order"] == "similar_last"
    page = (tmp_path / "v" / "variants.md").read_text()
    assert "over `topk`" in page and "best per method: mmr:" in page


def test_tune_variants_against_the_reference_alone_compares_its_own_forms(tmp_path):
    from ucs.experiments.tune import parse_variants, tune_variants

    ds = load_dataset("sample")
    bb = Recording()
    cfg = config({"selector.method": ("topk",)})
    variants = parse_variants("base:order=selected;last:order=similar_last;vote:order=vote_last")
    res = tune_variants(
        cfg,
        tmp_path / "v",
        variants,
        val_fraction=0.2,
        val_seed=1,
        cache_dir=tmp_path / "c",
        dataset=ds,
        backbone=bb,
        against="topk",
    )
    assert [(r["variant"], r["selector"]) for r in res.grid] == [(v, "topk") for v in variants]
    assert res.grid[0]["gain"] == 0.0 and len({r["base_accuracy"] for r in res.grid}) == 1
    for r in res.grid:
        assert r["gain"] == pytest.approx(r["accuracy"] - r["base_accuracy"])
        assert res.info["mean_gain"][r["variant"]] == pytest.approx(r["gain"])
    orders = [
        json.loads((tmp_path / "v" / "variants" / v / "pipeline" / "config.json").read_text())["order"]
        for v in variants
    ]
    assert orders == ["selected", "similar_last", "vote_last"]


@pytest.mark.parametrize("bad", ["", "noname", "x:clusterer.method", ":a=1"])
def test_parse_variants_names_the_fault(bad):
    from ucs.experiments.tune import parse_variants

    with pytest.raises(ValueError, match="variant"):
        parse_variants(bad)
