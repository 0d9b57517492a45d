"""The runner's units on their own: the plan, a batch's answers and records, the manifest's resume check."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fakes import RecordingLM, make_lm
from ucs.data import TestProtocol, load_dataset
from ucs.evaluation.batches import AnswerBook, answer_batch, batch_records, batch_seed, prompt_hash
from ucs.evaluation.manifest import (
    ConfigurationMismatchError,
    finish_manifest,
    open_manifest,
    read_manifest,
    record_stop,
)
from ucs.evaluation.plan import plan_evaluation


@pytest.fixture(scope="module")
def sample():
    return load_dataset("sample")


def _plan(sample, mode="likelihood", **kw):
    return plan_evaluation(sample, make_lm(), ["a"], mode=mode, protocol=TestProtocol(test_size=12), **kw)


def test_plan_fixes_queries_key_and_batches(sample):
    plan = _plan(sample, limit=10, batch_size=4)
    assert plan.n_queries == 10 and len(plan.gold) == 10
    assert plan.key["protocol"]["test_size"] == 12 and plan.key["batch_size"] == 4
    assert plan.key == _plan(sample, limit=10, batch_size=4).key, "the key is a function of the arguments"
    done = {("a", 42, q) for q in (0, 1, 2, 3, 5)}
    assert plan.pending(done, "a", 42) == [4, 6, 7, 8, 9]
    assert list(plan.batches([4, 6, 9])) == [[4, 5, 6, 7], [8, 9]], "batches sit on a fixed grid"
    assert plan.count_pending(done, ["a"]) == 5 + 2 * 10
    sel = np.arange(8).reshape(1, 8) % len(sample.pool)
    q, prompt, demos = plan.build(sel, 3)
    assert q == 3 and demos == sel[0].tolist() and plan.query_texts[3] in prompt.text


@pytest.mark.parametrize("bad, match", [({"batch_size": 0}, "batch_size"), ({"limit": 0}, "limit")])
def test_plan_refuses_bad_arguments(sample, bad, match):
    with pytest.raises(ValueError, match=match):
        _plan(sample, **bad)
    with pytest.raises(ValueError, match="distinct"):
        plan_evaluation(sample, make_lm(), ["a", "a"])


def test_known_answers_are_reused_not_asked(sample):
    plan = plan_evaluation(sample, RecordingLM(), ["a"], mode="greedy", protocol=TestProtocol(test_size=12))
    lm = RecordingLM()
    sel = np.tile(np.arange(4), (plan.n_queries, 1))
    built = [plan.build(sel, q) for q in range(3)]
    prompts = [b[1].text for b in built]
    book = AnswerBook("greedy", sampled=False)
    first = answer_batch(plan, lm, prompts, book, seed=42, start=0)
    recs = batch_records(plan, "a", 42, 0, built, first, {0, 1, 2})
    book.remember(recs)
    n_calls = len(lm.calls)
    again = answer_batch(plan, lm, prompts, book, seed=43, start=0)
    assert len(lm.calls) == n_calls, "known prompts are not sent to the model again"
    assert [a[:2] for a in again] == [f[:2] for f in first] and all(a[2]["reused"] for a in again)
    assert [r["query"] for r in batch_records(plan, "a", 43, 1, built, again, {1})] == [1]
    assert recs[0]["prompt_sha256"] == prompt_hash(prompts[0]) and recs[0]["gold_id"] == int(plan.gold[0])


def test_sampled_answers_are_never_reused():
    book = AnswerBook(
        "paper", sampled=True, records=[{"mode": "paper", "prompt_sha256": "h", "raw_output": "x"}]
    )
    book.remember([{"prompt_sha256": "h2"}])
    assert book.get("h") is None and book.get("h2") is None
    assert batch_seed(42, 8) == batch_seed(42, 8) != batch_seed(42, 16)


def test_manifest_refuses_another_configuration_naming_the_field(tmp_path):
    m = open_manifest(tmp_path, {"mode": {"name": "paper"}}, ["a"], [42], 42, None)
    assert read_manifest(tmp_path / "manifest.json")["status"] == "running"
    again = open_manifest(tmp_path, {"mode": {"name": "paper"}}, ["b"], [42], 42, None)
    assert again["methods"] == ["a", "b"]
    with pytest.raises(ConfigurationMismatchError, match="mode.name"):
        open_manifest(tmp_path, {"mode": {"name": "greedy"}}, ["a"], [42], 42, None)
    finish_manifest(tmp_path, m, complete=False, n_records=3)
    obj = json.loads((tmp_path / "manifest.json").read_text())
    assert obj["status"] == "partial" and obj["n_records"] == 3
    obj["status"] = "running"
    (tmp_path / "manifest.json").write_text(json.dumps(obj))
    record_stop(tmp_path / "manifest.json", KeyboardInterrupt())
    assert read_manifest(tmp_path / "manifest.json")["status"] == "interrupted"
