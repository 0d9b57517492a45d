"""HWU64 as a structured-output task: an utterance → its intent and slots, made from the dataset's own
annotations.

HWU64's files carry, beside each utterance, its slot annotation (``answer_annotation``), e.g.
``wake me up at [time : five am] [date : this week]``. The target is the intent with the annotated slots in
the order they occur:

* ``form="call"``: ``alarm_set(time=five am, date=this week)``; an utterance without slots gives
  ``alarm_set()``;
* ``form="json"``: ``{"intent": "alarm_set", "slots": {"time": "five am", "date": "this week"}}`` (keys in
  order of occurrence; a slot named twice holds the list of its values), for metrics that compare field by
  field.

Fold 1 has 9,960 train and 1,076 test utterances; 4,655 of the 11,036 have no slot, 399 name one slot twice,
and no annotation is malformed (every bracket closes and holds ``name : value``).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ucs.data._files import file_hashes, read_csv_rows, resolve_data_dir
from ucs.data.dataset import Dataset, DatasetError, MissingDataError, Split, encode_labels, validate

__all__ = ["load_hwu64_parse", "parse_annotation", "PARSE_FORMS"]

#: The target forms of :func:`load_hwu64_parse`.
PARSE_FORMS = ("call", "json")

_SLOT = re.compile(r"\[\s*([^\[\]:]+?)\s*:\s*([^\[\]]*?)\s*\]")


def parse_annotation(annotation: str, label: str, form: str = "call") -> str:
    """The target of one utterance: ``label`` with the slots of ``annotation`` in ``form`` (module docstring).

    Raises ``ValueError`` when the annotation has a bracket that does not hold ``name : value``.
    """
    if form not in PARSE_FORMS:
        raise ValueError(f"form must be one of {PARSE_FORMS}, got {form!r}")
    slots = [(name.strip(), " ".join(value.split())) for name, value in _SLOT.findall(annotation)]
    if "[" in _SLOT.sub("", annotation) or "]" in _SLOT.sub("", annotation):
        raise ValueError(f"malformed slot annotation {annotation!r}: every [ ] must hold 'name : value'")
    if form == "call":
        return f"{label}({', '.join(f'{n}={v}' for n, v in slots)})"
    merged: dict = {}
    for name, value in slots:
        if name in merged:
            merged[name] = (merged[name] if isinstance(merged[name], list) else [merged[name]]) + [value]
        else:
            merged[name] = value
    return json.dumps({"intent": label, "slots": merged}, ensure_ascii=False)


def _read(folder: Path, what: str, form: str) -> tuple[list[str], list[str], list[Path]]:
    if not folder.is_dir():
        raise MissingDataError(
            f"{what}: expected the folder {folder} (one <scenario>_<intent>.csv per intent) "
            "but it does not exist"
        )
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise MissingDataError(f"{what}: no .csv files in {folder}")
    texts, targets = [], []
    for f in files:
        for line, row in read_csv_rows(
            f, ("scenario", "intent", "answer_annotation", "answer_from_anno"), ";"
        ):
            label = f"{row['scenario'].strip()}_{row['intent'].strip()}"
            try:
                targets.append(parse_annotation(row["answer_annotation"], label, form))
            except ValueError as exc:
                raise DatasetError(f"{f}, line {line}: {exc}") from None
            texts.append(row["answer_from_anno"])
    return texts, targets, files


def load_hwu64_parse(
    data_dir: str | os.PathLike[str] | None = None, fold: int = 1, form: str = "call"
) -> Dataset:
    """HWU64 fold ``fold`` with parses as answers: pool = train, test = test (9,960 / 1,076 for fold 1).

    The dataset's task is ``"reasoning"`` (free-form answers): ``label_names`` are the distinct parses (about
    4,400), each utterance's label the id of its own parse.
    """
    if not isinstance(fold, int) or not 1 <= fold <= 10:
        raise ValueError(f"fold must be an integer in 1..10, got {fold!r}")
    if form not in PARSE_FORMS:
        raise ValueError(f"form must be one of {PARSE_FORMS}, got {form!r}")
    root = resolve_data_dir(data_dir)
    base = root / "hwu64" / f"KFold_{fold}"
    tr_texts, tr_targets, tr_files = _read(base / "trainset", f"HWU64 fold {fold} train", form)
    te_texts, te_targets, te_files = _read(base / "testset" / "csv", f"HWU64 fold {fold} test", form)
    names = tuple(sorted(set(tr_targets) | set(te_targets)))
    pool_ids, _ = encode_labels(tr_targets, names, where=str(base / "trainset"))
    test_ids, _ = encode_labels(te_targets, names, where=str(base / "testset" / "csv"))
    ds = Dataset(
        name="hwu64_parse",
        task="reasoning",
        label_names=names,
        pool=Split(tuple(tr_texts), pool_ids),
        test=Split(tuple(te_texts), test_ids),
        source=file_hashes(root, tr_files + te_files),
        info={"fold": fold, "form": form, "pool_split": "trainset", "test_split": "testset"},
    )
    return validate(ds, None)
