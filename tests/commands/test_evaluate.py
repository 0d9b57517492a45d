import json

import pytest
from typer.testing import CliRunner

from ucs.cli import app

runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})

SMALL = [
    "--dataset",
    "sample",
    "--model",
    "dummy",
    "--mode",
    "likelihood",
    "--test-size",
    "6",
    "--runs",
    "2",
    "--budget",
    "3",
    "--retrieval",
    "backbone",
    "--no-progress",
]


def test_print_config_resolves_preset_and_options():
    res = runner.invoke(
        app,
        [
            "evaluate",
            "--preset",
            "cpu",
            "--out",
            "x",
            "--lam",
            "0.5",
            "--selectors",
            "dpp,votek_sgt",
            "--lam-by",
            "votek=5",
            "--q-by",
            "dpp=0.1",
            "--print-config",
        ],
    )
    assert res.exit_code == 0, res.output
    cfg = json.loads(res.output)
    assert cfg["preset"] == "cpu" and cfg["test_size"] == 100 and cfg["prior"]["lam"] == 0.5
    assert cfg["selector"]["method"] == ["dpp", "votek+ucs"]
    assert cfg["lam_by_selector"] == {"votek": 5.0} and cfg["dbscan_q_by_selector"] == {"dpp": 0.1}


def test_set_reaches_any_setting_under_the_classes_own_names():
    res = runner.invoke(
        app,
        [
            "evaluate",
            "--out",
            "x",
            "--print-config",
            "--set",
            "selector.params.mmr.lambda_mult=0.8",
            "--set",
            "clusterer.n_atoms=32",
            "--set",
            "prior.estimator=paper",
            "--set",
            "budget=4",
            "--set",
            "selector.method=mmr,topk",
            "--lam",
            "0.3",
            "--set",
            "prior.lam=0.2",
        ],
    )
    assert res.exit_code == 0, res.output
    cfg = json.loads(res.output)
    assert cfg["selector"]["params"]["mmr"] == {"lambda_mult": 0.8, "fetch_k": 20}
    assert cfg["clusterer"]["n_atoms"] == 32 and cfg["prior"]["estimator"] == "paper" and cfg["budget"] == 4
    assert cfg["selector"]["method"] == ["mmr", "topk"]
    assert cfg["prior"]["lam"] == 0.2  # --set comes last


@pytest.mark.parametrize(
    "bad, says",
    [
        (
            "selector.params.mmr.lambda=0.8",
            "selector.params.mmr has no setting 'lambda'; valid keys: block, fetch_k, lambda_mult",
        ),
        ("clusterer.atoms=3", "clusterer has no setting 'atoms'"),
        ("novalue", "expected PATH=VALUE"),
        ("selector.params.mmr.lambda_mult=2", "selector.params.mmr.lambda_mult must be in [0, 1]"),
    ],
)
def test_a_bad_set_exits_2_naming_the_option_and_the_valid_keys(bad, says):
    res = runner.invoke(app, ["evaluate", "--out", "x", "--print-config", "--set", bad])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "--set" in text and says in text and "Traceback" not in text


def test_set_runs_end_to_end(tmp_path):
    pytest.importorskip("ucs.clustering")
    out = tmp_path / "out"
    res = runner.invoke(
        app,
        [
            "evaluate",
            *SMALL,
            "--selectors",
            "mmr,votek",
            "--out",
            str(out),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--set",
            "selector.params.mmr.lambda_mult=0.9",
            "--set",
            "selector.params.votek.k=5",
            "--set",
            "clusterer.n_clusters=6",
        ],
    )
    assert res.exit_code == 0, res.output
    from ucs.pipeline import PipelineConfig

    cfg = PipelineConfig.from_json(out / "pipeline" / "config.json")
    assert cfg.selector_params("mmr")["lambda_mult"] == 0.9 and cfg.selector_params("votek") == {"k": 5}
    key = json.loads((out / "manifest.json").read_text())["key"]["config"]["pipeline"]
    assert (
        key["mmr_lambda"] == 0.9 and key["votek_k"] == 5 and key["n_clusters"] == 6
    )  # the results' flat names
    assert len((out / "records.jsonl").read_text().splitlines()) == 2 * 2 * 6


def test_the_old_flags_and_an_old_flat_config_file_still_work_with_a_note(tmp_path):
    (tmp_path / "old.json").write_text(
        json.dumps({"dataset": "sample", "mmr_lambda": 0.7, "votek_k": 4, "dbscan_q": 0.2}), encoding="utf-8"
    )
    res = runner.invoke(
        app, ["evaluate", "--config", str(tmp_path / "old.json"), "--out", "x", "--print-config"]
    )
    assert res.exit_code == 0, res.output
    assert res.output.count("warning: flat setting names of earlier releases") == 1
    cfg = json.loads(res.output[res.output.index("{") :])
    assert cfg["selector"]["params"]["mmr"]["lambda_mult"] == 0.7 and cfg["clusterer"]["dbscan_q"] == 0.2
    res = runner.invoke(app, ["evaluate", "--out", "x", "--print-config", "--clustering", "dict_dbscan"])
    assert res.exit_code == 0 and "--clustering is deprecated" in res.output
    assert json.loads(res.output[res.output.index("{") :])["clusterer"]["method"] == "dict_dbscan"


def test_config_file_and_bad_values(tmp_path):
    from ucs.pipeline import PipelineConfig

    PipelineConfig(dataset="sample", prior={"lam": 0.3}).to_json(tmp_path / "c.json")
    res = runner.invoke(
        app,
        [
            "evaluate",
            "--config",
            str(tmp_path / "c.json"),
            "--out",
            "x",
            "--print-config",
            "--dataset",
            "sample",
        ],
    )
    assert res.exit_code == 0 and json.loads(res.output)["prior"]["lam"] == 0.3
    for bad in (
        ["--selectors", "kmeans"],
        ["--mode", "nope"],
        ["--lam", "-1"],
        ["--preset", "gpu"],
        ["--lam-by", "votek"],
        ["--config", str(tmp_path / "c.json"), "--preset", "cpu"],
    ):
        res = runner.invoke(app, ["evaluate", "--out", "x", "--print-config", *bad])
        assert res.exit_code == 2, (bad, res.output)


@pytest.mark.parametrize("relevance", ["none", "candidates", "candidates_bonus"])
def test_relevance_option_reaches_the_config(relevance):
    res = runner.invoke(app, ["evaluate", "--out", "x", "--print-config", "--relevance", relevance])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["prior"]["relevance"] == relevance


def test_bad_relevance_names_the_option():
    res = runner.invoke(app, ["evaluate", "--out", "x", "--print-config", "--relevance", "query"])
    assert res.exit_code == 2
    assert "relevance must be one of" in res.output and "candidates_bonus" in res.output


def test_evaluate_writes_results_and_resumes(tmp_path):
    pytest.importorskip("ucs.clustering")
    pytest.importorskip("ucs.selectors")
    out = tmp_path / "out"
    args = [
        "evaluate",
        *SMALL,
        "--selectors",
        "random,dpp,dpp+ucs,votek,votek+ucs",
        "--out",
        str(out),
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    res = runner.invoke(app, [*args, "--limit", "2"])
    assert res.exit_code == 0, res.output
    assert len((out / "records.jsonl").read_text().splitlines()) == 5 * 2 * 2
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "| dpp+ucs |" in res.output and "unique clusters" in res.output
    summary = json.loads((out / "results.json").read_text())
    assert set(summary["methods"]) == {"random", "dpp", "dpp+ucs", "votek", "votek+ucs"}
    assert all(m["complete"] for m in summary["methods"].values())
    n = len((out / "records.jsonl").read_text().splitlines())
    assert n == 5 * 2 * 6
    res = runner.invoke(app, args)  # nothing left to do
    assert res.exit_code == 0 and len((out / "records.jsonl").read_text().splitlines()) == n
    assert (out / "coverage.md").read_text().count("|") > 10


def test_executor_options_are_checked(tmp_path):
    for bad in (["--executor", "spark"], ["--address", "auto"], ["--knn", "annoy"]):
        res = runner.invoke(app, ["evaluate", *SMALL, "--out", str(tmp_path / "o"), *bad])
        assert res.exit_code == 2, (bad, res.output)


def test_an_old_flat_config_file_gives_the_same_records_as_the_nested_one(tmp_path):
    """Item 1 of the renovation: a configuration file of earlier releases (flat names) still runs, and its
    records are those of the same settings in the classes' own names, line for line. What a flat file left
    out keeps the meaning it had then: the paper's clustering and estimator on the backbone's embeddings."""
    pytest.importorskip("ucs.clustering")
    files = {
        "flat": {"dataset": "sample", "mmr_lambda": 0.9, "votek_k": 5, "n_clusters": 6, "lam": 0.3},
        "nested": {
            "dataset": "sample",
            "cluster_space": "backbone",
            "selector": {"params": {"mmr": {"lambda_mult": 0.9}, "votek": {"k": 5}}},
            "clusterer": {"method": "dict_dbscan", "n_clusters": 6},
            "prior": {"lam": 0.3, "estimator": "paper"},
        },
    }
    records, keys = {}, {}
    for name, settings in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(settings), encoding="utf-8")
        out = tmp_path / name
        res = runner.invoke(
            app,
            [
                "evaluate",
                "--config",
                str(tmp_path / f"{name}.json"),
                *SMALL,
                "--selectors",
                "mmr,votek,votek+ucs",
                "--out",
                str(out),
                "--cache-dir",
                str(tmp_path / f"cache_{name}"),
            ],
        )
        assert res.exit_code == 0, res.output
        assert ("flat setting names of earlier releases" in res.output) == (name == "flat")
        records[name] = (out / "records.jsonl").read_text(encoding="utf-8").splitlines()
        keys[name] = json.loads((out / "manifest.json").read_text())["key"]
    assert len(records["flat"]) == 3 * 2 * 6 and records["flat"] == records["nested"]
    assert keys["flat"] == keys["nested"] and keys["flat"]["config"]["pipeline"]["mmr_lambda"] == 0.9
