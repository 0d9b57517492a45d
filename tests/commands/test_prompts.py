"""``ucs prompts``: a table (or a saved index) and a queries file → one JSON line per query with its
demonstrations and prompt; multi-line texts kept; text, chat and Jinja renderings; bad queries one line."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from ucs.cli import app
from ucs.index import SelectorIndex

EXAMPLES = [
    ("where is my card\nit was sent last week", "card_arrival"),
    ("my card has not arrived", "card_arrival"),
    ("how do i top up", "top_up"),
    ("top up by transfer failed", "top_up"),
    ("what is the exchange rate", "exchange_rate"),
    ("rates for euro", "exchange_rate"),
]
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

    index = SelectorIndex(
        load_retrieval_embedder("all-minilm-l6-v2"),
        "topk",
        input_keys=["utterance"],
        output_key="intent",
        cache_dir=files / "c",
    ).fit([{"utterance": t, "intent": y} for t, y in EXAMPLES])
    index.save(files / "ix")
    (files / "t.j2").write_text(
        "{% for d in demonstrations %}{{ d.text }} => {{ d.label }}\n{% endfor %}{{ query }} =>",
        encoding="utf-8",
    )
    runner = CliRunner()
    base = [
        "prompts",
        str(files / "ix"),
        str(files / "q.jsonl"),
        "--query-column",
        "q",
        "--k",
        "3",
        "--embedder",
        "all-minilm-l6-v2",
    ]
    for extra, out in (
        (["--format", "text"], "t.jsonl"),
        (["--format", "chat"], "c.jsonl"),
        (["--template", str(files / "t.j2")], "j.jsonl"),
    ):
        res = runner.invoke(app, [*base, *extra, "--out", str(files / out)])
        assert res.exit_code == 0, res.output
    text, chat, jinja = _lines(files / "t.jsonl"), _lines(files / "c.jsonl"), _lines(files / "j.jsonl")
    assert [r["query"] for r in text] == QUERIES and all(len(r["demonstrations"]) == 3 for r in text)
    expected = index.select(QUERIES[0], k=3)
    assert [d["index"] for d in text[0]["demonstrations"]] == expected.indices.tolist()
    assert "Text: card still missing\nsince monday\nLabel:" in text[0]["prompt"]
    assert chat[0]["messages"][0]["role"] == "system" and chat[0]["messages"][1]["content"].endswith(
        "Text: card still missing\nsince monday\nLabel:"
    )
    assert jinja[0]["prompt"].endswith("card still missing\nsince monday =>")
    shown = [d["text"] for d in text[0]["demonstrations"]]
    assert all(f"{t} => " in jinja[0]["prompt"] for t in shown)


def test_a_table_of_examples_and_bad_queries(files):
    (files / "bad.jsonl").write_text(
        json.dumps({"q": "ok"}) + "\n" + json.dumps({"q": "  "}) + "\n", encoding="utf-8"
    )
    res = CliRunner().invoke(
        app,
        [
            "prompts",
            str(files / "ex.csv"),
            str(files / "bad.jsonl"),
            "--query-column",
            "q",
            "--text-column",
            "utterance",
            "--label-column",
            "intent",
            "--embedder",
            "no-such-dir/",
            "--out",
            str(files / "o.jsonl"),
        ],
    )
    assert res.exit_code == 2 and "Traceback" not in res.output
    res = CliRunner().invoke(
        app, ["prompts", str(files / "ix-missing"), str(files / "q.jsonl"), "--out", str(files / "o.jsonl")]
    )
    assert res.exit_code == 2
    res = CliRunner().invoke(
        app, ["prompts", str(files / "ex.csv"), str(files / "q.jsonl"), "--out", str(files / "o.txt")]
    )
    assert res.exit_code == 2 and "--out" in res.output


@pytest.mark.slow
def test_a_table_with_a_real_embedder(files):
    pytest.importorskip("sentence_transformers")
    (files / "bad.jsonl").write_text(
        json.dumps({"q": "ok"}) + "\n" + json.dumps({"q": "  "}) + "\n", encoding="utf-8"
    )
    args = [
        "prompts",
        str(files / "ex.csv"),
        "--query-column",
        "q",
        "--text-column",
        "utterance",
        "--label-column",
        "intent",
        "--embedder",
        "all-minilm-l6-v2",
        "--k",
        "2",
        "--cache-dir",
        str(files / "c"),
    ]
    res = CliRunner().invoke(
        app, [args[0], args[1], str(files / "q.jsonl"), *args[2:], "--out", str(files / "o.jsonl")]
    )
    assert res.exit_code == 0, res.output
    first = _lines(files / "o.jsonl")[0]
    assert {d["label"] for d in first["demonstrations"]} == {"card_arrival"}  # the two card examples
    res = CliRunner().invoke(
        app, [args[0], args[1], str(files / "bad.jsonl"), *args[2:], "--out", str(files / "b.jsonl")]
    )
    assert (
        res.exit_code == 2 and "line 2: the query is empty" in res.output and not (files / "b.jsonl").exists()
    )


# --- a saved index and the options it would override; templates; queries and --out checked first ---
def _dummy_embedder(monkeypatch):
    """``--embedder NAME`` gives a DummyEmbedder (any name: the CLI plumbing is under test, not retrieval)."""
    from ucs.testing.doubles import DummyEmbedder

    monkeypatch.setattr("ucs.embedding.load_retrieval_embedder", lambda name: DummyEmbedder(dim=16))
    return DummyEmbedder(dim=16)


def _error(res):
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2 and "Traceback" not in res.output and len(lines) == 2, res.output
    return lines[0]


def _table_argv(files, *extra, out="o.jsonl"):
    """``ucs prompts`` over the examples table and q.jsonl, with ``extra`` options."""
    return [
        "prompts",
        str(files / "ex.csv"),
        str(files / "q.jsonl"),
        "--query-column",
        "q",
        "--text-column",
        "utterance",
        "--label-column",
        "intent",
        "--embedder",
        "dummy",
        *extra,
        "--out",
        str(files / out),
    ]


def _saved(files, emb, method="topk"):
    rows = [
        {"utterance": f"example {i} about {w}", "intent": w}
        for i, w in enumerate(["card", "refund", "top up", "rate"] * 10)
    ]
    index = SelectorIndex(emb, method, input_keys=["utterance"], output_key="intent", cache_dir=files / "c")
    index.fit(rows).save(files / "ix")
    return rows


def test_a_saved_index_selects_with_the_method_asked_for(files, monkeypatch):
    emb = _dummy_embedder(monkeypatch)
    rows = _saved(files, emb)
    base = [
        "prompts",
        str(files / "ix"),
        str(files / "q.jsonl"),
        "--query-column",
        "q",
        "--k",
        "5",
        "--embedder",
        "dummy",
    ]
    runs = {}
    own_fields = ["--text-column", "utterance", "--label-column", "intent"]  # the index's own: accepted
    for name, extra in (
        ("own", []),
        ("topk", ["--method", "TopK", *own_fields]),
        ("mmr", ["--method", "mmr"]),
    ):
        res = CliRunner().invoke(app, [*base, *extra, "--out", str(files / f"{name}.jsonl")])
        assert res.exit_code == 0, res.output
        runs[name] = [[d["index"] for d in r["demonstrations"]] for r in _lines(files / f"{name}.jsonl")]
        assert ("the index was saved with topk" in res.output) == (name == "mmr"), res.output
    mmr = SelectorIndex(emb, "mmr", input_keys=["utterance"], output_key="intent", cache_dir=files / "c")
    mmr.fit(rows)
    assert runs["own"] == runs["topk"] != runs["mmr"]  # --method mmr is used, not silently ignored
    assert runs["mmr"] == [s.indices.tolist() for s in mmr.select(QUERIES, k=5)]


@pytest.mark.parametrize(
    "extra, param",
    [
        (["--text-column", "text"], "--text-column"),
        (["--label-column", "label"], "--label-column"),
        (["--cache-dir", "CACHE"], "--cache-dir"),
        (["--method", "nope"], "--method"),
    ],
)
def test_options_a_saved_index_would_override_are_refused(files, monkeypatch, extra, param):
    emb = _dummy_embedder(monkeypatch)
    _saved(files, emb)
    extra = [str(files / "c2") if a == "CACHE" else a for a in extra]
    argv = [
        "prompts",
        str(files / "ix"),
        str(files / "q.jsonl"),
        "--query-column",
        "q",
        "--embedder",
        "dummy",
        *extra,
        "--out",
        str(files / "o.jsonl"),
    ]
    line = _error(CliRunner().invoke(app, argv))
    assert line.startswith(f"Error: {param}:") and not (files / "o.jsonl").exists(), line
    if param.endswith("column"):
        assert "was fitted with field" in line


@pytest.mark.parametrize(
    "source, where, what",
    [
        ("{% for d in demonstrations %}\n{{ d.text }}\n", "line 2", "'endfor'"),  # unclosed loop
        ("Intro\n\n{{ query }\n", "line 3", "unexpected '}'"),
        ("Examples:\n{{ demonstrations|length }} {{ querry }}\n", "line 2", "'querry' is undefined"),
        (
            "{% for d in demonstrations %}\n{{ d.txt }}\n{% endfor %}{{ query }}",
            "line 2",
            "has no attribute 'txt'",
        ),
        ("{{ query + 1 }}", "line 1", "rendering the template"),
    ],
)
def test_a_bad_template_is_one_line_naming_the_file_and_line(files, monkeypatch, source, where, what):
    _dummy_embedder(monkeypatch)
    (files / "t.j2").write_text(source, encoding="utf-8")
    line = _error(CliRunner().invoke(app, _table_argv(files, "--template", str(files / "t.j2"))))
    assert line.startswith("Error: --template:") and f"t.j2, {where}" in line and what in line, line
    assert not (files / "o.jsonl").exists() and not list(files.glob(".o.jsonl*"))


def test_a_template_loops_over_demonstrations_with_attribute_access(files, monkeypatch):
    _dummy_embedder(monkeypatch)
    (files / "t.j2").write_text(
        "{% for d in demonstrations %}{{ loop.index }}. {{ d.text }} => {{ d['label'] }}\n{% endfor %}"
        "({{ labels|join(', ') }}; {{ range(2)|list|length }})\n{{ query }} =>",
        encoding="utf-8",
    )
    res = CliRunner().invoke(app, _table_argv(files, "--k", "2", "--template", str(files / "t.j2")))
    assert res.exit_code == 0, res.output
    first = _lines(files / "o.jsonl")[0]
    d0, d1 = first["demonstrations"]
    assert first["prompt"] == (
        f"1. {d0['text']} => {d0['label']}\n2. {d1['text']} => {d1['label']}\n"
        f"(card_arrival, exchange_rate, top_up; 2)\n{QUERIES[0]} =>"
    )


@pytest.mark.parametrize(
    "name, content, what",
    [
        ("empty.txt", b"", "has no queries"),
        ("blank.jsonl", b"\n\n", "has no queries"),
        (
            "random.txt",
            np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
            "is not UTF-8 text",
        ),
        ("array.txt", None, "is not UTF-8 text"),  # a .npy renamed .txt
        ("random.csv", b"text\n\xff\xfe\x00\x81", "is not UTF-8 text"),
        ("nul.txt", b"first\nsec\x00ond\n", "holds a NUL byte"),
        ("nul.csv", b"text\nab\x00c\n", "holds a NUL byte"),
    ],
)
def test_empty_or_binary_queries_are_refused_naming_the_file(files, monkeypatch, name, content, what):
    _dummy_embedder(monkeypatch)
    path = files / name
    if content is None:
        np.save(files / "a.npy", np.arange(50.0))
        (files / "a.npy").rename(path)
    else:
        path.write_bytes(content)
    argv = _table_argv(files)
    argv[2:5] = [str(path)]  # the queries file, without --query-column
    line = _error(CliRunner().invoke(app, argv))
    assert line.startswith("Error: QUERIES:") and name in line and what in line, line
    assert "--format" not in line and not (files / "o.jsonl").exists()


@pytest.mark.parametrize(
    "out, what",
    [("nosuchdir/p.jsonl", "nosuchdir does not exist"), ("ex.csv/p.jsonl", "ex.csv is a file, not a folder")],
)
def test_an_output_folder_that_is_not_there_names_out_and_the_folder(files, monkeypatch, out, what):
    _dummy_embedder(monkeypatch)
    line = _error(CliRunner().invoke(app, _table_argv(files, out=out)))
    assert line.startswith("Error: --out:") and what in line and ".tmp" not in line, line
