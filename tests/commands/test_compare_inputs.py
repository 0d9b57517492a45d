"""``ucs compare`` on a new user's mistakes: one label, queries copied from the examples, an output folder of
another command or of another seed, blank texts. Each is refused before anything is written (exit 2, the
parameter named, the file and line of a bad row) or, for copies, counted, warned about and never shown to the
query. The model is ucs.testing's weight-free double (``--model dummy``) and the retrieval embedder its
hash-seeded one: these tests check the command's handling of its inputs, not any accuracy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ucs.cli import app
from ucs.testing.doubles import DummyEmbedder

LABELS = ("card", "loan", "fee")


@pytest.fixture(autouse=True)
def _hash_embedder(monkeypatch, tmp_path):
    """Every ``--embedder`` is the hash-seeded double (equal texts embed equally, so TopK ranks a copy
    first)."""
    import ucs.embedding

    monkeypatch.setattr(
        ucs.embedding, "load_retrieval_embedder", lambda name="x", **kw: DummyEmbedder(dim=16)
    )
    monkeypatch.setenv("UCS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UCS_DEBUG", raising=False)


def _csv(path: Path, rows) -> Path:
    path.write_text("text,label\n" + "".join(f"{t},{y}\n" for t, y in rows), encoding="utf-8")
    return path


def _examples(n: int = 12):
    return [(f"question number {i} about my {LABELS[i % 3]}", LABELS[i % 3]) for i in range(n)]


def _compare(*args) -> "object":
    return CliRunner().invoke(app, ["compare", "--model", "dummy", "--k", "2", "--yes", *map(str, args)])


def _refused(res, *needles: str) -> None:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and (res.exception is None or isinstance(res.exception, SystemExit))
    for n in needles:
        assert n.lower() in res.output.lower(), f"{n!r} not in:\n{res.output}"


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_table_of_one_label_is_refused_before_anything_is_written(tmp_path):
    table = _csv(tmp_path / "one.csv", [(f"text {i}", "card") for i in range(10)])
    res = _compare(table, "--queries", "4", "--out", tmp_path / "o")
    _refused(res, "EXAMPLES", "one distinct label", "'label'", "at least two labels")
    assert not (tmp_path / "o").exists()


def test_queries_copied_from_the_examples_are_counted_warned_and_never_offered_their_own_text(tmp_path):
    examples = _examples(12)
    table = _csv(tmp_path / "ex.csv", examples)
    test = _csv(
        tmp_path / "test.csv",
        [
            examples[1],
            examples[5],
            ("A fresh QUESTION about my loan!", "loan"),
            ("a fresh question about my loan", "loan"),
        ],
    )
    table.write_text(table.read_text() + "a fresh question about my loan,loan\n", encoding="utf-8")
    res = _compare(
        table, "--test-file", test, "--queries", "4", "--selectors", "topk,random", "--out", tmp_path / "o"
    )
    assert res.exit_code == 0, res.output
    assert "warning: 4 of 4 held-out queries are also among the examples (3 exactly" in res.output
    meta = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert meta["queries_in_examples"] == {"exact": 3, "normalized": 4}
    pool = [t for t, _ in examples] + ["a fresh question about my loan"]
    queries = [r.split(",")[0] for r in test.read_text().splitlines()[1:]]
    records = [json.loads(line) for line in (tmp_path / "o" / "records.jsonl").read_text().splitlines()]
    topk = [r for r in records if r["method"] == "topk:2:selected"]  # the reference: every query, both parts
    assert len(topk) == 4
    for r in topk:
        assert queries[r["query"]] not in [pool[i] for i in r["selected"]], r
    # the normalised copy is no exact copy: it may be (and with a hash embedder of equal words, is not)
    # excluded
    assert len({i for r in topk for i in r["selected"]}) >= 2


def test_the_library_never_offers_a_query_its_own_text(tmp_path):
    from ucs import compare

    examples = [{"text": t, "label": y} for t, y in _examples(12)]
    seen = []

    def predictor(text, demos):
        seen.append((text, [d["text"] for d in demos]))
        return demos[0]["label"]

    with pytest.warns(UserWarning, match="2 of 2 held-out queries are also among the examples"):
        res = compare(
            examples,
            predictor,
            queries=[examples[0], examples[4]],
            selectors=["topk"],
            k=3,
            embedder=DummyEmbedder(dim=16),
        )
    assert res.info["queries_in_examples"] == {"exact": 2, "normalized": 2}
    # two cells (topk:3:selected, the reference, and topk:3:vote_last) on the validation query, then the
    # validated cell and the reference (one cell, or two) on the test query
    assert len(seen) in (3, 4) and all(text not in demos and len(demos) == 3 for text, demos in seen)


def test_out_holding_another_commands_run_is_refused_untouched(tmp_path):
    table = _csv(tmp_path / "ex.csv", _examples(12))
    other = tmp_path / "evaluated"
    other.mkdir()
    (other / "manifest.json").write_text('{"key": {}}', encoding="utf-8")
    (other / "records.jsonl").write_text('{"method": "dpp", "seed": 42, "query": 0, "correct": true}\n')
    before = _tree(other)
    res = _compare(table, "--queries", "4", "--out", other)
    _refused(res, "--out", "holds a run of ucs evaluate", "choose another folder")
    assert _tree(other) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes\n", encoding="utf-8")
    _refused(_compare(table, "--queries", "4", "--out", mine), "--out", "not a comparison")
    assert _tree(mine) == {"notes.txt": b"my notes\n"}


def test_evaluate_into_a_comparison_folder_is_refused_untouched(tmp_path):
    table = _csv(tmp_path / "ex.csv", _examples(12))
    out = tmp_path / "o"
    assert _compare(table, "--queries", "4", "--selectors", "topk", "--out", out).exit_code == 0
    before = _tree(out)
    res = CliRunner().invoke(
        app,
        ["evaluate", "--model", "dummy", "--retrieval", "backbone", "--dataset", "sample", "--out", str(out)],
    )
    _refused(res, "--out", "another kind of run", "ucs compare", "choose another folder")
    assert _tree(out) == before


def test_another_seed_is_refused_naming_the_seed_and_fresh_starts_over(tmp_path):
    table = _csv(tmp_path / "ex.csv", _examples(12))
    test = _csv(tmp_path / "test.csv", [("where is my new card", "card"), ("what does a loan cost", "loan")])
    base = [table, "--test-file", test, "--selectors", "topk,random", "--out", tmp_path / "o"]
    assert _compare(*base).exit_code == 0
    res = _compare(*base, "--seed", "1")
    _refused(res, "--out", "differs in: seed: 0 → 1", "--fresh")
    res = _compare(*base, "--k", "1")  # _compare passes --k 2 first; the last one given counts
    _refused(res, "--out", "k: 2 → 1")
    res = _compare(*base, "--seed", "1", "--fresh")
    assert res.exit_code == 0, res.output
    # 3 cells (topk in two orders, random) × 1 validation query + the validated cell and the reference × 1
    # test
    assert "cost: 5 prompts" in res.output and "answered in" not in res.output
    assert json.loads((tmp_path / "o" / "compare.json").read_text())["key"]["seed"] == 1
    assert len(list(tmp_path.glob("o.old-*"))) == 1  # the seed-0 comparison moved aside, not deleted
    again = _compare(*base, "--seed", "1")
    answers = len((tmp_path / "o" / "records.jsonl").read_text().splitlines())
    assert again.exit_code == 0 and "cost: 0 prompts" in again.output
    assert f"({answers} answered in" in again.output and answers in (4, 5)


def _blank_csv(path: Path, blank: bool) -> Path:
    """Line 5 (the header is line 1) holds a text of spaces, or a text."""
    rows = _examples(12)
    rows[3] = ("   " if blank else "fixed", rows[3][1])
    return _csv(path, rows)


def _blank_jsonl(path: Path, blank: bool) -> Path:
    """Line 3 (after an empty line 2) holds an empty text, or a text."""
    rows = [{"text": t, "label": y} for t, y in _examples(12)]
    rows[1]["text"] = "" if blank else "fixed"
    lines = [json.dumps(r) for r in rows]
    path.write_text("\n".join([lines[0], ""] + lines[1:]) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("write, name, line", [(_blank_csv, "ex.csv", 5), (_blank_jsonl, "ex.jsonl", 3)])
def test_a_blank_text_names_file_and_line_writes_nothing_and_the_corrected_rerun_runs(
    tmp_path, write, name, line
):
    table, out = write(tmp_path / name, blank=True), tmp_path / "o"
    res = _compare(table, "--queries", "3", "--selectors", "topk", "--out", out)
    _refused(res, "EXAMPLES", f"{table}, line {line}: the text (column 'text') is")
    assert not out.exists()
    write(table, blank=False)
    res = _compare(table, "--queries", "3", "--selectors", "topk", "--out", out)
    assert res.exit_code == 0, res.output
    assert "recommended:" in res.output


@pytest.mark.parametrize(
    "row, needle",
    [
        ("  ,card", "the text (column 'text') is only whitespace"),
        ("a loan question,", "the label (column 'label') is empty"),
    ],
)
def test_a_blank_held_out_query_is_refused_up_front_with_its_line(tmp_path, row, needle):
    table = _csv(tmp_path / "ex.csv", _examples(12))
    test = tmp_path / "test.csv"
    test.write_text(f"text,label\nwhere is my card,card\n{row}\n", encoding="utf-8")
    res = _compare(table, "--test-file", test, "--out", tmp_path / "o")
    _refused(res, "--test-file", f"{test}, line 3", needle)
    assert not (tmp_path / "o").exists()


def test_the_library_refuses_one_label_and_blank_texts_before_making_the_folder(tmp_path):
    from ucs import compare

    one = [{"text": f"t{i}", "label": "a"} for i in range(8)]
    with pytest.raises(ValueError, match="one distinct label .* at least two labels"):
        compare(one, lambda t, d: "a", n_queries=2, embedder=DummyEmbedder(), out=tmp_path / "o")
    blank = [{"text": f"t{i}" if i != 3 else " ", "label": "ab"[i % 2]} for i in range(8)]
    with pytest.raises(ValueError, match=r"examples\[3\]\['text'\] is empty"):
        compare(blank, lambda t, d: "a", n_queries=2, embedder=DummyEmbedder(), out=tmp_path / "o")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--weights", "q2"], ["--weights", "file, f32, f16"]),
        (["--workers", "0"], ["--workers"]),
    ],
)
def test_bad_weights_or_workers_are_refused_before_anything_is_written(tmp_path, args, needles):
    table = _csv(tmp_path / "t.csv", _examples())
    res = _compare(table, "--queries", "4", "--out", tmp_path / "o", *args)
    _refused(res, *needles)
    assert not (tmp_path / "o").exists()
