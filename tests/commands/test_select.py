"""``ucs select`` end to end on small saved embeddings."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from ucs.cli import app
from ucs.selectors import DPPSelector, UCSPrior


def test_select_command_writes_json_with_texts(tmp_path):
    rng = np.random.default_rng(0)
    pool, queries, ids = rng.normal(size=(40, 8)), rng.normal(size=(3, 8)), rng.integers(0, 6, 40)
    np.save(tmp_path / "pool.npy", pool)
    np.save(tmp_path / "q.npy", queries)
    np.save(tmp_path / "ids.npy", ids)
    (tmp_path / "texts.txt").write_text("\n".join(f"text {i}" for i in range(40)), encoding="utf-8")
    out = tmp_path / "sel.json"
    res = CliRunner().invoke(
        app,
        [
            "select",
            "--pool",
            str(tmp_path / "pool.npy"),
            "--queries",
            str(tmp_path / "q.npy"),
            "--method",
            "dpp",
            "--budget",
            "4",
            "--cluster-ids",
            str(tmp_path / "ids.npy"),
            "--lam",
            "0.5",
            "--pool-texts",
            str(tmp_path / "texts.txt"),
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    obj = json.loads(out.read_text())
    want = DPPSelector(prior=UCSPrior(ids, lam=0.5)).fit(pool).select(queries, 4).indices
    assert obj["indices"] == want.tolist()
    assert obj["records"][0]["text"] == f"text {want[0, 0]}"


def test_select_command_rejects_unknown_method(tmp_path):
    np.save(tmp_path / "pool.npy", np.ones((3, 2)))
    res = CliRunner().invoke(app, ["select", "--pool", str(tmp_path / "pool.npy"), "--method", "nope"])
    assert res.exit_code != 0


def test_select_and_distributed_select_use_the_same_default_lambda(tmp_path):
    """Unset ``--lam`` means the prior's own default in both commands: the same selections, and not the base
    selector's (λ = 0 would leave the coverage term out)."""
    rng = np.random.default_rng(1)
    pool, queries, ids = rng.normal(size=(60, 8)), rng.normal(size=(5, 8)), rng.integers(0, 12, 60)
    for name, arr in (("pool", pool), ("q", queries), ("ids", ids)):
        np.save(tmp_path / f"{name}.npy", arr)
    args = [
        "--pool",
        str(tmp_path / "pool.npy"),
        "--queries",
        str(tmp_path / "q.npy"),
        "--method",
        "dpp",
        "--budget",
        "4",
        "--cluster-ids",
        str(tmp_path / "ids.npy"),
    ]
    runner = CliRunner()
    one = runner.invoke(app, ["select", *args, "--out", str(tmp_path / "a.json")])
    many = runner.invoke(app, ["distributed", "select", *args, "--out", str(tmp_path / "b.json")])
    assert one.exit_code == 0 and many.exit_code == 0, one.output + many.output
    a = json.loads((tmp_path / "a.json").read_text())["indices"]
    b = json.loads((tmp_path / "b.json").read_text())["indices"]
    assert a == b == DPPSelector(prior=UCSPrior(ids)).fit(pool).select(queries, 4).indices.tolist()
    base = DPPSelector().fit(pool).select(queries, 4).indices.tolist()
    assert a != base, "the default λ should change some selection on these data"


def test_select_cover_writes_the_fixed_medoid_set_and_needs_cluster_ids(tmp_path):
    from ucs.selectors import CoverSelector

    rng = np.random.default_rng(2)
    pool, ids = rng.normal(size=(30, 5)), rng.integers(0, 4, 30)
    np.save(tmp_path / "pool.npy", pool)
    np.save(tmp_path / "ids.npy", ids)
    args = ["select", "--pool", str(tmp_path / "pool.npy"), "--method", "cover", "--budget", "3"]
    res = CliRunner().invoke(
        app, [*args, "--cluster-ids", str(tmp_path / "ids.npy"), "--out", str(tmp_path / "c.json")]
    )
    assert res.exit_code == 0, res.output
    want = CoverSelector().fit(pool, cluster_ids=ids).select(None, 3).indices
    assert json.loads((tmp_path / "c.json").read_text())["indices"] == want.tolist()
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "--cluster-ids" in res.output and "Traceback" not in res.output
