import json

import numpy as np
from typer.testing import CliRunner

from ucs import __version__
from ucs.cli import app

runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})


def test_version_and_help():
    assert runner.invoke(app, ["--version"]).output.strip() == f"ucs {__version__}"
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0 and "coverage" in res.output


def test_demo_reproduces_the_spec_table():
    res = runner.invoke(app, ["coverage", "--demo", "--estimator", "paper", "--integer", "--json"])
    assert res.exit_code == 0, res.output
    phis = [case["rows"][0]["phi"] for case in json.loads(res.output)]
    assert phis == [58, 26, 126, 753, 5556, 3]


def test_npy_and_text_files(tmp_path):
    ids = np.array([0, 0, 1, 2, 2, 2])
    np.save(tmp_path / "ids.npy", ids)
    (tmp_path / "ids.txt").write_text("\n".join(map(str, ids)) + "\n")
    outs = []
    for name in ("ids.npy", "ids.txt"):
        res = runner.invoke(
            app, ["coverage", "--clusters", str(tmp_path / name), "--subset", "0,2,3", "--json"]
        )
        assert res.exit_code == 0, res.output
        rows = json.loads(res.output)[0]["rows"]
        assert {r["estimator"] for r in rows} == {
            "paper",
            "poisson",
            "binomial",
            "efron_thisted",
            "good_toulmin",
            "chao1",
        }
        outs.append(rows)
    assert outs[0] == outs[1]
    assert outs[0][0]["k_seen"] == 3


def test_bad_input_is_reported(tmp_path):
    np.save(tmp_path / "ids.npy", np.array([0, 1, 2]))
    res = runner.invoke(app, ["coverage", "--clusters", str(tmp_path / "ids.npy"), "--subset", "0,9"])
    assert res.exit_code != 0 and "--subset" in res.output
    res = runner.invoke(app, ["coverage", "--clusters", str(tmp_path / "missing.npy"), "--subset", "0"])
    assert res.exit_code != 0 and "does not exist" in res.output
    res = runner.invoke(app, ["coverage", "--demo", "--t", "0"])
    assert res.exit_code != 0 and "t (the expansion factor" in res.output
