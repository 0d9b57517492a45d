"""ucs.data.export.write_split: a dataset's split as the table ``ucs compare`` reads, read back unchanged."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ucs.data import Split, load_dataset, read_table
from ucs.data.export import write_split


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_split_written_reads_back_as_the_same_texts_and_label_names(tmp_path, suffix):
    ds = load_dataset("sample")
    tricky = Split(('a, "quoted" text\nwith a second line', *ds.test.texts[1:]), ds.test.labels)
    ds = replace(ds, test=tricky)
    for split, part in (("pool", ds.pool), ("test", ds.test)):
        path = write_split(
            ds, split, tmp_path / f"{split}{suffix}", text_column="utterance", label_column="intent"
        )
        table = read_table(path, "utterance", "intent")
        assert table["utterance"] == list(part.texts) and table["intent"] == ds.label_text(part.labels)


def test_another_split_or_suffix_is_refused(tmp_path):
    ds = load_dataset("sample")
    with pytest.raises(ValueError, match="split must be one of"):
        write_split(ds, "train", tmp_path / "x.csv")
    with pytest.raises(ValueError, match=r"\.csv or a \.jsonl"):
        write_split(ds, "pool", tmp_path / "x.xlsx")
    assert not list(tmp_path.iterdir())


def test_hwu64_parse_is_written_with_its_parses_as_labels(shared_data, tmp_path):
    ds = load_dataset("hwu64_parse", shared_data, form="json")
    table = read_table(write_split(ds, "test", tmp_path / "hwu64_parse_test.csv"))
    assert len(table["text"]) == 1076 and table["label"][0].startswith('{"intent": ')
