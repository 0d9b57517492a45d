"""Messages that used to be cryptic: an id too large for int64 (printed as −9223372036854775808), a one-row
pool ("E has 1 rows"), an unknown retrieval embedder blamed on --model."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from ucs.cli import app


def test_an_id_too_large_for_int64_is_named_not_wrapped(tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("0\n1\n2\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["coverage", "--clusters", str(ids), "--subset", "0,99999999999999999999"])
    assert res.exit_code == 2 and "--subset contains 100000000000000000000, too large for an id" in res.output
    assert "-9223372036854775808" not in res.output
    big = tmp_path / "big.npy"
    np.save(big, np.array([0.0, 1e30, 2.0]))
    res = CliRunner().invoke(app, ["coverage", "--clusters", str(big), "--subset", "0,1"])
    assert (
        res.exit_code == 2
        and "too large for an id" in res.output
        and "-9223372036854775808" not in res.output
    )


def test_a_one_item_pool_says_what_is_needed():
    from ucs.clustering import LatentClusterer

    with pytest.raises(ValueError, match=r"E has 1 row \(one per item\); at least 2 items are needed"):
        LatentClusterer(method="kmeans").fit(np.ones((1, 4)))


def test_an_unknown_retrieval_embedder_names_retrieval(tmp_path):
    pytest.importorskip("sentence_transformers")
    res = CliRunner(env={"HF_HUB_OFFLINE": "1"}).invoke(
        app,
        [
            "evaluate",
            "--dataset",
            "sample",
            "--model",
            "dummy",
            "--retrieval",
            "no-such-embedder",
            "--test-size",
            "2",
            "--runs",
            "1",
            "--selectors",
            "topk",
            "--out",
            str(tmp_path / "o"),
            "--cache-dir",
            str(tmp_path / "c"),
            "--no-progress",
        ],
    )
    assert res.exit_code == 2, res.output
    assert "Error: --retrieval: cannot load 'no-such-embedder' as the retrieval embedder" in res.output
    assert "Traceback" not in res.output
