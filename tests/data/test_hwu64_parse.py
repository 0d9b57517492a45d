"""HWU64 as a structured-output task, from the real public files in ../shared/data."""

from __future__ import annotations

import json

import pytest

from ucs.data import DatasetError, load_dataset, load_hwu64, load_hwu64_parse, parse_annotation


@pytest.mark.parametrize(
    "annotation, call, slots",
    [
        (
            "wake me up at [time : five am] [date : this week]",
            "alarm_set(time=five am, date=this week)",
            {"time": "five am", "date": "this week"},
        ),
        ("what alarms do i have", "alarm_set()", {}),
        (
            "from [place_name :  new  york ] to [place_name : boston]",
            "alarm_set(place_name=new york, place_name=boston)",
            {"place_name": ["new york", "boston"]},
        ),
    ],
)
def test_an_annotation_becomes_a_call_or_json(annotation, call, slots):
    assert parse_annotation(annotation, "alarm_set") == call
    assert json.loads(parse_annotation(annotation, "alarm_set", "json")) == {
        "intent": "alarm_set",
        "slots": slots,
    }


@pytest.mark.parametrize("bad", ["set [time five am]", "set [time : five am", "set time : five] am"])
def test_a_malformed_annotation_is_refused(bad):
    with pytest.raises(ValueError, match="malformed slot annotation"):
        parse_annotation(bad, "alarm_set")
    with pytest.raises(ValueError, match="form must be one of"):
        parse_annotation("x", "alarm_set", "xml")


def test_the_real_files_give_parses_aligned_with_the_intent_dataset(shared_data):
    ds = load_hwu64_parse(shared_data)
    intents = load_hwu64(shared_data)
    assert (len(ds.pool), len(ds.test)) == (9960, 1076) and ds.task == "reasoning"
    assert ds.pool.texts == intents.pool.texts and ds.test.texts == intents.test.texts
    parses = ds.label_text(ds.pool.labels)
    labels = intents.label_text(intents.pool.labels)
    assert all(p.startswith(f"{y}(") and p.endswith(")") for p, y in zip(parses, labels))
    assert sum(p.endswith("()") for p in parses + ds.label_text(ds.test.labels)) == 4655
    assert 4000 < ds.n_labels < 4600
    assert load_dataset("hwu64_parse", shared_data).fingerprint() == ds.fingerprint()


def test_the_json_form_parses_field_by_field(shared_data):
    ds = load_dataset("hwu64_parse", shared_data, form="json")
    first = json.loads(ds.label_text(ds.test.labels[:1])[0])
    assert set(first) == {"intent", "slots"} and isinstance(first["slots"], dict)
    with pytest.raises(ValueError, match="form must be one of"):
        load_hwu64_parse(shared_data, form="xml")


def test_a_broken_annotation_names_its_file_and_line(tmp_path):
    folder = tmp_path / "hwu64" / "KFold_1"
    for split in ("trainset", "testset/csv"):
        (folder / split).mkdir(parents=True)
        (folder / split / "alarm_set.csv").write_text(
            "answerid;scenario;intent;answer_annotation;answer_from_anno;answer_from_user\n"
            '1;alarm;set;"wake me [time : five";"wake me five";"Wake me five"\n',
            encoding="utf-8",
        )
    with pytest.raises(DatasetError, match=r"alarm_set\.csv, line 2: malformed"):
        load_hwu64_parse(tmp_path)
