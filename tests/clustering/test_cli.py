from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from ucs.cli import app
from ucs.clustering import LatentClusterer

from ._data import planted


def test_cluster_command_writes_a_loadable_clusterer(tmp_path):
    E, _ = planted(n=150)
    np.save(tmp_path / "E.npy", E)
    res = CliRunner().invoke(
        app,
        [
            "cluster",
            str(tmp_path / "E.npy"),
            str(tmp_path / "out"),
            "--dbscan-k",
            "5",
            "--dbscan-q",
            "0.2",
            "--pca-dim",
            "32",
            "--n-atoms",
            "8",
        ],
    )
    assert res.exit_code == 0, res.output
    c = LatentClusterer.load(tmp_path / "out", E=E)
    assert c.labels_.shape == (150,) and (tmp_path / "out" / "report.md").exists()
    assert (c.dbscan_k, c.dbscan_q) == (5, 0.2) and "deprecated" not in res.output
    bad = CliRunner().invoke(
        app, ["cluster", str(tmp_path / "E.npy"), str(tmp_path / "o2"), "--dbscan-q", "2"]
    )
    assert bad.exit_code == 2 and "dbscan_q" in bad.output


def test_cluster_command_keeps_the_old_q_and_k_spelling_with_a_warning(tmp_path):
    """--q/--k, the earlier spellings of --dbscan-q/--dbscan-k (LatentClusterer's dbscan_q, dbscan_k), still
    work."""
    E, _ = planted(n=150)
    np.save(tmp_path / "E.npy", E)
    res = CliRunner().invoke(
        app,
        [
            "cluster",
            str(tmp_path / "E.npy"),
            str(tmp_path / "out"),
            "--k",
            "5",
            "--q",
            "0.2",
            "--pca-dim",
            "32",
            "--n-atoms",
            "8",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "warning: --q is deprecated: write --dbscan-q 0.2" in res.output
    assert "warning: --k is deprecated: write --dbscan-k 5" in res.output
    c = LatentClusterer.load(tmp_path / "out", E=E)
    assert (c.dbscan_k, c.dbscan_q) == (5, 0.2)
    hidden = CliRunner().invoke(app, ["cluster", "--help"]).output
    assert "--dbscan-q" in hidden and "--q " not in hidden
    both = CliRunner().invoke(
        app, ["cluster", str(tmp_path / "E.npy"), str(tmp_path / "o2"), "--q", "0.2", "--dbscan-q", "0.3"]
    )
    assert both.exit_code == 2 and "--dbscan-q" in both.output and "Traceback" not in both.output


def test_cluster_command_kmeans_with_labels_prints_health(tmp_path):
    E, y = planted(n=200)
    np.save(tmp_path / "E.npy", E)
    np.save(tmp_path / "y.npy", np.array([f"intent_{v}" for v in y]))
    res = CliRunner().invoke(
        app,
        [
            "cluster",
            str(tmp_path / "E.npy"),
            str(tmp_path / "out"),
            "--method",
            "kmeans",
            "--labels",
            str(tmp_path / "y.npy"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "kmeans" in res.output and "health:" in res.output and "label AMI" in res.output
    assert "label AMI" in (tmp_path / "out" / "report.md").read_text()
    np.save(tmp_path / "short.npy", np.arange(5))
    bad = CliRunner().invoke(
        app,
        ["cluster", str(tmp_path / "E.npy"), str(tmp_path / "o2"), "--labels", str(tmp_path / "short.npy")],
    )
    assert bad.exit_code == 2 and "--labels" in bad.output and "Traceback" not in bad.output


def test_cluster_command_warns_about_a_giant(tmp_path):
    E = np.tile(np.array([[1.0, 0.0, 0.0]]), (60, 1)) + np.random.default_rng(0).normal(0, 1e-3, (60, 3))
    np.save(tmp_path / "E.npy", E)
    res = CliRunner().invoke(
        app,
        [
            "cluster",
            str(tmp_path / "E.npy"),
            str(tmp_path / "out"),
            "--method",
            "dbscan",
            "--dbscan-k",
            "5",
            "--dbscan-q",
            "0.9",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "warning: one cluster holds" in res.output
