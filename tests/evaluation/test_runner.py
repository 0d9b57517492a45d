from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fakes import last_label as fakes_last_label
from fakes import make_lm, two_methods
from ucs.data import TestProtocol, load_dataset
from ucs.evaluation import evaluate, read_records

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def sample():
    return load_dataset("sample")


def _key(r):
    return (r["method"], r["seed"], r["query"])


def test_greedy_run_writes_records_manifest_and_report(sample, tmp_path):
    sel = two_methods(sample)
    res = evaluate(
        sample,
        make_lm(),
        ["oracle", "random"],
        sel,
        tmp_path,
        mode="greedy",
        progress=False,
        protocol=TestProtocol(test_size=20),
    )
    recs = read_records(res.records_path)
    assert len(recs) == 2 * 3 * 20 == res.n_new_records
    assert len({_key(r) for r in recs}) == len(recs)
    r = recs[0]
    for field in (
        "prompt_sha256",
        "selected",
        "raw_output",
        "parsed",
        "gold",
        "correct",
        "n_dropped",
        "test_index",
    ):
        assert field in r
    assert len(r["selected"]) == 4 and len(r["prompt_sha256"]) == 64
    m = res.summary["methods"]
    assert m["oracle"]["mean"] == 1.0 and m["oracle"]["std"] == 0.0 and m["oracle"]["complete"]
    assert m["random"]["mean"] < 1.0
    lo, hi = m["random"]["ci"]
    assert lo <= m["random"]["mean"] <= hi
    manifest = json.loads(res.manifest_path.read_text())
    assert manifest["status"] == "complete"
    assert manifest["key"]["dataset"]["fingerprint"] == sample.fingerprint()
    assert manifest["key"]["protocol"]["run_seeds"] == [42, 43, 44]
    assert manifest["key"]["model"] == {"model": "dummy-lm", "revision": "seed=0"}
    assert "numpy" in manifest["versions"]
    plat = manifest["platform"]  # the CPU is recorded: low-precision kernels differ between processors
    assert set(plat) >= {"python", "machine", "system", "cpu", "cpu_count"} and isinstance(plat["cpu"], str)
    assert "| oracle | 100.0 ± 0.0 |" in (tmp_path / "results.md").read_text()
    assert json.loads((tmp_path / "results.json").read_text())["methods"]["oracle"]["mean"] == 1.0
    # the same queries in every run and method
    qs = {
        (r["method"], r["seed"]): sorted(x["test_index"] for x in recs if _key(x)[:2] == _key(r)[:2])
        for r in recs
    }
    assert len({tuple(v) for v in qs.values()}) == 1


def test_rerun_and_limit_resume_without_repeating(sample, tmp_path):
    sel = two_methods(sample)
    proto = TestProtocol(test_size=12)
    first = evaluate(
        sample, make_lm(), ["oracle"], sel, tmp_path, mode="greedy", protocol=proto, limit=5, progress=False
    )
    assert first.n_new_records == 15 and first.summary["methods"]["oracle"]["n_queries"] == 5
    full = evaluate(
        sample, make_lm(), ["oracle"], sel, tmp_path, mode="greedy", protocol=proto, progress=True
    )
    assert full.n_new_records == 3 * 12 - 15
    again = evaluate(
        sample, make_lm(), ["oracle"], sel, tmp_path, mode="greedy", protocol=proto, progress=False
    )
    assert again.n_new_records == 0
    recs = read_records(tmp_path / "records.jsonl")
    assert len(recs) == 36 == len({_key(r) for r in recs})
    # a selection is computed once per (method, seed, query set) and cached
    assert sel.calls.count(("oracle", 42, 12)) == 1
    # adding a method later resumes into the same directory
    more = evaluate(
        sample, make_lm(), ["random"], sel, tmp_path, mode="greedy", protocol=proto, progress=False
    )
    assert set(more.summary["methods"]) == {"oracle", "random"}


def test_different_configuration_is_refused(sample, tmp_path):
    sel = two_methods(sample)
    proto = TestProtocol(test_size=4)
    evaluate(sample, make_lm(), ["oracle"], sel, tmp_path, mode="greedy", protocol=proto, progress=False)
    with pytest.raises(ValueError, match="different configuration.*mode"):
        evaluate(sample, make_lm(), ["oracle"], sel, tmp_path, mode="paper", protocol=proto, progress=False)


def test_likelihood_mode(sample, tmp_path):
    res = evaluate(
        sample,
        make_lm(),
        ["oracle", "random"],
        two_methods(sample),
        tmp_path,
        mode="likelihood",
        protocol=TestProtocol(test_size=10, run_seeds=(42,)),
        progress=False,
    )
    assert res.summary["methods"]["oracle"]["mean"] == 1.0
    recs = read_records(res.records_path)
    assert all(r["parsed"] in sample.label_names and "margin" in r for r in recs)


def test_unmatched_outputs_are_wrong_and_recorded(sample, tmp_path):
    res = evaluate(
        sample,
        make_lm(noise=0.5),
        ["oracle"],
        two_methods(sample),
        tmp_path,
        mode="paper",
        protocol=TestProtocol(test_size=30),
        progress=False,
    )
    recs = read_records(res.records_path)
    unmatched = [r for r in recs if r["parsed"] is None]
    assert unmatched and not any(r["correct"] for r in unmatched)
    assert all(r["raw_output"].startswith("answer_") for r in unmatched)
    m = res.summary["methods"]["oracle"]
    assert sum(v["unmatched"] for v in m["runs"].values()) == len(unmatched)
    assert m["mean"] == pytest.approx(1 - len(unmatched) / len(recs))


def test_context_budget_drops_demos_and_records_it(sample, tmp_path):
    res = evaluate(
        sample,
        make_lm(context_length=150),
        ["random"],
        two_methods(sample, budget=10),
        tmp_path,
        mode="greedy",
        protocol=TestProtocol(test_size=5, run_seeds=(1,)),
        progress=False,
    )
    recs = read_records(res.records_path)
    assert all(r["n_dropped"] > 0 and r["n_demos"] + r["n_dropped"] == 10 for r in recs)
    assert all(r["n_prompt_tokens"] <= 150 - 16 and r["prompt_fits"] for r in recs)


def test_bad_selections_and_arguments(sample, tmp_path):
    lm = make_lm()
    proto = TestProtocol(test_size=3, run_seeds=(1,))
    with pytest.raises(ValueError, match="outside"):
        evaluate(
            sample,
            lm,
            ["m"],
            lambda m, s, q: np.array([[10_000]] * 3),
            tmp_path / "a",
            protocol=proto,
            progress=False,
        )
    with pytest.raises(ValueError, match="rows"):
        evaluate(
            sample,
            lm,
            ["m"],
            lambda m, s, q: np.zeros((2, 3), int),
            tmp_path / "b",
            protocol=proto,
            progress=False,
        )
    with pytest.raises(ValueError, match="integer array"):
        evaluate(
            sample,
            lm,
            ["m"],
            lambda m, s, q: np.zeros((3, 2)),
            tmp_path / "c",
            protocol=proto,
            progress=False,
        )
    with pytest.raises(ValueError, match="methods must"):
        evaluate(sample, lm, [], lambda m, s, q: None, tmp_path / "d")
    with pytest.raises(ValueError, match="limit"):
        evaluate(sample, lm, ["m"], lambda m, s, q: None, tmp_path / "e", limit=0)


def test_partial_last_line_is_repaired(sample, tmp_path):
    sel = two_methods(sample)
    proto = TestProtocol(test_size=6, run_seeds=(42,))
    evaluate(sample, make_lm(), ["oracle"], sel, tmp_path, mode="greedy", protocol=proto, progress=False)
    path = tmp_path / "records.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-2]) + lines[-2][: len(lines[-2]) // 2])  # kill mid-write
    res = evaluate(
        sample, make_lm(), ["oracle"], sel, tmp_path, mode="greedy", protocol=proto, progress=False
    )
    assert res.n_new_records == 2
    assert path.read_text().splitlines(keepends=True) == lines


_SCRIPT = """
import sys
sys.path[:0] = [{src!r}, {tests!r}]
from fakes import last_label as fakes_last_label
from fakes import make_lm, two_methods
from ucs.data import TestProtocol, load_dataset
from ucs.evaluation import evaluate
ds = load_dataset("sample")
evaluate(ds, make_lm(delay={delay}), ["oracle", "random"], two_methods(ds), {out!r}, mode="paper",
         protocol=TestProtocol(test_size=40), batch_size=3, progress=False)
"""


def test_killed_run_resumes_without_losing_or_repeating_records(sample, tmp_path):
    out = tmp_path / "killed"
    script = tmp_path / "run.py"
    script.write_text(
        _SCRIPT.format(src=str(SRC), tests=str(Path(__file__).parent), delay=0.03, out=str(out))
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    records = out / "records.jsonl"
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            if records.exists() and records.read_text().count("\n") >= 60:
                break
            if proc.poll() is not None:
                pytest.fail(
                    f"run ended before it could be interrupted: {proc.stderr.read().decode()[-2000:]}"
                )
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    n_before = len(read_records(records))
    assert 60 <= n_before < 240
    sel = two_methods(sample)
    res = evaluate(
        sample,
        make_lm(),
        ["oracle", "random"],
        sel,
        out,
        mode="paper",
        protocol=TestProtocol(test_size=40),
        batch_size=3,
        progress=False,
    )
    assert res.n_new_records == 240 - n_before
    resumed = read_records(records)
    assert len(resumed) == 240 == len({_key(r) for r in resumed})
    assert len(records.read_text().splitlines()) == 240  # no duplicate lines on disk either
    # identical to an uninterrupted run (sampled decoding: seeds are fixed per batch)
    ref = evaluate(
        sample,
        make_lm(),
        ["oracle", "random"],
        two_methods(sample),
        tmp_path / "ref",
        mode="paper",
        protocol=TestProtocol(test_size=40),
        batch_size=3,
        progress=False,
    )
    by_key = {_key(r): r for r in read_records(ref.records_path)}
    assert all(by_key[_key(r)] == r for r in resumed)
    assert res.summary["methods"] == ref.summary["methods"]


class _CountingLM(type(make_lm())):
    def __init__(self):
        base = make_lm()
        super().__init__(answers=base.answers)
        self.prompts_seen = 0

    def generate(self, prompts, *args, **kwargs):
        self.prompts_seen += len(prompts)
        return super().generate(prompts, *args, **kwargs)

    def score_continuations_detailed(self, prompt, *args, **kwargs):
        self.prompts_seen += 1
        return super().score_continuations_detailed(prompt, *args, **kwargs)


def _fixed_selection(method, seed, queries):
    # seed-independent, like TopK: the same prompt for a query in every run
    return np.tile(np.arange(4), (len(queries), 1)) + (1 if method == "b" else 0)


@pytest.mark.parametrize("mode", ["greedy", "likelihood"])
def test_deterministic_modes_answer_a_repeated_prompt_once(sample, tmp_path, mode):
    lm = _CountingLM()
    proto = TestProtocol(test_size=6, run_seeds=(42, 43, 44))
    res = evaluate(
        sample, lm, ["a", "b"], _fixed_selection, tmp_path, mode=mode, protocol=proto, progress=False
    )
    recs = read_records(res.records_path)
    assert len(recs) == 2 * 3 * 6
    assert lm.prompts_seen == 2 * 6  # one model call per distinct prompt
    first = {(r["method"], r["query"]): r for r in recs if r["seed"] == 42}
    for r in recs:
        f = first[(r["method"], r["query"])]
        assert r["raw_output"] == f["raw_output"] and r["parsed"] == f["parsed"]
        assert r.get("reused", False) == (r["seed"] != 42)
    # a resumed run with a new method reuses prompts answered in the earlier process
    lm2 = _CountingLM()
    evaluate(
        sample, lm2, ["a", "b", "c"], _fixed_selection, tmp_path, mode=mode, protocol=proto, progress=False
    )
    assert lm2.prompts_seen == 0  # method "c" selects what "a" selected


def test_sampled_answers_are_reused_only_at_their_own_sample_seed(sample, tmp_path):
    lm = _CountingLM()
    proto = TestProtocol(test_size=4, run_seeds=(42, 43))
    res = evaluate(
        sample,
        lm,
        ["a", "b"],
        _fixed_selection,
        tmp_path,
        mode="paper",
        protocol=proto,
        progress=False,
        batch_size=4,
    )
    recs = read_records(res.records_path)
    assert lm.prompts_seen == 2 * 2 * 4  # the same prompt in another run is drawn with another seed
    assert not any(r.get("reused") for r in recs)
    assert len({(r["method"], r["sample_seed"]) for r in recs}) == len(recs) == 16


def test_sampled_answers_resume_from_a_store_in_a_fresh_folder(sample, tmp_path):
    store = tmp_path / "answers"
    proto = TestProtocol(test_size=6, run_seeds=(42, 43))
    a = evaluate(
        sample,
        _CountingLM(),
        ["a", "b"],
        _fixed_selection,
        tmp_path / "one",
        mode="paper",
        protocol=proto,
        progress=False,
        batch_size=4,
        answer_store=store,
    )
    lm = _CountingLM()  # another machine: an empty runner folder, the committed store
    b = evaluate(
        sample,
        lm,
        ["a", "b"],
        _fixed_selection,
        tmp_path / "two",
        mode="paper",
        protocol=proto,
        progress=False,
        batch_size=4,
        answer_store=store,
    )
    assert lm.prompts_seen == 0
    ra, rb = read_records(a.records_path), read_records(b.records_path)
    assert [(_key(r), r["raw_output"], r["sample_seed"]) for r in ra] == [
        (_key(r), r["raw_output"], r["sample_seed"]) for r in rb
    ]
    assert all(r["reused"] for r in rb) and b.summary["methods"] == a.summary["methods"]
    # greedy answers are another store file: nothing is shared with the sampled ones
    lm2 = _CountingLM()
    evaluate(
        sample,
        lm2,
        ["a"],
        _fixed_selection,
        tmp_path / "three",
        mode="greedy",
        protocol=proto,
        progress=False,
        batch_size=4,
        answer_store=store,
    )
    assert lm2.prompts_seen == 6


def test_progress_counts_answers_from_the_store_as_reused(sample, tmp_path, monkeypatch):
    """A resumed run's ETA is the rate of its new answers: those read from the store are reported as
    reused."""
    from ucs.utils import progress as P

    seen = []
    real = P._NullStage.advance

    def spy(self, n=1, reused=0):
        seen.append((self.kind, n, reused))
        real(self, n, reused=reused)

    monkeypatch.setattr(P._NullStage, "advance", spy)
    store, proto = tmp_path / "answers", TestProtocol(test_size=6, run_seeds=(42,))
    evaluate(
        sample,
        _CountingLM(),
        ["a"],
        _fixed_selection,
        tmp_path / "one",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=store,
    )
    assert sum(n for k, n, _ in seen if k == "evaluate") == 6 and not any(r for *_, r in seen)
    seen.clear()
    evaluate(
        sample,
        _CountingLM(),
        ["a"],
        _fixed_selection,
        tmp_path / "two",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=store,
    )
    assert [(n, r) for k, n, r in seen if k == "evaluate"] and all(
        n == r for k, n, r in seen if k == "evaluate"
    )


def test_partly_recorded_sampled_batch_asks_only_its_missing_prompts(sample, tmp_path):
    proto = TestProtocol(test_size=6, run_seeds=(42,))
    ref = evaluate(
        sample,
        _CountingLM(),
        ["a"],
        _fixed_selection,
        tmp_path / "ref",
        mode="paper",
        protocol=proto,
        progress=False,
        batch_size=4,
    )
    path = tmp_path / "ref" / "records.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    (tmp_path / "cut").mkdir()
    for name in ("manifest.json",):
        (tmp_path / "cut" / name).write_text((tmp_path / "ref" / name).read_text())
    (tmp_path / "cut" / "records.jsonl").write_text("".join(lines[:2]))  # interrupted inside the first batch
    lm = _CountingLM()
    res = evaluate(
        sample,
        lm,
        ["a"],
        _fixed_selection,
        tmp_path / "cut",
        mode="paper",
        protocol=proto,
        progress=False,
        batch_size=4,
    )
    assert lm.prompts_seen == 6 - 2  # each missing prompt alone, with its own sample seed
    got = sorted((_key(r), r["raw_output"], r["sample_seed"]) for r in read_records(res.records_path))
    assert got == sorted((_key(r), r["raw_output"], r["sample_seed"]) for r in read_records(ref.records_path))


def test_answer_store_is_shared_across_output_folders(sample, tmp_path):
    store = tmp_path / "answers"
    proto = TestProtocol(test_size=6, run_seeds=(42,))
    lm = _CountingLM()
    a = evaluate(
        sample,
        lm,
        ["a"],
        _fixed_selection,
        tmp_path / "one",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=store,
    )
    assert lm.prompts_seen == 6
    lm2 = _CountingLM()  # another folder, another test size: the 6 shared prompts are not scored again
    b = evaluate(
        sample,
        lm2,
        ["a"],
        _fixed_selection,
        tmp_path / "two",
        mode="likelihood",
        progress=False,
        protocol=TestProtocol(test_size=8, run_seeds=(42,)),
        answer_store=store,
    )
    assert lm2.prompts_seen == 8 - len(
        {r["prompt_sha256"] for r in read_records(a.records_path)}
        & {r["prompt_sha256"] for r in read_records(b.records_path)}
    )
    got = {r["prompt_sha256"]: r for r in read_records(b.records_path)}
    for r in read_records(a.records_path):
        if r["prompt_sha256"] in got:
            assert got[r["prompt_sha256"]]["parsed"] == r["parsed"]
            assert got[r["prompt_sha256"]]["margin"] == r["margin"]
    # another mode is another key: nothing is shared
    lm3 = _CountingLM()
    evaluate(
        sample,
        lm3,
        ["a"],
        _fixed_selection,
        tmp_path / "three",
        mode="greedy",
        protocol=proto,
        progress=False,
        answer_store=store,
    )
    assert lm3.prompts_seen == 6
    # a torn last line (an interrupted append) is skipped
    f = next(store.rglob("*.jsonl"))
    with open(f, "a") as fh:
        fh.write('{"prompt_sha256": "x", "raw')
    lm4 = _CountingLM()
    evaluate(
        sample,
        lm4,
        ["a"],
        _fixed_selection,
        tmp_path / "four",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=store,
    )
    assert lm4.prompts_seen == 0
    # and an append after it starts on a line of its own
    lm5 = _CountingLM()
    evaluate(
        sample,
        lm5,
        ["b"],
        _fixed_selection,
        tmp_path / "five",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=store,
    )
    lm6 = _CountingLM()
    evaluate(
        sample,
        lm6,
        ["b"],
        _fixed_selection,
        tmp_path / "six",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=store,
    )
    assert lm5.prompts_seen == 6 and lm6.prompts_seen == 0


def test_records_of_a_folder_made_without_the_store_join_it_on_resume(sample, tmp_path):
    proto = TestProtocol(test_size=5, run_seeds=(42,))
    evaluate(
        sample,
        _CountingLM(),
        ["a"],
        _fixed_selection,
        tmp_path / "old",
        mode="likelihood",
        protocol=proto,
        progress=False,
    )
    evaluate(
        sample,
        _CountingLM(),
        ["a"],
        _fixed_selection,
        tmp_path / "old",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=tmp_path / "answers",
    )
    lm = _CountingLM()
    evaluate(
        sample,
        lm,
        ["a"],
        _fixed_selection,
        tmp_path / "new",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=tmp_path / "answers",
    )
    assert lm.prompts_seen == 0


def test_every_answer_records_the_machine_that_computed_it(sample, tmp_path):
    """Provenance: asked answers carry this CPU kind, reused ones keep the kind that computed them, and store
    lines written before provenance existed are counted as "not recorded"."""
    import hashlib

    from ucs.evaluation.answers import AnswerStore
    from ucs.evaluation.summary import summarize
    from ucs.utils.cpu import machine_signature
    from ucs.utils.store import signed_line

    store = tmp_path / "answers"
    proto = TestProtocol(test_size=6, run_seeds=(42,))
    a = evaluate(
        sample,
        _CountingLM(),
        ["a"],
        _fixed_selection,
        tmp_path / "one",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=store,
    )
    first = read_records(a.records_path)
    assert {r["answered_on"] for r in first} == {machine_signature()}
    # rewrite the store as another machine's, one line without provenance (an older line)
    (f,) = list(store.rglob("*.jsonl"))
    entries = [json.loads(x) for x in f.read_text().splitlines()]
    lines = []
    for i, e in enumerate(entries):
        e = {k: v for k, v in e.items() if k != "_check"}
        if i == 0:
            e.pop("answered_on")
        else:
            e["answered_on"] = "Other CPU f6m143 avx2+amx_bf16"
        lines.append(signed_line(e))
    f.write_text("".join(lines))
    lm = _CountingLM()
    b = evaluate(
        sample,
        lm,
        ["a"],
        _fixed_selection,
        tmp_path / "two",
        mode="likelihood",
        protocol=proto,
        progress=False,
        answer_store=store,
    )
    assert lm.prompts_seen == 0
    got = summarize(read_records(b.records_path))["methods"]["a"]["answered_on"]
    assert got == {"Other CPU f6m143 avx2+amx_bf16": 5, "not recorded": 1}
    assert (
        AnswerStore(store, {}).validate(
            {
                "prompt_sha256": hashlib.sha256(b"x").hexdigest(),
                "raw_output": "x",
                "parsed_id": None,
                "answered_on": 3,
            }
        )
        == "'answered_on' is not a string"
    )


@pytest.mark.parametrize(
    "mode, has_strict", [("paper", True), ("greedy", True), ("greedy-strict", False), ("likelihood", False)]
)
def test_lenient_generation_runs_also_report_the_strict_reading(sample, tmp_path, mode, has_strict):
    from ucs.testing.doubles import DummyLM

    # answers that hold the right label inside a longer phrase: the paper's rule accepts them, the strict one
    # not
    lm = DummyLM(answers=lambda p: f" {fakes_last_label(p)} or so" if fakes_last_label(p) else None)
    res = evaluate(
        sample,
        lm,
        ["oracle"],
        two_methods(sample),
        tmp_path,
        mode=mode,
        protocol=TestProtocol(test_size=10),
        progress=False,
    )
    strict = res.summary.get("strict_matcher")
    assert bool(strict) is has_strict
    if has_strict:
        assert res.summary["methods"]["oracle"]["mean"] == 1.0
        assert strict["oracle"]["mean"] == 0.0 and strict["oracle"]["runs"]["42"]["unmatched"] == 10
        assert "strict matcher" in (tmp_path / "results.md").read_text()
        assert json.loads((tmp_path / "results.json").read_text())["strict_matcher"]["oracle"]["mean"] == 0.0


@pytest.mark.parametrize("drop_from", ["end", "start"])
def test_a_cut_prompt_keeps_the_side_its_order_puts_relevance(sample, tmp_path, drop_from):
    # the fake model answers with the last demonstration's label, so the answer says which side was kept
    res = evaluate(
        sample,
        make_lm(context_length=150),
        ["random"],
        two_methods(sample, budget=10),
        tmp_path,
        mode="greedy",
        protocol=TestProtocol(test_size=6, run_seeds=(1,)),
        progress=False,
        drop_from=drop_from,
    )
    recs = read_records(res.records_path)
    labels = sample.pool.labels
    assert all(0 < r["n_dropped"] < 10 for r in recs)
    for r in recs:
        shown = r["selected"][r["n_dropped"] :] if drop_from == "start" else r["selected"][: r["n_demos"]]
        assert r["parsed_id"] == int(labels[shown[-1]])
        assert r.get("dropped_from", "end") == drop_from
    # the no-LM vote counts the demonstrations the prompt holds, not the whole selection
    from ucs.evaluation.prompts import shown_demonstrations
    from ucs.evaluation.summary import majority_label

    want = np.mean(
        [
            majority_label(labels[shown_demonstrations(r["selected"], r["n_dropped"], drop_from)])
            == r["gold_id"]
            for r in recs
        ]
    )
    assert res.summary["vote"]["random"]["mean"] == pytest.approx(want)
    with pytest.raises(ValueError, match="drop_from"):
        evaluate(
            sample,
            make_lm(),
            ["random"],
            two_methods(sample),
            tmp_path / "bad",
            drop_from="middle",
            progress=False,
        )


def test_reasoning_tasks_get_the_no_lm_vote_too(sample, tmp_path):
    # on a free-form task the "label" is the answer: the vote is the answer most demonstrations give
    import dataclasses

    reasoning = dataclasses.replace(sample, task="reasoning")
    res = evaluate(
        reasoning,
        make_lm(),
        ["oracle", "random"],
        two_methods(reasoning),
        tmp_path,
        mode="greedy",
        protocol=TestProtocol(test_size=8, run_seeds=(1,)),
        progress=False,
    )
    from ucs.evaluation.summary import majority_label

    assert set(res.summary["vote"]) == {"oracle", "random"}
    recs = [r for r in read_records(res.records_path) if r["method"] == "oracle"]
    want = np.mean([majority_label(reasoning.pool.labels[r["selected"]]) == r["gold_id"] for r in recs])
    assert res.summary["vote"]["oracle"]["mean"] == pytest.approx(want) and len(recs) == 8
