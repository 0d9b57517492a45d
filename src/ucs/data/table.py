"""Any user dataset from CSV/TSV or JSON Lines files with named text and label columns."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ucs.data._files import file_hashes, read_csv_rows
from ucs.data.dataset import Dataset, DatasetError, MissingDataError, Split, encode_labels, validate
from ucs.data.splits import pool_test_split

__all__ = ["load_table", "read_table"]

TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json")
POOL_SPLIT_NAMES = ("pool", "train")
TEST_SPLIT_NAMES = ("test",)


def read_table(
    path: str | os.PathLike[str],
    text_column: str = "text",
    label_column: str = "label",
    extra_columns: Sequence[str] = (),
    delimiter: str | None = None,
    line_column: str | None = None,
) -> dict[str, list]:
    """Read the named columns of a ``.csv``/``.tsv`` (quoted, header row) or ``.jsonl`` file as strings.

    ``.json`` may hold a list of objects. Raises :class:`~ucs.data.DatasetError` naming the file and line
    when a column is missing, a line is not a JSON object, or a label is empty. With ``line_column``, the
    result also holds each row's line in the file under that name (an ``int``; a CSV's header is line 1, a
    row whose quoted field spans lines has its last line; a ``.json`` list's rows are numbered from 1), for
    messages that point the user at a row.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(
            f"the table file {path} does not exist"
            if not path.exists()
            else f"{path} is a folder; give a {'/'.join(TABLE_SUFFIXES)} file"
        )
    columns = (text_column, label_column, *extra_columns)
    out: dict[str, list] = {c: [] for c in columns}
    lines: list[int] = []
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        delim = delimiter or ("\t" if suffix == ".tsv" else ",")
        for line, row in read_csv_rows(path, columns, delimiter=delim):
            _check_label(path, line, label_column, row[label_column])
            for c in columns:
                out[c].append(row[c])
            lines.append(line)
    elif suffix in (".jsonl", ".json"):
        rows = _json_rows(path)
        for line, obj in rows:
            if not isinstance(obj, dict):
                raise DatasetError(f"{path}, line {line}: expected a JSON object, got {type(obj).__name__}")
            missing = [c for c in columns if c not in obj]
            if missing:
                raise DatasetError(f"{path}, line {line}: missing key(s) {missing} (found {sorted(obj)})")
            for c in columns:
                v = obj[c]
                if isinstance(v, (dict, list)) or v is None:
                    raise DatasetError(f"{path}, line {line}: {c!r} must be a string or number, got {v!r}")
                out[c].append(str(v))
            _check_label(path, line, label_column, out[label_column][-1])
            lines.append(line)
    else:
        raise DatasetError(f"{path}: unsupported file type {suffix!r}; use one of {TABLE_SUFFIXES}")
    if line_column is not None:
        out[line_column] = lines
    return out


def _check_label(path: Path, line: int, column: str, value: str) -> None:
    if not value.strip():
        raise DatasetError(
            f"{path}, line {line}: the label (column {column!r}) is empty; give every row a label "
            "or remove the row"
        )


def _same_file(pool: Path, test: Path) -> bool:
    """Whether ``test`` is ``pool``: the same path, a link to it, or a copy with the same bytes."""
    if pool.resolve() == test.resolve():
        return True
    return (
        pool.stat().st_size == test.stat().st_size
        and file_hashes(pool.parent, [pool])[pool.name] == file_hashes(test.parent, [test])[test.name]
    )


def _header(path: Path, delimiter: str | None) -> list[str]:
    """The column names of a table file (the keys of a JSON table's first object)."""
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".tsv"):
            import csv

            with open(path, newline="", encoding="utf-8-sig") as fh:
                return next(csv.reader(fh, delimiter=delimiter or ("\t" if suffix == ".tsv" else ",")), [])
        if suffix in (".jsonl", ".json"):
            rows = _json_rows(path)
            return sorted(rows[0][1]) if rows and isinstance(rows[0][1], dict) else []
    except (UnicodeDecodeError, OSError, DatasetError):
        return []  # read_table reports it
    return []


def _json_rows(path: Path) -> list[tuple[int, object]]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path} is not UTF-8 text: {exc}") from exc
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} is not valid JSON: {exc}") from exc
        if not isinstance(data, list):
            raise DatasetError(f"{path}: a .json table must be a list of objects (or use .jsonl)")
        return list(enumerate(data, start=1))
    rows = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((i, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}, line {i}: not valid JSON: {exc}") from exc
    return rows


def load_table(
    pool: str | os.PathLike[str],
    test: str | os.PathLike[str] | None = None,
    *,
    text_column: str = "text",
    label_column: str = "label",
    split_column: str | None = "auto",
    label_names: Sequence[str] | None = None,
    name: str | None = None,
    task: str = "intent",
    pool_fraction: float = 0.8,
    split_seed: int = 42,
    delimiter: str | None = None,
) -> Dataset:
    """A :class:`~ucs.data.Dataset` from one or two table files.

    Parameters
    ----------
    pool, test : path
        Files with a header row (CSV/TSV) or one JSON object per line (JSONL). With ``test`` given, ``pool``
        is the pool and ``test`` the test split. Otherwise ``split_column`` (values ``pool``/``train`` and
        ``test``) splits the one file, and without it a seeded random split with ``pool_fraction`` is made.
    split_column : str or None
        Column naming each row's split. ``"auto"`` (default): the column ``split`` when the file has one;
        ``None``: always the seeded random split.
    text_column, label_column : str
        Column names of the input text and its label.
    label_names : sequence of str, optional
        The label list (its order fixes the ids); every label in the files must be in it. Default: the
        sorted distinct labels of both files.
    task : {"intent", "reasoning"}
        Chooses the prompt format and default test size downstream.
    """
    pool_path = Path(pool)
    if split_column == "auto":
        has_split = test is None and pool_path.is_file() and "split" in _header(pool_path, delimiter)
        split_column = "split" if has_split else None
    extra = (split_column,) if (split_column and test is None) else ()
    p = read_table(pool_path, text_column, label_column, extra, delimiter)
    paths = [pool_path]
    info: dict[str, object] = {"text_column": text_column, "label_column": label_column}
    if test is not None:
        t = read_table(Path(test), text_column, label_column, (), delimiter)
        if _same_file(pool_path, Path(test)):
            raise DatasetError(
                f"test_file {test} is the pool file {pool_path}: all {len(t[text_column])} test rows are "
                "pool rows, "
                "so every query could be shown as its own demonstration; give a separate test file, a "
                "'split' "
                "column, or no test file (a seeded random split)"
            )
        paths.append(Path(test))
        pool_t, pool_l, test_t, test_l = p[text_column], p[label_column], t[text_column], t[label_column]
    elif split_column:
        split = [s.strip().lower() for s in p[split_column]]
        bad = sorted(set(split) - set(POOL_SPLIT_NAMES) - set(TEST_SPLIT_NAMES))
        if bad:
            raise DatasetError(
                f"{pool_path}: column {split_column!r} has values {bad[:5]}; expected 'pool'/'train' or "
                "'test'"
            )
        is_test = np.array([s in TEST_SPLIT_NAMES for s in split], dtype=bool)
        texts, labels = p[text_column], p[label_column]
        pool_t = [x for x, m in zip(texts, is_test) if not m]
        pool_l = [x for x, m in zip(labels, is_test) if not m]
        test_t = [x for x, m in zip(texts, is_test) if m]
        test_l = [x for x, m in zip(labels, is_test) if m]
        info["split_column"] = split_column
    else:
        if len(p[text_column]) < 2:
            raise DatasetError(
                f"{pool_path} has {len(p[text_column])} row(s); a pool/test split needs at least 2 "
                "(or give the test rows in a separate file, or a 'split' column)"
            )
        pool_idx, test_idx = pool_test_split(len(p[text_column]), pool_fraction, split_seed)
        pool_t = [p[text_column][i] for i in pool_idx]
        pool_l = [p[label_column][i] for i in pool_idx]
        test_t = [p[text_column][i] for i in test_idx]
        test_l = [p[label_column][i] for i in test_idx]
        info.update(pool_fraction=float(pool_fraction), split_seed=int(split_seed))
    pool_l = [x.strip() for x in pool_l]
    test_l = [x.strip() for x in test_l]
    if label_names is None:
        names = tuple(sorted(set(pool_l) | set(test_l)))
    else:
        names = tuple(label_names)
    pool_ids, names = encode_labels(pool_l, names, where=f"{pool_path} (pool)")
    test_ids, _ = encode_labels(test_l, names, where=f"{paths[-1]} (test)")
    root = pool_path.parent
    ds = Dataset(
        name=name or pool_path.stem,
        task=task,
        label_names=names,
        pool=Split(tuple(pool_t), pool_ids),
        test=Split(tuple(test_t), test_ids),
        source=file_hashes(root, paths),
        info=info,
    )
    return validate(ds)
