import json

import numpy as np
from typer.testing import CliRunner

from ucs.cli import app
from ucs.clustering import LatentClusterer
from ucs.clustering.synthetic import make_planted_embeddings
from ucs.utils.io import atomic_save_npy, load_npy

runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})


def test_cluster_then_select_locally(tmp_path):
    E, _ = make_planted_embeddings(600, 48, 20, random_state=0)
    atomic_save_npy(tmp_path / "E.npy", E)
    res = runner.invoke(
        app,
        [
            "distributed",
            "cluster",
            str(tmp_path / "E.npy"),
            str(tmp_path / "c"),
            "--dbscan-q",
            "0.2",
            "--dbscan-k",
            "10",
            "--pca-dim",
            "16",
            "--n-atoms",
            "8",
            "--shard-size",
            "250",
        ],
    )
    assert res.exit_code == 0, res.output
    labels = load_npy(tmp_path / "c" / "labels.npy")
    ref = LatentClusterer(dbscan_q=0.2, dbscan_k=10, pca_dim=16, n_atoms=8, random_state=0).fit(E).labels_
    np.testing.assert_array_equal(labels, ref)
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["n_clusters"] == int(ref.max()) + 1 and summary["knn_exact"]

    atomic_save_npy(tmp_path / "Q.npy", E[:30] + 0.01)
    res = runner.invoke(
        app,
        [
            "distributed",
            "select",
            "--pool",
            str(tmp_path / "E.npy"),
            "--queries",
            str(tmp_path / "Q.npy"),
            "--cluster-ids",
            str(tmp_path / "c" / "labels.npy"),
            "--method",
            "topk",
            "--budget",
            "4",
            "--batch-size",
            "7",
            "--out",
            str(tmp_path / "sel.json"),
        ],
    )
    assert res.exit_code == 0, res.output
    got = json.loads((tmp_path / "sel.json").read_text())
    assert np.asarray(got["indices"]).shape == (30, 4)


def test_bad_options(tmp_path):
    atomic_save_npy(tmp_path / "E.npy", np.zeros((5, 3), dtype=np.float32))
    res = runner.invoke(
        app, ["distributed", "cluster", str(tmp_path / "E.npy"), str(tmp_path / "c"), "--executor", "spark"]
    )
    assert res.exit_code != 0 and "executor" in res.output
    res = runner.invoke(app, ["distributed", "cluster", str(tmp_path / "E.npy"), str(tmp_path / "c")])
    assert res.exit_code == 2 and "dbscan_k" in res.output
