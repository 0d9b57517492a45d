"""A table's ``split`` column is honoured by the loader and by ``ucs evaluate --dataset FILE``; a separate
test file is given with ``--test-file``."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ucs.cli import app
from ucs.data import load_table

ROWS = [(f"utterance number {i}", "ab"[i % 2], "test" if i % 5 == 0 else "pool") for i in range(100)]


def _write(path, rows, split=True):
    head = "text,label,split\n" if split else "text,label\n"
    path.write_text(
        head + "".join(f"{t},{y},{s}\n" if split else f"{t},{y}\n" for t, y, s in rows), encoding="utf-8"
    )
    return path


def test_the_split_column_is_used_when_present(tmp_path):
    ds = load_table(_write(tmp_path / "t.csv", ROWS))
    assert set(ds.test.texts) == {t for t, _, s in ROWS if s == "test"}
    assert ds.info["split_column"] == "split"
    random_split = load_table(tmp_path / "t.csv", split_column=None)
    assert "split_column" not in random_split.info and len(random_split.test) == 20


def _evaluate(tmp_path, *extra):
    args = [
        "evaluate",
        "--model",
        "dummy",
        "--retrieval",
        "backbone",
        "--test-size",
        "4",
        "--runs",
        "1",
        "--selectors",
        "random",
        "--mode",
        "likelihood",
        "--no-progress",
        "--budget",
        "2",
        *extra,
    ]
    return CliRunner().invoke(app, args, env={"UCS_CACHE_DIR": str(tmp_path / "cache")})


def test_evaluate_honours_the_split_column(tmp_path):
    table = _write(tmp_path / "t.csv", ROWS)
    res = _evaluate(tmp_path, "--dataset", str(table), "--out", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    key = json.loads((tmp_path / "out" / "manifest.json").read_text())["key"]["dataset"]
    assert key["info"]["split_column"] == "split"
    test_texts = {t for t, _, s in ROWS if s == "test"}
    recs = [json.loads(x) for x in (tmp_path / "out" / "records.jsonl").read_text().splitlines()]
    pool = [t for t, _, s in ROWS if s == "pool"]
    assert all(
        pool[i] not in test_texts for r in recs for i in r["selected"]
    )  # demonstrations come from the pool


def test_evaluate_takes_a_separate_test_file(tmp_path):
    pool = _write(tmp_path / "pool.csv", [r for r in ROWS if r[2] == "pool"], split=False)
    test = _write(tmp_path / "test.csv", [r for r in ROWS if r[2] == "test"], split=False)
    res = _evaluate(
        tmp_path, "--dataset", str(pool), "--test-file", str(test), "--out", str(tmp_path / "out")
    )
    assert res.exit_code == 0, res.output
    key = json.loads((tmp_path / "out" / "manifest.json").read_text())["key"]["dataset"]
    assert set(key["source"]) == {"pool.csv", "test.csv"}
