from __future__ import annotations

import json

import numpy as np
import pytest

from ucs.data import DatasetError, load_dataset, load_table, read_table


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_csv_pool_and_test_files_with_named_columns(tmp_path):
    (tmp_path / "pool.csv").write_text('utt,intent\n"hello\nthere",greet\nbye,leave\nhi,greet\n')
    (tmp_path / "test.csv").write_text("utt,intent\nsee you,leave\n")
    ds = load_table(tmp_path / "pool.csv", tmp_path / "test.csv", text_column="utt", label_column="intent")
    assert ds.pool.texts == ("hello\nthere", "bye", "hi")
    assert ds.label_names == ("greet", "leave")
    assert ds.pool.labels.tolist() == [0, 1, 0] and ds.test.labels.tolist() == [1]
    assert set(ds.source) == {"pool.csv", "test.csv"}


def test_jsonl_split_column_and_label_list(tmp_path):
    rows = [{"t": f"x{i}", "y": "a" if i % 2 else "b", "s": "test" if i < 2 else "train"} for i in range(6)]
    ds = load_table(
        _jsonl(tmp_path / "d.jsonl", rows),
        text_column="t",
        label_column="y",
        split_column="s",
        label_names=["b", "a", "c"],
    )
    assert ds.test.texts == ("x0", "x1") and len(ds.pool) == 4
    assert ds.label_names == ("b", "a", "c")
    assert ds.validation.labels_missing_from_pool == ("c",)


def test_seeded_random_split_without_test_file(tmp_path):
    rows = [{"text": f"x{i}", "label": str(i % 3)} for i in range(50)]
    path = _jsonl(tmp_path / "d.jsonl", rows)
    a = load_table(path, split_seed=1)
    b = load_table(path, split_seed=1)
    assert (len(a.pool), len(a.test)) == (40, 10)
    assert a.test.texts == b.test.texts


def test_duplicates_are_reported_not_dropped(tmp_path):
    rows = [{"text": "same", "label": "a"}, {"text": "same", "label": "b"}, {"text": "other", "label": "a"}]
    test = [{"text": "same", "label": "a"}]
    ds = load_table(_jsonl(tmp_path / "p.jsonl", rows), _jsonl(tmp_path / "t.jsonl", test))
    assert len(ds.pool) == 3
    v = ds.validation
    assert (v.pool_duplicates, v.cross_duplicates, v.conflicting_texts) == (1, 1, 1)
    assert "test-in-pool 1" in ds.summary()


def test_bad_tables(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"text": "a", "label": "x"}\n{"text": "b"\n')
    with pytest.raises(DatasetError, match=r"p\.jsonl, line 2: not valid JSON"):
        read_table(p)
    p.write_text('{"text": "a", "lab": "x"}\n')
    with pytest.raises(DatasetError, match=r"line 1: missing key\(s\) \['label'\]"):
        read_table(p)
    q = tmp_path / "q.csv"
    q.write_text("text,label\na,x,extra\n")
    with pytest.raises(DatasetError, match=r"q\.csv, line 2"):
        read_table(q)
    with pytest.raises(DatasetError, match="unsupported file type"):
        (tmp_path / "r.parquet").write_text("")
        read_table(tmp_path / "r.parquet")
    # empty test split
    rows = [{"text": "a", "label": "x", "split": "pool"}]
    with pytest.raises(DatasetError, match="empty test split"):
        load_table(_jsonl(tmp_path / "s.jsonl", rows), split_column="split")
    # test label outside the given label list
    with pytest.raises(DatasetError, match=r"absent from the label list: \['y'\]"):
        load_table(
            _jsonl(tmp_path / "u.jsonl", [{"text": "a", "label": "x"}]),
            _jsonl(tmp_path / "v.jsonl", [{"text": "b", "label": "y"}]),
            label_names=["x"],
        )
    with pytest.raises(DatasetError, match="empty text"):
        load_table(
            _jsonl(tmp_path / "w.jsonl", [{"text": " ", "label": "x"}]),
            _jsonl(tmp_path / "z.jsonl", [{"text": "b", "label": "x"}]),
        )


def test_load_dataset_dispatches_paths_and_rejects_unknown_names(tmp_path):
    rows = [{"text": f"x{i}", "label": str(i % 2)} for i in range(10)]
    ds = load_dataset(str(_jsonl(tmp_path / "mine.jsonl", rows)))
    assert ds.name == "mine" and len(ds.test) == 2
    with pytest.raises(ValueError, match="unknown dataset 'banking78'.*banking77"):
        load_dataset("banking78")
    with pytest.raises(ValueError, match="source must be"):
        load_dataset("sample", source="web")


def test_sample_dataset():
    ds = load_dataset("sample")
    assert (len(ds.pool), len(ds.test), ds.n_labels) == (150, 50, 10)
    assert np.bincount(ds.pool.labels).tolist() == [15] * 10
    assert np.bincount(ds.test.labels).tolist() == [5] * 10
    v = ds.validation
    assert (v.pool_duplicates, v.test_duplicates, v.cross_duplicates) == (0, 0, 0)
    assert ds.fingerprint() == load_dataset("SAMPLE").fingerprint()


@pytest.mark.parametrize("suffix,sep", [(".csv", ","), (".tsv", "\t"), (".jsonl", None)])
def test_a_utf8_byte_order_mark_is_read_as_text_not_as_part_of_the_header(tmp_path, suffix, sep):
    path = tmp_path / f"d{suffix}"
    if sep is None:
        body = "".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in [("hi", "a"), ("bye", "b")])
    else:
        body = f"text{sep}label\nhi{sep}a\nbye{sep}b\n"
    path.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    table = read_table(path, text_column="text", label_column="label")
    assert table["text"] == ["hi", "bye"] and table["label"] == ["a", "b"]


def test_a_csv_field_over_pythons_default_limit_is_read_whole(tmp_path):
    long_text = "word " * 400_000  # 2 MB, over the csv module's default 128 KiB field limit
    path = tmp_path / "d.csv"
    path.write_text(f'text,label\n"{long_text}",a\nshort,b\n', encoding="utf-8")
    table = read_table(path, text_column="text", label_column="label")
    assert table["text"] == [long_text, "short"]


def test_a_test_file_that_is_the_pool_file_is_refused_with_the_count(tmp_path):
    body = "text,label\nhello there,a\nbye now,b\nhi,a\n"
    (tmp_path / "pool.csv").write_text(body, encoding="utf-8")
    (tmp_path / "copy.csv").write_text(body, encoding="utf-8")
    for test in ("pool.csv", "copy.csv"):
        with pytest.raises(DatasetError, match="is the pool file .*all 3 test rows are pool rows"):
            load_table(tmp_path / "pool.csv", tmp_path / test)


def test_pool_test_overlap_is_counted_exactly_and_normalised_and_warned(tmp_path):
    from ucs.data import DatasetWarning

    (tmp_path / "pool.csv").write_text("text,label\nWhere is my card?,a\nbye now,b\nhi,a\n", encoding="utf-8")
    (tmp_path / "test.csv").write_text(
        "text,label\nwhere is my  card,a\nbye now,b\nnew text,a\n", encoding="utf-8"
    )
    with pytest.warns(DatasetWarning, match="2 of 3 test texts are also in the pool \\(1 exactly"):
        ds = load_table(tmp_path / "pool.csv", tmp_path / "test.csv")
    assert ds.validation.cross_duplicates == 1 and ds.validation.cross_duplicates_normalized == 2
    assert ds.validation.as_dict()["cross_duplicates_normalized"] == 2
