"""Generate-mode metrics: each scores in [0, 1], each refuses a bad name with a message that says how to write
it."""

from __future__ import annotations

import json
import sys

import pytest

from ucs.data import parse_annotation
from ucs.evaluation.answer_metrics import exact_score, f1_score, get_metric, json_score


@pytest.mark.parametrize(
    "pred, ref, score",
    [
        ("alarm_set(time=five am)", "alarm_set(time=five am)", 1.0),
        ("  'Alarm_Set(time=five  am).' ", "alarm_set(time=five am)", 1.0),
        ("alarm_set(time=five am, date=today)", "alarm_set(time=five am)", 0.0),
        ("", "x", 0.0),
    ],
)
def test_exact(pred, ref, score):
    assert exact_score(pred, ref) == score


def test_f1_counts_shared_tokens():
    assert f1_score("the cat sat", "the cat sat") == 1.0
    assert f1_score("the cat", "the cat sat down") == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    assert f1_score("dog", "cat") == 0.0 and f1_score("", "") == 1.0 and f1_score("", "cat") == 0.0


def test_json_is_compared_field_by_field():
    ref = parse_annotation("wake me at [time : five am] [date : today]", "alarm_set", "json")
    assert json_score(ref, ref) == 1.0
    half = json.dumps({"intent": "alarm_set", "slots": {"time": "five am", "date": "tomorrow"}})
    assert json_score(half, ref) == pytest.approx(2 / 3)  # 2 of 3 leaves equal on both sides
    assert json_score("Answer: " + ref + " done", ref) == 1.0  # the first JSON value of the answer
    assert json_score("not json", ref) == 0.0
    assert json_score('{"intent": "x", "slots": {}}', '{"intent": "x", "slots": {}}') == 1.0
    with pytest.raises(ValueError, match="reference answer is not JSON"):
        json_score("{}", "alarm_set()")


def test_regex_takes_the_first_group():
    metric = get_metric(r"regex:Answer:\s*(\w+)")
    assert metric("Reasoning... Answer: Yes", "yes") == 1.0
    assert metric("no answer line", "yes") == 0.0 and metric.binary


def test_a_users_function(tmp_path, monkeypatch):
    (tmp_path / "my_metrics.py").write_text(
        "def starts(p, r):\n    return p.startswith(r)\n\ndef bad(p, r):\n    return 2.0\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert get_metric("my_metrics:starts")("abc", "ab") == 1.0
    with pytest.raises(ValueError, match="must lie in \\[0, 1\\]"):
        get_metric("my_metrics:bad")("a", "b")
    sys.modules.pop("my_metrics", None)


@pytest.mark.parametrize(
    "spec, needle",
    [
        ("accuracy", "unknown metric"),
        ("regex:(", "does not compile"),
        ("no_such_module_xyz:fn", "cannot import"),
        ("json:loads_nothing", "has no function"),
        ("a-b:c", "write module:function"),
    ],
)
def test_bad_metric_names_say_how_to_write_them(spec, needle):
    with pytest.raises(ValueError, match=needle):
        get_metric(spec)


def test_scores_are_aligned():
    m = get_metric("exact")
    assert m.score_all(["a", "b"], ["a", "c"]) == [1.0, 0.0]
    with pytest.raises(ValueError, match="2 predictions for 1 references"):
        m.score_all(["a", "b"], ["a"])
