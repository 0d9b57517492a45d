"""A dataset's split as a table that ``ucs compare`` (and :func:`~ucs.data.table.read_table`) reads.

``ucs compare`` reads tables, not named datasets. To compare selectors on one of the loaders' datasets — e.g.
``hwu64_parse``, whose answers are parses, for ``ucs compare --mode generate`` — write its splits first::

    from ucs.data import load_dataset
    from ucs.data.export import write_split

    ds = load_dataset("hwu64_parse", "../shared/data")          # form="json": answers as JSON documents
    write_split(ds, "pool", "hwu64_parse.csv")                   # text,label — 9,960 rows
    write_split(ds, "test", "hwu64_parse_test.csv")              # 1,076 held-out rows

The label column holds each row's label *name* (for ``hwu64_parse`` its parse).
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from ucs.data.dataset import Dataset
from ucs.utils.io import atomic_write_text

__all__ = ["write_split", "SPLITS"]

#: The splits of a :class:`~ucs.data.Dataset` that :func:`write_split` writes.
SPLITS = ("pool", "test")


def write_split(
    dataset: Dataset,
    split: str,
    path: str | os.PathLike[str],
    text_column: str = "text",
    label_column: str = "label",
) -> Path:
    """Write ``dataset``'s ``split`` (``"pool"`` or ``"test"``) to ``path``: a ``.csv`` (header, then one
    quoted row per example; multi-line texts stay in their field) or a ``.jsonl`` (one object per example),
    with the text and the label name. Written atomically; returns the path. O(rows).

    Raises ``ValueError`` for another split or suffix.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}; got {split!r}")
    path = Path(path)
    part = dataset.pool if split == "pool" else dataset.test
    rows = list(zip(part.texts, dataset.label_text(part.labels)))
    if path.suffix == ".csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([text_column, label_column])
        writer.writerows(rows)
        text = buf.getvalue()
    elif path.suffix == ".jsonl":
        text = "".join(
            json.dumps({text_column: t, label_column: y}, ensure_ascii=False) + "\n" for t, y in rows
        )
    else:
        raise ValueError(f"{path}: write a .csv or a .jsonl table")
    return atomic_write_text(path, text)
