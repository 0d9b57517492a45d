"""The hub path with local ``datasets`` objects (this test environment has no network)."""

from __future__ import annotations

import sys

import pytest

from ucs.data import DatasetError, load_dataset
from ucs.data.hub import load_from_hub


def test_missing_datasets_package_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=r"\.\[data\]"):
        load_dataset("banking77", source="hub")


def test_unreachable_hub_is_a_clear_error():
    def offline(repo, **kw):
        raise ConnectionError("no route to host")

    with pytest.raises(DatasetError, match="could not load PolyAI/banking77.*source='files'"):
        load_dataset("banking77", source="hub", loader=offline)
    with pytest.raises(ValueError, match="no hub copy"):
        load_dataset("sample", source="hub")


@pytest.fixture
def datasets():
    return pytest.importorskip("datasets")


def _classlabel_dict(datasets):
    names = ["card_arrival", "card_linking", "exchange_rate"]
    feats = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=names)})
    train = datasets.Dataset.from_dict({"text": ["a", "b", "c", "d"], "label": [0, 1, 2, 0]}, features=feats)
    test = datasets.Dataset.from_dict({"text": ["e", "f"], "label": [2, 1]}, features=feats)
    return datasets.DatasetDict(train=train, test=test)


def test_classlabel_dataset_dict(datasets):
    dd = _classlabel_dict(datasets)
    seen = {}

    def loader(repo, *args, **kw):
        seen["repo"] = repo
        return dd

    ds = load_dataset("banking77", source="hub", loader=loader)
    assert seen["repo"] == "PolyAI/banking77"
    assert ds.label_names == ("card_arrival", "card_linking", "exchange_rate")
    assert ds.pool.labels.tolist() == [0, 1, 2, 0] and ds.test.texts == ("e", "f")
    assert ds.source == {"hf://PolyAI/banking77": "unpinned"}


def test_utterance_columns_intents_config_and_out_of_scope(datasets):
    train = datasets.Dataset.from_dict({"utterance": ["w", "x", "y", "z"], "label": [0, 1, None, 2]})
    test = datasets.Dataset.from_dict({"utterance": ["u", "v"], "label": [1, 2]})
    val = datasets.Dataset.from_dict({"utterance": ["t"], "label": [0]})
    intents = datasets.Dataset.from_dict({"id": [0, 1, 2], "name": ["translate", "timer", "oos"]})

    def loader(repo, config=None, **kw):
        if config == "intents":
            return datasets.DatasetDict(intents=intents)
        return datasets.DatasetDict(train=train, validation=val, test=test)

    ds = load_from_hub("clinc150", loader=loader, merge_validation=True)
    assert ds.label_names == ("translate", "timer")
    assert ds.pool.texts == ("w", "x", "t")  # None and oos dropped, validation merged
    assert ds.test.texts == ("u",)
    assert ds.info["dropped_out_of_scope"] == 3


def test_hub_without_test_split(datasets):
    dd = datasets.DatasetDict(train=_classlabel_dict(datasets)["train"])
    with pytest.raises(DatasetError, match="'train' and 'test' are required"):
        load_from_hub("hwu64", loader=lambda *a, **k: dd)
