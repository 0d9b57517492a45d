"""Compare's scored (generate) mode: the generating predictor's prompt and answer, the copy baseline taken
from the nearest chosen demonstration, answers scored with a metric — with ucs.testing's doubles
(orchestration only) — and SmolLM2 through llama.cpp writing parses of real HWU64 utterances (slow)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ucs.evaluation.answer_metrics import get_metric
from ucs.experiments.compare import compare
from ucs.experiments.generate import (
    AnswerScoring,
    default_max_new_tokens,
    first_answer_line,
    generating_predictor,
    score_summary,
)
from ucs.testing.doubles import DummyEmbedder, DummyLM

EMB = DummyEmbedder(dim=16)


def _parses(n: int = 30):
    return [
        {"text": f"wake me up at {i} am on day {i % 4}", "label": f"alarm_set(time={i} am, date=day {i % 4})"}
        for i in range(n)
    ]


def _nearest_label(text, demos):
    """The copy baseline as a predictor: the answer of the demonstration nearest the query under EMB."""
    q = EMB.embed([text])[0]
    d = EMB.embed([x["text"] for x in demos])
    cos = d @ q / (np.linalg.norm(d, axis=1) * np.linalg.norm(q))
    return demos[int(np.argmax(cos))]["label"]


def test_the_generating_predictor_continues_the_free_form_prompt_and_keeps_the_answer_line():
    prompts = []

    def answers(prompt):
        prompts.append(prompt)
        return "  A: alarm_set(time=five am)\nnot this line\nQ: nor this"

    pred = generating_predictor(DummyLM(answers=answers), max_new_tokens=40)
    demos = [{"text": "wake me at six", "label": "alarm_set(time=six)"}, {"text": "hi", "label": "greet()"}]
    assert pred("wake me up at five am", demos) == "alarm_set(time=five am)"
    assert prompts[0].endswith(
        "Q: wake me at six\nA: alarm_set(time=six)\n\nQ: hi\nA: greet()\n\nQ: wake me up at five am\nA:"
    )
    assert pred.identity["max_new_tokens"] == 40 and pred.identity["chat"] is False
    chat = generating_predictor(DummyLM(answers=answers), max_new_tokens=4, chat_template="chatml")
    assert chat("q", demos) == "alarm_set(" and prompts[-1].startswith(
        "<|im_start|>system\n"
    )  # 4 tokens kept
    assert first_answer_line("\n\n A:\n  x = 1 \n") == "x = 1" and first_answer_line(" \n") == ""
    with pytest.raises(ValueError, match="max_new_tokens"):
        generating_predictor(DummyLM(), max_new_tokens=0)


def test_the_default_answer_length_fits_the_longest_example_answer_and_is_capped():
    count = DummyLM().count_tokens
    assert (
        default_max_new_tokens(count, ["a b", "alarm_set(time=five am)"])
        == count("alarm_set(time=five am)") + 8
    )
    assert default_max_new_tokens(count, ["w " * 1000]) == 256 and default_max_new_tokens(count, []) == 8


def test_the_copy_baseline_is_the_nearest_chosen_demonstration_scored_with_the_same_metric(tmp_path):
    ex = _parses()

    def fixed(text, demos):
        return "alarm_set(time=1 am, date=day 1)"

    res = compare(
        ex,
        fixed,
        selectors=["topk", "random"],
        k=3,
        n_queries=8,
        embedder=EMB,
        metric="f1",
        out=tmp_path / "c",
    )
    records = [json.loads(x) for x in (tmp_path / "c" / "records.jsonl").read_text().splitlines()]
    assert records and all(0.0 <= r["score"] <= 1.0 and 0.0 <= r["copy_score"] <= 1.0 for r in records)
    f1 = get_metric("f1")
    pool = [e for e in ex if e["label"] not in {r["gold"] for r in records}]  # every answer is distinct
    assert len(pool) == len(ex) - 8
    for r in records:
        query = next(e["text"] for e in ex if e["label"] == r["gold"])
        demos = [pool[i] for i in r["selected"]]
        assert r["copy"] == _nearest_label(query, demos) == pool[r["copy_of"]]["label"]
        assert r["copy_score"] == pytest.approx(f1(r["copy"], r["gold"]))
        assert r["score"] == pytest.approx(f1(r["prediction"], r["gold"]))
        assert r["correct"] == (r["score"] == 1.0)
    copied = score_summary(records, "copy_score")
    assert set(copied) == {r["method"] for r in records}
    for row in res.rows:  # the rows' copy baseline (its mean against the model's: the next test)
        assert 0.0 <= row["copy"] <= 1.0 and row["over_copy"] is not None and row.get("vote") is None
    assert "copy %" in res.to_markdown() and "f1 score %" in res.to_markdown()


def test_a_predictor_that_copies_the_nearest_answer_gains_nothing_over_the_copy(tmp_path):
    res = compare(
        _parses(), _nearest_label, selectors=["topk"], k=4, n_queries=10, embedder=EMB, metric="exact"
    )
    for row in res.rows:
        assert row["accuracy"] == pytest.approx(row["copy"]) and row["over_copy"] == pytest.approx(0.0)


def test_json_answers_are_scored_field_by_field(tmp_path):
    ex = [
        {"text": f"wake me at {i}", "label": json.dumps({"intent": "alarm_set", "slots": {"time": str(i)}})}
        for i in range(20)
    ]

    def half_right(text, demos):
        return 'Sure: {"intent": "alarm_set", "slots": {"time": "never"}}'

    compare(
        ex, half_right, selectors=["topk"], k=2, n_queries=5, embedder=EMB, metric="json", out=tmp_path / "j"
    )
    records = [json.loads(x) for x in (tmp_path / "j" / "records.jsonl").read_text().splitlines()]
    assert records and all(r["score"] == pytest.approx(0.5) for r in records)  # the intent, not the time


def test_answers_need_only_differ_and_the_metric_keys_the_folder(tmp_path):
    with pytest.raises(ValueError, match="same answer"):
        AnswerScoring.check(["x()"] * 5)
    AnswerScoring.check([f"x({i})" for i in range(5)])  # all distinct: fine
    same = [{"text": f"t {i}", "label": "x()"} for i in range(6)]
    with pytest.raises(ValueError, match="same answer"):
        compare(same, lambda t, d: "x()", selectors=["topk"], k=2, n_queries=2, embedder=EMB, metric="exact")
    ex = _parses(12)
    compare(
        ex,
        lambda t, d: "x",
        selectors=["topk"],
        k=2,
        n_queries=3,
        embedder=EMB,
        metric="exact",
        out=tmp_path / "k",
    )
    with pytest.raises(ValueError, match="metric"):
        compare(
            ex,
            lambda t, d: "x",
            selectors=["topk"],
            k=2,
            n_queries=3,
            embedder=EMB,
            metric="f1",
            out=tmp_path / "k",
        )


@pytest.mark.slow  # SmolLM2 through llama.cpp, all-MiniLM-L6-v2, the real HWU64 files
def test_smollm2_writes_parses_of_real_hwu64_utterances(shared_data, tmp_path):
    pytest.importorskip("llama_cpp")
    pytest.importorskip("sentence_transformers", reason="the torch extra is not installed")
    from dataclasses import replace

    from typer.testing import CliRunner

    from ucs.cli import app
    from ucs.data import load_dataset
    from ucs.data.export import write_split

    ds = load_dataset("hwu64_parse", shared_data)
    rng = np.random.default_rng(0)
    small = replace(
        ds,
        pool=ds.pool.subset(np.sort(rng.choice(len(ds.pool), 300, replace=False))),
        test=ds.test.subset(np.sort(rng.choice(len(ds.test), 6, replace=False))),
    )
    write_split(small, "pool", tmp_path / "hwu64_parse.csv")
    write_split(small, "test", tmp_path / "hwu64_parse_test.csv")
    res = CliRunner().invoke(
        app,
        [
            "compare",
            str(tmp_path / "hwu64_parse.csv"),
            "--test-file",
            str(tmp_path / "hwu64_parse_test.csv"),
            "--mode",
            "generate",
            "--metric",
            "exact",
            "--selectors",
            "topk",
            "--k",
            "4",
            "--queries",
            "6",
            "--yes",
            "--out",
            str(tmp_path / "o"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "tokens generated in each, scored with exact" in res.output and "copy %" in res.output
    records = [json.loads(x) for x in (tmp_path / "o" / "records.jsonl").read_text().splitlines()]
    assert len({r["query"] for r in records}) == 6
    for r in records:
        assert isinstance(r["prediction"], str) and r["prediction"].strip()  # the written parse is kept
        assert 0.0 <= r["score"] <= 1.0 and 0.0 <= r["copy_score"] <= 1.0 and r["copy"] in small.label_names
    assert any("(" in r["prediction"] for r in records)  # it writes parses, intent(slot=value, ...)
