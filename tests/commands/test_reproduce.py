"""``ucs reproduce`` and ``ucs tune`` on the command line (weight-free backbones, the sample dataset)."""

import json

import pytest
from typer.testing import CliRunner

from ucs.cli import app
from ucs.experiments.registry import experiment_names

runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})
TINY = [
    "--set",
    "clusterer.pca_dim=16",
    "--set",
    "clusterer.n_atoms=8",
    "--set",
    "clusterer.dbscan_k=5",
    "--set",
    "clusterer.dbscan_q=0.1",
    "--set",
    "retrieval_embedder=backbone",
    "--set",
    "budget=3",
    *[
        x
        for b in ("topk", "labelaware", "dpp", "mdl")
        for x in ("--set", f"selector.params.{b}.candidate_num=20")
    ],
]


def test_list_shows_every_experiment():
    res = runner.invoke(app, ["reproduce", "--list", "--preset", "cpu"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    for name in experiment_names():
        assert any(line.startswith(name + " ") for line in lines), name
    assert "tab:icl_main_multi_dataset" in res.output and "preset cpu:" in res.output


def test_unknown_names_and_bad_options_exit_2():
    res = runner.invoke(app, ["reproduce", "--only", "main_table,table_99"])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "table_99" in text and "estimator_study" in text  # the list of valid names
    assert runner.invoke(app, ["reproduce", "--list", "--preset", "gpu"]).exit_code == 2
    assert runner.invoke(app, ["reproduce", "--dry-run", "--set", "novalue"]).exit_code == 2
    assert (
        runner.invoke(
            app, ["reproduce", "--dry-run", "--only", "main_table", "--set", "prior.lam=-1"]
        ).exit_code
        == 2
    )
    bad = runner.invoke(app, ["reproduce", "--dry-run", "--only", "main_table", "--set", "prior.lamda=1"])
    assert bad.exit_code == 2 and "--set" in bad.output and "valid keys" in bad.output


def test_dry_run_prints_cells_and_runs_nothing(tmp_path):
    res = runner.invoke(
        app,
        [
            "reproduce",
            "--dry-run",
            "--preset",
            "cpu",
            "--only",
            "sensitivity_budget",
            "--datasets",
            "sample",
            "--work-dir",
            str(tmp_path / "w"),
        ],
    )
    assert res.exit_code == 0, res.output
    for b in (0, 1, 5, 10, 20):
        assert f"sample__smollm2__B{b} " in res.output
    assert (
        "5 cells; at most 1500 ICL prompts" in res.output
    )  # 5 budgets × 2 methods × 3 runs × 50 (all) queries
    assert not (tmp_path / "w").exists()


def test_one_backbone_runs_everything_but_the_joint_dictionary(tmp_path):
    res = runner.invoke(
        app,
        [
            "reproduce",
            "--dry-run",
            "--preset",
            "cpu",
            "--backbones",
            "smollm2",
            "--work-dir",
            str(tmp_path / "w"),
            "--results-dir",
            str(tmp_path / "r"),
        ],
    )
    assert res.exit_code == 0, res.output
    cells = [line.split()[0] for line in res.output.splitlines() if "dir=" in line]
    assert "main_table" in cells and "joint_dictionary" not in cells
    assert "joint_dictionary left out" in " ".join(res.output.split())
    named = runner.invoke(
        app,
        ["reproduce", "--dry-run", "--preset", "cpu", "--backbones", "smollm2", "--only", "joint_dictionary"],
    )
    assert named.exit_code == 2 and "--backbones" in named.output  # asked for by name: refused, with the fix


def test_dry_run_says_which_dataset_cannot_be_loaded(tmp_path):
    res = runner.invoke(
        app,
        [
            "reproduce",
            "--dry-run",
            "--preset",
            "cpu",
            "--only",
            "main_table",
            "--datasets",
            "banking77",
            "--data-dir",
            str(tmp_path / "nowhere"),
            "--work-dir",
            str(tmp_path / "w"),
        ],
    )
    text = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert "an unknown number of texts" in text and "None" not in text
    assert "cannot be loaded" in text and "categories.json" in text


def test_reproduce_one_experiment_then_resume(tmp_path):
    pytest.importorskip("ucs.clustering")
    args = [
        "reproduce",
        "--only",
        "cluster_sizes,ablation_rarity",
        "--preset",
        "cpu",
        "--datasets",
        "sample",
        "--backbones",
        "dummy",
        "--runs",
        "1",
        "--test-size",
        "4",
        "--work-dir",
        str(tmp_path / "w"),
        "--results-dir",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
        *TINY,
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "cluster_sizes:" in res.output and "(computed)" in res.output
    assert (tmp_path / "r" / "cluster_sizes.png").is_file()
    man = json.loads((tmp_path / "r" / "ablation_rarity.manifest.json").read_text())
    assert man["command"] is None or man["command"].startswith("ucs ")
    assert {c["config"]["prior"]["corpus_prior"] for c in man["cells"]} == {
        "good_turing",
        "inverse_size",
        "spectrum_rarity",
    }
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and again.output.count("(all cached)") == 2, again.output


def test_tune_command_writes_a_consumable_configuration(tmp_path):
    pytest.importorskip("ucs.clustering")
    from ucs.pipeline import PipelineConfig

    PipelineConfig.resolve(
        "paper",
        overrides={
            "dataset": "sample",
            "backbone": "dummy",
            "retrieval_embedder": "backbone",
            "budget": 3,
            "mdl_scorer": "backbone",
            "test_size": None,
            "clusterer": {"pca_dim": 16, "n_atoms": 8, "dbscan_k": 5, "dbscan_q": 0.1, "coding": "ridge"},
            "selector.params": {b: {"candidate_num": 20} for b in ("topk", "labelaware", "dpp", "mdl")},
        },
    ).to_json(tmp_path / "base.json")
    res = runner.invoke(
        app,
        [
            "tune",
            "--config",
            str(tmp_path / "base.json"),
            "--selectors",
            "dpp+ucs",
            "--q-grid",
            "0.05,0.2",
            "--lam-grid",
            "0,0.5",
            "--val-fraction",
            "0.2",
            "--limit",
            "6",
            "--out",
            str(tmp_path / "t"),
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert res.exit_code == 0, res.output
    chosen = json.loads((tmp_path / "t" / "chosen.json").read_text())
    assert chosen["lam_by_selector"]["dpp"] in (0.0, 0.5) and chosen["dbscan_q_by_selector"]["dpp"] in (
        0.05,
        0.2,
    )
    ev = runner.invoke(
        app,
        ["evaluate", "--config", str(tmp_path / "t" / "tuned_config.json"), "--out", "x", "--print-config"],
    )
    assert ev.exit_code == 0 and json.loads(ev.output)["lam_by_selector"] == chosen["lam_by_selector"]
    bad = runner.invoke(
        app, ["tune", "--config", str(tmp_path / "base.json"), "--q-grid", "a,b", "--out", "y"]
    )
    assert bad.exit_code == 2


def _reproduce_with_smollm2(tmp_path, only, *args):
    """``ucs reproduce --only ONLY`` on the real SmolLM2 (llama.cpp), 1 run of 2 queries, dirs under
    tmp_path."""
    pytest.importorskip("llama_cpp")
    res = runner.invoke(
        app,
        [
            "reproduce",
            "--only",
            only,
            "--preset",
            "cpu",
            "--backbones",
            "smollm2",
            "--runs",
            "1",
            "--limit",
            "2",
            "--set",
            "engine=llama",
            "--set",
            "retrieval_embedder=backbone",
            *args,
            "--work-dir",
            str(tmp_path / "w"),
            "--results-dir",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
        ],
    )
    assert res.exit_code == 0, res.output
    return res


@pytest.mark.slow
def test_reproduce_coverage_exposure_with_the_real_smollm2(tmp_path):
    _reproduce_with_smollm2(
        tmp_path, "coverage_exposure", "--datasets", "sample", "--selectors", "dpp,dpp+ucs,votek,votek+ucs"
    )
    md = (tmp_path / "r" / "coverage_exposure.md").read_text()
    assert "## sample × `smollm2` (2 queries)" in md and "| dpp+ucs |" in md
    man = json.loads((tmp_path / "r" / "coverage_exposure.manifest.json").read_text())
    cov = man["results"][0]["coverage"]
    assert set(cov) == {"dpp", "dpp+ucs", "votek", "votek+ucs"}
    assert all(1 <= cov[m]["42"]["unique_clusters"] <= 10 for m in cov)  # budget 10, real clusters


@pytest.mark.slow
def test_reproduce_bbeh_table_on_the_real_task_with_the_real_smollm2(tmp_path, shared_data):
    """The BBEH table end to end on a real task file: long reasoning prompts, string answers, MDL and UCS."""
    _reproduce_with_smollm2(
        tmp_path,
        "bbeh_table",
        "--datasets",
        "bbeh_causal_understanding",
        "--selectors",
        "mdl,mdl+ucs,dpp+ucs",
        "--data-dir",
        str(shared_data),
        "--set",
        "budget=2",
        "--set",
        "embed_max_length=64",
    )
    md = (tmp_path / "r" / "bbeh_table.md").read_text()
    assert "bbeh_causal_understanding" in md and "| mdl+ucs |" in md
    man = json.loads((tmp_path / "r" / "bbeh_table.manifest.json").read_text())
    runner_man = man["cells"][0]["runner_manifest"]
    assert runner_man["status"] == "partial" or runner_man["n_records"] == 3 * 2
    recs = [
        json.loads(x)
        for x in (tmp_path / "w").glob("evals/*/records.jsonl").__next__().read_text().splitlines()
    ]
    assert len(recs) == 3 * 2 and all(r["n_demos"] + r["n_dropped"] == 2 for r in recs)
    assert {r["gold"] for r in recs} <= {"Yes", "No", "Ambiguous"} and all(
        r["parsed"] in ("Yes", "No", "Ambiguous") for r in recs
    )
    scores = list((tmp_path / "c" / "scores").glob("*/*.jsonl"))
    assert len(scores) == 1 and len(scores[0].read_text().splitlines()) == 2 * 5  # MDL+UCS reused MDL's


def test_dry_run_names_this_machine_and_the_one_each_page_was_made_on(tmp_path, monkeypatch):
    import ucs.experiments.reproduce as rp

    zen3 = {
        "cpu": "AMD EPYC",
        "cpu_count": 2,
        "cpu_details": {"family": 25, "model": 1, "kernel_flags": ["avx2"]},
    }
    monkeypatch.setattr(rp, "platform_info", lambda: dict(zen3))
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "sensitivity_budget.manifest.json").write_text(
        json.dumps(
            {
                "platform": {
                    "cpu": "AMD EPYC",
                    "cpu_count": 2,
                    "cpu_details": {"family": 25, "model": 17, "kernel_flags": ["avx2", "avx512_bf16"]},
                }
            }
        )
    )
    args = [
        "reproduce",
        "--dry-run",
        "--preset",
        "cpu",
        "--only",
        "sensitivity_budget",
        "--datasets",
        "sample",
        "--work-dir",
        str(tmp_path / "w"),
        "--results-dir",
        str(tmp_path / "r"),
    ]
    res = runner.invoke(app, [*args, "--set", "dtype=bfloat16"])
    assert res.exit_code == 0, res.output
    assert "this machine: AMD EPYC × 2 (family 25 model 1; kernel flags avx2)" in res.output
    assert "bfloat16 is emulated on this CPU" in res.output
    assert (
        "sensitivity_budget.md was made on: AMD EPYC × 2 (family 25 model 17; kernel flags avx2 avx512_bf16)"
        in res.output
        and "— this machine" not in res.output
    )
    (tmp_path / "r" / "sensitivity_budget.manifest.json").write_text(json.dumps({"platform": zen3}))
    res = runner.invoke(app, args)  # float32: nothing to say about bfloat16
    assert "emulated" not in res.output and "— this machine" in res.output
