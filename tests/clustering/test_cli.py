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
        app, ["cluster", str(tmp_path / "E.npy"), str(tmp_path / "out"), "--k", "5", "--q", "0.2", "--pca-dim", "32", "--n-atoms", "8"]
    )
    assert res.exit_code == 0, res.output
    c = LatentClusterer.load(tmp_path / "out", E=E)
    assert c.labels_.shape == (150,) and (tmp_path / "out" / "report.md").exists()
    bad = CliRunner().invoke(app, ["cluster", str(tmp_path / "E.npy"), str(tmp_path / "o2"), "--q", "2"])
    assert bad.exit_code == 2 and "dbscan_q" in bad.output
