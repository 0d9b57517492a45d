"""The loaders against the real public files in ../shared/data, and their errors on broken copies."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ucs.data import (
    DatasetError,
    DatasetWarning,
    MissingDataError,
    load_banking77,
    load_clinc150,
    load_dataset,
    load_hwu64,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "name, n_pool, n_test, n_labels",
    [("banking77", 10003, 3080, 77), ("clinc150", 15000, 4500, 150), ("hwu64", 9960, 1076, 64)],
)
def test_intent_datasets_have_the_published_counts(shared_data, name, n_pool, n_test, n_labels):
    ds = load_dataset(name, shared_data)
    assert (len(ds.pool), len(ds.test), ds.n_labels) == (n_pool, n_test, n_labels)
    assert ds.task == "intent"
    # every label occurs in both splits, ids cover the label list
    assert set(np.unique(ds.pool.labels)) == set(range(n_labels))
    assert set(np.unique(ds.test.labels)) == set(range(n_labels))
    assert ds.validation.n_pool == n_pool and not ds.validation.notes
    assert all(len(h) == 64 for h in ds.source.values())
    assert all(t.strip() for t in ds.pool.texts)


def test_banking77_multiline_texts_and_category_order(shared_data):
    ds = load_banking77(shared_data)
    assert ds.label_names[0] == "card_arrival"
    assert sum("\n" in t for t in ds.pool.texts) == 10  # quoted fields spanning lines survive
    assert ds.pool.texts[0] == "I am still waiting on my card?"
    assert ds.label_text(ds.pool.labels[:1]) == ["card_arrival"]
    assert set(ds.source) == {"banking77/categories.json", "banking77/train.csv", "banking77/test.csv"}


def test_clinc150_drops_out_of_scope_and_reports_duplicates(shared_data):
    ds = load_clinc150(shared_data)
    assert "oos" not in ds.label_names
    assert ds.info["dropped_out_of_scope"] == {"oos_train": 100, "oos_test": 1000}
    # two test utterances also occur in train with another intent: reported, not dropped
    assert ds.validation.cross_duplicates == 2
    assert ds.validation.conflicting_texts == 2


def test_hwu64_labels_are_scenario_intent(shared_data):
    ds = load_hwu64(shared_data)
    assert "alarm_query" in ds.label_names and "weather_query" in ds.label_names
    assert len(ds.source) == 128


def test_fingerprint_is_stable_and_content_sensitive(shared_data):
    a = load_dataset("hwu64", shared_data)
    b = load_dataset("hwu64", shared_data)
    assert a.fingerprint() == b.fingerprint()
    assert a.fingerprint() != a.with_test([0, 1]).fingerprint()


def _copy(shared_data, tmp_path, folder):
    shutil.copytree(shared_data / folder, tmp_path / folder)
    return tmp_path


def test_missing_file_error_names_the_path(tmp_path):
    with pytest.raises(MissingDataError, match=r"banking77.categories\.json"):
        load_dataset("banking77", tmp_path)
    with pytest.raises(MissingDataError, match="KFold_1"):
        load_dataset("hwu64", tmp_path)
    with pytest.raises(MissingDataError, match="data_full.json"):
        load_dataset("clinc150", tmp_path)


def test_label_absent_from_label_list_names_the_file(shared_data, tmp_path):
    root = _copy(shared_data, tmp_path, "banking77")
    with open(root / "banking77" / "test.csv", "a", encoding="utf-8") as fh:
        fh.write('"where is my parcel?",parcel_tracking\n')
    with pytest.raises(DatasetError, match=r"test\.csv.*parcel_tracking"):
        load_banking77(root)


def test_malformed_json_and_missing_columns(shared_data, tmp_path):
    (tmp_path / "clinc150").mkdir()
    (tmp_path / "clinc150" / "data_full.json").write_text('{"train": [["a", "b"]', encoding="utf-8")
    with pytest.raises(DatasetError, match="data_full.json is not valid JSON"):
        load_clinc150(tmp_path)
    (tmp_path / "clinc150" / "data_full.json").write_text('{"train": [["a", "b", "c"]], "test": []}')
    with pytest.raises(DatasetError, match=r"train\[0\]"):
        load_clinc150(tmp_path)
    root = _copy(shared_data, tmp_path / "x", "banking77")
    (root / "banking77" / "train.csv").write_text("utterance,category\nhi,card_arrival\n")
    with pytest.raises(DatasetError, match=r"train\.csv: missing column\(s\) \['text'\]"):
        load_banking77(root)


def test_count_difference_is_warned_and_recorded(shared_data, tmp_path):
    root = _copy(shared_data, tmp_path, "banking77")
    lines = (root / "banking77" / "test.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (root / "banking77" / "test.csv").write_text("".join(lines[:-5]), encoding="utf-8")
    with pytest.warns(DatasetWarning, match="n_test is 3075"):
        ds = load_banking77(root)
    assert any("3075" in n for n in ds.validation.notes)


def test_hwu_label_must_match_file_name(shared_data, tmp_path):
    root = _copy(shared_data, tmp_path, "hwu64")
    f = root / "hwu64" / "KFold_1" / "testset" / "csv" / "alarm_query.csv"
    f.write_text(f.read_text(encoding="utf-8").replace(";alarm;query;", ";alarm;set;", 1), encoding="utf-8")
    with pytest.raises(DatasetError, match="alarm_query.csv, line 2"):
        load_hwu64(root)


def test_data_dir_from_environment(shared_data, monkeypatch):
    monkeypatch.setenv("UCS_DATA_DIR", str(shared_data))
    assert len(load_dataset("hwu64").test) == 1076


def test_paper_protocol_on_real_datasets(shared_data):
    from ucs.data import TestProtocol

    proto = TestProtocol()
    for name, size in (("banking77", 500), ("clinc150", 500), ("hwu64", 500), ("object_properties", 40)):
        ds = load_dataset(name, shared_data)
        ev = proto.apply(ds)
        assert len(ev.test) == size
        assert ev.test.texts == proto.apply(load_dataset(name, shared_data)).test.texts
        assert set(ev.test.texts) <= set(ds.test.texts)
