"""``ucs compare --mode generate --metric …`` end to end through the CLI: written answers scored beside the
copy baseline, recorded and resumed. The model is ucs.testing's weight-free double (``--model dummy``: its
answers are ``answer_<hash>``) and the retrieval embedder its hash-seeded one: these tests check the
orchestration, not any score; SmolLM2 writing real parses is tests/experiments/test_compare_generate.py's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ucs.cli import app
from ucs.testing.doubles import DummyEmbedder


@pytest.fixture(autouse=True)
def _hash_embedder(monkeypatch, tmp_path):
    import ucs.embedding

    monkeypatch.setattr(
        ucs.embedding, "load_retrieval_embedder", lambda name="x", **kw: DummyEmbedder(dim=16)
    )
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UCS_DEBUG", raising=False)


def _table(path: Path, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "label"])
        w.writerows(rows)
    return path


def _parses(n: int = 16):
    return [(f"wake me up at {i} am", f"alarm_set(time={i} am)") for i in range(n)]


def _compare(*args):
    return CliRunner().invoke(app, ["compare", "--model", "dummy", "--k", "2", "--yes", *map(str, args)])


def _records(folder: Path):
    return [json.loads(x) for x in (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()]


def test_generate_mode_runs_records_the_written_answers_and_the_copy_and_resumes(tmp_path):
    table = _table(tmp_path / "parse.csv", _parses())  # every answer distinct: allowed in generate mode
    args = [
        table,
        "--mode",
        "generate",
        "--metric",
        "f1",
        "--queries",
        "4",
        "--selectors",
        "topk,random",
        "--out",
        tmp_path / "o",
    ]
    res = _compare(*args)
    assert res.exit_code == 0, res.output
    assert "tokens generated in each, scored with f1" in res.output and "labels scored" not in res.output
    records = _records(tmp_path / "o")
    assert records and {r["query"] for r in records} == set(range(4))
    answers = dict(_parses())
    for r in records:
        assert r["prediction"].startswith("answer_")  # the double's written answer, recorded
        assert r["score"] == 0.0 and r["correct"] is False  # it shares no word with a parse
        assert (
            r["copy"] in answers.values() and 0.0 < r["copy_score"] <= 1.0
        )  # "alarm_set", "time", "am" shared
    md = (tmp_path / "o" / "compare.md").read_text(encoding="utf-8")
    assert "f1 score %" in md and "copy %" in md and "model − copy" in md and "no-LM vote" not in md
    html = (tmp_path / "o" / "compare.html").read_text(encoding="utf-8")
    assert "answer_" in html and "copy: <q>alarm_set(time=" in html  # the written answer and the copied one
    again = _compare(*args)  # the same command: everything is answered
    assert again.exit_code == 0, again.output
    assert "cost: 0 prompts" in again.output and _records(tmp_path / "o") == records


def test_another_metric_or_likelihood_mode_is_refused_on_a_generated_folder(tmp_path):
    table = _table(tmp_path / "parse.csv", _parses())
    out = tmp_path / "o"
    assert (
        _compare(table, "--mode", "generate", "--queries", "3", "--selectors", "topk", "--out", out).exit_code
        == 0
    )
    before = (out / "records.jsonl").read_bytes()
    for extra in (["--mode", "generate", "--metric", "f1"], []):
        res = _compare(table, "--queries", "3", "--selectors", "topk", "--out", out, *extra)
        assert res.exit_code == 2 and "--out" in res.output and "Traceback" not in res.output, res.output
    assert (out / "records.jsonl").read_bytes() == before


def test_json_answers_with_the_json_metric(tmp_path):
    rows = [
        (f"wake me up at {i} am", json.dumps({"intent": "alarm_set", "slots": {"time": f"{i} am"}}))
        for i in range(12)
    ]
    table = _table(tmp_path / "json.csv", rows)
    res = _compare(
        table,
        "--mode",
        "generate",
        "--metric",
        "json",
        "--queries",
        "3",
        "--selectors",
        "topk",
        "--out",
        tmp_path / "o",
    )
    assert res.exit_code == 0, res.output
    for r in _records(tmp_path / "o"):
        assert r["score"] == 0.0  # the double's answer is not JSON
        assert r["copy_score"] == pytest.approx(0.5)  # the copied parse: the intent right, the time wrong


def test_a_table_whose_answers_are_all_the_same_is_refused_in_generate_mode(tmp_path):
    table = _table(tmp_path / "same.csv", [(f"text {i}", "x()") for i in range(8)])
    res = _compare(table, "--mode", "generate", "--queries", "2", "--out", tmp_path / "o")
    assert res.exit_code == 2 and "EXAMPLES" in res.output and not (tmp_path / "o").exists()
