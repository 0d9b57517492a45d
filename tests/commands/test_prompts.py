"""``ucs prompts``: a table (or a saved index) and a queries file → one JSON line per query with its
demonstrations and prompt; multi-line texts kept; text, chat and Jinja renderings; bad queries one line."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from ucs.cli import app
from ucs.index import SelectorIndex

EXAMPLES = [("where is my card\nit was sent last week", "card_arrival"), ("my card has not arrived", "card_arrival"),
            ("how do i top up", "top_up"), ("top up by transfer failed", "top_up"),
            ("what is the exchange rate", "exchange_rate"), ("rates for euro", "exchange_rate")]
QUERIES = ["card still missing\nsince monday", "exchange rate today?", "top up please"]


@pytest.fixture
def files(tmp_path):
    with open(tmp_path / "ex.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["utterance", "intent"])
        w.writerows(EXAMPLES)
    (tmp_path / "q.jsonl").write_text("".join(json.dumps({"q": q}) + "\n" for q in QUERIES), encoding="utf-8")
    return tmp_path


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_a_saved_index_and_multi_line_queries_in_text_chat_and_jinja(files):
    pytest.importorskip("sentence_transformers")
    from ucs.embedding import load_retrieval_embedder

    index = SelectorIndex(load_retrieval_embedder("all-minilm-l6-v2"), "topk", input_keys=["utterance"], output_key="intent",
                          cache_dir=files / "c").fit([{"utterance": t, "intent": y} for t, y in EXAMPLES])
    index.save(files / "ix")
    (files / "t.j2").write_text("{% for d in demonstrations %}{{ d.text }} => {{ d.label }}\n{% endfor %}"
                                "{{ query }} =>", encoding="utf-8")
    runner = CliRunner()
    base = ["prompts", str(files / "ix"), str(files / "q.jsonl"), "--query-column", "q", "--k", "3", "--embedder",
            "all-minilm-l6-v2"]
    for extra, out in ((["--format", "text"], "t.jsonl"), (["--format", "chat"], "c.jsonl"),
                       (["--template", str(files / "t.j2")], "j.jsonl")):
        res = runner.invoke(app, [*base, *extra, "--out", str(files / out)])
        assert res.exit_code == 0, res.output
    text, chat, jinja = _lines(files / "t.jsonl"), _lines(files / "c.jsonl"), _lines(files / "j.jsonl")
    assert [r["query"] for r in text] == QUERIES and all(len(r["demonstrations"]) == 3 for r in text)
    expected = index.select(QUERIES[0], k=3)
    assert [d["index"] for d in text[0]["demonstrations"]] == expected.indices.tolist()
    assert "Text: card still missing\nsince monday\nLabel:" in text[0]["prompt"]
    assert chat[0]["messages"][0]["role"] == "system" and chat[0]["messages"][1]["content"].endswith(
        "Text: card still missing\nsince monday\nLabel:")
    assert jinja[0]["prompt"].endswith("card still missing\nsince monday =>")
    shown = [d["text"] for d in text[0]["demonstrations"]]
    assert all(f"{t} => " in jinja[0]["prompt"] for t in shown)


def test_a_table_of_examples_and_bad_queries(files):
    (files / "bad.jsonl").write_text(json.dumps({"q": "ok"}) + "\n" + json.dumps({"q": "  "}) + "\n",
                                     encoding="utf-8")
    res = CliRunner().invoke(app, ["prompts", str(files / "ex.csv"), str(files / "bad.jsonl"), "--query-column", "q",
                                   "--text-column", "utterance", "--label-column", "intent", "--embedder",
                                   "no-such-dir/", "--out", str(files / "o.jsonl")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    res = CliRunner().invoke(app, ["prompts", str(files / "ix-missing"), str(files / "q.jsonl"),
                                   "--out", str(files / "o.jsonl")])
    assert res.exit_code == 2
    res = CliRunner().invoke(app, ["prompts", str(files / "ex.csv"), str(files / "q.jsonl"), "--out",
                                   str(files / "o.txt")])
    assert res.exit_code == 2 and "--out" in res.output


@pytest.mark.slow
def test_a_table_with_a_real_embedder(files):
    pytest.importorskip("sentence_transformers")
    (files / "bad.jsonl").write_text(json.dumps({"q": "ok"}) + "\n" + json.dumps({"q": "  "}) + "\n",
                                     encoding="utf-8")
    args = ["prompts", str(files / "ex.csv"), "--query-column", "q", "--text-column", "utterance", "--label-column",
            "intent", "--embedder", "all-minilm-l6-v2", "--k", "2", "--cache-dir", str(files / "c")]
    res = CliRunner().invoke(app, [args[0], args[1], str(files / "q.jsonl"), *args[2:], "--out", str(files / "o.jsonl")])
    assert res.exit_code == 0, res.output
    first = _lines(files / "o.jsonl")[0]
    assert {d["label"] for d in first["demonstrations"]} == {"card_arrival"}  # the two card examples
    res = CliRunner().invoke(app, [args[0], args[1], str(files / "bad.jsonl"), *args[2:], "--out", str(files / "b.jsonl")])
    assert res.exit_code == 2 and "line 2: the query is empty" in res.output and not (files / "b.jsonl").exists()
