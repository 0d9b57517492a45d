"""Loaders for the three intent benchmarks from their original public files.

Each loader reads the files exactly as their source repositories publish them (see the data README):

- BANKING77 (PolyAI-LDN/task-specific-datasets): ``banking77/train.csv``, ``test.csv`` (``text,category``,
  quoted; some texts span lines) and ``categories.json`` (the label order).
- CLINC150 (clinc/oos-eval): ``clinc150/data_full.json``; in-scope ``train`` and ``test`` only, the
  out-of-scope lists are dropped (as in the paper). Label names are the sorted intents.
- HWU64 (xliuhw/NLU-Evaluation-Data, fold 1 of the 10-fold split): ``hwu64/KFold_1/trainset/*.csv`` and
  ``hwu64/KFold_1/testset/csv/*.csv``, ``;``-delimited; text ``answer_from_anno``, label
  ``<scenario>_<intent>``. Label names are the sorted labels.
"""

from __future__ import annotations

import os
from pathlib import Path

from ucs.data._files import file_hashes, read_csv_rows, read_json, require_file, resolve_data_dir
from ucs.data.dataset import Dataset, DatasetError, MissingDataError, Split, encode_labels, validate

__all__ = ["load_banking77", "load_clinc150", "load_hwu64", "EXPECTED_COUNTS"]

#: Counts of the public releases (pool = train, test = test), checked on load.
EXPECTED_COUNTS = {
    "banking77": {"n_pool": 10003, "n_test": 3080, "n_labels": 77},
    "clinc150": {"n_pool": 15000, "n_test": 4500, "n_labels": 150},
    "hwu64": {"n_pool": 9960, "n_test": 1076, "n_labels": 64},
}


def load_banking77(data_dir: str | os.PathLike[str] | None = None) -> Dataset:
    """BANKING77 from ``<data_dir>/banking77``: pool = train (10,003), test = test (3,080), 77 labels.

    Label ids follow the order of ``categories.json``; a category in a CSV that is not in that list raises
    :class:`~ucs.data.DatasetError` naming the file.
    """
    root = resolve_data_dir(data_dir)
    folder = root / "banking77"
    cats_path = require_file(folder / "categories.json", "BANKING77 label list")
    categories = read_json(cats_path)
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        raise DatasetError(f"{cats_path}: expected a JSON list of category names")
    splits = {}
    for part in ("train", "test"):
        path = require_file(folder / f"{part}.csv", f"BANKING77 {part} split")
        texts, labels = [], []
        for line, row in read_csv_rows(path, ("text", "category")):
            texts.append(row["text"])
            labels.append(row["category"].strip())
        ids, _ = encode_labels(labels, categories, where=str(path))
        splits[part] = Split(tuple(texts), ids)
    ds = Dataset(
        name="banking77",
        task="intent",
        label_names=tuple(categories),
        pool=splits["train"],
        test=splits["test"],
        source=file_hashes(root, [cats_path, folder / "train.csv", folder / "test.csv"]),
        info={"pool_split": "train", "test_split": "test"},
    )
    return validate(ds, EXPECTED_COUNTS["banking77"])


def _pairs(obj: object, key: str, path: Path) -> tuple[list[str], list[str]]:
    if not isinstance(obj, list):
        raise DatasetError(f"{path}: key {key!r} must be a list of [text, intent] pairs")
    texts, labels = [], []
    for i, pair in enumerate(obj):
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise DatasetError(f"{path}: {key}[{i}] is {pair!r}, expected [text, intent]")
        texts.append(pair[0])
        labels.append(pair[1])
    return texts, labels


def load_clinc150(data_dir: str | os.PathLike[str] | None = None) -> Dataset:
    """CLINC150 from ``<data_dir>/clinc150/data_full.json``: in-scope train (15,000) / test (4,500), 150
    intents.

    The ``oos_*`` lists are not loaded (the paper drops out-of-scope queries); their sizes are recorded in
    ``info``. A test intent that does not occur in train raises :class:`~ucs.data.DatasetError`.
    """
    root = resolve_data_dir(data_dir)
    path = require_file(root / "clinc150" / "data_full.json", "CLINC150")
    data = read_json(path)
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: expected a JSON object with keys 'train' and 'test'")
    for key in ("train", "test"):
        if key not in data:
            raise DatasetError(f"{path}: missing key {key!r} (found {sorted(data)})")
    tr_texts, tr_labels = _pairs(data["train"], "train", path)
    te_texts, te_labels = _pairs(data["test"], "test", path)
    pool_ids, names = encode_labels(tr_labels, None, where=f"{path} (train)")
    test_ids, _ = encode_labels(te_labels, names, where=f"{path} (test)")
    ds = Dataset(
        name="clinc150",
        task="intent",
        label_names=names,
        pool=Split(tuple(tr_texts), pool_ids),
        test=Split(tuple(te_texts), test_ids),
        source=file_hashes(root, [path]),
        info={
            "pool_split": "train",
            "test_split": "test",
            "dropped_out_of_scope": {k: len(data.get(k, [])) for k in ("oos_train", "oos_test")},
        },
    )
    return validate(ds, EXPECTED_COUNTS["clinc150"])


HWU_COLUMNS = ("answerid", "scenario", "intent", "answer_annotation", "answer_from_anno", "answer_from_user")


def _read_hwu_folder(folder: Path, what: str) -> tuple[list[str], list[str], list[Path]]:
    if not folder.is_dir():
        raise MissingDataError(
            f"{what}: expected the folder {folder} (one <scenario>_<intent>.csv per intent) but it does not "
            "exist"
        )
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise MissingDataError(f"{what}: no .csv files in {folder}")
    texts, labels = [], []
    for f in files:
        for line, row in read_csv_rows(f, ("scenario", "intent", "answer_from_anno"), delimiter=";"):
            label = f"{row['scenario'].strip()}_{row['intent'].strip()}"
            if label != f.stem:
                raise DatasetError(
                    f"{f}, line {line}: label {label!r} does not match the file name {f.name!r}"
                )
            texts.append(row["answer_from_anno"])
            labels.append(label)
    return texts, labels, files


def load_hwu64(data_dir: str | os.PathLike[str] | None = None, fold: int = 1) -> Dataset:
    """HWU64 fold ``fold`` from ``<data_dir>/hwu64/KFold_<fold>``: 9,960 train / 1,076 test, 64 intents (fold
    1).

    Text is ``answer_from_anno`` (the annotated answer with the slot brackets removed), the label is
    ``<scenario>_<intent>``, checked against each file's name.
    """
    if not isinstance(fold, int) or not 1 <= fold <= 10:
        raise ValueError(f"fold must be an integer in 1..10, got {fold!r}")
    root = resolve_data_dir(data_dir)
    base = root / "hwu64" / f"KFold_{fold}"
    tr_texts, tr_labels, tr_files = _read_hwu_folder(base / "trainset", f"HWU64 fold {fold} train")
    te_texts, te_labels, te_files = _read_hwu_folder(base / "testset" / "csv", f"HWU64 fold {fold} test")
    pool_ids, names = encode_labels(tr_labels, None, where=str(base / "trainset"))
    test_ids, _ = encode_labels(te_labels, names, where=str(base / "testset" / "csv"))
    ds = Dataset(
        name="hwu64",
        task="intent",
        label_names=names,
        pool=Split(tuple(tr_texts), pool_ids),
        test=Split(tuple(te_texts), test_ids),
        source=file_hashes(root, tr_files + te_files),
        info={"fold": fold, "pool_split": "trainset", "test_split": "testset"},
    )
    return validate(ds, EXPECTED_COUNTS["hwu64"] if fold == 1 else None)
