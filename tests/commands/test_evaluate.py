import json

import pytest
from typer.testing import CliRunner

from ucs.cli import app

runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})

SMALL = ["--dataset", "sample", "--model", "dummy", "--mode", "likelihood", "--test-size", "6", "--runs", "2",
         "--budget", "3", "--retrieval", "backbone", "--no-progress"]


def test_print_config_resolves_preset_and_options():
    res = runner.invoke(app, ["evaluate", "--preset", "cpu", "--out", "x", "--lam", "0.5", "--selectors", "dpp,votek_sgt",
                              "--lam-by", "votek=5", "--q-by", "dpp=0.1", "--print-config"])
    assert res.exit_code == 0, res.output
    cfg = json.loads(res.output)
    assert cfg["preset"] == "cpu" and cfg["test_size"] == 100 and cfg["lam"] == 0.5
    assert cfg["selectors"] == ["dpp", "votek+ucs"]
    assert cfg["lam_by_selector"] == {"votek": 5.0} and cfg["dbscan_q_by_selector"] == {"dpp": 0.1}


def test_config_file_and_bad_values(tmp_path):
    from ucs.pipeline import PipelineConfig

    PipelineConfig(dataset="sample", lam=0.3).to_json(tmp_path / "c.json")
    res = runner.invoke(app, ["evaluate", "--config", str(tmp_path / "c.json"), "--out", "x", "--print-config",
                              "--dataset", "sample"])
    assert res.exit_code == 0 and json.loads(res.output)["lam"] == 0.3
    for bad in (["--selectors", "kmeans"], ["--mode", "nope"], ["--lam", "-1"], ["--preset", "gpu"],
                ["--lam-by", "votek"], ["--config", str(tmp_path / "c.json"), "--preset", "cpu"]):
        res = runner.invoke(app, ["evaluate", "--out", "x", "--print-config", *bad])
        assert res.exit_code == 2, (bad, res.output)


@pytest.mark.parametrize("relevance", ["none", "candidates", "candidates_bonus"])
def test_relevance_option_reaches_the_config(relevance):
    res = runner.invoke(app, ["evaluate", "--out", "x", "--print-config", "--relevance", relevance])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["relevance"] == relevance


def test_bad_relevance_names_the_option():
    res = runner.invoke(app, ["evaluate", "--out", "x", "--print-config", "--relevance", "query"])
    assert res.exit_code == 2
    assert "relevance must be one of" in res.output and "candidates_bonus" in res.output


def test_evaluate_writes_results_and_resumes(tmp_path):
    pytest.importorskip("ucs.clustering")
    pytest.importorskip("ucs.selectors")
    out = tmp_path / "out"
    args = ["evaluate", *SMALL, "--selectors", "random,dpp,dpp+ucs,votek,votek+ucs", "--out", str(out),
            "--cache-dir", str(tmp_path / "cache")]
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
