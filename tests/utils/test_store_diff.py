"""``python -m ucs.utils.store_diff``: two stores compared entry by entry — equal, close within a relative
tolerance, or different — on synthetic stores and on a committed segment of real MDL subset scores."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ucs.utils.store import KeyedJsonlStore, compact, read_lines, signed_line, verify_line
from ucs.utils.store_diff import diff_stores, main

FIELDS = {"kind": "continuation_scores", "model": "m"}
STORES = Path(__file__).resolve().parents[2] / "docs" / "results" / "stores"


def _scores(root, entries):
    KeyedJsonlStore(Path(root) / "scores", FIELDS, key_field="key").put(entries)


def _answers(root, entries):
    KeyedJsonlStore(Path(root) / "answers", {"mode": "paper"}, key_field="sample_sha256").put(entries)


def _pair(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _scores(b, [{"key": f"q{i}", "logprob": [-10.0 * i, -3.5], "n_tokens": [7, 7]} for i in range(1, 5)])
    _answers(
        b,
        [
            {"sample_sha256": "s1", "raw_output": " (B)", "parsed_id": 1, "answered_on": "cpu B"},
            {"sample_sha256": "s2", "raw_output": " (C)", "parsed_id": 2},
        ],
    )
    compact(b)  # B read through its sealed segments, as a committed store is
    _scores(
        a,
        [
            {"key": "q1", "logprob": [-10.0, -3.5], "n_tokens": [7, 7]},  # equal
            {"key": "q2", "logprob": [-20.0 + 2e-6, -3.5], "n_tokens": [7, 7]},  # rel 1e-7
            {"key": "q9", "logprob": [0.0, 0.0], "n_tokens": [7, 7]},
        ],
    )  # only in A
    _answers(
        a,
        [
            {"sample_sha256": "s1", "raw_output": " (B)", "parsed_id": 1, "answered_on": "cpu A"},
            {"sample_sha256": "s2", "raw_output": " (D)", "parsed_id": 3},
        ],
    )
    return a, b


def test_entries_are_equal_close_or_different(tmp_path):
    a, b = _pair(tmp_path)
    answers, scores = diff_stores(a, b, rtol=1e-6)
    assert (answers.in_a, answers.in_b, answers.equal, answers.close, answers.differ) == (2, 2, 1, 0, 1)
    assert answers.max_rel == float("inf")  # another answer text is no numeric gap: answered_on is ignored
    assert (scores.in_a, scores.in_b, scores.equal, scores.close, scores.differ) == (3, 4, 1, 1, 0)
    assert scores.max_abs == pytest.approx(2e-6) and scores.max_rel == pytest.approx(1e-7)
    exact = diff_stores(a, b)[1]  # rtol 0: the moved number differs
    assert (exact.close, exact.differ) == (0, 1)


def test_a_key_missing_from_b_counts_nothing_shared(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _scores(a, [{"key": "q1", "logprob": [-1.0], "n_tokens": [1]}])
    b.mkdir()
    (d,) = diff_stores(a, b)
    assert (d.in_a, d.in_b, d.shared) == (1, 0, 0)


def test_exit_codes_and_messages(tmp_path, capsys):
    a, b = _pair(tmp_path)
    assert main([str(a), str(b)]) == 1
    assert "1 DIFFER" in capsys.readouterr().out
    _answers(tmp_path / "c", [{"sample_sha256": "s1", "raw_output": " (B)", "parsed_id": 1}])
    assert main([str(tmp_path / "c"), str(b), "--rtol", "1e-6"]) == 0
    assert main([str(tmp_path / "c"), str(tmp_path / "a" / "scores")]) == 2
    assert "share no entry" in capsys.readouterr().err
    for argv, says in [
        ([str(a)], "expected two store folders"),
        ([str(a), str(tmp_path / "nope")], "B: "),
        ([str(a), str(b), "--rtol", "tight"], "--rtol: expected a number"),
        ([str(a), str(b), "--rtol", "-1"], "--rtol: must be 0 or more"),
    ]:
        assert main(argv) == 2
        assert says in capsys.readouterr().err


def test_real_mdl_scores_against_a_committed_segment(tmp_path):
    """A committed segment of BBEH MDL subset scores is B; A holds five of its lines as they are, and one
    with a log-probability moved by a relative 2e-7 (the size of the float32 gap between two CPUs' sums)."""
    segment = min((STORES / "scores").rglob("*.1.jsonl.xz"), key=lambda p: p.stat().st_size)
    key = segment.name.split(".")[0]
    target = tmp_path / "b" / segment.parent.name / f"{key}.jsonl.xz"
    target.parent.mkdir(parents=True)
    shutil.copyfile(segment, target)
    entries = [verify_line(ln)[0] for ln in read_lines(segment) if ln.strip()][:6]
    assert len(entries) == 6 and all(isinstance(e["key"], str) and e["logprob"] for e in entries)
    moved = dict(entries[5], logprob=[x * (1 + 2e-7) for x in entries[5]["logprob"]])
    store = tmp_path / "a" / segment.parent.name / f"{key}.jsonl"
    store.parent.mkdir(parents=True)
    store.write_text("".join(signed_line(e) for e in [*entries[:5], moved]), encoding="utf-8")
    (d,) = diff_stores(tmp_path / "a", tmp_path / "b", rtol=1e-6)
    assert (d.in_a, d.equal, d.close, d.differ) == (6, 5, 1, 0) and d.in_b >= 6
    assert d.max_rel == pytest.approx(2e-7, rel=1e-3)
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
